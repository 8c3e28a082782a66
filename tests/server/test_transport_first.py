"""The core gives way to a busy transport (issue 10 item 5, server.bridge.TransportFirst): a
real asyncio loop in a thread of its own with the transport's selector, and a real trio run
with the instrument. While the loop has work ready, the core's next task step waits; a loop
that never goes idle still leaves the core running."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import trio

from server.bridge import IdleSelector, TransportFirst


class Watched(threading.Event):
    """The transport's idle flag, counting the core's waits on it."""

    def __init__(self) -> None:
        super().__init__()
        self.waits = 0
        self.waiting = threading.Event()

    def wait(self, timeout: float | None = None) -> bool:
        self.waits += 1
        self.waiting.set()
        return super().wait(timeout)


@contextlib.contextmanager
def transport_loop(first: TransportFirst):
    """An asyncio loop in its own thread, reporting idleness to ``first`` (as the
    transport's does)."""
    first.idle = Watched()
    loop = asyncio.SelectorEventLoop(IdleSelector(first.idle))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


def busy_until(loop: asyncio.AbstractEventLoop, release: threading.Event, done: list) -> None:
    """Keep ``loop`` inside a callback until ``release``; returns once it is inside."""
    inside = threading.Event()

    def callback() -> None:
        inside.set()
        release.wait(30)
        done.append("transport")

    loop.call_soon_threadsafe(callback)
    assert inside.wait(30)


def test_the_cores_next_step_waits_until_the_transport_has_run_what_was_ready():
    first = TransportFirst(most=60.0)
    order: list[str] = []
    with transport_loop(first) as loop:

        async def main() -> None:
            trio.lowlevel.add_instrument(first)
            release = threading.Event()
            busy_until(loop, release, order)
            # released only once the core is waiting for the transport
            threading.Thread(target=lambda: first.idle.waiting.wait(30) and release.set()).start()
            await trio.lowlevel.checkpoint()  # the core's next step
            order.append("core")

        trio.run(main)
    assert order == ["transport", "core"]


def test_a_transport_that_never_idles_still_leaves_the_core_running():
    first = TransportFirst(most=0.02)
    steps = 0
    with transport_loop(first) as loop:

        async def main() -> None:
            nonlocal steps
            trio.lowlevel.add_instrument(first)
            release = threading.Event()
            busy_until(loop, release, [])
            with trio.fail_after(30):
                while first.idle.waits < 3:  # the core gave way 3 times, and ran between
                    await trio.lowlevel.checkpoint()
                    steps += 1
            assert not first.idle.is_set()  # the transport was busy throughout
            release.set()

        trio.run(main)
    # After a wait that ran out the core runs `most` seconds without waiting: many steps
    # per wait, not one.
    assert steps > 3 * first.idle.waits


def test_an_idle_transport_costs_the_core_no_wait():
    first = TransportFirst(most=60.0)
    with transport_loop(first):
        assert first.idle.wait(30)  # the loop blocks in select: idle
        first.idle.waits = 0

        async def main() -> None:
            trio.lowlevel.add_instrument(first)
            for _ in range(100):
                await trio.lowlevel.checkpoint()

        trio.run(main)
    assert first.idle.waits == 0
