"""The product speaks of itself only: no text in it tells how it was built (work sessions,
issue numbers, the clock times of runs) or points outside the repository. Every tracked
text file is read (the generated protocol code and data files aside)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = ("nardy/v1/", "nardy/link/v1/")  # generated from the .proto files
DATA = (".npz", ".gz", ".png", ".jpg", ".lock")
# (the words are put together here so that this file does not match them itself)
WORDS = {
    "a work session": r"\bsessions?\s+\d+\b",
    "an issue number": r"\bissues?\s+#?\d+\b|\bissue\s+#\w+",
    "the time of a run": r"\b\d{1,2}:\d{2}(?:\s*-\s*\d{1,2}:\d{2})?\s+UTC\b",
    "a path outside the repository": r"\.\./" + "shared" + r"\b|/work" + r"/|\bnotes/[\w-]+\.md\b",
}
PATTERN = re.compile("|".join(f"(?P<w{i}>{p})" for i, p in enumerate(WORDS.values())), re.I)
NAMES = list(WORDS)


def product_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout: every file under the root
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]
    else:
        names = out.stdout.split()
    here = Path(__file__).resolve().relative_to(ROOT).as_posix()
    return [
        ROOT / n
        for n in names
        if not n.startswith(SKIP)
        and not n.endswith(DATA)
        and n != here
        and "node_modules" not in n
        and not n.endswith("package-lock.json")
    ]


def offences(text: str) -> list[tuple[int, str, str]]:
    """(line, what, the words) for every match in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for m in PATTERN.finditer(line):
            what = NAMES[int(m.lastgroup[1:])]
            found.append((number, what, m.group(0)))
    return found


def test_the_checker_finds_each_kind():
    text = "\n".join(
        [
            "measured in sess" + "ion 9",
            "see iss" + "ue 13 item 7",
            "runs 13:" + "00-13:06 UTC",
            "from ../" + "shared/notes",
            "a session of play, issued at noon, 12:00 local",  # none of these
        ]
    )
    kinds = [what for _, what, _ in offences(text)]
    assert kinds == NAMES


def test_no_history_in_the_product():
    found = []
    files = product_files()
    assert any(p.name == "README.md" for p in files)
    for path in files:
        try:
            text = path.read_text()
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue  # not text (or deleted in the working tree)
        found += [f"{path.relative_to(ROOT)}:{n}: {w}: {m!r}" for n, w, m in offences(text)]
    assert not found, "\n".join(found)
