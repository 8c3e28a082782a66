"""Shared by the engine tests: GNU Backgammon, where a test needs it."""

from __future__ import annotations

import os

import pytest

from engines.gnubg import gnubg_path


@pytest.fixture(scope="session")
def gnubg_installed() -> str:
    """gnubg's executable. Missing, the test is skipped on a developer's machine and fails
    in CI (``make test`` installs it: ``make gnubg``)."""
    path = gnubg_path()
    if path is None:
        message = "gnubg is not installed (make gnubg installs Debian's package)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path
