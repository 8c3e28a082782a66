"""Memory flat over a long run: an ended match leaves the arbiter's
memory for bounded caches, and everything about it is then answered from the store —
GetGame and SubscribeGame (by id, with or without its seat token), an idempotent re-send
of its last play, ListGames (the newest games, and older ones still waiting), the web
view's finished list — also after a restart."""

from __future__ import annotations

import gc
import weakref

import grpc
import pytest
import trio

from nardy.client import Client, play_game
from nardy.v1 import admin_pb2 as admin_pb
from nardy.v1 import admin_pb2_grpc as admin_grpc
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.core import catalogue, roster, tables
from server.core.store import SQLiteStore
from tests.server.conftest import counting, create, resigned
from tests.server.test_trust import refused

# White to move with one checker left on its 1-point: any throw ends the game (§4.6).
LAST_CHECKER = "w/0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,1"


@pytest.fixture
def small_caches(monkeypatch):
    monkeypatch.setattr(tables, "ENDED_GAMES", 1)
    monkeypatch.setattr(roster, "RECENT_TOKENS", 1)
    monkeypatch.setattr(catalogue, "WINDOW", 2)


async def one_play_game(client: Client):
    """A game that the first play ends; returns (response, white's seat, its answer)."""
    r, seats = await create(
        client, start_position=LAST_CHECKER, first_seat_color=pb.COLOR_WHITE, seed=3
    )
    notes = seats[0].player_events()
    assert (await anext(notes)).type == api.PLAYER_EVENT_TYPE_GAME_ASSIGNED
    black = seats[1].events(r.game_id)
    await anext(black)  # both seats present: the game starts
    async for ev in seats[0].events(r.game_id):
        if ev.state.legal_plays:
            end, turn = ev.state.legal_plays[0].end_position, ev.state.turn_id
            answer = await seats[0].submit(r.game_id, turn, end_position=end)
            break
    async for note in notes:  # told once the match has left memory
        if note.type == api.PLAYER_EVENT_TYPE_GAME_OVER:
            break
    await notes.aclose()
    await black.aclose()
    return r, seats[0], answer, turn


async def memory(server: EmbeddedServer) -> dict[str, int]:
    def count():
        a = server.arbiter
        return {
            "games": len(a.tables.games),
            "matches": len(a.tables.matches),
            "ended": len(a.tables.ended),
            "seat_tokens": len(a.roster.seat_digests),
            "tokens": len(a.roster.tokens) + len(a.roster.recent_tokens),
            "listed": len(a.catalogue),
        }

    return await trio.to_thread.run_sync(server.call, count)


async def test_an_ended_match_leaves_memory_and_is_served_from_the_store(db, small_caches):
    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:
        async with Client(server.address) as client:
            waiting = await client.create_match(start_timeout_ms=600_000)  # never starts
            first, seat, answer, turn = await one_play_game(client)
            for _ in range(3):
                await one_play_game(client)
            held = await memory(server)
            # only the waiting match is live; one ended game, one ended seat token kept
            assert held["games"] == 1 and held["matches"] == 1 and held["seat_tokens"] == 1
            assert held["ended"] == 1 and held["tokens"] == 2 + 1
            assert held["listed"] <= 2 + 2 // 4 + 1

            # the first game, evicted: by id, as a spectator and with its seat token
            state = (await client.get_game(first.game_id)).state
            assert state.status == pb.GAME_STATUS_FINISHED and state.your_color == 0
            mine = (await seat.get_game(first.game_id)).state
            assert mine.your_color == pb.COLOR_WHITE and mine.result.winner == pb.COLOR_WHITE
            again = await seat.submit(first.game_id, turn, end_position=answer.end_position)
            assert again.duplicate and again.end_position == answer.end_position
            events = [ev.type async for ev in client.events(first.game_id, from_start=True)]
            assert events[0] == pb.EVENT_TYPE_GAME_STARTED
            assert events[-1] == pb.EVENT_TYPE_GAME_FINISHED
            assert pb.EVENT_TYPE_PLAY_MADE in events

            # ListGames: the newest games, and the old waiting one below the window
            ids, token = [], ""
            while True:  # one game a page, across the window and below it
                page = await client.list_games(limit=1, page_token=token)
                ids += [g.game_id for g in page.games]
                if not (token := page.next_page_token):
                    break
            assert len(ids) == len(set(ids))
            assert waiting.game_id in ids and first.game_id not in ids
            live = await client.all_games(status=pb.GAME_STATUS_WAITING)
            assert [g.game_id for g in live] == [waiting.game_id]
            assert (await memory(server))["matches"] == 1

            # the operator voids the evicted game: stored, not listed as a new game
            admin = admin_grpc.AdminServiceStub(client.channel)
            md = (("authorization", f"Bearer {server.admin_token}"),)
            void = admin_pb.VoidGameRequest(game_id=first.game_id)
            await trio.to_thread.run_sync(lambda: admin.VoidGame(void, metadata=md))
            assert (await client.get_game(first.game_id)).state.status == pb.GAME_STATUS_ABORTED
            newest = (await client.list_games(limit=1)).games[0]
            assert newest.game_id != first.game_id

    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:  # a restart: still bounded
        restored = await memory(server)
        counts = await trio.to_thread.run_sync(server.call, server.arbiter.tables.game_counts)
        assert counts["waiting"] == 1 and counts["finished"] == 3 and counts["aborted"] == 1
        assert restored["games"] == 1 and restored["ended"] <= 1
        assert restored["tokens"] <= 2 + 1  # the waiting match's seat tokens, one recent
        async with Client(server.address) as client:
            state = (await client.get_game(first.game_id)).state
            assert state.status == pb.GAME_STATUS_ABORTED  # voided, also after the restart
            seat = Client(server.address, shared=client.channel).with_token(first.first_seat_token)
            assert (await seat.get_game(first.game_id)).state.your_color == pb.COLOR_WHITE


async def test_a_restart_reads_back_only_the_newest_and_the_unfinished_games(db, small_caches):
    """A restart rebuilds from their journals only the games not over; the games ListGames
    lists (the newest) are listed from each one's last journal entry, in one read; older
    ended games are read back when asked for, so a restart does not grow with the
    server's history."""
    from tests.server.test_journal import Gate

    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:
        async with Client(server.address) as client:
            waiting = await client.create_match(start_timeout_ms=600_000)  # never starts
            ended = [(await one_play_game(client))[0] for _ in range(5)]
    journals: list[str] = []  # the games whose whole journal the server reads
    ends: list[set[str]] = []  # the matches whose games' last entries it reads

    class Counting(Gate):
        async def query(self, sql, params=()):
            if "FROM events WHERE game_id=?" in sql:
                journals.append(params[0])
            elif "LEFT JOIN events" in sql:
                ends.append(set(params))
            return await super().query(sql, params)

    with EmbeddedServer(db=db, heartbeat_s=30.0, store_factory=Counting) as server:
        newest = {r.game_id for r in ended[-2:]}  # the catalogue's window of 2 matches
        assert journals == [waiting.game_id]
        assert ends == [{r.match_id for r in ended[-2:]}]
        counts = await trio.to_thread.run_sync(server.call, server.arbiter.tables.game_counts)
        assert counts["waiting"] == 1 and counts["finished"] == 5
        async with Client(server.address) as client:
            listed = {g.game_id for g in await client.all_games()}
            assert listed == {waiting.game_id, *newest}
            oldest = (await client.get_game(ended[0].game_id)).state  # read back when asked
            assert oldest.status == pb.GAME_STATUS_FINISHED and oldest.result.winner
            assert ends[-1] == {ended[0].match_id}  # its match's journal ends, in one read


@pytest.mark.slow
async def test_a_game_never_created_is_not_found_and_a_random_token_is_refused(db):
    with EmbeddedServer(db=db, heartbeat_s=30.0) as server:
        async with Client(server.address) as client:
            with pytest.raises(Exception, match="NOT_FOUND|no game"):
                await client.get_game("0123456789ab")
            stranger = Client(server.address, shared=client.channel).with_token("x" * 43)
            with pytest.raises(Exception, match="unknown token"):
                await stranger.get_game("0123456789ab")


async def test_an_evicted_game_is_read_back_without_decoding_its_whole_match(
    tmp_path, small_caches
):
    """Anyone may GetGame (or SubscribeGame) any game by id. An ended game out of the cache
    was read back by decoding every event of every game of its match, synchronously in the
    trio thread: one GetGame of a 45-game match froze the core for ~0.4 s, and a stranger
    may ask again and again. Each game's last journal entry is all its state needs (a
    replay reads the game's own events, on demand)."""
    Counting, read = counting(SQLiteStore, "events")  # journal entries read back

    with EmbeddedServer(db=str(tmp_path / "e.db"), store_factory=Counting) as server:
        async with Client(server.address) as client:
            r, seats = await create(client, target_points=5)
            notes = seats[0].player_events()
            assert (await anext(notes)).type == api.PLAYER_EVENT_TYPE_GAME_ASSIGNED
            games, game_id = [], r.game_id
            while game_id:  # the first seat resigns each game at once (mars): 3 games
                games.append(game_id)
                game_id = await resigned(seats, game_id)
            async for note in notes:  # told once the match has left memory
                if note.type == api.PLAYER_EVENT_TYPE_GAME_OVER and note.game_id == games[-1]:
                    break
            await notes.aclose()
            assert len(games) == 3 and (await memory(server))["ended"] == 1
            read.clear()
            got = await client.get_game(games[0])
            assert read == [len(games)]  # one read: one entry per game of the match
            replay = [ev async for ev in client.events(games[0], from_start=True)]
            assert got.state.status == pb.GAME_STATUS_FINISHED and got.state.result.points == 2
            assert got.last_seq == replay[-1].seq == len(replay)
            final = replay[-1].state
            for field in ("position", "result", "white", "black", "server_seed", "client_seeds"):
                assert getattr(got.state, field) == getattr(final, field), field
            mine = (await seats[0].get_game(games[0])).state
            assert mine.your_color == got.state.result.winner ^ 3  # the first seat resigned


async def test_a_resend_to_an_ended_game_reads_only_the_end_of_its_journal(tmp_path):
    """A seat may resend a play to an ended game (idempotent plays): the answer was found by
    reading the game's whole journal back from the store and decoding it in the trio
    thread, twice per call (~19 ms of server CPU for a 184-event game, 14 GetGames' worth),
    and anyone may mint seat tokens of ended games of its own. A resend can only be of the
    game's last play (its answer lost as the game ended): its journal's last entries."""
    Counting, read = counting(SQLiteStore, "events")  # journal entries read back

    with EmbeddedServer(db=str(tmp_path / "r.db"), store_factory=Counting) as server:
        async with Client(server.address) as client:
            r, seats = await create(client)
            turns: list[tuple[Client, int, str]] = []  # (seat, turn, end position)

            async def play(seat: Client) -> None:
                async for ev in seat.events(r.game_id, own_turns=True):
                    if ev.state.legal_plays and len(turns) < 6:
                        end = ev.state.legal_plays[0].end_position
                        await seat.submit(r.game_id, ev.state.turn_id, end_position=end)
                        turns.append((seat, ev.state.turn_id, end))
                    elif ev.state.legal_plays:
                        await seat.resign(r.game_id)
                    if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
                        return

            async with trio.open_nursery() as nursery:
                for seat in seats:
                    nursery.start_soon(play, seat)
            events = (await client.get_game(r.game_id)).last_seq
            read.clear()
            seat, turn, end = turns[-1]  # the last play: answered again
            again = await seat.submit(r.game_id, turn, end_position=end)
            assert again.duplicate and again.end_position == end
            seat, turn, end = turns[0]  # an early one: over, whatever it was
            await refused(
                grpc.StatusCode.FAILED_PRECONDITION, seat.submit(r.game_id, turn, notation="-")
            )
    assert events > 10 and sum(read) <= 2 * 4, (events, read)


async def test_a_player_stream_of_a_forgotten_token_leaves_nothing_behind(tmp_path, small_caches):
    """A seat token of an ended match is looked up in the store and remembered a while
    (RECENT_TOKENS). A player stream's end looked its token up again in memory only: once
    forgotten, its sink stayed registered for good, and anyone holding seat tokens of its
    own ended games could leak one per SubscribePlayer."""
    with EmbeddedServer(db=str(tmp_path / "p.db")) as server:
        async with Client(server.address) as client:
            ended = []
            for _ in range(2):
                r, seats = await create(client)
                assert not await resigned(seats, r.game_id)
                ended.append(seats[0])
            gauge = server.edge.metrics.streams.labels("player")
            streams = []
            with trio.fail_after(30):
                for seat in ended:  # the second one's look-up pushes the first one's out
                    streams.append(
                        seat.stub.SubscribePlayer(
                            api.SubscribePlayerRequest(), metadata=seat.metadata
                        )
                    )
                    while gauge._value.get() < len(streams):  # subscribed
                        await trio.sleep(0.01)
                for stream in streams:
                    stream.cancel()
                while gauge._value.get():  # their ends are being seen to
                    await trio.sleep(0.01)

            def sinks() -> int:  # (the streams' ends are on their way to the core)
                return sum(map(len, server.arbiter.notices.sinks.values()))

            with trio.fail_after(30):
                while await trio.to_thread.run_sync(server.call, sinks):
                    await trio.sleep(0.01)


@pytest.mark.slow
async def test_ended_matches_leave_no_cyclic_garbage(db, small_caches):
    """A match that has left every cache is freed by reference counting alone — its games,
    and a duplicate pair's — not left to the cyclic collector, which sees long-lived objects
    only now and then: with the collector off, nothing of
    a ladder pair or of a one-off match stays alive once newer games have pushed them out."""
    gc.disable()
    try:
        with EmbeddedServer(db=db) as server:
            async with Client(server.address, server.admin_token) as op:
                await op.create_ladder("flat", max_games=2)  # one duplicate pair
                tokens = [await op.register(name) for name in ("A", "B")]
            async with (
                Client(server.address, tokens[0]) as a,
                Client(server.address, tokens[1]) as b,
            ):
                for bot in (a, b):
                    await bot.join_ladder("flat")
                games: list[str] = []
                notes = a.player_events()
                async for note in notes:
                    assigned = note.type == api.PLAYER_EVENT_TYPE_GAME_ASSIGNED
                    if assigned and note.game_id not in games:
                        games.append(note.game_id)
                    if len(games) == 2:
                        break
                await notes.aclose()

                def sessions(ids):
                    arbiter = server.arbiter
                    found = [arbiter.tables.games.get(g) or arbiter.tables.ended[g] for g in ids]
                    parts = [o for g in found for o in (g, g.match, g.match.pair) if o is not None]
                    return [weakref.ref(o) for o in parts]

                held = await trio.to_thread.run_sync(server.call, sessions, games)
                async with trio.open_nursery() as nursery:
                    for bot in (a, b):
                        for game_id in games:
                            nursery.start_soon(play_game, bot, game_id, lambda turn: turn.legal[0])
            async with Client(server.address) as client:
                r, *_ = await one_play_game(client)
                held += await trio.to_thread.run_sync(server.call, sessions, [r.game_id])
                await one_play_game(client)  # the pair and the first match leave the caches
                await one_play_game(client)
            alive = await trio.to_thread.run_sync(
                server.call, lambda: [type(ref()).__name__ for ref in held if ref() is not None]
            )
            assert alive == []
    finally:
        gc.enable()
