"""The SDK's seat over the bidirectional ``Play`` stream: a whole game through ``play_game``,
the fallback to SubscribeGame + SubmitPlay where the arbiter does not offer Play (one that
predates it) or the client asks for unary calls, a connection lost mid-game (the waiting turn
announced again by a SNAPSHOT, a play whose answer was lost sent again and answered as a
duplicate), and plays refused on the stream. Real arbiters on loopback; which RPCs the SDK
calls is seen by a client interceptor on its channel, connections are cut by a TCP relay."""

from __future__ import annotations

import threading
from collections import Counter

import grpc
import pytest
import trio

from nardy.client import Client, channel, play_game
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from nardy.variant import variant
from server.app import EmbeddedServer
from tests.relay import Proxy
from tests.server.conftest import random_engine

ILLEGAL = "24/21 24/23"  # with 3-1 from the start: two checkers off the head (RULES.md §3.4)
WHITE_3_1 = [2, 1, 3, 1]  # opening throw 2-1: the first seat is white, then 3-1


class Calls(
    grpc.UnaryUnaryClientInterceptor,
    grpc.UnaryStreamClientInterceptor,
    grpc.StreamUnaryClientInterceptor,
    grpc.StreamStreamClientInterceptor,
):
    """Counts the RPCs made on a channel, by method name."""

    def __init__(self) -> None:
        self.made: Counter[str] = Counter()
        self.lock = threading.Lock()

    def _note(self, details) -> None:
        with self.lock:
            self.made[details.method.rsplit("/", 1)[-1]] += 1

    def intercept_unary_unary(self, continuation, details, request):
        self._note(details)
        return continuation(details, request)

    def intercept_unary_stream(self, continuation, details, request):
        self._note(details)
        return continuation(details, request)

    def intercept_stream_unary(self, continuation, details, requests):
        self._note(details)
        return continuation(details, requests)

    def intercept_stream_stream(self, continuation, details, requests):
        self._note(details)
        return continuation(details, requests)


def recorded(address: str, **options) -> tuple[Client, Calls]:
    """An anonymous client whose calls are counted (its channel closed with ``close_all``)."""
    calls = Calls()
    ch = grpc.intercept_channel(channel(address), calls)
    return Client(address, shared=ch, **options), calls


class Counted:
    """A seeded random engine that counts the turns it was asked about."""

    def __init__(self, seed: int, first: str | None = None) -> None:
        self.choose = random_engine(seed)
        self.first = first  # the answer to its first turn, if given
        self.asked: list[int] = []
        self.first_legal: str = ""

    def __call__(self, turn):
        self.asked.append(turn.state.turn_id)
        if self.first is not None and len(self.asked) == 1:
            self.first_legal = turn.legal[0].notation
            return self.first
        return self.choose(turn)


async def history(client: Client, game_id: str) -> list[pb.GameEvent]:
    return [ev async for ev in client.events(game_id, from_start=True)]


def plays_by(events: list[pb.GameEvent], color: int) -> list[pb.PlayRecord]:
    return [
        ev.play for ev in events if ev.type == pb.EVENT_TYPE_PLAY_MADE and ev.play.side == color
    ]


async def play_both(seats, game_id: str, engines, **kwargs) -> list[pb.GameState]:
    finals: list[pb.GameState | None] = [None, None]

    async def one(i: int) -> None:
        finals[i] = await play_game(seats[i], game_id, engines[i], **kwargs)

    with trio.fail_after(120):
        async with trio.open_nursery() as n:
            for i in (0, 1):
                n.start_soon(one, i)
    return finals  # type: ignore[return-value]


async def test_a_whole_game_over_play_streams_asks_each_engine_once_per_turn(arbiter):
    (a, calls_a), (b, calls_b) = recorded(arbiter.address), recorded(arbiter.address)
    try:
        r = await a.create_match(seed=11)
        seats = [a.with_token(r.first_seat_token), b.with_token(r.second_seat_token)]
        engines = [Counted(1), Counted(2)]
        finals = await play_both(seats, r.game_id, engines)
        for calls in (calls_a, calls_b):  # one Play stream per seat, nothing else per turn
            assert calls.made["Play"] == 1, calls.made
            assert calls.made["SubmitPlay"] == calls.made["SubscribeGame"] == 0, calls.made
        assert finals[0].status == finals[1].status == pb.GAME_STATUS_FINISHED
        assert finals[0].result == finals[1].result
        events = await history(a, r.game_id)
        for final, engine in zip(finals, engines, strict=True):
            made = plays_by(events, final.your_color)
            assert [p.turn_id for p in made] == engine.asked  # each turn asked once, played
            assert not any(p.automatic for p in made)
        assert events[-1].state.white_refused == events[-1].state.black_refused == 0
    finally:
        a.channel.close()
        b.channel.close()


async def test_without_play_the_sdk_falls_back_to_subscribe_game_and_submit_play(tmp_path):
    """An arbiter without Play answers it with UNIMPLEMENTED: the seats play over
    SubscribeGame and SubmitPlay, and the client remembers it for the next game."""
    with EmbeddedServer(db=str(tmp_path / "f.db"), play_stream=False) as srv:
        base, calls = recorded(srv.address)
        try:
            asked = 0
            for game in (1, 2):
                r = await base.create_match(seed=game)
                seats = [base.with_token(r.first_seat_token), base.with_token(r.second_seat_token)]
                engines = [Counted(1), Counted(2)]
                finals = await play_both(seats, r.game_id, engines)
                assert [f.status for f in finals] == [pb.GAME_STATUS_FINISHED] * 2
                asked += sum(len(e.asked) for e in engines)
                if game == 1:
                    tried = calls.made["Play"]
                    assert tried in (1, 2), calls.made  # (both seats may try at once)
                    assert srv.address in base.routes.unary
            assert calls.made["Play"] == tried, calls.made  # not asked again
            assert calls.made["SubmitPlay"] == asked, calls.made  # one call per turn
            assert calls.made["SubscribeGame"] >= 4, calls.made
        finally:
            base.channel.close()


async def test_transport_unary_never_opens_a_play_stream(arbiter):
    (a, calls_a), (b, calls_b) = (
        recorded(arbiter.address, transport="unary"),
        recorded(arbiter.address),
    )
    try:
        r = await a.create_match(seed=12)
        seats = [a.with_token(r.first_seat_token), b.with_token(r.second_seat_token)]
        engines = [Counted(3), Counted(4)]
        finals = await play_both(seats, r.game_id, engines)
        assert [f.status for f in finals] == [pb.GAME_STATUS_FINISHED] * 2
        assert calls_a.made["Play"] == 0, calls_a.made
        assert calls_a.made["SubmitPlay"] == len(engines[0].asked), calls_a.made
        assert calls_b.made["Play"] == 1 and calls_b.made["SubmitPlay"] == 0, calls_b.made
        with pytest.raises(ValueError, match="transport"):
            await play_game(seats[0], r.game_id, engines[0], transport="carrier pigeon")
        with pytest.raises(ValueError, match="transport"):
            Client(arbiter.address, transport="carrier pigeon")
    finally:
        a.channel.close()
        b.channel.close()


async def until_played(spectator: Client, game_id: str, turn_id: int, after_seq: int) -> None:
    """Wait for the arbiter's PLAY_MADE of ``turn_id``."""
    async for ev in spectator.events(game_id, after_seq=after_seq):
        if ev.type == pb.EVENT_TYPE_PLAY_MADE and ev.play.turn_id == turn_id:
            return


async def test_a_play_stream_resumes_after_lost_connections(arbiter):
    """Through a relay. Cut on the seat's waiting turn: the new stream announces the turn
    again at once (a SNAPSHOT: the same turn, the same legal plays). Cut after a play
    reached the arbiter but before its answer came back: the play is sent again on the new
    stream and answered as a duplicate."""
    proxy = Proxy(arbiter.port)
    try:
        async with Client(arbiter.address) as direct, Client(proxy.address) as relayed:
            r = await direct.create_match(seed=3)
            stream = relayed.with_token(r.first_seat_token).play_stream(r.game_id)
            phase, first, second = "cut on the turn", None, None
            answers: list[tuple[int, api.SubmitPlayResponse]] = []
            with trio.fail_after(60):
                async with trio.open_nursery() as n:
                    n.start_soon(play_game, direct.with_token(r.second_seat_token), r.game_id,
                                 random_engine(5))  # fmt: skip
                    async for response, play in aiter(stream):
                        if play is not None:
                            assert response.WhichOneof("kind") == "played", response
                            answers.append((play.turn_id, response.played))
                            if phase == "resign" and play.turn_id == second.state.turn_id:
                                await direct.with_token(r.first_seat_token).resign(r.game_id)
                                phase = "over"
                            continue
                        ev = response.event
                        if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                            break
                        if not ev.state.legal_plays or phase == "over":
                            continue
                        if phase == "cut on the turn":
                            first, phase = ev, "announced again"
                            proxy.cut()
                        elif phase == "announced again":
                            assert ev.type == pb.EVENT_TYPE_SNAPSHOT
                            assert ev.seq == first.seq
                            assert ev.state.turn_id == first.state.turn_id
                            assert ev.state.legal_plays == first.state.legal_plays
                            end = ev.state.legal_plays[0].end_position
                            stream.send(api.SubmitPlayRequest(turn_id=ev.state.turn_id,
                                                              end_position=end))  # fmt: skip
                            phase = "answer lost"
                        elif phase == "answer lost" and ev.state.turn_id > first.state.turn_id:
                            second, phase = ev, "resign"
                            proxy.hold()  # the arbiter's answer will not come back
                            end = ev.state.legal_plays[-1].end_position
                            stream.send(api.SubmitPlayRequest(turn_id=ev.state.turn_id,
                                                              end_position=end))  # fmt: skip
                            await until_played(direct, r.game_id, ev.state.turn_id, ev.seq)
                            proxy.cut()
                    n.cancel_scope.cancel()
        assert phase == "over"
        (t1, a1), (t2, a2) = answers
        assert (t1, a1.duplicate) == (first.state.turn_id, False)
        assert (t2, a2.duplicate) == (second.state.turn_id, True)
        assert a2.end_position == second.state.legal_plays[-1].end_position
    finally:
        proxy.close()


async def test_refused_plays_on_the_stream_and_an_engine_whose_play_is_illegal(arbiter):
    """An illegal play is refused on the stream (INVALID_ARGUMENT, the rule in words) and
    counted; a play for a turn that is not waiting is refused (FAILED_PRECONDITION) and not
    counted; the stream goes on and takes the legal play. Through play_game an engine's
    illegal answer is replaced by the turn's first legal play before it is sent (it was sent,
    refused and counted: three such lose a ladder game), without asking it again."""
    async with Client(arbiter.address) as c:
        r = await c.create_match(dice=WHITE_3_1)
        stream = c.with_token(r.first_seat_token).play_stream(r.game_id)
        refusals = []
        turn = pb.GameState()
        with trio.fail_after(60):
            async with trio.open_nursery() as n:
                n.start_soon(play_game, c.with_token(r.second_seat_token), r.game_id,
                             random_engine(6))  # fmt: skip
                async for response, play in aiter(stream):
                    kind = response.WhichOneof("kind")
                    if kind == "refused":
                        refusals.append((play.turn_id, response.refused))
                        if len(refusals) == 2:
                            legal = turn.legal_plays[0].end_position
                            stream.send(api.SubmitPlayRequest(turn_id=1, end_position=legal))
                    elif kind == "played":
                        assert play.turn_id == 1 and not response.played.duplicate
                        await c.with_token(r.first_seat_token).resign(r.game_id)
                    elif response.event.state.legal_plays and not refusals:
                        turn = response.event.state
                        assert turn.turn_id == 1 and list(turn.dice) == [3, 1]
                        stream.send(api.SubmitPlayRequest(turn_id=1, notation=ILLEGAL))
                        stream.send(api.SubmitPlayRequest(turn_id=7, notation="24/21 21/20"))
                n.cancel_scope.cancel()
        (t1, illegal), (t2, wrong_turn) = refusals
        assert (t1, illegal.turn_id, illegal.code) == (
            1,
            1,
            grpc.StatusCode.INVALID_ARGUMENT.value[0],
        )
        assert "illegal play" in illegal.message
        assert (t2, wrong_turn.code) == (7, grpc.StatusCode.FAILED_PRECONDITION.value[0])
        final = (await c.get_game(r.game_id)).state
        assert final.white_refused == 1 and final.result.termination == pb.TERMINATION_RESIGNATION

        r = await c.create_match(dice=WHITE_3_1)
        seats = [c.with_token(r.first_seat_token), c.with_token(r.second_seat_token)]
        engines = [Counted(7, first=ILLEGAL), Counted(8)]
        finals = await play_both(seats, r.game_id, engines)
        assert finals[0].your_color == pb.COLOR_WHITE
        assert finals[0].status == pb.GAME_STATUS_FINISHED
        assert finals[0].white_refused == 0 and finals[0].black_refused == 0
        white = plays_by(await history(c, r.game_id), pb.COLOR_WHITE)
        assert white[0].turn_id == 1 and white[0].notation == engines[0].first_legal
        assert [p.turn_id for p in white] == engines[0].asked  # turn 1 asked once


class Answers:
    """An engine whose first answer is ``first(turn)``, then the first legal play."""

    def __init__(self, first) -> None:
        self.first = first
        self.asked = 0

    def __call__(self, turn):
        self.asked += 1
        return self.first(turn) if self.asked == 1 else turn.legal[0]


def library_play(turn):
    return turn.variant.legal_plays(turn.position, turn.dice)[-1]


@pytest.mark.parametrize(
    "first, made",
    [
        (lambda turn: None, "first"),  # (it once ended the bot: AttributeError)
        (lambda turn: 42, "first"),
        (lambda turn: turn.legal[-1].end_position, "last"),  # an end position as notation
        (library_play, "last"),  # a play of the rules library (it once ended the bot)
        (lambda turn: api.SubmitPlayRequest(), "first"),
    ],
)
async def test_whatever_an_engine_answers_the_bot_plays_on_and_nothing_is_refused(
    arbiter, first, made
):
    """A bot that answers what is no legal play loses the quality of a move, never the
    game: the SDK checks the answer against the turn's plays before sending it, plays the
    first legal one instead (and logs it), and the arbiter refuses nothing."""
    async with Client(arbiter.address) as c:
        r = await c.create_match(dice=WHITE_3_1)
        seats = [c.with_token(r.first_seat_token), c.with_token(r.second_seat_token)]
        finals = await play_both(seats, r.game_id, [Answers(first), Counted(8)])
        assert finals[0].status == pb.GAME_STATUS_FINISHED
        assert finals[0].white_refused == 0
        events = await history(c, r.game_id)
        turn = next(ev.state for ev in events if ev.type == pb.EVENT_TYPE_TURN_STARTED)
        rules = variant(turn.options.variant)  # (the turn's plays, in the arbiter's order)
        plays = rules.legal_plays(rules.parse(turn.position), tuple(turn.dice))
        expected = plays[0 if made == "first" else -1].notation()
        assert plays_by(events, pb.COLOR_WHITE)[0].notation == expected


def test_a_turn_refused_for_good_and_announced_again_is_played():
    """A turn refused for time by an instance that had stood still while another took its
    game over is announced again by the new one (a new TURN_STARTED, the same turn_id): the
    seat plays it, where it used to take the refusal as the last word and lose on time.
    Deliveries of the turn from before the refusal (a resumed stream's backlog) are not."""
    from nardy.client import _Seat

    def turn(turn_id: int, seq: int) -> pb.GameEvent:
        state = pb.GameState(
            status=pb.GAME_STATUS_IN_PROGRESS,
            turn_id=turn_id,
            side_to_move=pb.COLOR_WHITE,
            your_color=pb.COLOR_WHITE,
            legal_plays=[pb.LegalPlay(notation="24/21 21/20")],
        )
        return pb.GameEvent(seq=seq, type=pb.EVENT_TYPE_TURN_STARTED, state=state)

    seat = _Seat("g", random_engine())
    first = turn(5, 10)
    seat.seen(first)
    assert seat.wants(first)
    seat.finished(5)  # refused: "your clock ran out"
    assert not seat.wants(first) and not seat.wants(turn(5, 9))
    again = turn(5, 12)
    seat.seen(again)
    assert seat.wants(again)
    seat.finished(5)
    assert not seat.wants(again) and seat.wants(turn(6, 13))
