"""``python -m server.core FD``: the core as a process of its own, started by the edge
(``nardy serve``). Its configuration comes as one JSON line on stdin (never on the command
line: it may hold the operator token), the link is the connected socket FD. It stops
when the link closes or on SIGTERM, and dies with the edge (Linux's parent-death signal).
It runs at a lower priority than the edge (:data:`NICER`) and collects its garbage as
server.collector says.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import sys

import trio

from server.collector import FrozenGenerations
from server.config import ServerConfig
from server.core.main import run

PR_SET_PDEATHSIG = 1
# The core runs this much nicer than its edge: on a machine short of CPU the edge, whose
# lateness would be charged to clocks, goes first; the core's only delays enforcement.
# Measured (python -m bench.clock, 100 games flat out on two cores): charged beyond a
# bot's own thinking p50 2.5 ms, p99 88 ms, nothing lost on time, against p50 21 ms, p99
# 130 ms and 10 turns lost on time in 900 at the same priority.
NICER = 10


def die_with_parent(parent: int) -> None:
    """SIGTERM this process when the edge that started it dies (even by kill -9)."""
    with contextlib.suppress(OSError, AttributeError):  # (not Linux: the link's end does)
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the edge died before the signal was set
        sys.exit(1)


async def serve(config: ServerConfig, sock: socket.socket) -> None:
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
    async with trio.open_nursery() as nursery:

        async def on_sigterm() -> None:
            with trio.open_signal_receiver(signal.SIGTERM) as signals:
                async for _ in signals:
                    await stream.aclose()  # as if the edge had closed the link
                    return

        nursery.start_soon(on_sigterm)
        await run(config, stream)
        nursery.cancel_scope.cancel()


def main() -> None:
    parent = os.getppid()
    die_with_parent(parent)
    os.nice(NICER)  # the edge's stamps go first (see NICER)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the edge's to act on
    config = ServerConfig.from_json(sys.stdin.readline())
    logging.basicConfig(
        level=config.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    sock = socket.socket(fileno=int(sys.argv[1]))
    FrozenGenerations().install()
    try:
        trio.run(serve, config, sock)
    except* Exception as group:
        for error in group.exceptions:
            logging.getLogger("nardy.server").error("the core stopped: %s", error)
        sys.exit(1)


if __name__ == "__main__":
    main()
