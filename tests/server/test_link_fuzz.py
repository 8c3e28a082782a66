"""The core's end of the link never falls over, whatever the edge's end sends: random bytes,
frames cut short, oversize lengths, calls of every method with mangled requests, streams
left that were never opened, fences answered that were never asked. Afterwards the core
still answers a well-formed call, and stops cleanly when the link closes. A real core
(server.core.main.run) on a real SQLite file, on one end of a socket pair."""

from __future__ import annotations

import random
import struct

import trio
import trio.testing

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server.config import ServerConfig
from server.core.api import ARBITER, LADDER
from server.core.main import run
from server.link import MAX_FRAME, Frames, frame, link_pb

INTERNAL = 13  # the status of a call the core failed to answer
ODD_TIMES = [0.0, -1e300, 1e300, float("nan"), float("inf"), -float("inf")]

METHODS = [
    ARBITER + name
    for name in (
        "RegisterPlayer",
        "CreateMatch",
        "AcceptChallenge",
        "DeclineChallenge",
        "ListChallenges",
        "GetGame",
        "ListGames",
        "SubscribeGame",
        "SubscribePlayer",
        "SubmitPlay",
        "Resign",
        "Play",
        "NoSuchMethod",
    )
] + [LADDER + "GetStandings", "Link/Heartbeat", "Link/Index", "Link/History", "Link/Who", ""]

REQUESTS = [
    api.CreateMatchRequest(options=pb.GameOptions(variant="short")).SerializeToString(),
    api.SubmitPlayRequest(game_id="x", turn_id=3, notation="8/5 6/5").SerializeToString(),
    api.SubscribeGameRequest(game_id="x", after_seq=2**62).SerializeToString(),
    api.RegisterPlayerRequest(name="fuzz", bot=True).SerializeToString(),
    api.ListGamesRequest(limit=10**6, page_token="zz").SerializeToString(),
    b"",
]


def mangled(rng: random.Random, data: bytes) -> bytes:
    data = bytearray(data)
    for _ in range(rng.randrange(4)):
        choice = rng.randrange(3)
        if choice == 0 and data:
            data[rng.randrange(len(data))] = rng.randrange(256)
        elif choice == 1:
            data[rng.randrange(len(data) + 1) :] = b""
        else:
            data += rng.randbytes(rng.randrange(1, 40))
    return bytes(data)


def hostile(rng: random.Random, ids) -> bytes:
    """One whole frame of what a broken or hostile edge might write."""
    kind = rng.randrange(7)
    if kind == 0:  # not a ToCore at all
        return struct.pack(">I", 50) + rng.randbytes(50)
    if kind == 1:  # empty
        return struct.pack(">I", 0)
    if kind == 2:
        message = link_pb.ToCore(leave=link_pb.Leave(tap=rng.randrange(2**64)))
    elif kind == 3:
        message = link_pb.ToCore(fenced=link_pb.Fenced(id=rng.randrange(2**64)))
    elif kind == 4:  # a play with a made-up send and arrival
        request = api.SubmitPlayRequest(game_id=rng.randbytes(6).hex(), turn_id=rng.randrange(9))
        call = link_pb.Call(id=next(ids), method=ARBITER + "SubmitPlay")
        call.request = request.SerializeToString()
        call.sent, call.arrival = (rng.choice(ODD_TIMES) for _ in range(2))
        message = link_pb.ToCore(call=call)
    else:  # a call of some method, its request mangled, its caller made up
        call = link_pb.Call(
            id=next(ids),
            method=rng.choice(METHODS),
            request=mangled(rng, rng.choice(REQUESTS)),
            arrival=rng.choice(ODD_TIMES),
            identify=rng.random() < 0.5,
        )
        call.caller.digest = rng.choice(["", "00" * 32, rng.randbytes(40).hex(), "é" * 70])
        call.caller.address = rng.randbytes(rng.randrange(300)).hex()
        message = link_pb.ToCore(call=call)
    return frame(message)


async def answered(stream, frames: Frames, call: link_pb.Call) -> list[link_pb.Reply]:
    """Send ``call``; the replies read until its own, which is last."""
    await stream.send_all(frame(link_pb.ToCore(call=call)))
    replies = []
    while True:
        for message in frames.feed(await stream.receive_some(65536)):
            if message.WhichOneof("kind") == "reply":
                replies.append(message.reply)
                if message.reply.id == call.id:
                    return replies


def probe(call_id: int) -> link_pb.Call:
    request = api.GetGameRequest(game_id="none").SerializeToString()
    return link_pb.Call(id=call_id, method=ARBITER + "GetGame", request=request)


async def core_under(tmp_path, last: bytes) -> None:
    """3,000 hostile frames, a probe that must be answered, then ``last`` and the end of
    the link: the core must stop by itself, having raised nothing."""
    config = ServerConfig(db=str(tmp_path / "fuzz.db"), admin_token="nardy_fuzz")
    edge_end, core_end = trio.testing.memory_stream_pair()
    rng = random.Random(len(last))
    ids = iter(range(1, 10**9))
    async with trio.open_nursery() as nursery:
        await nursery.start(run, config, core_end)
        for _ in range(3000):
            await edge_end.send_all(hostile(rng, ids))
        replies = await answered(edge_end, Frames(link_pb.ToEdge), probe(10**9))
        assert replies[-1].code == 5 and "none" in replies[-1].message  # it still answers
        failed = [r.message for r in replies if r.code == INTERNAL]
        assert not failed  # every call answered or refused, none failed in the core
        await edge_end.send_all(last)
        await edge_end.aclose()
        nursery.cancel_scope.deadline = trio.current_time() + 60
    assert not nursery.cancel_scope.cancelled_caught  # it stopped at the link's end


async def test_the_core_survives_hostile_frames_then_a_frame_cut_short(tmp_path):
    await core_under(tmp_path, frame(link_pb.ToCore(call=probe(1)))[:-3])


async def test_the_core_survives_hostile_frames_then_an_oversize_length(tmp_path):
    await core_under(tmp_path, struct.pack(">I", MAX_FRAME + 1) + b"x" * 1000)


async def test_the_core_survives_noise(tmp_path):
    noise = random.Random(3).randbytes(100_000)
    await core_under(tmp_path, noise)
