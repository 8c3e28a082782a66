"""The committed protocol code in nardy/v1 matches what `make proto` generates from proto/."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_generated_stubs_are_fresh():
    out = subprocess.run(
        [sys.executable, "-m", "nardy.protogen", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_committed_stubs_match_the_working_tree():
    """In a git checkout, the generated files must also be committed as generated."""
    if not (ROOT / ".git").exists():
        return
    out = subprocess.run(
        ["git", "status", "--porcelain", "--", "nardy/v1", "nardy/link", "proto"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0
    assert out.stdout.strip() == "", f"uncommitted protocol changes:\n{out.stdout}"
