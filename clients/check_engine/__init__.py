"""`nardy check-engine -- CMD ...`: drive an engine process through scripted scenarios.

The checker starts an embedded arbiter, and for each scenario creates a match with two open
seats from a scripted start position and scripted dice, so that every scenario is the same
on every run. The engine under test gets the first seat: CMD is launched as its own process
with NARDY_SERVER and NARDY_TOKEN (the seat token) in its environment. The checker plays the
second seat in-process with the SDK, follows the game as a spectator and judges it.

Transports: the engine chooses how it plays (the ``Play`` stream, or SubscribeGame and
SubmitPlay); the checker launches the command as given and cannot choose for it, nor see
which it chose. Every scenario but one runs on an arbiter that offers both (an engine built
on the SDK, or the Node example, plays them over ``Play``). The ``no-play-stream`` scenario
runs on a second arbiter that does not offer ``Play`` (it answers UNIMPLEMENTED, as a
server that predates it): every engine plays it over SubscribeGame and SubmitPlay, and an
engine that knows only ``Play`` fails it.

The package: ``scenarios`` (the scripted games), ``judge`` (what each must show),
``runner`` (playing them), ``output`` (the PASS/FAIL lines); engines are run by
:mod:`clients.supervisor`.

Engine output (stdout and stderr) goes to one log file per scenario in a temporary
directory, kept and named on failure. Every engine process is killed at the end, also on
Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import shutil
import signal
import sys
import tempfile

import trio

from clients.check_engine.model import JOIN_MS
from clients.check_engine.output import Output
from clients.check_engine.runner import run_all
from clients.check_engine.scenarios import check_setups, scenarios
from clients.supervisor import engine_env, stop_all


def interrupted(error: BaseException) -> bool:
    """True for Ctrl-C, also when trio delivers it inside an exception group."""
    if isinstance(error, BaseExceptionGroup):
        return error.subgroup(KeyboardInterrupt) is not None
    return isinstance(error, KeyboardInterrupt)


def usage() -> int:
    print(
        "usage: nardy check-engine [--turn-time-ms MS] -- CMD [ARG ...]\n"
        "nardy check-engine: give the engine command after '--', e.g. "
        "nardy check-engine -- nardy engine random",
        file=sys.stderr,
    )
    return 2


def main(args: argparse.Namespace) -> int:
    cmd = list(args.cmd or [])
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        return usage()
    if args.turn_time_ms <= 0:
        print("nardy check-engine: --turn-time-ms must be positive", file=sys.stderr)
        return 2
    join_ms = JOIN_MS if args.join_ms is None else args.join_ms
    if join_ms <= 0:
        print("nardy check-engine: --join-ms must be positive", file=sys.stderr)
        return 2
    if shutil.which(cmd[0], path=engine_env({})["PATH"]) is None:
        print(
            f"nardy check-engine: cannot run {cmd[0]!r}: not found or not executable",
            file=sys.stderr,
        )
        return 2
    from server.app import EmbeddedServer

    logdir = tempfile.mkdtemp(prefix="nardy-check-")
    logging.basicConfig(
        filename=os.path.join(logdir, "arbiter.log"),
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )
    out = Output(colour=sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    previous = signal.getsignal(signal.SIGTERM)

    def on_term(signum, frame) -> None:
        stop_all()
        os.write(2, f"terminated; engine logs in {logdir}\n".encode())
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    servers = {
        "plain": EmbeddedServer(db=os.path.join(logdir, "arbiter.db")),
        "unary": EmbeddedServer(db=os.path.join(logdir, "unary.db"), play_stream=False),
    }
    started: list[EmbeddedServer] = []
    results: list[tuple[str, bool, str]] = []
    try:
        for server in servers.values():
            started.append(server.start())
        addresses = {kind: server.address for kind, server in servers.items()}
        print(
            f"checking: {shlex.join(cmd)}  (turn time {args.turn_time_ms} ms, arbiter "
            f"{addresses['plain']}; without Play: {addresses['unary']})",
            flush=True,
        )
        todo = [sc for sc in scenarios() if args.variant in (None, sc.variant)]
        results = trio.run(run_all, addresses, cmd, todo, args.turn_time_ms, logdir, out, join_ms)
    except BaseException as e:
        if not interrupted(e):
            raise
        stop_all()
        print(f"interrupted; engine logs in {logdir}", file=sys.stderr)
        return 130
    finally:
        stop_all()
        for server in started:
            server.stop()
        signal.signal(signal.SIGTERM, previous)
    failed = [name for name, ok, _ in results if not ok]
    if failed:
        print(
            f"FAILED: {len(failed)} of {len(results)} scenarios failed "
            f"({', '.join(failed)}); engine logs in {logdir}"
        )
        return 1
    print(f"OK: all {len(results)} scenarios passed")
    logging.shutdown()
    shutil.rmtree(logdir, ignore_errors=True)
    return 0


__all__ = ["check_setups", "main", "scenarios"]
