"""Issue 10, "fair clocks under load": are bots charged for their own time only?

A ``nardy serve`` process carries 100 games played flat out by instant bots plus a
``ListGames`` load (a separate client process), while probe bots (this process) play
games on a 1 s turn time and answer each turn 150 ms before their deadline as they see it
(the clock reading in the TURN_STARTED event, counted from when the event arrived).

For every probe play: its own thinking (event received -> SubmitPlay sent, measured by
the probe) and the time the server charged (``used_ms``). Reported: plays refused for time
although sent in time (target 0), and the charge beyond the probe's own thinking, p50 /
p99 / max (target p99 <= 50 ms). The same probes are first run against an idle server,
alternating rounds (idle, loaded, idle, loaded, ...), so the loaded figures have an
unloaded baseline from the same run.

``python -m bench clock [--quick]``; ``python -m bench.clock load ADDRESS GAMES RATE`` is
the load process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import statistics
import subprocess
import sys
import time

import grpc

from bench.arbiter import arbiter, pct
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb

TURN_MS = 1000
ADMIN_ENV = "NARDY_ADMIN_TOKEN"  # read by `nardy serve` and by the load process
MARGIN_MS = 150  # the probe answers this long before its deadline


def _md(token: str):
    return (("authorization", f"Bearer {token}"),)


async def instant_seat(stub, game_id: str, token: str) -> None:
    """A bot that plays the first legal play at once, until the game ends."""
    async for ev in stub.SubscribeGame(
        api.SubscribeGameRequest(game_id=game_id), metadata=_md(token)
    ):
        st = ev.state
        if ev.type in (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED):
            return
        if (
            ev.type == pb.EVENT_TYPE_TURN_STARTED
            and st.legal_plays
            and st.side_to_move == st.your_color
        ):
            with contextlib.suppress(grpc.RpcError):  # e.g. the game ended meanwhile
                await stub.SubmitPlay(
                    api.SubmitPlayRequest(
                        game_id=game_id,
                        turn_id=st.turn_id,
                        end_position=st.legal_plays[0].end_position,
                    ),
                    metadata=_md(token),
                )


async def new_game(stub, seed: int, turn_ms: int):
    """A match between two open seats, made as the operator (``$NARDY_ADMIN_TOKEN``, set
    for the bench's server): no quota on matches waiting for their seats."""
    return await stub.CreateMatch(
        api.CreateMatchRequest(
            seed=seed,
            options=pb.GameOptions(turn_time_ms=turn_ms, auto_play_forced=True),
            start_timeout_ms=60_000,
        ),
        metadata=_md(os.environ[ADMIN_ENV]),
    )


# -- the load process ------------------------------------------------------------------------
async def load(address: str, games: int, list_rate: float) -> None:
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)

        async def flat_out(slot: int) -> None:
            seed = slot
            while True:
                r = await new_game(stub, seed, 60_000)
                await asyncio.gather(
                    instant_seat(stub, r.game_id, r.first_seat_token),
                    instant_seat(stub, r.game_id, r.second_seat_token),
                )
                seed += games

        async def list_games() -> None:
            while True:
                await stub.ListGames(api.ListGamesRequest(limit=1000))
                await asyncio.sleep(1 / list_rate)

        tasks = []
        for slot in range(games):  # one after another: a burst of streams overruns grpc.aio
            tasks.append(asyncio.create_task(flat_out(slot)))
            await asyncio.sleep(0.01)
        tasks.append(asyncio.create_task(list_games()))
        await asyncio.gather(*tasks)


# -- the probes ------------------------------------------------------------------------------
class Tally:
    def __init__(self, wanted: int) -> None:
        self.wanted = wanted
        self.extra_ms: list[float] = []  # charged beyond own thinking, per play
        self.refused = 0  # plays sent in time by the probe's view, refused for time
        self.lost_on_time = 0
        self.done = asyncio.Event()

    def add(self, extra: float) -> None:
        self.extra_ms.append(extra)
        if len(self.extra_ms) >= self.wanted:
            self.done.set()


async def probe_seat(stub, game_id: str, token: str, tally: Tally) -> None:
    stream = stub.SubscribeGame(api.SubscribeGameRequest(game_id=game_id), metadata=_md(token))
    async for ev in stream:
        received = time.perf_counter()
        st = ev.state
        if ev.type == pb.EVENT_TYPE_GAME_FINISHED:
            if (
                st.result.termination == pb.TERMINATION_TIMEOUT
                and st.result.winner != st.your_color
            ):
                tally.lost_on_time += 1
            return
        if ev.type != pb.EVENT_TYPE_TURN_STARTED or not st.legal_plays:
            continue
        if st.side_to_move != st.your_color:
            continue
        mine = st.white_clock if st.your_color == pb.COLOR_WHITE else st.black_clock
        await asyncio.sleep(max(0.0, (mine.remaining_ms - MARGIN_MS) / 1000))
        sent = time.perf_counter()
        thinking_ms = (sent - received) * 1000
        try:
            resp = await stub.SubmitPlay(
                api.SubmitPlayRequest(
                    game_id=game_id, turn_id=st.turn_id, end_position=st.legal_plays[0].end_position
                ),
                metadata=_md(token),
            )
        except grpc.RpcError as e:
            if "clock" in (e.details() or ""):
                tally.refused += 1
            return
        tally.add(resp.used_ms - thinking_ms)


async def probes(address: str, games: int, plays: int, seed: int) -> Tally:
    tally = Tally(plays)
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)

        async def one(slot: int) -> None:
            n = seed + slot
            while not tally.done.is_set():
                r = await new_game(stub, n, TURN_MS)
                await asyncio.gather(
                    probe_seat(stub, r.game_id, r.first_seat_token, tally),
                    instant_seat(stub, r.game_id, r.second_seat_token),
                )
                n += games

        tasks = [asyncio.create_task(one(i)) for i in range(games)]
        await tally.done.wait()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return tally


def report(label: str, tally: Tally) -> None:
    x = tally.extra_ms
    print(
        f"  {label:34s} {len(x):4d} plays  refused for time {tally.refused:3d}  "
        f"lost on time {tally.lost_on_time:2d}  charged beyond own thinking: "
        f"p50 {statistics.median(x):6.1f} ms  p99 {pct(x, 0.99):6.1f} ms  max {max(x):6.1f} ms"
    )


def main(quick: bool = False) -> None:
    games, plays, rounds = (20, 40, 1) if quick else (100, 150, 2)
    list_rate = 30.0
    print(
        f"probes answer {MARGIN_MS} ms before a {TURN_MS} ms deadline; load: {games} games "
        f"flat out + ListGames(limit=1000) {list_rate:.0f}/s; {rounds} alternating rounds"
    )
    totals = {"idle": Tally(0), "loaded": Tally(0)}
    os.environ.setdefault(ADMIN_ENV, secrets.token_urlsafe(32))
    with arbiter() as (address, _):
        for r in range(rounds):
            for label in ("idle", "loaded"):
                loader = None
                if label == "loaded":
                    loader = subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "bench.clock",
                            "load",
                            address,
                            str(games),
                            str(list_rate),
                        ]
                    )
                    time.sleep(3 if quick else 8)  # let the games get going
                try:
                    t = asyncio.run(probes(address, 10, plays, seed=1000 * r + (label == "loaded")))
                finally:
                    if loader is not None:
                        loader.terminate()
                        loader.wait(10)
                report(f"round {r + 1}, {label} server", t)
                total = totals[label]
                total.extra_ms += t.extra_ms
                total.refused += t.refused
                total.lost_on_time += t.lost_on_time
    for label, t in totals.items():
        report(f"all rounds, {label} server", t)
    loaded = totals["loaded"]
    ok = loaded.refused == 0 and loaded.lost_on_time == 0 and pct(loaded.extra_ms, 0.99) <= 50
    print(
        "  target: 0 in-time plays refused, p99 charged beyond own thinking <= 50 ms under load: "
        + ("met" if ok else "NOT met")
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["load"]:
        asyncio.run(load(sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
    else:
        main("--quick" in sys.argv)
