"""The SDK's bot loop over its two transports: turns per second of whole games between two
``play_game`` seats with an instant engine (the first legal play), over the ``Play`` stream
against SubscribeGame + SubmitPlay (``transport="unary"``, the baseline), on one ``nardy
serve`` process (fresh SQLite file). Rounds alternate the two (this machine is noisy); each
round plays games one after another for a fixed time, both seats in this process.

``python -m bench sdk [--quick]``.
"""

from __future__ import annotations

import os
import secrets
import statistics
import time

import trio

from bench.arbiter import arbiter
from bench.bots import ADMIN_ENV
from nardy.client import PLAY, UNARY, Client, play_game


def first_legal(turn):
    return turn.legal[0]


async def one_round(address: str, admin: str, transport: str, seconds: float) -> float:
    """Turns per second over ``transport``: whole games, one at a time, for ``seconds``."""
    turns = 0
    async with Client(address, admin, transport=transport) as operator:
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            r = await operator.create_match()
            seats = [operator.with_token(t) for t in (r.first_seat_token, r.second_seat_token)]
            finals = []
            async with trio.open_nursery() as n:
                for seat in seats:
                    n.start_soon(_play, seat, r.game_id, finals)
            turns += finals[0].turn_id
        return turns / (time.perf_counter() - start)


async def _play(seat: Client, game_id: str, finals: list) -> None:
    finals.append(await play_game(seat, game_id, first_legal))


def main(quick: bool = False) -> None:
    os.environ.setdefault(ADMIN_ENV, secrets.token_urlsafe(32))
    admin = os.environ[ADMIN_ENV]
    seconds, rounds = (4.0, 2) if quick else (8.0, 3)
    print(f"  load average at start: {os.getloadavg()[0]:.1f}")
    rates: dict[str, list[float]] = {PLAY: [], UNARY: []}
    with arbiter() as (address, _):
        for r in range(rounds):
            order = (PLAY, UNARY) if r % 2 == 0 else (UNARY, PLAY)
            for transport in order:
                rate = trio.run(one_round, address, admin, transport, seconds)
                rates[transport].append(rate)
                print(f"  round {r + 1}, {transport:5}: {rate:6.0f} turns/s", flush=True)
    play, unary = (statistics.median(rates[t]) for t in (PLAY, UNARY))
    print(
        f"  SDK bot loop, one game at a time: Play {play:.0f} turns/s, unary {unary:.0f} "
        f"turns/s (medians of {rounds} rounds): Play = {play / unary:.2f}x unary"
    )


if __name__ == "__main__":
    main()
