"""An engine that accepts challenges (``serve_games(..., accept_challenges=...)``, the SDK
behind ``nardy engine NAME --accept-challenges``), against a real arbiter: what its
operator's consent allows is accepted and played, the rest declined at once (a variant it
does not play, turns shorter than its floor, more matches at once than it takes, a second
match at once with one challenger)."""

from __future__ import annotations

import contextlib

import grpc
import pytest
import trio

from nardy.client import Client, Consent, serve_games
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer

from .conftest import random_engine

WAIT_MS = 600_000  # a challenge not answered would wait this long: an abort is a decline


@pytest.fixture
def arbiter(tmp_path):
    with EmbeddedServer(db=str(tmp_path / "c.db")) as srv:
        yield srv


async def challenge(person: Client, name: str, opponent: str, **options) -> str:
    """``person`` (registered as ``name``) challenges ``opponent``; the match's first game."""
    points = options.pop("points", 1)
    wait = options.pop("start_timeout_ms", WAIT_MS)
    r = await person.create_match(
        first=api.SeatSpec(player_name=name),
        second=api.SeatSpec(player_name=opponent),
        target_points=points,
        options=pb.GameOptions(**options),
        start_timeout_ms=wait,
    )
    assert r.challenge
    return r.game_id


async def answer(person: Client, game_id: str) -> int:
    """How the challenged engine answered, as the challenger sees it on the game's stream
    (arriving at its seat): GAME_STARTED (it accepted and came) or GAME_ABORTED."""
    with trio.fail_after(60):
        async with contextlib.aclosing(person.events(game_id)) as events:
            async for ev in events:
                if ev.type in (pb.EVENT_TYPE_GAME_STARTED, pb.EVENT_TYPE_GAME_ABORTED):
                    return ev.type
                if ev.state.status == pb.GAME_STATUS_ABORTED:  # (answered before we came)
                    return pb.EVENT_TYPE_GAME_ABORTED
                if ev.state.status in (pb.GAME_STATUS_IN_PROGRESS, pb.GAME_STATUS_FINISHED):
                    return pb.EVENT_TYPE_GAME_STARTED
    raise AssertionError("the game's stream ended without an answer")


async def test_a_stream_opened_on_a_declined_challenge_ends_with_its_snapshot(arbiter):
    """The SDK's events() of a game over before the stream opened: one SNAPSHOT of the
    ended game, then the end (not a dropped stream to resume for ever)."""
    async with Client(arbiter.address) as bot, Client(arbiter.address) as alice:
        await bot.register("declining-bot")
        await alice.register("alice", bot=False)
        game = await challenge(alice, "alice", "declining-bot")
        (waiting,) = await bot.list_challenges()
        assert waiting.start_timeout_ms == WAIT_MS  # (each game's wait for its seats too)
        await bot.decline_challenge(waiting.match_id)
        with trio.fail_after(10):
            seen = [ev async for ev in alice.events(game)]
        assert [ev.type for ev in seen] == [pb.EVENT_TYPE_SNAPSHOT]
        assert seen[0].state.status == pb.GAME_STATUS_ABORTED


async def test_the_engine_accepts_what_it_plays_and_declines_the_rest(arbiter):
    async with (
        Client(arbiter.address) as bot,
        Client(arbiter.address) as alice,
        Client(arbiter.address) as carol,
        Client(arbiter.address) as dave,
    ):
        await bot.register("long-bot")
        for person, name in ((alice, "alice"), (carol, "carol"), (dave, "dave")):
            await person.register(name, bot=False)
        consent = Consent(
            variants=("long",), min_turn_time_ms=1000, max_games_at_once=2, max_per_opponent=1
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                lambda: serve_games(bot, random_engine(1), accept_challenges=consent)
            )
            # a variant it does not play: declined
            short = await challenge(alice, "alice", "long-bot", variant="short")
            assert await answer(alice, short) == pb.EVENT_TYPE_GAME_ABORTED
            # turns under its floor: declined
            quick = await challenge(alice, "alice", "long-bot", turn_time_ms=500)
            assert await answer(alice, quick) == pb.EVENT_TYPE_GAME_ABORTED
            # games that would wait for its seat less than its floor (10 s: over a real
            # network a few ms lose by abandonment): declined
            rushed = await challenge(alice, "alice", "long-bot", start_timeout_ms=9_000)
            assert await answer(alice, rushed) == pb.EVENT_TYPE_GAME_ABORTED
            # one it plays: accepted, and the engine comes to play it
            match = await challenge(alice, "alice", "long-bot", turn_time_ms=60_000, points=3)
            assert await answer(alice, match) == pb.EVENT_TYPE_GAME_STARTED
            # a second at once from alice: declined; carol's: accepted
            again = await challenge(alice, "alice", "long-bot")
            assert await answer(alice, again) == pb.EVENT_TYPE_GAME_ABORTED
            carols = await challenge(carol, "carol", "long-bot", turn_time_ms=60_000)
            assert await answer(carol, carols) == pb.EVENT_TYPE_GAME_STARTED
            # two matches at once, its most: dave's is declined, also between two games of
            # alice's match (it goes on: it still counts)
            busy = await challenge(dave, "dave", "long-bot")
            assert await answer(dave, busy) == pb.EVENT_TYPE_GAME_ABORTED
            await alice.resign(match)
            state = (await alice.get_game(match)).state
            assert state.status == pb.GAME_STATUS_FINISHED and state.next_game_id
            busy = await challenge(dave, "dave", "long-bot")
            assert await answer(dave, busy) == pb.EVENT_TYPE_GAME_ABORTED
            # carol's match over: dave's is taken
            await carol.resign(carols)
            with trio.fail_after(120):  # (a safety net: on a loaded machine it can take a while)
                while True:  # (the engine sees the game end a moment after carol does)
                    daves = await challenge(dave, "dave", "long-bot")
                    if await answer(dave, daves) == pb.EVENT_TYPE_GAME_STARTED:
                        break
            await dave.resign(daves)
            assert await answer(alice, state.next_game_id) == pb.EVENT_TYPE_GAME_STARTED
            await alice.resign(state.next_game_id)  # (a mars each: 4 of 3 points, over)
            assert await bot.list_challenges() == []  # every one answered
            nursery.cancel_scope.cancel()


def test_a_consent_needs_the_variants_stated():
    with pytest.raises(ValueError, match="states the variants it plays"):
        Consent().stated(random_engine(0))
    with pytest.raises(ValueError):
        Consent(variants=("backgammon-with-cube",)).stated(random_engine(0))

    def stating(turn):
        return turn.legal[0]

    stating.variants = ("short",)  # an engine function may state them itself
    stating.turn_time_floor_ms = 3000
    consent = Consent().stated(stating)
    assert consent.variants == ("short",) and consent.min_turn_time_ms == 3000
    with pytest.raises(ValueError):
        Consent(variants=("long",), max_games_at_once=0).stated(stating)


async def test_a_player_has_at_most_twenty_challenges_waiting(arbiter):
    """Anyone may challenge anyone, and a player's challenges are listed whole on every
    look (its /play page looks once per challenge announced): strangers filled one
    player's list with 4,120 challenges, 44 ms of the core's time a look, and every game on
    the server slowed. A player has at most 20 waiting, at most 5 from one challenger (one
    filled the list, and the others' challenges were refused); more are refused until it
    answers."""
    async with Client(arbiter.address) as victim:
        await victim.register("popular", bot=False)
        fans = []
        for n in range(5):
            fan = Client(arbiter.address)
            await fan.register(f"fan-{n}", bot=False)
            fans.append(fan)
        for fan in fans[:4]:
            for _ in range(5):
                await challenge(fan, f"fan-{fans.index(fan)}", "popular")
        with pytest.raises(grpc.RpcError) as refused:
            await challenge(fans[0], "fan-0", "popular")
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "you have 5 challenges waiting for popular's answer" in refused.value.details()
        with pytest.raises(grpc.RpcError) as refused:
            await challenge(fans[4], "fan-4", "popular")
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "popular has 20 challenges waiting" in refused.value.details()
        waiting = await victim.list_challenges()
        assert len(waiting) == 20
        await victim.decline_challenge(waiting[0].match_id)  # an answer makes room
        assert await challenge(fans[4], "fan-4", "popular")
        for fan in fans:
            fan.close()


async def test_the_challenged_player_is_told_when_a_challenge_is_withdrawn(arbiter):
    """The challenger's withdrawal (or its expiry) told the challenger, not the player
    challenged, whose stream still had the challenge: a bot tracking its challenges from
    the stream could only find out by an answer refused."""
    async with Client(arbiter.address) as bob, Client(arbiter.address) as alice:
        await bob.register("bob")
        await alice.register("alice", bot=False)
        with trio.fail_after(30):
            async with contextlib.aclosing(bob.player_events(resume=False)) as news:
                game = await challenge(alice, "alice", "bob")
                ev = await anext(news)
                assert (ev.type, ev.game_id) == (api.PLAYER_EVENT_TYPE_CHALLENGE, game)
                await alice.decline_challenge(ev.match_id)  # (withdrawn by its maker)
                ev = await anext(news)
                assert (ev.type, ev.game_id) == (api.PLAYER_EVENT_TYPE_GAME_OVER, game)
        assert await bob.list_challenges() == []
