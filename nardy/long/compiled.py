"""The compiled long-nardy generator (``_movegen.c``) if it was built at install, else None.

``NARDY_PURE_PYTHON=1`` in the environment turns it off, so that everything runs on the
pure-Python reference (for comparisons and for a machine without a compiler).
"""

from __future__ import annotations

import os
from types import ModuleType


def _load() -> ModuleType | None:
    if os.environ.get("NARDY_PURE_PYTHON"):
        return None
    try:
        from nardy.long import _movegen
    except ImportError:  # installed without a C compiler: pure Python, slower
        return None
    return _movegen


MODULE = _load()
