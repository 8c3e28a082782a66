"""Clocks under trio's MockClock: turn time and bank, a play charged up to when it
*arrived* at the edge, a play that arrived in time accepted however late the core judges
it, the fence that asks the edge for plays still on the link, timeouts that fire at the
deadline, and the SDK's clock display. Virtual time: no test waits real seconds.

The arbiter core runs here with a real SQLite store and no edge: the edge's part is
:class:`server.core.clock.Arrivals` (its stamps and its fence), which these tests play.
"""

from __future__ import annotations

import contextlib

import pytest
import trio
import trio.testing

from nardy import Termination
from nardy.clock import DEFAULT_TURN_TIME_MS, Clock
from nardy.match import GameOptions
from nardy.wire import Terms
from server.core import tables
from server.core.arbiter import Arbiter
from server.core.journal import EventType, Status
from server.core.ladder import NEWCOMER_BENCH_S, LadderOptions
from server.core.match import MatchSpec
from server.core.principals import AS_OPERATOR, Caller, token_hash
from server.core.session import RECONNECT_S
from server.core.store import SQLiteStore
from server.errors import ArbiterError


@pytest.fixture
def autojump_clock(monkeypatch):
    """Virtual time that jumps whenever every task waits. The core's look whether it stood
    still (Tables.mind_stillness) is left out: it would always be waiting 0.25 s ahead,
    so time would run on while the store's thread writes."""
    monkeypatch.setattr(tables, "STILL_TICK_S", float("inf"))
    return trio.testing.MockClock(autojump_threshold=0)


# -- the clock object --------------------------------------------------------------------
def test_turn_time_then_bank():
    c = Clock(turn_time_ms=1000, bank_ms=500)
    assert c.deadline == float("inf") and not c.running
    assert c.start(10.0) == 11.5
    assert c.reading(10.25) == (1250, 500)  # in turn time: the bank untouched
    assert c.reading(11.2) == (300, 300)  # 200 ms into the bank
    assert c.in_time(11.499) and not c.in_time(11.5)
    assert c.charge(11.2) == 1200 and c.bank_ms == 300 and not c.running
    assert c.reading(99.0) == (1300, 300)  # stopped: the next turn's full time


def test_charge_is_never_negative_and_stop_charges_nothing():
    c = Clock(turn_time_ms=1000, bank_ms=100)
    c.start(5.0)
    assert c.charge(4.0) == 0 and c.bank_ms == 100  # stamped before the turn was sent
    c.start(6.0)
    c.stop()
    assert c.bank_ms == 100 and c.deadline == float("inf")


def test_time_runs_from_when_the_turn_was_sent():
    c = Clock(turn_time_ms=1000)
    c.start(10.0)
    assert c.sent(10.2, most=2.0) == 11.2  # the stream sent the turn 200 ms later
    assert c.sent(10.9, most=2.0) == 11.2  # only the first report counts
    c.start(20.0)
    assert c.sent(25.0, most=2.0) == 23.0  # a stalled reader gains at most `most`
    c.start(30.0)
    assert c.sent(29.0, most=2.0) == 31.0  # never earlier than the start
    c.stop()
    assert c.sent(40.0, most=2.0) == float("inf")


def test_sdk_display_counts_down_from_the_reading():
    shown = Clock.from_reading(remaining_ms=1800, bank_ms=500, received=100.0)
    assert shown.reading(100.0) == (1800, 500)
    assert shown.reading(101.0) == (800, 500)  # the turn time goes first
    assert shown.reading(101.5) == (300, 300)  # then the bank
    assert shown.reading(103.0) == (0, 0)
    assert shown.deadline == 101.8


def test_one_default_turn_time():
    assert Clock().turn_time_ms == DEFAULT_TURN_TIME_MS == MatchSpec.terms.turn_time_ms


# -- the arbiter's clocks under virtual time ------------------------------------------------
class Inbox:
    """A subscription sink: the events of one game, in order."""

    def __init__(self) -> None:
        self.send_channel, self.receive = trio.open_memory_channel(1000)

    def send(self, event) -> None:
        self.send_channel.send_nowait(event)

    def close(self) -> None:
        self.send_channel.close()

    async def next(self, kind: EventType):
        async for event in self.receive:
            if event.type is kind:
                return event
        raise AssertionError(f"the stream ended before {kind.name}")


async def started_game(nursery, tmp_path, spec: dict | None = None, **terms):
    """An arbiter and a started game between two open seats, on ``terms`` (clocks) and
    further MatchSpec fields ``spec``; returns (arbiter, game, the seats' token digests,
    inbox)."""
    arbiter = Arbiter(SQLiteStore(str(tmp_path / "clock.db")))
    await nursery.start(arbiter.run)
    spec = MatchSpec(
        options=GameOptions(),
        target=1,
        first=("", "a"),
        second=("", "b"),
        seed=7,
        terms=Terms(**terms),
        **(spec or {}),
    )
    match, t1, t2 = await arbiter.seating.create_match(None, spec)  # None: the server itself
    game = match.current
    inbox, other = Inbox(), Inbox()
    t1, t2 = token_hash(t1), token_hash(t2)  # (the edge sends the core tokens' digests)
    await arbiter.actions.subscribe(t1, game.id, 0, False, lambda *_: inbox)
    await arbiter.actions.subscribe(t2, game.id, 0, False, lambda *_: other)
    return arbiter, game, (t1, t2), inbox


def mover_token(game, tokens) -> str:
    seat = game.seat_of(game.position.turn).index
    return tokens[seat]


async def test_play_is_charged_up_to_its_arrival(nursery, tmp_path, autojump_clock):
    arbiter, game, tokens, inbox = await started_game(
        nursery, tmp_path, turn_time_ms=1000, time_bank_ms=400
    )
    turn = await inbox.next(EventType.TURN_STARTED)
    mover = game.position.turn
    start = trio.current_time()
    await trio.sleep(1.2)  # the side thinks 1.2 s: 200 ms out of its bank
    arrival = arbiter.arrivals.stamp(game.id)
    await trio.sleep(5.0)  # the core is 5 s behind: past the deadline (start + 1.4 s)
    assert game.result is None  # the timeout waits for the play that arrived in time
    play = turn.snapshot.legal[0]
    answer = await arbiter.actions.submit_play(
        mover_token(game, tokens), game.id, game.turn_id, None, play.end.text(), arrival
    )
    assert answer.used_ms == pytest.approx(1200, abs=1)
    assert game.clocks[mover].bank_ms == pytest.approx(200, abs=1)
    assert arrival.time - start == pytest.approx(1.2)
    assert len(arbiter.arrivals) == 0
    made = await inbox.next(EventType.PLAY_MADE)
    assert made.play.used_ms == answer.used_ms


async def test_play_that_arrived_late_is_refused_and_the_side_loses(
    nursery, tmp_path, autojump_clock
):
    arbiter, game, tokens, inbox = await started_game(nursery, tmp_path, turn_time_ms=1000)
    turn = await inbox.next(EventType.TURN_STARTED)
    await trio.sleep(1.0)  # exactly at the deadline: too late
    arrival = arbiter.arrivals.stamp(game.id)
    with pytest.raises(ArbiterError, match="clock ran out|the game is over"):
        await arbiter.actions.submit_play(
            mover_token(game, tokens),
            game.id,
            game.turn_id,
            None,
            turn.snapshot.legal[0].end.text(),
            arrival,
        )
    await inbox.next(EventType.GAME_FINISHED)
    assert game.result.termination is Termination.TIMEOUT


async def test_timeout_fires_at_the_deadline(nursery, tmp_path, autojump_clock):
    arbiter, game, tokens, inbox = await started_game(
        nursery, tmp_path, turn_time_ms=2000, time_bank_ms=500
    )
    await inbox.next(EventType.TURN_STARTED)
    start = trio.current_time()
    await inbox.next(EventType.GAME_FINISHED)
    assert trio.current_time() - start == pytest.approx(2.5)
    assert game.status is Status.FINISHED
    assert game.result.termination is Termination.TIMEOUT
    assert not any(c.running for c in game.clocks.values())


async def test_illegal_play_in_time_does_not_stop_the_clock(nursery, tmp_path, autojump_clock):
    arbiter, game, tokens, inbox = await started_game(nursery, tmp_path, turn_time_ms=1000)
    await inbox.next(EventType.TURN_STARTED)
    start = trio.current_time()
    await trio.sleep(0.3)
    arrival = arbiter.arrivals.stamp(game.id)
    with pytest.raises(ArbiterError, match="illegal play"):
        await arbiter.actions.submit_play(
            mover_token(game, tokens), game.id, game.turn_id, "1/off", None, arrival
        )
    assert game.result is None and game.clocks[game.position.turn].running
    await inbox.next(EventType.GAME_FINISHED)
    assert trio.current_time() - start == pytest.approx(1.0)


async def test_stamps_for_unknown_games_do_not_hold_up_a_timeout(nursery, tmp_path, autojump_clock):
    arbiter, game, tokens, inbox = await started_game(nursery, tmp_path, turn_time_ms=1000)
    await inbox.next(EventType.TURN_STARTED)
    start = trio.current_time()
    stray = arbiter.arrivals.stamp("no-such-game")
    await inbox.next(EventType.GAME_FINISHED)
    assert trio.current_time() - start == pytest.approx(1.0)
    assert not arbiter.arrivals.settle(stray)  # no turn was waiting for it
    assert len(arbiter.arrivals) == 0


async def test_snapshot_shows_the_running_clock(nursery, tmp_path, autojump_clock):
    arbiter, game, tokens, inbox = await started_game(
        nursery, tmp_path, turn_time_ms=1000, time_bank_ms=1000
    )
    await inbox.next(EventType.TURN_STARTED)
    mover = game.position.turn
    await trio.sleep(1.5)
    mine, theirs = game.snapshot().clocks[mover], game.snapshot().clocks[mover.opponent]
    assert mine == (500, 500)
    assert theirs == (2000, 1000)


def test_sdk_turn_info_counts_down_since_the_state_arrived():
    import time

    from nardy.client import TurnInfo
    from nardy.v1 import game_pb2 as pb

    state = pb.GameState(
        your_color=pb.COLOR_BLACK,
        white_clock=pb.Clock(remaining_ms=9000, bank_ms=0),
        black_clock=pb.Clock(remaining_ms=2000, bank_ms=1000),
    )
    turn = TurnInfo(state, received=time.monotonic() - 0.5)  # the engine starts 0.5 s late
    assert 1400 <= turn.time_left_ms <= 1500
    assert turn.clock.bank_ms == 1000


async def test_timeout_waits_for_an_in_time_play_then_decides(nursery, tmp_path, autojump_clock):
    """An illegal play that arrived in time is judged first; then the timeout stands."""
    arbiter, game, tokens, inbox = await started_game(nursery, tmp_path, turn_time_ms=1000)
    await inbox.next(EventType.TURN_STARTED)
    await trio.sleep(0.9)
    arrival = arbiter.arrivals.stamp(game.id)
    await trio.sleep(3.0)  # the core is behind: the deadline passed 2.9 s ago
    assert game.result is None
    judged = trio.current_time()
    with pytest.raises(ArbiterError, match="illegal play"):
        await arbiter.actions.submit_play(
            mover_token(game, tokens), game.id, game.turn_id, "1/off", None, arrival
        )
    await inbox.next(EventType.GAME_FINISHED)
    assert game.result.termination is Termination.TIMEOUT
    assert trio.current_time() == pytest.approx(judged)


async def test_turn_sent_late_moves_the_deadline(nursery, tmp_path, autojump_clock):
    """The mover's stream sent the turn 0.4 s after the core announced it (a busy
    edge): the timeout fires 0.4 s later and a play is charged from the send."""
    arbiter, game, tokens, inbox = await started_game(nursery, tmp_path, turn_time_ms=1000)
    await inbox.next(EventType.TURN_STARTED)
    announced = trio.current_time()
    await trio.sleep(0.4)
    arbiter.actions.turn_sent(game.id, game.turn_id, trio.current_time())
    await trio.sleep(0.9)  # 1.3 s after the announcement, 0.9 s after the send
    arrival = arbiter.arrivals.stamp(game.id)
    play = game.legal[0]
    answer = await arbiter.actions.submit_play(
        mover_token(game, tokens), game.id, game.turn_id, None, play.end.text(), arrival
    )
    assert answer.used_ms == pytest.approx(900, abs=1)
    await inbox.next(EventType.PLAY_MADE)
    await inbox.next(EventType.TURN_STARTED)  # the other side: never sent, times out
    second = trio.current_time()
    await inbox.next(EventType.GAME_FINISHED)
    assert trio.current_time() - second == pytest.approx(1.0)
    assert second > announced


async def test_a_timeout_waits_for_the_plays_the_edge_stamped_in_time(
    nursery, tmp_path, autojump_clock
):
    """Past the deadline the turn asks the edge's fence for plays stamped before it and
    not read yet: the core reads one meanwhile (stamped 0.5 s into the turn, read 4 s
    late), judges it, and it stands, charged 0.5 s."""
    arbiter, game, tokens, inbox = await started_game(nursery, tmp_path, turn_time_ms=1000)
    turn = await inbox.next(EventType.TURN_STARTED)
    start = trio.current_time()
    mover = mover_token(game, tokens)
    fences: list[float] = []
    answers: list = []

    async def play(arrival) -> None:
        end = turn.snapshot.legal[0].end.text()
        answer = await arbiter.actions.submit_play(mover, game.id, game.turn_id, None, end, arrival)
        answers.append(answer)

    class SlowLink:  # the edge, behind a slow link
        def __init__(self, game_id: str, before: float) -> None:
            self.game_id, self.before = game_id, before
            fences.append((trio.current_time(), before))

        async def answer(self) -> None:
            await trio.sleep(4.0)  # the play is read only now
            nursery.start_soon(play, arbiter.arrivals.stamp(self.game_id, start + 0.5))

    def fence(game_id: str, turn_id: int, before: float) -> SlowLink:
        return SlowLink(game_id, before)

    arbiter.arrivals.fence = fence
    made = await inbox.next(EventType.PLAY_MADE)
    # asked once, a little ahead of the deadline
    assert fences == [(pytest.approx(start + 0.9), pytest.approx(start + 1.0))]
    assert game.result is None or game.result.termination is not Termination.TIMEOUT
    assert answers[0].used_ms == made.play.used_ms == pytest.approx(500, abs=1)


async def test_an_accepted_challenge_gives_both_seats_the_start_timeout_again(
    nursery, tmp_path, autojump_clock
):
    """A challenge must be answered within the match's start timeout; once accepted, both
    seats have that timeout again to come (a challenge accepted in its last second would
    otherwise leave nobody time to subscribe), and no longer. GetGame says whether it is
    still pending."""
    arbiter = Arbiter(SQLiteStore(str(tmp_path / "clock.db")))
    await nursery.start(arbiter.run)
    digests = {}
    for name in ("alice", "bob"):
        _, token = await arbiter.roster.register(AS_OPERATOR, name, False)
        digests[name] = token_hash(token)
    alice = Caller(arbiter.roster.authenticate(digests["alice"]))
    spec = MatchSpec(
        options=GameOptions(),
        target=1,
        first=("alice", ""),
        second=("bob", ""),
        start_timeout_ms=60_000,
    )
    match, _, _ = await arbiter.seating.create_match(alice, spec)
    game = match.current
    await trio.sleep(50)
    assert game.told().challenge_pending
    autojump_clock.autojump_threshold = float("inf")  # (no jump while the store writes)
    await arbiter.seating.accept_challenge(digests["bob"], match.id)
    autojump_clock.autojump_threshold = 0
    assert not game.told().challenge_pending
    await trio.sleep(30)  # past the first 60 s: the seats may still come
    assert game.status is Status.WAITING
    await trio.sleep(35)  # past 60 s after the acceptance: called off now
    with trio.fail_after(60):
        while game.status is Status.WAITING:  # (its end on its way to the store)
            await trio.sleep(1)
    assert game.status is Status.ABORTED


def test_a_turn_may_wait_for_its_side_to_come_back():
    c = Clock(turn_time_ms=1000)
    assert c.start(10.0, wait=30.0) == 41.0  # nobody there yet: the time runs from +30 s
    assert c.reading(12.0) == (1000, 0)  # shown whole while it waits
    assert c.sent(13.5, most=2.0) == 14.5  # the side came back and was sent its turn
    c.start(50.0, wait=30.0)
    assert c.sent(49.0, most=2.0) == 51.0  # never earlier than the announcement
    c.start(60.0, wait=30.0)
    assert c.sent(99.0, most=2.0) == 91.0  # nor later than the wait


async def test_a_resumed_game_waits_for_its_seats_to_come_back(nursery, tmp_path, autojump_clock):
    """A game resumed after a restart: the mover's time runs from when its reconnected
    stream is sent the turn again, not from the restart (the outage and the reconnection
    are not charged); a seat that never comes loses once RECONNECT_S and its time are up."""
    async with trio.open_nursery() as first_life:
        arbiter, game, tokens, inbox = await started_game(first_life, tmp_path, turn_time_ms=1000)
        await inbox.next(EventType.TURN_STARTED)
        game_id, turn_id, mover = game.id, game.turn_id, game.position.turn
        first_life.cancel_scope.cancel()  # the server stops mid-turn
    await arbiter.store.close()
    autojump_clock.autojump_threshold = float("inf")  # (no jump while the store reads)
    arbiter = Arbiter(SQLiteStore(str(tmp_path / "clock.db")))
    await nursery.start(arbiter.run)
    restarted = trio.current_time()
    game = await arbiter.tables.game(game_id)
    assert game.turn_id == turn_id and game.result is None
    autojump_clock.autojump_threshold = 0
    await trio.sleep(5.0)  # the bots reconnect with their back-off: 5 s, beyond the turn time
    assert game.result is None
    arbiter.actions.turn_sent(game_id, turn_id, trio.current_time())  # the edge sent the turn
    await trio.sleep(0.6)
    arrival = arbiter.arrivals.stamp(game_id)
    play = game.legal[0]
    answer = await arbiter.actions.submit_play(
        mover_token(game, tokens), game_id, turn_id, None, play.end.text(), arrival
    )
    assert answer.used_ms == pytest.approx(600, abs=1)  # charged from the send only
    # the other seat is not back: its turn waits until RECONNECT_S after the restart, then
    # its time runs out
    await game.ended.wait()
    assert game.result.termination is Termination.ABANDONMENT and game.result.loser is not mover
    assert trio.current_time() - restarted == pytest.approx(RECONNECT_S + 1.0, abs=0.01)


async def test_a_ladder_bot_whose_seat_is_not_there_is_benched(nursery, tmp_path, autojump_clock):
    """A bot that stays ready in a ladder but has crashed or hangs (its seats never come)
    is not paired again and again: each pair it misses benches it for BENCH_S (one that
    never came, NEWCOMER_BENCH_S), twice as long each time, while the bots that play go on
    meeting each other. Nor is one that comes to one game of each pair only and says it is
    ready again and again."""
    autojump_clock.autojump_threshold = 0.02  # (time stands while the store writes)
    arbiter = Arbiter(SQLiteStore(str(tmp_path / "clock.db")), admin_hash=token_hash("op"))
    await nursery.start(arbiter.run)
    await arbiter.ladders.create(token_hash("op"), "club", LadderOptions(turn_time_ms=1000))
    digests = {}
    for name in ("gone", "ann", "bob"):
        _, token = await arbiter.roster.register(AS_OPERATOR, name, False)
        digests[name] = token_hash(token)
        await arbiter.ladders.join(digests[name], "club", True)
    ladder = arbiter.ladders.ladder("club")
    away = {"gone"}  # whose seats never come
    dodging: set[str] = set()  # whose seats come to one game of each pair only

    async def seat(digest: str, game_id: str) -> None:
        """A seat that plays the first legal play at once, to the game's end."""
        inbox = Inbox()
        await arbiter.actions.subscribe(digest, game_id, 0, False, lambda *_: inbox)
        game = await arbiter.tables.game(game_id)
        async for event in inbox.receive:
            if event.type is EventType.GAME_FINISHED:
                return
            legal = event.snapshot.legal if event.type is EventType.TURN_STARTED else ()
            if legal and game.seat_of(game.position.turn).name not in away:
                with contextlib.suppress(ArbiterError):  # (the other seat's turn)
                    await arbiter.actions.submit_play(
                        digest, game_id, event.snapshot.turn_id, None, legal[0].end.text()
                    )

    seated: set[str] = set()

    async def ladder_plays(seconds: float, until=lambda: False) -> None:
        """The ladder's (virtual) time passes, its games seated, until ``until()``."""
        with trio.move_on_after(seconds):
            while not until():
                for game_id in list(ladder.in_progress - seated):
                    seated.add(game_id)
                    game = await arbiter.tables.game(game_id)
                    for s in game.match.seats:
                        if s.name not in away and not (s.name in dodging and s.index):
                            nursery.start_soon(seat, digests[s.name], game_id)
                for name in dodging:
                    await arbiter.ladders.join(digests[name], "club", True)
                await trio.sleep(5)

    member = next(m for m in ladder.members.values() if m.name == "gone")
    # a newcomer that never comes and says it is ready every 5 s (as a restarted engine
    # would; registering is free: ten of them held a ladder's bots in pairs that waited
    # for them): benched NEWCOMER_BENCH_S after its first pair, however ready it says it is
    dodging.add("gone")
    start = trio.current_time()
    await ladder_plays(200)
    dodging.clear()
    rows = rows_of(ladder)
    assert rows["gone"].games == 2 and rows["gone"].wins == 0  # (one pair, not 3)
    assert member.ready and member.benched == 1
    assert member.benched_until > trio.current_time()
    # and its opponent waited NEWCOMER_START_TIMEOUT_MS for it, not a pair's 30 s
    assert member.benched_until - NEWCOMER_BENCH_S - start < 15
    assert ladder.met[frozenset(("ann", "bob"))] > 20  # ann and bob met on and on
    # back after its bench, it plays a game out: its misses are cleared; ready again after
    # one miss, it is back at once (a restarted engine)
    away.clear()
    await ladder_plays(3600, until=lambda: member.benched == 0)
    assert member.benched == 0
    away.add("gone")
    await ladder_plays(300, until=lambda: member.benched == 1)
    assert member.benched == 1 and member.benched_until > trio.current_time()
    await arbiter.ladders.join(digests["gone"], "club", True)
    assert member.benched_until < trio.current_time()
    # it plays one game of each pair out, leaves the other and is ready again every 5 s:
    # the game played out clears nothing, and its benches grow as a dead bot's do
    away.clear()
    await ladder_plays(3600, until=lambda: member.benched == 0)
    dodging.add("gone")
    before = rows_of(ladder)["gone"].games
    await ladder_plays(600)
    assert rows_of(ladder)["gone"].games - before <= 12  # at most 6 pairs (not a pair a 35 s)
    # a restarted engine says it is ready before the pair it missed is over: not benched
    dodging.clear()
    await ladder_plays(3600, until=lambda: member.benched == 0)
    away.add("gone")
    missed = member.missed_pair
    await ladder_plays(300, until=lambda: member.playing > 0)
    await arbiter.ladders.join(digests["gone"], "club", True)
    await ladder_plays(300, until=lambda: member.missed_pair != missed)
    assert member.benched == 1 and member.benched_until < trio.current_time()


def rows_of(ladder) -> dict:
    """The ladder's standings by name."""
    return {row.name: row for row in ladder.rows()}
