"""The compiled evaluation (engines/_evaluate.c) against the pure-Python reference
(engines/evaluate.py): bit-identical estimates and equities, so that greedy and expectimax
make the same choices with either (same seeds, same results).

Corpora: seeded self-play games (every position and every play's end), random valid
positions of every kind in ``tests/long/reference.py`` (scattered, bear-off, nearly home, head,
six-point windows), races, finished games (a mars or an oin) and every outcome scale the
engines use (points, match winning chances at several scores).
"""

from __future__ import annotations

import os
import random

import pytest

from engines import evaluate as ev
from engines.expectimax import ExpectimaxEngine
from engines.greedy import GreedyEngine
from nardy import Color, Position, legal_plays
from tests.long.reference import KINDS, random_dice, random_position

compiled = ev.COMPILED
pytestmark = pytest.mark.skipif(
    compiled is None and not os.environ.get("CI"),
    reason="the compiled evaluation is not built (no C compiler at install)",
)

SCALES = [
    ev.POINTS,
    ev.match_values(1, 0, 0),
    ev.match_values(5, 2, 3),
    ev.match_values(7, 6, 0),
    ev.Values(1, 3, -1, -3),  # ints are fine too
]


def test_the_compiled_evaluation_is_built_in_ci():
    """CI has a compiler: there the compiled evaluation must be the one in use."""
    assert compiled is not None


def self_play(rng: random.Random, games: int) -> list[Position]:
    out = []
    for _ in range(games):
        pos = Position.start()
        while pos.winner is None:
            out.append(pos)
            plays = legal_plays(pos, random_dice(rng))
            if not plays:
                pos = pos.passed()
                continue
            # mostly the greedy choice (realistic games: blocks, races, bear-offs), some noise
            scores = ev.evaluate_ends(plays, pos.turn)
            best = plays[scores.index(max(scores))]
            pos = (rng.choice(plays) if rng.random() < 0.3 else best).end
        out.append(pos)  # the finished game
    return out


def differences(positions: list[Position]) -> list[str]:
    bad = []
    for pos in positions:
        for color in Color:
            want = ev.estimates_py(pos, color)
            got = compiled.estimates(pos.board, color, pos.turn, ev._WEIGHTS)
            if got != want:
                bad.append(f"{pos.text()} {color.name}: estimates {got} != {want}")
            for values in SCALES:
                want_e = ev.evaluate_py(pos, color, values)
                got_e = ev.evaluate(pos, color, values)
                if got_e != want_e:  # exactly equal: the same floats, bit for bit
                    bad.append(f"{pos.text()} {color.name} {values}: {got_e!r} != {want_e!r}")
    return bad


@pytest.mark.slow
def test_self_play_positions():
    positions = self_play(random.Random(13), 40)
    assert len(positions) > 3000
    bad = differences(positions)
    assert not bad, f"{len(bad)} differ:\n" + "\n".join(bad[:10])


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_random_valid_positions(kind):
    rng = random.Random(f"evaluate-{kind}")
    bad = differences([random_position(rng, kind) for _ in range(1000)])
    assert not bad, f"{len(bad)} differ:\n" + "\n".join(bad[:10])


def test_races_and_finished_games():
    """No contact (the race formula), bear-offs with and without a checker off (mars
    chances), and finished games: a mars (loser has all 15) and an oin."""
    rng = random.Random(5)
    positions = []
    for _ in range(1500):
        board = [0] * 24
        white, black = rng.randint(0, 15), rng.choice([15, rng.randint(1, 15)])
        if white == 0 and black == 0:
            white = 1
        # white on its points 1..12 (a = 12..23), black on its own 1..12 (a = 0..11): a race
        for _ in range(white):
            board[24 - rng.randint(1, 12)] += 1
        for _ in range(black):
            board[(36 - rng.randint(1, 12)) % 24] -= 1
        positions.append(Position.from_board(rng.choice(list(Color)), board))
    assert any(ev._contact(*ev.sides(p.board, Color.WHITE)) is False for p in positions)
    assert any(p.winner is not None and p.on_board(p.winner.opponent) == 15 for p in positions)
    bad = differences(positions)
    assert not bad, f"{len(bad)} differ:\n" + "\n".join(bad[:10])


def test_batched_calls_match_one_by_one():
    rng = random.Random(8)
    for pos in self_play(rng, 3)[::7]:
        plays = legal_plays(pos, random_dice(rng))
        if not plays:
            continue
        for values in SCALES:
            each = [ev.evaluate_py(p.end, pos.turn, values) for p in plays]
            assert ev.evaluate_ends(plays, pos.turn, values) == each
            assert ev.worst_end(plays, pos.turn.opponent, values) == min(
                ev.evaluate_py(p.end, pos.turn.opponent, values) for p in plays
            )


@pytest.mark.slow
def test_engines_choose_the_same_plays_with_the_reference(monkeypatch):
    """Expectimax (full strength, no clock) and greedy on seeded positions: the same
    choices with the compiled evaluation as with the pure-Python one."""
    rng = random.Random(21)
    cases = []
    for pos in self_play(rng, 4):
        dice = random_dice(rng)
        if len(legal_plays(pos, dice)) > 1 and rng.random() < 0.15:
            cases.append((pos, dice))
    cases = cases[:12]
    assert len(cases) >= 8

    def choices():
        engines = [ExpectimaxEngine(seed=1), GreedyEngine()]
        return [
            e.choose(pos, dice, legal_plays(pos, dice)).end for e in engines for pos, dice in cases
        ]

    fast = choices()
    monkeypatch.setattr(ev, "COMPILED", None)
    assert choices() == fast


def test_bad_input_is_refused_not_crashed():
    w = ev._WEIGHTS
    start = Position.start().board
    with pytest.raises(TypeError):
        compiled.estimates(start[:23], 0, 0, w)
    with pytest.raises(TypeError):
        compiled.estimates([0] * 24, 0, 0, w)
    with pytest.raises(ValueError):
        compiled.estimates((16,) + (0,) * 23, 0, 0, w)
    with pytest.raises(ValueError):
        compiled.estimates((8, 8) + (0,) * 22, 0, 0, w)
    with pytest.raises(ValueError):
        compiled.estimates(start, 2, 0, w)
    with pytest.raises(TypeError):
        compiled.estimates(start, 0, 0, w[:-1])
    with pytest.raises(AttributeError):
        compiled.evaluate(start, 0, 0, w, object())
    with pytest.raises(TypeError):
        compiled.evaluate_ends([None], 0, w, ev.POINTS)
    with pytest.raises(ValueError):
        compiled.worst_end([], 0, w, ev.POINTS)
    assert compiled.evaluate_ends([], 0, w, ev.POINTS) == []
