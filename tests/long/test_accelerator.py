"""The compiled move generator against the pure-Python reference (nardy/long/movegen.py).

Both must give the same plays (RULES.md §3.7: distinct end positions) in the same order,
with the same canonical steps, and the same sorted end texts (``nardy legal``), on every
corpus the tests have: seeded self-play games, random valid positions of every kind in
``tests/long/reference.py`` (scattered, bear-off §4, nearly home §4.1, head §3.4, six-point
windows §3.5), every position text written in a test file (with all 36 dice), doubles-rich
and bear-off-rich sets, and hypothesis-drawn positions. The engines' results depend on the
order, so order is compared, not just sets.
"""

from __future__ import annotations

import os
import pathlib
import random
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nardy.game import PositionError
from nardy.long import movegen
from nardy.long.movegen import Play, Step, legal_plays_py
from nardy.long.position import Position
from tests.long.reference import KINDS, random_dice, random_position

compiled = movegen._compiled
pytestmark = pytest.mark.skipif(
    compiled is None and not os.environ.get("CI"),
    reason="the compiled move generator is not built (no C compiler at install)",
)

ALL_DICE = [(a, b) for a in range(1, 7) for b in range(1, 7)]
TEXT = re.compile(r"\b[wb]/(?:-?\d+,){23}-?\d+\b")


def test_the_accelerator_is_built_in_ci():
    """CI has a compiler: there the compiled generator must be the one in use."""
    assert compiled is not None and movegen.COMPILED


def differences(cases) -> list[str]:
    bad = []
    for pos, dice in cases:
        want = legal_plays_py(pos, dice)
        got = compiled.legal_plays(pos.turn, pos.board, *dice)
        texts = compiled.end_texts(pos.turn, pos.board, *dice)
        boards = compiled.end_boards(pos.turn, pos.board, *dice)
        same = got == want and all(
            type(p) is Play
            and type(p.end) is Position
            and p.end.turn is want[i].end.turn
            and all(type(s) is Step for s in p.steps)
            for i, p in enumerate(got)
        )
        notations = [compiled.notation(p.steps) for p in got]
        if notations != [" ".join(map(str, p.steps)) or "-" for p in want]:
            same = False
        if boards != b"".join(bytes(c & 0xFF for c in p.end.board) for p in want):
            same = False
        if not same or texts != sorted(p.end.text() for p in want):
            bad.append(
                f"{pos.text()} dice {dice[0]}-{dice[1]}: reference {[str(p) for p in want]} "
                f"compiled {[str(p) for p in got]}"
            )
    return bad


def self_play(rng: random.Random, n: int, *, doubles: bool = False):
    cases = []
    while len(cases) < n:
        pos = Position.start()
        while pos.winner is None and len(cases) < n:
            a, b = random_dice(rng)
            dice = (a, a) if doubles and rng.random() < 0.5 else (a, b)
            cases.append((pos, dice))
            plays = legal_plays_py(pos, dice)
            pos = rng.choice(plays).end if plays else pos.passed()
    return cases


@pytest.mark.slow
def test_self_play_games():
    cases = self_play(random.Random(1234), 3000) + self_play(random.Random(7), 2000, doubles=True)
    bad = differences(cases)
    assert not bad, f"{len(bad)} of {len(cases)} differ:\n" + "\n".join(bad[:10])


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_random_valid_positions(kind):
    rng = random.Random(f"accelerator-{kind}")
    cases = [(random_position(rng, kind), random_dice(rng)) for _ in range(1500)]
    cases += [(random_position(rng, kind), (d, d)) for d in range(1, 7) for _ in range(100)]
    bad = differences(cases)
    assert not bad, f"{len(bad)} of {len(cases)} differ:\n" + "\n".join(bad[:10])


def test_every_position_written_in_the_tests():
    texts = set()
    for path in pathlib.Path(__file__).parents[1].rglob("*.py"):
        texts.update(TEXT.findall(path.read_text()))
    positions = []
    for text in sorted(texts):
        try:
            positions.append(Position.parse(text))
        except PositionError:
            continue  # a test of a bad position text
    assert len(positions) >= 20
    bad = differences([(pos, dice) for pos in positions for dice in ALL_DICE])
    assert not bad, "\n".join(bad[:10])


def test_the_start_and_text():
    start = Position.start()
    assert compiled.text(start.turn, start.board) == start.text()
    for pos, _ in self_play(random.Random(3), 500):
        assert compiled.text(pos.turn, pos.board) == pos.text()


def test_bad_input_is_refused_not_crashed():
    start = Position.start()
    with pytest.raises(ValueError):
        compiled.legal_plays(start.turn, start.board, 0, 3)
    with pytest.raises(ValueError):
        compiled.legal_plays(start.turn, start.board[:23], 6, 5)
    with pytest.raises(ValueError):
        compiled.legal_plays(start.turn, (16, *start.board[1:]), 6, 5)
    with pytest.raises(TypeError):
        compiled.legal_plays(start.turn, start.board, 6)


@pytest.mark.slow
@settings(deadline=None, max_examples=300)
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(KINDS), dice=st.sampled_from(ALL_DICE))
def test_hypothesis_positions(seed, kind, dice):
    pos = random_position(random.Random(seed), kind)
    assert not differences([(pos, dice)])


def test_pure_python_fallback_gives_the_same_answers():
    """``NARDY_PURE_PYTHON=1`` (what an install without a compiler runs) agrees with the
    compiled generator, through the whole ``nardy legal`` command."""
    cases = self_play(random.Random(11), 150) + [
        (random_position(random.Random(i), KINDS[i % len(KINDS)]), (i % 6 + 1, i % 6 + 1))
        for i in range(50)
    ]
    lines = "".join(f"{p.text()} {a}{b}\n" for p, (a, b) in cases)
    outs = []
    for pure in ("1", ""):
        env = {**os.environ, "NARDY_PURE_PYTHON": pure}
        outs.append(
            subprocess.run(
                [sys.executable, "-m", "clients", "legal"],
                input=lines,
                capture_output=True,
                text=True,
                env=env,
                check=True,
                timeout=120,
            ).stdout
        )
    assert outs[0] == outs[1] and outs[0].count("\n") == len(cases)
