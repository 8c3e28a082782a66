"""The contract as docs/PROTOCOL.md and the .proto comments state it, over real
gRPC: resuming re-announces a waiting turn, which events carry legal plays and results,
what is counted, colours and players before the start, who may view a game."""

from __future__ import annotations

import math

import grpc
import pytest
import trio

from nardy.client import Client
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from tests.server.conftest import create

FIRST_WHITE = [2, 1]  # opening throw: the first player's die is higher, it plays white
START = "w/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0"
# White has two checkers left, both on its point 1; black has borne off nothing.
LAST_TWO = "w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,2"
# White to move with 6-5 has no legal play (every landing point is black's).
BLOCKED = "w/13,1,1,0,0,-1,-1,-1,-1,0,0,0,-11,0,0,0,0,0,0,0,0,0,0,0"


class Follower:
    """One subscription read in the background; events arrive on a channel."""

    def __init__(self, client: Client, game_id: str, **request) -> None:
        self.client = client
        self.game_id = game_id
        self.request = request
        self.send, self.recv = trio.open_memory_channel(math.inf)
        self.scope = trio.CancelScope()

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        with self.scope:
            try:
                async for ev in self.client.events(self.game_id, resume=False, **self.request):
                    self.send.send_nowait(ev)
            except grpc.RpcError as e:
                self.send.send_nowait(e)

    async def next(self, *types: int) -> pb.GameEvent:
        """The next event (of one of ``types``, skipping others)."""
        while True:
            item = await self.recv.receive()
            if isinstance(item, grpc.RpcError):
                raise item
            if not types or item.type in types:
                return item

    def drop(self) -> None:
        self.scope.cancel()


async def follow(nursery, client: Client, game_id: str, **request) -> Follower:
    f = Follower(client, game_id, **request)
    await nursery.start(f.run)
    return f


async def started(nursery, client, **fields):
    """A match with open seats, the first one white, both following: (r, white, black, the
    white stream, the black stream, white's first TURN_STARTED)."""
    fields.setdefault("dice", [*FIRST_WHITE, 6, 5])
    r, (white, black) = await create(client, seed=5, **fields)
    w = await follow(nursery, white, r.game_id)
    b = await follow(nursery, black, r.game_id)
    turn = await w.next(pb.EVENT_TYPE_TURN_STARTED)
    return r, white, black, w, b, turn


async def test_resuming_after_your_own_turn_started_announces_the_turn_again(client):
    """after_seq = the seq of your unanswered TURN_STARTED gets a SNAPSHOT
    with the legal plays at once (not after a heartbeat); the other seat gets nothing."""
    async with trio.open_nursery() as n:
        r, white, black, w, b, turn = await started(n, client)
        assert turn.state.legal_plays and turn.state.your_color == pb.COLOR_WHITE
        w.drop()
        b.drop()
        again = await follow(n, white, r.game_id, after_seq=turn.seq)
        ev = await again.next()
        assert ev.type == pb.EVENT_TYPE_SNAPSHOT
        assert ev.seq == turn.seq  # not a new event
        assert ev.state.turn_id == turn.state.turn_id
        assert [p.end_position for p in ev.state.legal_plays] == [
            p.end_position for p in turn.state.legal_plays
        ]
        other = await follow(n, black, r.game_id, after_seq=turn.seq)
        await white.submit(
            r.game_id, ev.state.turn_id, end_position=ev.state.legal_plays[0].end_position
        )
        first = await other.next()
        assert first.type == pb.EVENT_TYPE_PLAY_MADE  # no SNAPSHOT for the seat not to move
        assert first.seq == turn.seq + 1
        n.cancel_scope.cancel()


async def test_a_heartbeat_carries_the_latest_seq_and_the_full_state(tmp_path):
    """HEARTBEAT repeats the latest seq and carries the state, the legal
    plays included for the seat whose turn waits."""
    with EmbeddedServer(db=str(tmp_path / "h.db"), heartbeat_s=0.2) as srv:
        async with Client(srv.address) as c, trio.open_nursery() as n:
            r, white, black, w, b, turn = await started(n, c)
            beat = await w.next(pb.EVENT_TYPE_HEARTBEAT)
            assert beat.seq == turn.seq
            assert beat.state.turn_id == turn.state.turn_id
            assert len(beat.state.legal_plays) == len(turn.state.legal_plays)
            assert beat.state.white_clock.remaining_ms <= turn.state.white_clock.remaining_ms
            other = await b.next(pb.EVENT_TYPE_HEARTBEAT)
            assert other.seq == turn.seq and not other.state.legal_plays
            n.cancel_scope.cancel()


async def test_replayed_turns_that_are_over_carry_no_legal_plays(client):
    """from_start replays every event, but only the waiting turn's
    TURN_STARTED still offers plays."""
    async with trio.open_nursery() as n:
        r, white, black, w, b, turn = await started(n, client, dice=[*FIRST_WHITE, 6, 5, 3, 1])
        await white.submit(r.game_id, 1, end_position=turn.state.legal_plays[0].end_position)
        pending = await b.next(pb.EVENT_TYPE_TURN_STARTED)
        if pending.state.turn_id == 1:
            pending = await b.next(pb.EVENT_TYPE_TURN_STARTED)
        assert pending.state.turn_id == 2 and pending.state.legal_plays
        for seat, color in ((white, pb.COLOR_WHITE), (black, pb.COLOR_BLACK)):
            replay = await follow(n, seat, r.game_id, from_start=True)
            types = []
            while len(types) < pending.seq:
                ev = await replay.next()
                types.append(ev.type)
                if ev.type != pb.EVENT_TYPE_TURN_STARTED:
                    assert not ev.state.legal_plays
                elif ev.state.turn_id == 1:
                    assert not ev.state.legal_plays  # played already
                else:
                    assert bool(ev.state.legal_plays) == (color == pb.COLOR_BLACK)
            assert types == [
                pb.EVENT_TYPE_GAME_STARTED,
                pb.EVENT_TYPE_TURN_STARTED,
                pb.EVENT_TYPE_PLAY_MADE,
                pb.EVENT_TYPE_TURN_STARTED,
            ]
            replay.drop()
        n.cancel_scope.cancel()


async def test_snapshot_seq_and_resume_bounds(client):
    """a SNAPSHOT repeats the latest seq (0 while waiting); after_seq
    beyond the last event is INVALID_ARGUMENT."""
    r, _ = await create(client)
    async with trio.open_nursery() as n:
        watcher = await follow(n, client, r.game_id)
        snap = await watcher.next()
        assert snap.type == pb.EVENT_TYPE_SNAPSHOT and snap.seq == 0
        assert snap.state.status == pb.GAME_STATUS_WAITING
        beyond = await follow(n, client, r.game_id, after_seq=1)
        with pytest.raises(grpc.RpcError) as info:
            await beyond.next()
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        n.cancel_scope.cancel()


async def test_the_result_comes_with_game_finished_not_with_the_last_play(client):
    """the deciding PLAY_MADE is IN_PROGRESS without a result; the result
    and the match score arrive together on GAME_FINISHED (RULES.md §5: mars, 2 points)."""
    async with trio.open_nursery() as n:
        r, white, black, w, b, turn = await started(n, client, start_position=LAST_TWO)
        (play,) = turn.state.legal_plays
        await white.submit(r.game_id, turn.state.turn_id, end_position=play.end_position)
        made = await w.next(pb.EVENT_TYPE_PLAY_MADE)
        assert made.state.status == pb.GAME_STATUS_IN_PROGRESS
        assert not made.state.HasField("result")
        assert made.state.match.white_points == 0
        done = await w.next(pb.EVENT_TYPE_GAME_FINISHED)
        assert done.state.result.kind == pb.RESULT_KIND_MARS
        assert done.state.result.points == 2 and done.state.match.white_points == 2
        n.cancel_scope.cancel()


@pytest.mark.parametrize("written", ["24/13", "24/19 19/13"], ids=["shorthand", "other-order"])
async def test_what_counts_as_a_refused_play_and_the_canonical_answer(client, written):
    """an empty request is not counted, an illegal play is; a
    shorthand, or full steps in another legal order, comes back (and is recorded) as the
    legal play's canonical notation."""
    async with trio.open_nursery() as n:
        r, white, black, w, b, turn = await started(n, client)
        gid, tid = r.game_id, turn.state.turn_id
        with pytest.raises(grpc.RpcError) as info:
            await white.call("SubmitPlay", api.SubmitPlayRequest(game_id=gid, turn_id=tid))
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        # nor is an empty notation (a client's default value, not a play: it counted)
        for blank in ("", "  "):
            with pytest.raises(grpc.RpcError) as info:
                await white.submit(gid, tid, notation=blank)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as info:  # a play too long says so
            await white.submit(gid, tid, notation="24/18 " * 40)
        assert "240 characters, at most 200" in info.value.details()
        assert (await white.get_game(gid)).state.white_refused == 0
        with pytest.raises(grpc.RpcError) as info:
            await white.submit(gid, tid, notation="24/12")
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (await white.get_game(gid)).state.white_refused == 1
        answer = await white.submit(gid, tid, notation=written)  # 6-5 with one checker
        canonical = {p.end_position: p.notation for p in turn.state.legal_plays}
        assert answer.notation == canonical[answer.end_position] != written
        made = await w.next(pb.EVENT_TYPE_PLAY_MADE)
        assert made.play.notation == answer.notation
        n.cancel_scope.cancel()


async def test_colours_and_players_are_known_as_soon_as_they_are_decided(client):
    """first/second player always; white/black and the player
    stream's colour from creation when no throw decides (a chosen colour; game 2 of a match
    whose colours alternate, RULES.md §2)."""
    r, (first, second) = await create(client, target_points=3, dice=[*FIRST_WHITE, 6, 5])
    waiting = (await client.get_game(r.game_id)).state
    assert waiting.status == pb.GAME_STATUS_WAITING
    assert (waiting.first_player.name, waiting.second_player.name) == ("player 1", "player 2")
    assert not waiting.HasField("white")  # the opening throw has yet to decide
    chosen, _ = await create(client, first_seat_color=pb.COLOR_BLACK)
    state = (await client.get_game(chosen.game_id)).state
    assert (state.white.name, state.black.name) == ("player 2", "player 1")

    async with trio.open_nursery() as n:
        announced = trio.open_memory_channel(math.inf)

        async def player_stream():
            async for ev in second.player_events(resume=False):
                announced[0].send_nowait(ev)

        n.start_soon(player_stream)
        ev = await announced[1].receive()
        assert ev.game_id == r.game_id and ev.color == pb.COLOR_UNSPECIFIED
        w = await follow(n, first, r.game_id)
        await follow(n, second, r.game_id)
        await w.next(pb.EVENT_TYPE_TURN_STARTED)
        await first.resign(r.game_id)  # white resigns game 1 (mars): the match goes on
        ev = await announced[1].receive()
        while ev.type != api.PLAYER_EVENT_TYPE_GAME_ASSIGNED:
            ev = await announced[1].receive()
        assert ev.game_id != r.game_id and ev.color == pb.COLOR_WHITE  # colours alternate
        nxt = (await client.get_game(ev.game_id)).state
        assert nxt.status == pb.GAME_STATUS_WAITING and nxt.game_number == 2
        assert (nxt.white.name, nxt.black.name) == ("player 2", "player 1")
        assert (nxt.match.white_points, nxt.match.black_points) == (2, 0)
        mine = (await second.get_game(ev.game_id)).state
        assert mine.your_color == pb.COLOR_WHITE
        n.cancel_scope.cancel()


async def test_a_token_must_hold_a_seat_and_get_game_shows_the_seat_its_turn(client):
    """a stranger's token is refused on GetGame and SubscribeGame; a seat
    token gets its own view, the legal plays on its waiting turn."""
    stranger = client.with_token(await client.with_token("").register("stranger"))
    async with trio.open_nursery() as n:
        r, white, black, w, b, turn = await started(n, client)
        gid = r.game_id
        with pytest.raises(grpc.RpcError) as info:
            await stranger.get_game(gid)
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        refused = await follow(n, stranger, gid)
        with pytest.raises(grpc.RpcError) as info:
            await refused.next()
        assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
        mine = await white.get_game(gid)
        assert mine.state.your_color == pb.COLOR_WHITE and mine.last_seq == turn.seq
        assert [p.notation for p in mine.state.legal_plays] == [
            p.notation for p in turn.state.legal_plays
        ]
        theirs = (await black.get_game(gid)).state
        assert theirs.your_color == pb.COLOR_BLACK and not theirs.legal_plays
        spectator = (await client.get_game(gid)).state
        assert spectator.your_color == pb.COLOR_UNSPECIFIED and not spectator.legal_plays
        n.cancel_scope.cancel()


async def test_resigning_on_the_opponents_turn_is_accepted(client):
    """Resign works at any moment of a game in progress (RULES.md §5: no
    checker off, so mars)."""
    async with trio.open_nursery() as n:
        r, white, black, w, b, turn = await started(n, client)
        answer = await black.resign(r.game_id)
        assert answer.result.winner == pb.COLOR_WHITE
        assert answer.result.termination == pb.TERMINATION_RESIGNATION
        assert answer.result.kind == pb.RESULT_KIND_MARS
        n.cancel_scope.cancel()


async def test_a_pass_has_no_turn_started(client):
    """a turn without a legal play is TURN_PASSED only; turn_id advances."""
    async with trio.open_nursery() as n:
        r, (white, black) = await create(
            client, start_position=BLOCKED, dice=[*FIRST_WHITE, 6, 5, 3, 1]
        )
        w = await follow(n, white, r.game_id, from_start=True)
        await follow(n, black, r.game_id)
        assert (await w.next()).type == pb.EVENT_TYPE_GAME_STARTED
        passed = await w.next()
        assert passed.type == pb.EVENT_TYPE_TURN_PASSED and passed.state.turn_id == 1
        assert passed.play.notation == "-" and passed.play.automatic
        assert list(passed.play.dice) == [6, 5] and passed.play.used_ms == 0
        nxt = await w.next()
        assert nxt.type == pb.EVENT_TYPE_TURN_STARTED and nxt.state.turn_id == 2
        assert nxt.state.side_to_move == pb.COLOR_BLACK
        n.cancel_scope.cancel()


async def test_an_unknown_token_is_refused_even_where_none_is_needed(client):
    """tokens are checked before anything else; a wrong one is never
    served as an anonymous caller, nor is a token sent without `Bearer ` (a seat would
    otherwise follow its game as a spectator and never arrive)."""
    forged = client.with_token("not-a-token")
    for call in (
        forged.call("RegisterPlayer", api.RegisterPlayerRequest(name="someone")),
        forged.create_match(),
        forged.call("ListGames", api.ListGamesRequest()),
    ):
        with pytest.raises(grpc.RpcError) as info:
            await call
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
    r, _ = await create(client)
    bearer = f"Bearer {r.first_seat_token}"
    for values in ([r.first_seat_token], [f"Basic {r.first_seat_token}"], [""], [bearer] * 2):
        with pytest.raises(grpc.RpcError) as info:
            await client.stub.GetGame(
                api.GetGameRequest(game_id=r.game_id),
                metadata=tuple(("authorization", value) for value in values),
            )
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "Bearer <token>" in info.value.details()
    # as in HTTP, the scheme's name is read in any case, and spaces around the token are not
    # part of it
    for value in (f"bearer {r.first_seat_token}", f"BEARER  {r.first_seat_token} "):
        answer = client.stub.GetGame(
            api.GetGameRequest(game_id=r.game_id), metadata=(("authorization", value),)
        )
        assert answer.state.game_id == r.game_id
