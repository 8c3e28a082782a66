"""Shared by the engine tests: GNU Backgammon, where a test needs it."""

from __future__ import annotations

import pytest

from engines.gnubg import gnubg_path
from tests.conftest import missing


@pytest.fixture(scope="session")
def gnubg_installed() -> str:
    """gnubg's executable. Missing, the test is skipped on a developer's machine and fails
    in CI (``make test`` installs it: ``make gnubg``)."""
    path = gnubg_path()
    if path is None:
        missing("gnubg is not installed (make gnubg installs Debian's package)")
    return path
