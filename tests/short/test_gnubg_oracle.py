"""Short nardy's legal plays against GNU Backgammon, an independent program (RULES.md §8).

``tests/short/gnubg_corpus.txt.gz`` holds gnubg's legal plays (distinct end positions,
§3.7) for 3200 seeded cases of every kind (``python -m tools.short_oracle corpus`` made
it): self-play, the bar against closed points, blocked and one-die rolls, the larger die,
partial doubles, hits, bear-off from home and mid-turn, moving inside home, game ends and
hits on the way off. Our generator and ``nardy legal --variant short`` must give exactly
the same sets. When gnubg is installed (``make gnubg``) fresh random cases are asked of it
live too, with a new seed each run (``NARDY_GNUBG_SEED`` repeats one).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from collections import Counter

import pytest

from tools.short_oracle import (
    CORPUS,
    TAGS,
    ask_gnubg,
    cases,
    disagreements,
    gnubg_path,
    ours,
    read_corpus,
)

CORPUS_CASES = read_corpus(CORPUS)
LIVE_PER_TAG = 40
SHOW = 10


def report(bad: list[str], total: int) -> str:
    return f"{len(bad)} of {total} cases differ from gnubg; first {SHOW}:\n" + "\n".join(bad[:SHOW])


def test_corpus_covers_every_kind():
    count = Counter(tag for _, found, _ in CORPUS_CASES for tag in found)
    assert len(CORPUS_CASES) >= 3000
    assert count["self-play"] >= 1000
    assert {tag: n for tag, n in count.items() if tag in TAGS and n < 250} == {}
    assert set(TAGS) <= set(count)
    assert sum(len(ends) for _, _, ends in CORPUS_CASES) > 20000


def test_legal_plays_match_gnubg_corpus():
    """§3.6-3.7, §4, §8: every case's end positions are exactly gnubg's."""
    bad = []
    for (position, dice), found, theirs in CORPUS_CASES:
        mine = ours(position, dice)
        if mine != theirs:
            bad.append(
                f"{position.text()} {dice[0]}-{dice[1]} ({', '.join(found)}):\n"
                f"  only gnubg: {sorted(theirs - mine)}\n  only ours:  {sorted(mine - theirs)}"
            )
    assert not bad, report(bad, len(CORPUS_CASES))


def test_nardy_legal_batch_matches_gnubg_corpus():
    """`nardy legal --variant short` (a real process, batch mode) prints gnubg's plays, or
    the unchanged position with the opponent to move when there is none (§3.6)."""
    lines = "".join(f"{p.text()} {d[0]}-{d[1]}\n" for (p, d), _, _ in CORPUS_CASES)
    out = subprocess.run(
        [sys.executable, "-m", "clients", "legal", "--variant", "short"],
        input=lines,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(out) == len(CORPUS_CASES)
    for line, ((position, _), _, theirs) in zip(out, CORPUS_CASES, strict=True):
        assert set(line.split()) == (theirs or {position.passed().text()}), line


@pytest.fixture(scope="module")
def gnubg() -> str:
    path = gnubg_path()
    if path is None:
        pytest.skip("gnubg is not installed (make gnubg installs Debian's package)")
    return path


def test_gnubg_still_gives_the_corpus(gnubg):
    """The driver and the installed gnubg reproduce the committed answers (a sample)."""
    sample = random.Random(0).sample(CORPUS_CASES, 200)
    answers = ask_gnubg([case for case, _, _ in sample], gnubg)
    for ((position, dice), _, theirs), answer in zip(sample, answers, strict=True):
        assert set(answer["ends"]) == theirs, f"{position.text()} {dice}"


@pytest.mark.slow
def test_legal_plays_match_gnubg_live(gnubg):
    """Fresh random cases of every kind, asked of gnubg now."""
    seed = int(os.environ.get("NARDY_GNUBG_SEED") or random.randrange(1 << 32))
    chosen = cases(seed, LIVE_PER_TAG, LIVE_PER_TAG, 40 * LIVE_PER_TAG)
    bad = disagreements(chosen, ask_gnubg([case for case, _ in chosen], gnubg))
    assert not bad, f"NARDY_GNUBG_SEED={seed}: " + report(bad, len(chosen))
