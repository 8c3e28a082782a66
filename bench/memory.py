"""Memory flat over a long run.

A ``nardy serve`` process runs a ladder of instant bots (4 registered bots, two games
each at a time: 4 games at once, in duplicate pairs, from the standard start) until it has
finished ``N`` games; the bots follow their player streams like any ladder bot and play
the first legal play at once, two of them over the ``Play`` stream and two over
SubscribeGame and SubmitPlay. The server's RSS (edge and core) is read after game 500 and
then every 500 games: a finished game must cost nothing beyond bounded caches (target: RSS
after the last game within 10% of RSS after game 500). The edge remembers the last
``REMEMBERED`` tokens (server/edge/limits.py), two new seat tokens a game: past game
``REMEMBERED / 2`` its caches are full, and the growth per game from there on is printed
apart.

``python -m bench memory [--quick]`` (quick: 1,500 games; full: 8,000);
``python -m bench.memory GAMES`` for another count.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import sys
import time

import grpc

from bench.arbiter import arbiter, proc_status
from bench.bots import ADMIN_ENV, bearer, instant_seat
from bench.turns import Round, play_seat
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import ladder_pb2 as ladder_pb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc
from server.edge.limits import REMEMBERED

BOTS = 4
EVERY = 500  # games between samples (fewer for short runs)


async def ladder(address: str, n: int, pid: int) -> tuple[list[tuple[int, float, float]], int]:
    """Run the ladder to ``n`` games; (games, RSS MiB, seconds) every EVERY games, and
    the finished games the standings count."""
    admin = bearer(os.environ[ADMIN_ENV])
    samples: list[tuple[int, float, float]] = []
    over: set[str] = set()
    done = asyncio.Event()
    every = EVERY if n >= 3 * EVERY else max(1, n // 3)
    t0 = time.perf_counter()
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)
        ladders = ladder_grpc.LadderServiceStub(ch)
        await ladders.CreateLadder(
            ladder_pb.CreateLadderRequest(
                name="p5",
                options=ladder_pb.LadderOptions(
                    turn_time_ms=60_000, max_games_per_bot=2, max_games=n
                ),
            ),
            metadata=admin,
        )

        async def bot(i: int) -> None:
            r = await stub.RegisterPlayer(
                api.RegisterPlayerRequest(name=f"p5-{i}-{secrets.token_hex(2)}", bot=True),
                metadata=admin,
            )
            playing: set[asyncio.Task] = set()
            await ladders.JoinLadder(
                ladder_pb.JoinLadderRequest(ladder="p5", ready=True), metadata=bearer(r.token)
            )
            # games assigned before the stream is open come first, as its backlog
            stream = stub.SubscribePlayer(api.SubscribePlayerRequest(), metadata=bearer(r.token))
            async for note in stream:
                if note.type == api.PLAYER_EVENT_TYPE_GAME_ASSIGNED:
                    if i % 2:
                        seat = instant_seat(stub, note.game_id, r.token)
                    else:
                        seat = play_seat(stub, note.game_id, r.token, Round(), single=False)
                    task = asyncio.create_task(seat)
                    playing.add(task)
                    task.add_done_callback(playing.discard)
                elif note.type == api.PLAYER_EVENT_TYPE_GAME_OVER and note.game_id not in over:
                    over.add(note.game_id)
                    if len(over) % every == 0:
                        rss = proc_status(pid)["VmRSS"] / 1024
                        samples.append((len(over), rss, time.perf_counter() - t0))
                        print(f"  after game {len(over)}: {rss:.1f} MiB", flush=True)
                    if len(over) >= n:
                        done.set()

        bots = [asyncio.create_task(bot(i)) for i in range(BOTS)]
        await done.wait()
        standings = await ladders.GetStandings(ladder_pb.GetStandingsRequest(ladder="p5"))
        for task in bots:
            task.cancel()
    return samples, standings.finished_games + standings.voided_games


def main(quick: bool = False, n: int | None = None) -> None:
    n = n or (1500 if quick else 8000)
    os.environ.setdefault(ADMIN_ENV, secrets.token_urlsafe(32))
    with arbiter() as (address, proc):
        samples, counted = asyncio.run(ladder(address, n, proc.pid))
    (first_games, first, _), (last_games, last, seconds) = samples[0], samples[-1]
    growth = (last - first) / first
    per_game = (last - first) * 1024 / max(1, last_games - first_games)
    print(
        f"  {last_games} ladder games in {seconds:.0f} s ({last_games / seconds:.1f} games/s); "
        f"standings count {counted}"
    )
    print(
        f"  RSS after game {last_games} is {growth:+.1%} of RSS after game {first_games} "
        f"({per_game:.2f} KiB per finished game); target within 10%: "
        + ("met" if abs(growth) <= 0.10 else "NOT met")
    )
    full = [(g, rss) for g, rss, _ in samples if g >= REMEMBERED // 2]
    if len(full) >= 2:
        (g0, r0), (g1, r1) = full[0], full[-1]
        print(
            f"  once the edge's caches are full (game {g0} on): RSS {r0:.1f} -> {r1:.1f} MiB, "
            f"{(r1 - r0) * 1024 / (g1 - g0):.2f} KiB per finished game"
        )


if __name__ == "__main__":
    main(n=int(sys.argv[1]) if len(sys.argv) > 1 else None)
