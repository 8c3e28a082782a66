"""examples/stranger_bot.py, the bot a stranger writes from the public contract alone
(docs/PROTOCOL.md, proto/nardy/v1/*.proto, RULES.md; stubs generated at run time, no SDK),
run as a real process against a real arbiter. It computes every turn's legal plays itself
and compares them with the server's, submits some in its own notation, recomputes every die
from the revealed server seed, and checks refusals, resuming, the spectator's view, clocks,
aborts and the ends of games and matches as the contract states them: it exits 1 on any
difference, so these tests fail when the contract and the server part ways."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from nardy.client import Client
from server.app import EmbeddedServer
from tests.server.test_recovery import free_port, start_server

BOT = Path(__file__).resolve().parents[2] / "examples" / "stranger_bot.py"
# White bears off from a six-point block in its home that no black checker is ahead of
# (a hand-made position): bearing off is never refused by the six-point rule (docs/RULES.md,
# "Readings", §3.5).
HANDMADE = "w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,3,3,3,2,2,2"


def command(address: str, *args: str) -> list[str]:
    return [sys.executable, str(BOT), "match", "--server", address, *args]


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("NARDY_")}


@pytest.mark.slow
@pytest.mark.parametrize(
    "args, ends",
    [
        # a challenge between two registered players; game 2, if any, is resigned
        (
            ["--variant", "long", "--registered", "--points", "2", "--resign-from-game", "2"],
            "game 1 (long): COLOR_",
        ),
        # open seats, dice from a public seed (its derivation is checked too)
        (["--variant", "short", "--seed", "7"], "by TERMINATION_NORMAL"),
        (["--variant", "long", "--start-position", HANDMADE], "by TERMINATION_NORMAL"),
        # the first seat lets its first turn run out
        (
            ["--variant", "short", "--turn-time-ms", "1500", "--timeout-from-game", "1"],
            "by TERMINATION_TIMEOUT",
        ),
    ],
    ids=["long-challenge", "short-seeded", "long-handmade-bear-off", "short-timeout"],
)
def test_the_stranger_bot_finds_the_contract_kept(tmp_path, args, ends):
    with EmbeddedServer(db=str(tmp_path / "s.db")) as srv:
        run = subprocess.run(
            command(srv.address, *args),
            env=environment(),
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert run.returncode == 0, run.stdout + run.stderr
    assert ends in run.stdout
    variant = args[1]
    if "--timeout-from-game" not in args:  # (else a seat may never have had a turn)
        assert f"my legal plays = the server's ({variant})" in run.stdout
        assert "every turn's dice follow the fair-dice generator" in run.stdout


@pytest.mark.slow
async def test_the_stranger_bot_resumes_across_a_server_restart(tmp_path):
    """SIGTERM mid-game: its streams end with SERVER_SHUTDOWN, calls fail UNAVAILABLE while
    the server is down; it resubscribes with after_seq and the game is played out."""
    port, db = free_port(), str(tmp_path / "r.db")
    address = f"127.0.0.1:{port}"
    server = start_server(port, db)
    bot = subprocess.Popen(
        command(address, "--think-ms", "20", "-v"),
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "bot.log", "wb"),  # noqa: SIM115
        text=True,
    )
    try:
        first = await trio.to_thread.run_sync(bot.stdout.readline)
        game_id = first.split("first game ")[1].strip()
        async with Client(address) as spectator:
            async for ev in spectator.events(game_id, from_start=True):
                if ev.state.turn_id >= 6:
                    break
        server.send_signal(signal.SIGTERM)
        assert await trio.to_thread.run_sync(server.wait, 30) == 0
        server = start_server(port, db)
        out, _ = await trio.to_thread.run_sync(bot.communicate, None, 120)
        log = (tmp_path / "bot.log").read_text()
        assert bot.returncode == 0, first + out + log[-3000:]
        assert "resuming after seq" in log
        assert "by TERMINATION_NORMAL" in out
    finally:
        for proc in (bot, server):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
