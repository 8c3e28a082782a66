"""Short nardy's packed end boards (nardy/short/movegen.py ``end_boards``, the variant API's
``end_boards``) are the legal plays' end positions (RULES.md §3.7, §8), in ``legal_plays``
order, whether the compiled search (nardy/short/_movegen.c) or the reference makes them:
on seeded random games (every roll and every double at each position) and on every case
of the gnubg corpus."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest

from nardy import variant
from nardy.short import movegen

SHORT = variant("short")
CORPUS = Path(__file__).with_name("gnubg_corpus.txt.gz")


def packed(position, dice) -> bytes:
    """The legal plays' end positions written out: board then bars, as signed bytes."""
    out = b""
    for p in SHORT.legal_plays(position, dice):
        out += bytes(c & 0xFF for c in (*p.end.board, *p.end.bar))
    return out


def cases(seed: int, games: int):
    rng = random.Random(seed)
    for _ in range(games):
        pos = SHORT.start()
        while SHORT.result(pos) is None:
            yield pos, (rng.randint(1, 6), rng.randint(1, 6))
            yield pos, (rng.randint(1, 6),) * 2
            plays = SHORT.legal_plays(pos, (rng.randint(1, 6), rng.randint(1, 6)))
            pos = rng.choice(plays).end if plays else SHORT.passed(pos)


def corpus():
    with gzip.open(CORPUS, "rt") as f:
        for line in f:
            if not line.startswith("#"):
                text, dice = line.split()[:2]
                a, b = dice.split("-")
                yield SHORT.parse(text), (int(a), int(b))


@pytest.mark.skipif(movegen._compiled is None, reason="nardy.short._movegen was not built")
def test_compiled_end_boards_are_the_legal_plays_ends_in_order():
    n = 0
    for pos, dice in [*cases(3, 12), *corpus()]:
        assert movegen.end_boards(pos, dice) == packed(pos, dice), (pos.text(), dice)
        n += 1
    assert n > 4000


def test_the_variant_api_packs_both_variants():
    long = variant("long")
    pos, dice = long.start(), (6, 5)
    ends = long.end_boards(pos, dice)
    assert len(ends) == 24 * len(long.legal_plays(pos, dice))
    pos = SHORT.start()
    assert SHORT.end_boards(pos, (3, 1)) == packed(pos, (3, 1))
    assert movegen.end_boards_py(pos, (3, 1)) == packed(pos, (3, 1))  # without the compiled
    assert SHORT.end_boards(SHORT.passed(pos), (6, 6)) == packed(SHORT.passed(pos), (6, 6))
