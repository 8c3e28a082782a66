"""The optional compiled accelerators (C extensions built at install, see setup.py).

:func:`load` gives one if it was built, else None, and the caller runs its pure-Python
reference instead. ``NARDY_PURE_PYTHON=1`` in the environment turns every accelerator off,
so that everything runs on the references (for comparisons and for a machine without a
compiler).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType


def load(name: str) -> ModuleType | None:
    """The extension module ``name`` (e.g. ``nardy.long._movegen``), or None."""
    if os.environ.get("NARDY_PURE_PYTHON"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:  # installed without a C compiler: pure Python, slower
        return None
