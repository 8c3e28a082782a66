"""Duplicate pairs without foresight: a bot that lets one game of its pair lag cannot read
the coming throws in the other.

The two games of a ladder pair have the same dice. The hostile bot plays one game at once
and stalls in the other; before each of its plays in the lagging game it looks at the fast
game (as a spectator would) for a throw it has not seen yet. With the games in lockstep
by throw number the fast game is never ahead.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import grpc
import pytest
import trio
import trio.testing

from nardy.client import Client, my_turn, play_game
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as lpb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc
from server.app import EmbeddedServer
from server.core import ladder as ladder_module
from server.core.lockstep import Lockstep

STALL_S = 0.03


def first_legal(turn):
    return turn.legal[0]


async def games_of(client: Client) -> list[str]:
    """The two games of the player's pair, as its player stream announces them."""
    games: list[str] = []
    async for ev in client.player_events():
        if ev.type == api.PLAYER_EVENT_TYPE_GAME_ASSIGNED and ev.game_id not in games:
            games.append(ev.game_id)
        if len(games) == 2:
            return games
    raise AssertionError("the player stream ended")


@asynccontextmanager
async def mirrored_turn(srv: EmbeddedServer, ladder: str, turn_time_ms: int):
    """Bots A and B in a ladder's one pair on ``srv``, every seat followed: at the pair's
    first offered throw, yields (a, b, mine, theirs, turn): A moves in game ``mine`` and B
    in ``theirs``, from ``turn`` (B's state there)."""
    async with Client(srv.address, srv.admin_token) as op:
        await op.create_ladder(ladder, turn_time_ms=turn_time_ms, max_games=2)
        tokens = {n: await Client(srv.address, srv.admin_token).register(n) for n in "AB"}
    a, b = (Client(srv.address, tokens[n]) for n in "AB")
    first: dict[str, tuple[Client, pb.GameState]] = {}  # game -> its first mover, turn
    both = trio.Event()

    async def seat(client: Client, game_id: str) -> None:
        async for ev in client.events(game_id):
            if my_turn(ev) and game_id not in first:  # (forced turns are played for them)
                first[game_id] = (client, ev.state)
                if len(first) == 2:
                    both.set()

    try:
        with trio.fail_after(60):
            await a.join_ladder(ladder)
            await b.join_ladder(ladder)
            games = await games_of(a)
            async with trio.open_nursery() as nursery:
                for client in (a, b):
                    for game_id in games:
                        nursery.start_soon(seat, client, game_id)
                await both.wait()  # one throw: A moves in one game, B in the other
                mine, theirs = sorted(games, key=lambda g: first[g][0] is b)
                assert first[mine][0] is a and first[theirs][0] is b
                assert first[mine][1].turn_id == first[theirs][1].turn_id
                yield a, b, mine, theirs, first[theirs][1]
                nursery.cancel_scope.cancel()
    finally:
        a.close()
        b.close()


@pytest.mark.slow
async def test_a_lagging_game_shows_no_throw_of_the_other_game_early(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "l.db")) as srv:
        auth = (("authorization", f"Bearer {srv.admin_token}"),)
        ch = grpc.insecure_channel(srv.address)
        ladders = ladder_grpc.LadderServiceStub(ch)
        ladders.CreateLadder(
            lpb.CreateLadderRequest(
                name="pairs", options=lpb.LadderOptions(turn_time_ms=5000, max_games=2)
            ),
            metadata=auth,
        )
        async with Client(srv.address, srv.admin_token) as op:
            tokens = {
                n: (await op.call("RegisterPlayer", api.RegisterPlayerRequest(name=n))).token
                for n in ("peek", "plain")
            }
        peek, plain = (Client(srv.address, tokens[n]) for n in ("peek", "plain"))
        spectator = Client(srv.address)
        seen: list[tuple[int, int, int]] = []  # (lagging turn, fast game's turn, its status)

        async def lagging(game_id: str, fast: str) -> None:
            done = 0
            async for ev in peek.events(game_id):
                if ev.type in (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED):
                    return
                if not my_turn(ev) or ev.state.turn_id <= done:
                    continue
                done = ev.state.turn_id
                await trio.sleep(STALL_S)  # let the fast game run ahead, if it can
                other = (await spectator.get_game(fast)).state
                seen.append((ev.state.turn_id, other.turn_id, other.status))
                await peek.submit(
                    game_id, ev.state.turn_id, end_position=ev.state.legal_plays[0].end_position
                )

        async def hostile() -> None:
            fast, slow = await games_of(peek)
            async with trio.open_nursery() as n:
                n.start_soon(play_game, peek, fast, first_legal)
                n.start_soon(lagging, slow, fast)

        async def honest() -> None:
            games = await games_of(plain)
            async with trio.open_nursery() as n:
                for g in games:
                    n.start_soon(play_game, plain, g, first_legal)

        with trio.fail_after(120):
            ladders.JoinLadder(
                lpb.JoinLadderRequest(ladder="pairs", ready=True),
                metadata=(("authorization", f"Bearer {tokens['peek']}"),),
            )
            ladders.JoinLadder(
                lpb.JoinLadderRequest(ladder="pairs", ready=True),
                metadata=(("authorization", f"Bearer {tokens['plain']}"),),
            )
            async with trio.open_nursery() as n:
                n.start_soon(hostile)
                n.start_soon(honest)
        for c in (peek, plain, spectator):
            c.close()
        ch.close()
    assert len(seen) > 10  # the lagging game was really played, turn by turn
    in_progress = [(mine, other) for mine, other, status in seen if status == 2]
    assert in_progress, "the fast game ended before the lagging one got going"
    # the fast game never showed a throw the lagging game had not made yet
    assert all(other <= mine for mine, other in in_progress), in_progress


@pytest.mark.slow
async def test_a_pair_killed_mid_way_resumes_in_lockstep_with_the_same_dice(tmp_path, monkeypatch):
    """kill -9 the real server while the pair's fast game waits for its lagging partner,
    restart it on the same database: both games go on in lockstep (the fast one still
    shows no throw ahead of the lagging one), with the same dice turn by turn, and both
    verify as fair with one shared server seed."""
    from clients.verify import fetch
    from nardy.verify import verify
    from tests.server.test_recovery import free_port, start_server

    admin = "lockstep-admin-token"
    monkeypatch.setenv("NARDY_ADMIN_TOKEN", admin)
    port, db = free_port(), str(tmp_path / "pair.db")
    address = f"127.0.0.1:{port}"
    procs = [start_server(port, db)]
    seen: list[tuple[int, int, int, bool]] = []  # (lagging turn, fast turn, status, restarted)
    restarted = trio.Event()
    try:
        async with Client(address, admin) as op:
            await op.create_ladder("pairs", turn_time_ms=30_000, max_games=2)
            tokens = {n: await Client(address, admin).register(n) for n in ("peek", "plain")}
        peek, plain = (Client(address, tokens[n]) for n in ("peek", "plain"))
        spectator = Client(address)

        async def restart() -> None:
            procs[-1].kill()
            await trio.to_thread.run_sync(procs[-1].wait)
            procs.append(await trio.to_thread.run_sync(start_server, port, db))
            restarted.set()

        async def lagging(game_id: str, fast: str) -> None:
            done = 0
            async for ev in peek.events(game_id):
                if ev.type in (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED):
                    return
                if not my_turn(ev) or ev.state.turn_id <= done:
                    continue
                done = ev.state.turn_id
                await trio.sleep(STALL_S)  # let the fast game run ahead, if it can
                req = api.GetGameRequest(game_id=fast)
                other = (await spectator.call("GetGame", req, attempts=12)).state
                seen.append((done, other.turn_id, other.status, restarted.is_set()))
                await peek.submit(
                    game_id, done, end_position=ev.state.legal_plays[0].end_position, attempts=12
                )
                if len(seen) == 6 and other.status == pb.GAME_STATUS_IN_PROGRESS:
                    await restart()  # mid-pair: the fast game waits at the next throw

        async def hostile() -> None:
            fast, slow = await games_of(peek)
            async with trio.open_nursery() as n:
                n.start_soon(play_game, peek, fast, first_legal)
                n.start_soon(lagging, slow, fast)

        async def honest() -> None:
            async with trio.open_nursery() as n:
                for g in await games_of(plain):
                    n.start_soon(play_game, plain, g, first_legal)

        with trio.fail_after(180):
            await peek.join_ladder("pairs")
            await plain.join_ladder("pairs")
            async with trio.open_nursery() as n:
                n.start_soon(hostile)
                n.start_soon(honest)
            games = await spectator.all_games(ladder="pairs")
            # each game's record, with the pair's server seed revealed (nardy verify GAME)
            records = [await trio.to_thread.run_sync(fetch, address, g.game_id) for g in games]
        for c in (peek, plain, spectator):
            c.close()
    finally:
        procs[-1].terminate()
        procs[-1].wait()
    assert len(procs) == 2 and restarted.is_set()  # killed once, mid-pair
    after = [(mine, other) for mine, other, status, again in seen if again and status == 2]
    assert after, "no turn of the lagging game was watched after the restart"
    in_progress = [(mine, other) for mine, other, status, _ in seen if status == 2]
    assert all(other <= mine for mine, other in in_progress), in_progress
    assert len(records) == 2 and all(r.result is not None for r in records)
    a, b = ([t.dice for t in r.turns] for r in records)
    n = min(len(a), len(b))
    assert n > 10 and a[:n] == b[:n]  # the same dice, turn by turn, across the restart
    assert records[0].headers["ServerSeed"] == records[1].headers["ServerSeed"]
    assert all(verify(r).fair and not verify(r).chosen for r in records)


async def test_the_first_game_of_a_pair_throws_only_once_its_partner_has_joined():
    """A pair is created one game at a time (and a restart reads it back one at a time):
    the first game must not throw die 0 before its partner exists to throw it too."""

    @dataclass(eq=False)
    class Game:
        id: str
        client_seeds: list[str] = field(default_factory=list)

    pair = Lockstep("p", size=2)
    first, second = Game("a"), Game("b")
    pair.add(first)
    thrown = trio.Event()

    async def throw_first():
        await pair.at(first, 0)
        thrown.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(throw_first)
        await trio.testing.wait_all_tasks_blocked()
        assert not thrown.is_set()  # alone: it waits for the partner
        pair.add(second)
        nursery.start_soon(pair.at, second, 0)
        await thrown.wait()


def test_a_game_throws_ahead_only_once_its_partner_has_reached_the_die():
    """``reached_by_all`` (a game throwing its next turn while its play is stored) says yes
    only when the other game of the pair has reached the same die, and counts the asking
    game as having reached it (a partner waiting in ``at`` goes on)."""

    @dataclass(eq=False)
    class Game:
        id: str
        client_seeds: list[str] = field(default_factory=lambda: ["", ""])

    pair = Lockstep("p", size=2)
    a, b = Game("a"), Game("b")
    pair.add(a)
    assert not pair.reached_by_all(a, 4)  # b has not joined
    pair.add(b)
    assert not pair.reached_by_all(a, 4)  # b has not reached die 4
    assert pair.reached["a"] == 4
    assert pair.reached_by_all(b, 4)  # both at die 4
    assert not pair.reached_by_all(b, 6)  # b may not run ahead of a
    pair.ended(a)
    assert pair.reached_by_all(b, 6)  # an ended partner holds nobody up


async def test_the_two_matches_of_a_pair_are_stored_in_one_transaction(tmp_path):
    """Both matches of a duplicate pair or neither (RULES.md §7 gives both games the same
    dice): a server stopped between two commits would leave a game whose duplicate never
    comes, and it would count alone in the ladder's standings."""
    from tests.server.test_journal import gated

    with gated(str(tmp_path / "p.db")) as (srv, gate):
        async with Client(srv.address, srv.admin_token) as op:
            await op.create_ladder("pairs", turn_time_ms=30_000, max_games=2)
            register = [api.RegisterPlayerRequest(name=n) for n in ("left", "right")]
            tokens = [(await op.call("RegisterPlayer", r)).token for r in register]
        players = [Client(srv.address, t) for t in tokens]
        with trio.fail_after(60):
            for player in players:
                await player.join_ladder("pairs")
            games = await games_of(players[0])
        for player in players:
            player.close()
    inserts = [
        [params for sql, params in batch if sql.startswith("INSERT INTO matches")]
        for batch in gate.batches
    ]
    pair = [batch for batch in inserts if batch]
    assert len(games) == 2 and len(pair) == 1 and len(pair[0]) == 2, inserts


async def test_a_bot_cannot_copy_its_opponents_play_from_the_mirrored_game(tmp_path):
    """The two games of a pair are mirrors: the same dice, the seats swapped, so each throw
    is played by one bot in one game and by the other bot in the other, from the same
    position while the games stay alike. A bot that waits for its opponent's play in the
    mirrored game and copies it splits every pair whatever its own skill. Each throw's
    play is sealed: it is made (told, shown, answered) only once the other game has played
    that throw too (or ended), so the copier learns its opponent's play too late."""
    with EmbeddedServer(db=str(tmp_path / "m.db")) as srv:
        async with mirrored_turn(srv, "mirror", 400) as (copier, honest, mine, theirs, turn):
            await honest.submit(theirs, turn.turn_id, end_position=turn.legal_plays[0].end_position)
            # the honest play is made: the copier looks at the mirrored game
            seen = (await copier.get_game(theirs)).state
            own = (await copier.get_game(mine)).state
    assert seen.position != turn.position  # answered: the honest play is made, and shows
    assert own.turn_id > turn.turn_id or own.status != pb.GAME_STATUS_IN_PROGRESS, (
        "the opponent's play showed while the copier's turn of the same throw was open"
    )


async def test_a_ladder_bot_cannot_pick_its_opponents_by_not_coming(tmp_path, monkeypatch):
    """A ladder bot learns its opponent's name (GAME_ASSIGNED) before it takes its seats.
    A seat that never came voided its games without a loss, so a bot could play only the
    opponents it likes and dodge the others, and keep them waiting. A seat that does not
    come loses by abandonment (when the other seat came; neither: void)."""
    monkeypatch.setattr(ladder_module, "START_TIMEOUT_MS", 300)
    with EmbeddedServer(db=str(tmp_path / "d.db")) as srv:
        async with Client(srv.address, srv.admin_token) as op:
            await op.create_ladder("dodge", turn_time_ms=60_000, max_games=2)
            tokens = {
                n: await Client(srv.address, srv.admin_token).register(n)
                for n in ("strong", "dodger")
            }
        strong, dodger = (Client(srv.address, tokens[n]) for n in ("strong", "dodger"))
        with trio.fail_after(60):
            await dodger.join_ladder("dodge")
            await strong.join_ladder("dodge")
            games = await games_of(strong)
            ends = []

            async def come(game_id: str) -> None:  # the strong bot comes; the dodger never
                async for ev in strong.events(game_id):
                    if ev.type in (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED):
                        ends.append(ev)

            async with trio.open_nursery() as nursery:
                for game_id in games:
                    nursery.start_soon(come, game_id)
            standings = await strong.standings("dodge")  # (counted as the end is told)
        strong.close()
        dodger.close()
    assert [ev.type for ev in ends] == [pb.EVENT_TYPE_GAME_FINISHED] * 2
    assert all(ev.state.result.termination == pb.TERMINATION_ABANDONMENT for ev in ends)
    rows = {r.player.name: r for r in standings.rows}
    assert (rows["strong"].wins, rows["dodger"].losses, rows["dodger"].disconnects) == (2, 2, 2)


async def test_a_sealed_play_cannot_pile_up_open_calls(tmp_path):
    """A sealed play's SubmitPlay waits for the other game, up to the mover's whole turn
    there (24 h in a slow ladder), and so does each resend of it: a bot resending at its
    full rate held thousands of calls open, and grpc refuses everyone's calls once the
    server holds maximum_concurrent_rpcs. Plays and resignations hold a place in their
    caller's quota while they run, as streams do."""
    with EmbeddedServer(db=str(tmp_path / "q.db"), streams_per_caller=4) as srv:
        async with mirrored_turn(srv, "piles", 60_000) as (waiter, sender, mine, theirs, turn):
            play = api.SubmitPlayRequest(
                game_id=theirs, turn_id=turn.turn_id, end_position=turn.legal_plays[0].end_position
            )
            # the play and three resends at once: sealed, they wait for the other game
            calls = [
                sender.stub.SubmitPlay.future(play, metadata=sender.metadata, timeout=30)
                for _ in range(4)
            ]
            done: list = []  # the calls answered while the play is sealed
            two = trio.Event()
            token = trio.lowlevel.current_trio_token()

            def answered(call) -> None:
                def note() -> None:
                    done.append(call)
                    if len(done) == 2:
                        two.set()

                token.run_sync_soon(note)

            for call in calls:
                call.add_done_callback(answered)
            with trio.move_on_after(10):  # (at once; none is, were they let pile up)
                await two.wait()
            refused = list(done)
            await waiter.resign(mine)  # the other game is over: the play is made
            answers = [await trio.to_thread.run_sync(c.result) for c in calls if c not in refused]
    # two streams and two calls held: the others refused at once
    assert [c.code() for c in refused] == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 2, refused
    assert len(answers) == 2 and {a.end_position for a in answers} == {play.end_position}


def test_a_crosstable_is_built_once_per_change_of_the_books(tmp_path):
    """GetCrosstable (and the web view's ladder page, refreshed every second by each
    viewer) built the crosstable in the trio thread on every call: for 100 bots that met,
    9,900 cells, 93 ms of the core a call, for anyone at 1000 calls/s. It is built once
    for each change of the ladder's books."""
    from server.core.ladder_views import crosstable_pb

    with EmbeddedServer(db=str(tmp_path / "x.db")) as srv:
        auth = (("authorization", f"Bearer {srv.admin_token}"),)
        with grpc.insecure_channel(srv.address) as ch:
            ladder_grpc.LadderServiceStub(ch).CreateLadder(
                lpb.CreateLadderRequest(name="x", options=lpb.LadderOptions(turn_time_ms=1000)),
                metadata=auth,
            )
        first, again = (srv.call(crosstable_pb, srv.arbiter, "x") for _ in range(2))
        assert again is first
        srv.call(lambda: srv.arbiter.ladders.ladder("x").restore(_record("a", "b")))  # a result
        changed = srv.call(crosstable_pb, srv.arbiter, "x")
        assert changed is not first and len(changed.cells) == 2


def _record(winner: str, loser: str):
    from server.core.ladder import LadderGame

    return LadderGame("p", "g", winner, loser, winner, 1, "oin", "normal", False, (0, 0), (0, 0))
