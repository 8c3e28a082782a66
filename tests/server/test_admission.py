"""The core starts the transport's calls a few per trio batch (server.bridge.Admission, issue
13 P4): trio acts on deadlines between batches only, so under a flood of calls a clock that
runs out waits for a short batch, not for every call that came in. A real trio run; its
batches counted by an instrument (one ``after_io_wait`` per scheduling round)."""

from __future__ import annotations

import collections

import trio
import trio.testing

from server.bridge import Admission


class Batches(trio.abc.Instrument):
    def __init__(self) -> None:
        self.n = 0

    def after_io_wait(self, timeout: float) -> None:
        self.n += 1


async def test_at_most_per_batch_calls_start_in_a_batch_in_their_order() -> None:
    batches = Batches()
    trio.lowlevel.add_instrument(batches)
    ran: list[tuple[int, int]] = []  # (call, batch its task first ran in)
    done = trio.Event()

    async def call(i: int) -> None:
        ran.append((i, batches.n))
        if len(ran) == 10:
            done.set()

    async with trio.open_nursery() as nursery:
        admission = Admission(nursery, 3)
        nursery.start_soon(admission.run)
        await trio.lowlevel.checkpoint()
        with trio.move_on_after(0.05):  # a deadline near: calls are held back
            for i in range(10):
                admission.start(lambda i=i: nursery.start_soon(call, i))
            assert len(admission.waiting) == 7  # 3 start at once, the others wait
            await done.wait()
        nursery.cancel_scope.cancel()
    trio.lowlevel.remove_instrument(batches)
    # first come, first started (trio shuffles the tasks within a batch)
    assert [b for _, b in sorted(ran)] == sorted(b for _, b in ran)
    per_batch = collections.Counter(b for _, b in ran)
    assert max(per_batch.values()) == 3 and len(per_batch) == 4, per_batch


async def batches_of_a_flood(per_batch: int, deadline_in: float) -> int:
    """How many batches 12 calls take to start while the next deadline is ``deadline_in``
    seconds away."""
    batches = Batches()
    trio.lowlevel.add_instrument(batches)
    first: list[int] = []

    async def call() -> None:
        first.append(batches.n)

    async with trio.open_nursery() as nursery:
        admission = Admission(nursery, per_batch, horizon=0.1)
        nursery.start_soon(admission.run)
        with trio.CancelScope(deadline=trio.current_time() + deadline_in):
            await trio.testing.wait_all_tasks_blocked()
            for _ in range(12):
                admission.start(lambda: nursery.start_soon(call))
            while len(first) < 12:
                await trio.lowlevel.checkpoint()
        nursery.cancel_scope.cancel()
    trio.lowlevel.remove_instrument(batches)
    return len(set(first))


async def test_calls_are_held_back_only_while_a_deadline_is_near() -> None:
    """A clock a minute from running out holds no call back (no cost to throughput); one
    within the horizon does."""
    assert await batches_of_a_flood(2, deadline_in=60.0) == 1
    assert await batches_of_a_flood(2, deadline_in=0.05) == 6


async def deadline_among_a_flood(per_batch: int) -> int:
    """200 calls of 1 ms of work each, coming in as a turn's clock has 5 ms left: how
    many calls ran before the turn's task did."""
    ran: list[str] = []
    turn = trio.CancelScope()  # a turn's clock (as GameSession's)

    async def call() -> None:
        end = trio.current_time() + 0.001
        while trio.current_time() < end:  # (CPU work: no checkpoint)
            pass
        ran.append("call")

    async def clock() -> None:
        with turn:
            await trio.sleep_forever()
        ran.append("timeout")

    async with trio.open_nursery() as nursery:
        admission = Admission(nursery, per_batch)
        nursery.start_soon(admission.run)
        nursery.start_soon(clock)
        await trio.testing.wait_all_tasks_blocked()
        turn.deadline = trio.current_time() + 0.005
        for _ in range(200):
            admission.start(lambda: nursery.start_soon(call))
        while len(ran) < 201:
            await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    return ran.index("timeout")


async def test_a_deadline_is_acted_on_before_a_flood_of_calls_has_run() -> None:
    """Without admission the whole flood runs in one batch before the turn's task; with 4
    calls per batch it runs after at most three batches of them."""
    assert await deadline_among_a_flood(0) == 200
    assert await deadline_among_a_flood(4) <= 12


async def test_calls_still_waiting_when_the_core_stops_are_each_started_or_refused() -> None:
    spawned: list[int] = []
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            admission = Admission(nursery, 1)
            nursery.start_soon(admission.run)
            await trio.lowlevel.checkpoint()
            scope.cancel()  # before the admission's next batch
            for i in range(5):
                admission.start(lambda i=i: spawned.append(i))
    assert spawned == [0, 1, 2, 3, 4]
