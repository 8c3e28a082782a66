"""P5 (issue 13): memory flat over a long run.

A ``nardy serve`` process plays game after game between instant bots (4 at a time, each
from a short race position so that thousands of games fit in minutes; open seats, so the
custom start is allowed and flagged). The server's RSS is read after game 500 and then
every 500 games: a finished game must cost nothing beyond bounded caches (target: RSS
after the last game within 10% of RSS after game 500).

``python -m bench memory [--quick]`` (quick: 1,500 games; full: 5,000).
"""

from __future__ import annotations

import asyncio

import grpc

from bench.arbiter import arbiter, proc_status
from bench.clock import instant_seat
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb

CONCURRENCY = 4


def race_start() -> str:
    """Both sides home with 15 checkers each (3,3,2,2,2,3): a game of about 10-20 turns."""
    board = [0] * 24
    for i, c in enumerate((3, 3, 2, 2, 2, 3)):
        board[18 + i] = c  # white's home: a = 18..23
        board[6 + i] = -c  # black's home: a = 6..11
    return "w/" + ",".join(map(str, board))


async def games(address: str, n: int, every: int, pid: int) -> list[tuple[int, float]]:
    """Play ``n`` games; (games finished, server RSS MiB) after every ``every`` games."""
    samples: list[tuple[int, float]] = []
    done = 0
    start = race_start()
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)

        async def worker(slot: int) -> None:
            nonlocal done
            seed = slot
            while done < n:
                r = await stub.CreateMatch(
                    api.CreateMatchRequest(
                        seed=seed,
                        start_position=start,
                        options=pb.GameOptions(turn_time_ms=60_000, auto_play_forced=True),
                    )
                )
                await asyncio.gather(
                    instant_seat(stub, r.game_id, r.first_seat_token),
                    instant_seat(stub, r.game_id, r.second_seat_token),
                )
                seed += CONCURRENCY
                done += 1
                if done % every == 0:
                    samples.append((done, proc_status(pid)["VmRSS"] / 1024))

        await asyncio.gather(*(worker(i) for i in range(CONCURRENCY)))
    return samples


def main(quick: bool = False) -> None:
    n = 1500 if quick else 5000
    with arbiter() as (address, proc):
        samples = asyncio.run(games(address, n, 500, proc.pid))
    first = samples[0][1]
    print("  " + "  ".join(f"after {g}: {rss:.1f} MiB" for g, rss in samples))
    last_games, last = samples[-1]
    growth = (last - first) / first
    per_game = (last - first) * 1024 / max(1, last_games - samples[0][0])
    print(
        f"  RSS after game {last_games} is {growth:+.1%} of RSS after game {samples[0][0]} "
        f"({per_game:.2f} KiB per finished game); target within 10%: "
        + ("met" if abs(growth) <= 0.10 else "NOT met")
    )


if __name__ == "__main__":
    main()
