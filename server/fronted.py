"""The core behind a front (``nardy serve --front``): the front process (server.front) seen
from the core, which spawns it, watches it and asks it for fences.

The core then serves on a unix socket in a private (0700) directory, and trusts a call's
peer address and a play's arrival stamp (server.core.clock) from its metadata only when the
call carries the key the front was given on its stdin. The front's stamps are on
CLOCK_MONOTONIC; trio's clock is ``time.perf_counter()`` (the same clock on Linux) plus an
offset, measured once at start-up (:attr:`Front.offset`).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

import grpc
import trio

from server.front import ARRIVAL, FENCE, KEY, PEER, PREFIX, SENT, fence_answer, fence_request

log = logging.getLogger("nardy.server")

FENCE_TIMEOUT_S = 30.0  # a fence that takes longer is asked again
STOP_S = 5.0  # the front's time to stop once told, before it is killed


class FrontDied(RuntimeError):
    """The front process stopped while the core was serving."""


class Front:
    """The front process of one ``serve`` (started by :meth:`start`, stopped by :meth:`stop`)."""

    def __init__(self) -> None:
        self.key = secrets.token_urlsafe(32)
        self.dir = tempfile.mkdtemp(prefix="nardy-front-")  # mode 0700
        self.core_socket = os.path.join(self.dir, "core.sock")
        self.fence_socket = os.path.join(self.dir, "fence.sock")
        self.offset = 0.0  # the core's clock minus CLOCK_MONOTONIC
        self.process: trio.Process | None = None
        self._stopping = False
        self.died: FrontDied | None = None  # the front stopped on its own
        self._fence: grpc.Channel | None = None  # to the front's fence

    async def start(self, settings: dict) -> int:
        """Spawn the front (``settings``: host, port, tls_cert, tls_key, max_message_bytes,
        max_concurrent_rpcs, accept_ahead); return its public port once it serves."""
        before = time.perf_counter()
        now = trio.current_time()
        self.offset = now - (before + time.perf_counter()) / 2
        self.process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "server.front"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        self._fence = grpc.insecure_channel(f"unix:{self.fence_socket}")
        config = dict(
            settings,
            key=self.key,
            core=self.core_socket,
            fence=self.fence_socket,
            log_level=log.getEffectiveLevel(),  # as the core's (`nardy serve --log-level`)
        )
        await self.process.stdin.send_all(json.dumps(config).encode() + b"\n")
        line = b""
        while not line.endswith(b"\n"):
            chunk = await self.process.stdout.receive_some(64)
            if not chunk:
                raise FrontDied("the front did not start (see its log above)")
            line += chunk
        return int(line)

    def give_way(self, nice: int) -> None:
        """Run this process's threads ``nice`` steps nicer than the front (threads started
        later inherit it): on a machine short of CPU the front, whose lateness would be
        charged to clocks, goes first; the core's lateness only delays enforcement."""
        with contextlib.suppress(OSError):
            for tid in map(int, os.listdir("/proc/self/task")):
                os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + nice)

    async def watch(self, stop: trio.Event) -> None:
        """If the front stops on its own, say so (:attr:`died`) and set ``stop``."""
        code = await self.process.wait()
        if not self._stopping:
            self.died = FrontDied(f"the front process stopped (exit status {code})")
            log.error("%s: the server stops", self.died)
            stop.set()

    async def stop(self) -> None:
        """Tell the front to stop (its stdin closes) and wait for it; clean up."""
        self._stopping = True
        try:
            if self.process is not None:
                await self.process.stdin.aclose()
                with trio.move_on_after(STOP_S):
                    await self.process.wait()
                if self.process.returncode is None:
                    self.process.kill()
                    await self.process.wait()
        finally:
            if self._fence is not None:
                self._fence.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def vouched(self, context: grpc.aio.ServicerContext) -> dict[str, str]:
        """The front's metadata of this call, if it carries the front's key (else empty)."""
        md = {k: v for k, v in context.invocation_metadata() or () if k.startswith(PREFIX)}
        if hmac.compare_digest(md.get(KEY, "").encode(), self.key.encode()):
            return md
        return {}

    def peer(self, context: grpc.aio.ServicerContext) -> str:
        """The caller's peer as the front saw it ("" if not vouched for)."""
        return self.vouched(context).get(PEER, "")

    def arrival(self, context: grpc.aio.ServicerContext) -> tuple[float | None, float | None]:
        """When the front stamped this play, and when it sent the play's turn, on the
        core's clock (None: not vouched for, not sent)."""
        md = self.vouched(context)
        stamp, sent = md.get(ARRIVAL), md.get(SENT)
        return (
            None if stamp is None else float(stamp) + self.offset,
            None if sent is None else float(sent) + self.offset,
        )

    async def in_flight(
        self, game_id: str, turn_id: int, before: float
    ) -> tuple[bool, float | None]:
        """The fence (server.core.clock.Arrivals.upstream): wait until no play of ``game_id``
        stamped at the front before ``before`` (on the core's clock) is on its way to the
        core; (True if one was, when the front sent turn ``turn_id`` if it did)."""
        request = fence_request(game_id, turn_id, before - self.offset)
        while True:
            try:
                answer = await trio.to_thread.run_sync(
                    self._ask_fence, request, abandon_on_cancel=True
                )
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                    continue
                log.error("the front's fence failed: %s", e.code())
                return False, None
            waited, sent = fence_answer(answer)
            return waited, None if sent is None else sent + self.offset

    def _ask_fence(self, request: bytes) -> bytes:
        ask = self._fence.unary_unary(FENCE)
        return ask(request, metadata=((KEY, self.key),), timeout=FENCE_TIMEOUT_S)
