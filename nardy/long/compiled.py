"""The compiled long-nardy generator (``_movegen.c``) if it was built at install, else None
(see :mod:`nardy.compiled`; ``NARDY_PURE_PYTHON=1`` turns it off)."""

from __future__ import annotations

from nardy.compiled import load

MODULE = load("nardy.long._movegen")
