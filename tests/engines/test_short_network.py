"""Short nardy's value network (engines/features_short.py): its inputs against a plain
per-position reference, its outcomes (single, gammon, backgammon: RULES.md §8), exact
values from the bear-off tables, and the network engine playing short nardy: legal plays
at every level, a whole game on the arbiter, and a full level that keeps to its budget."""

from __future__ import annotations

import random

import numpy as np
import pytest
import trio

from engines import bearoff
from engines.features import equity, features, flip
from engines.features_short import SIZE, both_home
from engines.network import Network
from engines.neural import LEVELS, NetworkEngine
from nardy import variant, wire
from nardy.client import Client
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from tests.engines.test_engines import GAME_TIMEOUT_S, TURN_MS, launch, wait

SHORT = variant("short")
F = features("short")


def game_positions(seed: int, n: int = 300) -> list:
    """Positions of random games: every stage, both sides to move, checkers on the bar."""
    rng = random.Random(seed)
    out, pos = [], SHORT.start()
    while len(out) < n:
        out.append(pos)
        plays = SHORT.legal_plays(pos, (rng.randint(1, 6), rng.randint(1, 6)))
        pos = rng.choice(plays).end if plays else SHORT.passed(pos)
        if SHORT.result(pos) is not None:
            pos = SHORT.start()
    return out


def hits(d: int, a: int, b: int) -> bool:
    """Can roll (a, b) move one checker exactly d pips (blocks not looked at)?"""
    if a == b:
        return d in (a, 2 * a, 3 * a, 4 * a)
    return d in (a, b, a + b)


def reference(pos) -> list[float]:
    """The encoding of engines/features_short.py's docstring, point by point (§9)."""
    me, them = pos.turn, pos.turn.opponent
    out: list[float] = []
    for side, other in ((me, them), (them, me)):
        c = [pos.count(side, p) for p in range(1, 25)]
        for n in c:
            out += [n >= 1, n >= 2, n >= 3, max(n - 3, 0) / 2]
        out += [pos.on_bar(side) / 2, pos.borne_off(side) / 15, pos.pips(side) / 167]
        # the other's shooters in this side's points: its point q is our 25 - q, its bar 0
        shooters = [25 - q for q in range(1, 25) if pos.count(other, q)]
        shooters += [0] if pos.on_bar(other) else []
        blots = [p for p in range(1, 25) if c[p - 1] == 1]
        rolls = sum(
            any(hits(p - r, a, b) for p in blots for r in shooters if r < p)
            for a in range(1, 7)
            for b in range(1, 7)
        )
        out.append(rolls / 36)
        longest = run = 0
        for n in c:
            run = run + 1 if n >= 2 else 0
            longest = max(longest, run)
        out += [min(longest, 6) / 6, sum(n >= 2 for n in c[:6]) / 6]
    rear = [max([p for p in range(1, 26) if pos.count(s, p)], default=0) for s in (me, them)]
    out.append(rear[0] + rear[1] <= 25)
    return [float(v) for v in out]


def test_encoding_matches_the_documented_reference():
    positions = game_positions(1, 400)
    assert any(p.bar != (0, 0) for p in positions)  # the bar is covered
    x = F.encode(positions)
    assert x.shape == (len(positions), SIZE) == (len(positions), 205)
    want = np.array([reference(p) for p in positions])
    assert np.allclose(x, want, atol=1e-12)


def test_encoding_is_turn_relative():
    positions = game_positions(2, 100)
    x, y = F.encode(positions), F.encode([SHORT.passed(p) for p in positions])
    side = (SIZE - 1) // 2
    assert np.array_equal(x[:, :side], y[:, side : 2 * side])
    assert np.array_equal(x[:, side : 2 * side], y[:, :side])


@pytest.mark.skipif(
    __import__("engines.features_short").features_short.COMPILED is None,
    reason="engines._network_short was not built",
)
def test_compiled_encoding_is_the_numpy_one_bit_for_bit():
    from engines import features_short as fs

    positions = game_positions(3, 3000)
    rows, turns = fs.rows_of(positions)
    x, (c, bar) = fs._inputs(rows, turns)
    c0, bar0 = fs.counts(rows.astype(np.int64), turns)
    assert np.array_equal(c, c0) and np.array_equal(bar, bar0)
    assert np.array_equal(x, fs.inputs_of(c0, bar0))
    with pytest.raises(ValueError):
        fs.COMPILED.encode(rows.tobytes(), turns.astype(np.int8).tobytes(), x[:1], c, bar)


# -- outcomes and exact values (RULES.md §8) -----------------------------------------------


def test_five_outcomes_flip_and_weigh_by_points():
    v = np.array([0.6, 0.2, 0.05, 0.1, 0.01])  # win, win g, win bg, lose g, lose bg
    assert np.allclose(flip(flip(v)), v)
    assert np.allclose(flip(v), [0.4, 0.1, 0.01, 0.2, 0.05])
    assert np.isclose(equity(v) + equity(flip(v)), 0)
    assert equity(np.array([1.0, 1.0, 1.0, 0.0, 0.0])) == 3  # a sure backgammon
    assert equity(np.array([1.0, 1.0, 0.0, 0.0, 0.0])) == 2
    assert equity(np.array([0.0, 0.0, 0.0, 1.0, 0.0])) == -2
    # outcome values: points give the points; one point to win the match: a single
    wins, losses = (1, 2, 3), (-1, -2, -3)
    assert np.isclose(equity(v, (wins, losses)), equity(v))
    single = ((1, 1, 1), (-1, -1, -1))
    assert np.isclose(equity(v, single), 2 * 0.6 - 1)


def finished(loser_board: dict[int, int], bar: int = 0, off: int = 0):
    """Black has borne off all 15; white, to move, has lost with checkers on its own points
    ``loser_board`` (point: count) and ``bar`` on the bar."""
    board = [0] * 24
    for p, n in loser_board.items():
        board[24 - p] = n
    return SHORT.parse(f"w/{','.join(map(str, board))}/{bar},0")


@pytest.mark.parametrize(
    "pos,kind",
    [
        (finished({6: 14}), "single"),  # one borne off
        (finished({6: 15}), "gammon"),  # none borne off
        (finished({6: 14}, bar=1), "backgammon"),  # none off, one on the bar
        (finished({6: 14, 20: 1}), "backgammon"),  # none off, one in the winner's home
    ],
)
def test_finished_games_are_valued_exactly(pos, kind):
    assert SHORT.result(pos).kind.value == kind
    net = Network.random(8, seed=1, variant="short")
    points = {"single": 1, "gammon": 2, "backgammon": 3}[kind]
    want = [0, 0, 0, points >= 2, points >= 3]
    assert net.values([pos]).tolist() == [want] and F.loss(pos).tolist() == want
    assert equity(net.values([pos]))[0] == -points


def test_a_bear_off_race_is_valued_by_the_exact_tables():
    # white (to move): one checker on its 6 (a=18); black: three on its 1, 1 and 2 (a=0, 1)
    pos = SHORT.parse("w/-2,-1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1,0,0,0,0,0/0,0")
    assert both_home(pos) and not both_home(SHORT.start())
    table = bearoff.table()
    mover, other = np.array([[0, 0, 0, 0, 0, 1]]), np.array([[2, 1, 0, 0, 0, 0]])
    win, gammon, lose_gammon = table.race_values(mover, other)[0]
    net = Network.random(8, seed=1, variant="short")
    assert np.allclose(net.values([pos]), [[win, gammon, 0.0, lose_gammon, 0.0]])
    # one checker on 6 against three: 27/36 carry it off at once; else black, two turns
    # from home unless a double, wins when it rolls one (6/36) -> exact by hand
    assert np.isclose(win, 27 / 36 + 9 / 36 * 30 / 36) and gammon == lose_gammon == 0.0
    net.bearoff = False
    assert not np.allclose(net.values([pos]), [[win, gammon, 0.0, lose_gammon, 0.0]])


def _short_home(home: np.ndarray):
    """White to move with ``home`` on its points 1..6, black all on its point 1 (a=0)."""
    board = [0] * 24
    for p in range(1, 7):
        board[24 - p] = int(home[p - 1])
    board[0] = -15
    return SHORT.parse(f"w/{','.join(map(str, board))}/0,0")


def test_the_bear_off_tables_hold_for_short_nardy():
    """The shipped tables were built from long nardy's plays; rebuilt from short nardy's
    (§8: the same bearing off), the boards of up to three checkers agree."""
    off, first = bearoff.build(limit=3, position=_short_home, rules=SHORT)
    small = bearoff.boards().sum(1) <= 3
    assert np.allclose(off[small], bearoff.table().off[small], atol=1e-6)


# -- the engine ----------------------------------------------------------------------------


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_levels_play_legal_moves(level):
    engine = NetworkEngine(level=level, seed=3, rules=SHORT)
    positions = game_positions(4, 60)[::6]
    rng = random.Random(level)
    for pos in positions:
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        plays = SHORT.legal_plays(pos, dice)
        if plays:
            play = engine.choose(pos, dice, plays)
            assert any(play is p for p in plays)


class CountedClock:
    """A clock that moves on by ``step`` seconds each time it is read: the search's budget
    counted in reads, whatever the machine's speed."""

    def __init__(self, step: float) -> None:
        self.now, self.step, self.reads = 0.0, step, 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += self.step
        return self.now


@pytest.mark.parametrize("name", ["long", "short"])
def test_the_full_level_stops_its_search_by_its_budget(name):
    rules = variant(name)
    rng = random.Random(9)
    checked = 0
    pos = rules.start()
    for turn in range(40):
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        while name == "short" and turn == 0 and dice[0] == dice[1]:
            dice = (rng.randint(1, 6), rng.randint(1, 6))
        plays = rules.legal_plays(pos, dice)
        if len(plays) > 1:
            engine = NetworkEngine(level=3, rules=rules, max_seconds=0.5)
            engine.clock = clock = CountedClock(0.01)  # 50 reads of the clock in the budget
            play = engine.choose(pos, dice, plays)
            assert any(play is p for p in plays)
            # the deadline is the first read + 0.5 s: no more than a couple of reads (one
            # roll of one candidate's search each) pass it before the search gives up
            assert clock.reads <= 50 + 3, clock.reads
            checked += engine.timeouts > 0  # the search was cut short by the budget
            # with no time at all, it plays the 0-ply choice without searching
            hurried = NetworkEngine(level=3, rules=rules, max_seconds=0.0)
            hurried.clock = CountedClock(0.01)
            zero = NetworkEngine(level=2, rules=rules)
            assert hurried.choose(pos, dice, plays) is zero.choose(pos, dice, plays)
        pos = play.end if len(plays) > 1 else (plays[0].end if plays else rules.passed(pos))
        if rules.result(pos) is not None:
            break
    assert checked >= 3  # the budget did bind on several positions


@pytest.fixture
def arbiter(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "a.db")) as srv:
        yield srv


async def test_the_network_plays_a_short_game_on_the_arbiter(arbiter):
    """``nardy engine network`` against ``nardy engine greedy``, each its own process, a
    short-nardy game to the end; every play is legal by the variant (RULES.md §8)."""
    async with Client(arbiter.address) as client:
        r = await client.create_match(
            target_points=1,
            seed=5,
            options=pb.GameOptions(variant="short", turn_time_ms=TURN_MS, auto_play_forced=True),
        )
        procs = [
            launch("network", arbiter.address, r.first_seat_token),
            launch("greedy", arbiter.address, r.second_seat_token),
        ]
        outcomes = []

        async def run(p):
            outcomes.append(await trio.to_thread.run_sync(wait, p, GAME_TIMEOUT_S))

        async with trio.open_nursery() as nursery:
            for p in procs:
                nursery.start_soon(run, p)
        for code, err in outcomes:
            assert code == 0, err[-2000:]
        pos, plays = SHORT.start(), 0
        async for ev in client.events(r.game_id, from_start=True):
            if ev.type == pb.EVENT_TYPE_PLAY_MADE:
                pos = SHORT.match_play(pos, wire.dice_of(ev.play.dice), ev.play.notation).end
                assert pos.text() == ev.state.position
                plays += 1
            elif ev.type == pb.EVENT_TYPE_TURN_PASSED:
                pos = SHORT.passed(pos)
            elif ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                break
        assert plays > 10 and SHORT.result(pos) is not None
        state = (await client.get_game(r.game_id)).state
        assert state.status == pb.GAME_STATUS_FINISHED
        assert state.result.points == SHORT.result(pos).points
