"""Terminal-client tests: the real ``nardy`` programs in a pseudo-terminal (pexpect),
against real arbiters (the client's own, or one started here)."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import threading
from pathlib import Path

import pexpect
import pytest
import trio
from pexpect import fdpexpect

from nardy.client import Client, my_turn
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb

ROOT = Path(__file__).resolve().parents[2]

# White on its points 6, 5, 4, 3 and black on its own 6, 5, 4, 3: eleven off each, so a
# game between bots is over in three turns.
RACE = "w/0,0,0,0,0,0,-1,-1,-1,-1,0,0,0,0,0,0,0,0,1,1,1,1,0,0"


_SPAWNED: list[subprocess.Popen] = []
RECORDS = tempfile.mkdtemp(prefix="nardy-test-records-")
atexit.register(shutil.rmtree, RECORDS, True)


def spawn(
    *args: str, timeout: float = 60, env: dict | None = None, size: tuple[int, int] = (100, 30)
) -> fdpexpect.fdspawn:
    """``nardy ARGS`` in a pseudo-terminal of ``size`` (columns, rows), without colour.

    The pty is made here and the process started with ``subprocess`` rather than
    ``pexpect.spawn``: that forks this process, whose gRPC threads (the arbiter, the bots)
    do not survive a plain fork reliably.
    """
    # (COLUMNS and LINES, set by a parallel runner's workers, would override the pty's size)
    inherited = ("NARDY_SERVER", "NARDY_TOKEN", "COLUMNS", "LINES")
    e = {k: v for k, v in os.environ.items() if k not in inherited}
    e.update(NO_COLOR="1", TERM="xterm", LANG="C.UTF-8", PYTHONUNBUFFERED="1")
    e.setdefault("NARDY_RECORDS", RECORDS)  # saved games go here, not to the home folder
    e.update(env or {})
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "clients", *args],
        cwd=str(ROOT),
        env=e,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    _SPAWNED.append(proc)
    child = fdpexpect.fdspawn(
        master, encoding="utf-8", codec_errors="replace", timeout=timeout, use_poll=True
    )
    child.proc = proc
    if os.environ.get("NARDY_TEST_LOG"):  # a transcript of the whole session, for debugging
        child.logfile_read = open(os.environ["NARDY_TEST_LOG"], "a")  # noqa: SIM115
    return child


def finish(child: fdpexpect.fdspawn, timeout: float = 15) -> int:
    """Wait for the program to end; its exit code."""
    child.expect(pexpect.EOF, timeout=timeout)
    code = child.proc.wait(timeout=timeout)
    with contextlib.suppress(OSError):
        child.close()
    return code


@pytest.fixture(autouse=True)
def _no_leftovers():
    """A program a failed test left running is stopped (SIGTERM lets it stop its engine)."""
    yield
    while _SPAWNED:
        proc = _SPAWNED.pop()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def create_match(address: str, **fields) -> api.CreateMatchResponse:
    async def main():
        async with Client(address) as c:
            return await c.create_match(**fields)

    return trio.run(main)


def get_game(address: str, game_id: str) -> api.GetGameResponse:
    async def main():
        async with Client(address) as c:
            return await c.get_game(game_id)

    return trio.run(main)


class Bots:
    """Both seats of a match played by first-legal-play bots in a background thread."""

    def __init__(
        self,
        address: str,
        r: api.CreateMatchResponse,
        delay: float = 0.0,
        seats: tuple[str, ...] = ("first", "second"),
    ) -> None:
        self.address = address
        self.r = r
        self.delay = delay
        self.seats = seats
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Bots:
        self.thread.start()
        return self

    def join(self, timeout: float = 30) -> None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the bots' match did not end"
        if self.error:
            raise self.error

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as e:  # reported by join()
            self.error = e

    async def _main(self) -> None:
        async with Client(self.address) as c:

            async def seat(token: str) -> None:
                me = c.with_token(token)
                game_id = self.r.game_id
                while game_id:
                    done: set[int] = set()
                    last = None
                    async for ev in me.events(game_id):
                        last = ev
                        if my_turn(ev) and ev.state.turn_id not in done:
                            done.add(ev.state.turn_id)
                            await trio.sleep(self.delay)
                            play = ev.state.legal_plays[0]
                            await me.submit(
                                game_id, ev.state.turn_id, end_position=play.end_position
                            )
                    game_id = last.state.next_game_id if last is not None else ""

            async with trio.open_nursery() as n:
                for which in self.seats:
                    n.start_soon(seat, getattr(self.r, f"{which}_seat_token"))


def bot_match(
    address: str, *, delay: float = 0.0, **fields
) -> tuple[api.CreateMatchResponse, Bots]:
    fields.setdefault("options", pb.GameOptions(turn_time_ms=20_000))
    r = create_match(address, **fields)
    return r, Bots(address, r, delay)
