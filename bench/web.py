"""What viewers of the web view cost the games being played.

``nardy serve --http-port`` (fresh SQLite file, default options but the web view, and the
bench's addresses as a trusted proxy so that each viewer can be an address of its own),
one game at a time played flat out by instant bots over the ``Play`` stream (bench.turns),
in alternating rounds: alone, and while viewers poll the game's live part
(``/fragment/game/ID``, what a live page asks for) as fast as their address's rate allows
(``--viewers``, 10 by default, each at the web view's 50 requests a second). Turns per
second with viewers against without, per round, with the server's CPU per turn and the
pages served.

``python -m bench web [--quick] [--viewers N] [--against DIR]``; ``--against DIR`` also
measures the arbiter of another checkout of the code (bench.turns explains how to make
one), round by round beside this one. ``python -m bench.web viewers URL N SECONDS`` runs
the viewers (the bench starts them as a process of their own).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import statistics
import subprocess
import sys
import time

import aiohttp

from bench.arbiter import arbiter, free_port
from bench.bots import ADMIN_ENV
from bench.turns import PLAY, cpu_s, drive

RATE = 50.0  # requests a second per address: the web view's default


async def viewers_main(base: str, viewers: int, seconds: float) -> None:
    """``viewers`` addresses polling the live part of the game in progress; prints the
    pages served and refused."""
    served, refused = [0], [0]
    game = [""]
    stop = time.monotonic() + seconds

    async with aiohttp.ClientSession() as http:

        async def follow() -> None:  # (the game in progress: a new one as each ends)
            while time.monotonic() < stop:
                async with http.get(f"{base}/api/games", headers={"X-Real-IP": "10.9.1.1"}) as r:
                    if r.status == 200:
                        live = (await r.json())["in_progress"]
                        game[0] = live[0]["gameId"] if live else ""
                await asyncio.sleep(0.2)

        async def viewer(i: int) -> None:
            headers = {"X-Real-IP": f"10.9.0.{i + 1}"}
            t = time.monotonic()
            while t < stop:
                if game[0]:
                    async with http.get(f"{base}/fragment/game/{game[0]}", headers=headers) as r:
                        await r.read()
                        (served if r.status == 200 else refused)[0] += 1
                t = max(t + 1 / RATE, time.monotonic() - 1)
                await asyncio.sleep(max(0.0, t - time.monotonic()))

        await asyncio.gather(follow(), *(viewer(i) for i in range(viewers)))
    print(served[0], refused[0])


def measured(address: str, pid: int, http: str, viewers: int, seconds: float, admin: str):
    """Turns per second of one game at a time for ``seconds``, ``viewers`` polling it; the
    server's CPU ms per turn and the pages served and refused a second."""
    crowd = None
    if viewers:
        args = [sys.executable, "-m", "bench.web", "viewers", http, str(viewers), str(seconds)]
        crowd = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    cpu0 = sum(cpu_s(pid))
    tally = asyncio.run(drive(address, 1, seconds, admin, PLAY))
    cpu = (sum(cpu_s(pid)) - cpu0) / max(1, tally.turns) * 1e3
    served = refused = 0
    if crowd is not None:
        out, _ = crowd.communicate(timeout=seconds + 60)
        served, refused = map(int, out.split())
    return tally.turns / seconds, cpu, served / seconds, refused / seconds


def main(quick: bool = False) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench web")
    ap.add_argument("--viewers", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--against", default=None, help="another checkout's directory")
    args, _ = ap.parse_known_args(sys.argv[1:])
    os.environ.setdefault(ADMIN_ENV, secrets.token_urlsafe(32))
    admin = os.environ[ADMIN_ENV]
    seconds = 5.0 if quick else 10.0
    rounds = args.rounds or (2 if quick else 3)
    print(f"  load average at start: {os.getloadavg()[0]:.1f}")
    with contextlib.ExitStack() as stack:
        servers = {}
        for name, checkout in (("arbiter", None), ("other checkout", args.against)):
            if name != "arbiter" and checkout is None:
                continue
            port = free_port()
            web = ("--http-port", str(port), "--trusted-proxy", "127.0.0.1")
            address, proc = stack.enter_context(arbiter(*web, checkout=checkout))
            servers[name] = (address, proc.pid, f"http://127.0.0.1:{port}")
        results: dict[tuple[str, int], list[tuple[float, float, float, float]]] = {}
        for r in range(rounds):
            for name in tuple(servers)[:: 1 if r % 2 == 0 else -1]:
                address, pid, http = servers[name]
                crowds = (0, args.viewers) if r % 2 == 0 else (args.viewers, 0)
                for viewers in crowds:
                    got = measured(address, pid, http, viewers, seconds, admin)
                    results.setdefault((name, viewers), []).append(got)
                    print(
                        f"  round {r + 1} {name:15s} {viewers:3d} viewers: {got[0]:6.0f} turns/s, "
                        f"server CPU {got[1]:.2f} ms/turn, pages {got[2]:.0f}/s "
                        f"(refused {got[3]:.0f}/s)",
                        flush=True,
                    )
    print(f"  load average at end: {os.getloadavg()[0]:.1f}")
    for name in servers:
        alone = results[name, 0]
        crowd = results[name, args.viewers]
        ratios = [c[0] / a[0] for a, c in zip(alone, crowd, strict=True)]
        print(
            f"{name}: {statistics.median(x[0] for x in alone):.0f} turns/s alone, "
            f"{statistics.median(x[0] for x in crowd):.0f} with {args.viewers} viewers "
            f"({statistics.median(x[2] for x in crowd):.0f} pages/s): "
            f"{statistics.median(ratios):.2f}x per round "
            f"({', '.join(f'{x:.2f}' for x in ratios)}); server CPU per turn "
            f"{statistics.median(x[1] for x in alone):.2f} ms alone, "
            f"{statistics.median(x[1] for x in crowd):.2f} ms with viewers"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["viewers"]:
        base, n, seconds = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
        asyncio.run(viewers_main(base, n, seconds))
    else:
        main()
