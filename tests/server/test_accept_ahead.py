"""Plays accepted ahead and stamped as their request is drained (issue 10 item 5,
server.bridge.AcceptAhead and DrainFirst), on a real grpc.aio server on loopback: a call
accepted ahead is stamped between its sending and its handler, one accepted by grpc.aio
itself is not; a server stops while such a call is still running; the drain-first loop runs
I/O callbacks (grpc's completion queue) ahead of the callbacks already waiting."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import grpc

from server.bridge import AcceptAhead, DrainFirst, received

SERVICE, METHOD = "test.Echo", "Echo"
PATH = f"/{SERVICE}/{METHOD}"


async def _serve(handler) -> tuple[grpc.aio.Server, grpc.RpcMethodHandler, int]:
    method = grpc.unary_unary_rpc_method_handler(handler)
    server = grpc.aio.server()
    server.add_registered_method_handlers(SERVICE, {METHOD: method})
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, method, port


async def _holding(release: asyncio.Event, until: int, *, ahead: int, most: int):
    """A server accepting ``ahead`` calls ahead (``most`` at once) whose handler notes each
    call's ``received()`` and holds it until ``release``: the server, its AcceptAhead, its
    port, the stamps noted, and an event set once ``until`` calls are inside."""
    inside: list[float | None] = []
    all_in = asyncio.Event()

    async def handler(request: bytes, context) -> bytes:
        inside.append(received())
        if len(inside) == until:
            all_in.set()
        await release.wait()
        return request

    server, method, port = await _serve(handler)
    accept = AcceptAhead(server, PATH, method, most)
    accept.start(ahead)
    return server, accept, port, inside, all_in


def _run(main, within: float = 60.0) -> None:
    """``asyncio.run(main())`` in a thread of its own: a loop that never returns (a callback
    that does not end) fails the test instead of hanging it."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(main())
        except BaseException as e:
            errors.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(within)
    assert not thread.is_alive(), "the loop did not return"
    if errors:
        raise errors[0]


def _stamps(ahead: int) -> tuple[float, list[tuple[float | None, float]]]:
    """Eight calls at once to a server accepting ``ahead`` calls ahead: when they were sent,
    and for each, ``received()`` and the time as its handler ran."""
    seen: list[tuple[float | None, float]] = []
    sent: list[float] = []

    async def handler(request: bytes, context) -> bytes:
        seen.append((received(), time.perf_counter()))
        return request

    async def main() -> None:
        server, method, port = await _serve(handler)
        accept = AcceptAhead(server, PATH, method, 1000)
        accept.start(ahead)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            echo = ch.unary_unary(PATH)
            await echo(b"warm")  # connected
            seen.clear()
            sent.append(time.perf_counter())
            answers = await asyncio.gather(*(echo(b"%d" % i) for i in range(8)))
        assert answers == [b"%d" % i for i in range(8)]  # handled as grpc.aio would
        accept.stop()
        await server.stop(None)

    _run(main)
    return sent[0], seen


def test_calls_accepted_ahead_are_stamped_when_their_request_is_received() -> None:
    sent, seen = _stamps(16)  # the 8 calls all find a request waiting
    assert len(seen) == 8
    assert all(at is not None and sent <= at <= then for at, then in seen)
    sent, seen = _stamps(0)  # all accepted by grpc.aio itself: the handler stamps for itself
    assert len(seen) == 8 and all(at is None for at, _ in seen)


def test_a_server_stops_while_a_call_accepted_ahead_is_still_running() -> None:
    async def main() -> None:
        release = asyncio.Event()
        server, accept, port, _, entered = await _holding(release, 1, ahead=4, most=1000)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            call = ch.unary_unary(PATH)(b"late")
            await entered.wait()
            stopping = asyncio.create_task(server.stop(30))
            while server._server.is_running():  # (its stop has begun)
                await asyncio.sleep(0)
            release.set()  # the call ends now, the requests asked ahead fail: none asked again
            assert await call == b"late"
            await stopping
        accept.stop()
        assert accept.asked == 0 and not accept.calls

    _run(main)


def test_no_more_calls_are_accepted_ahead_than_allowed_at_once() -> None:
    async def main() -> None:
        release = asyncio.Event()
        server, accept, port, inside, all_in = await _holding(release, 8, ahead=3, most=3)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            echo = ch.unary_unary(PATH)
            calls = [asyncio.ensure_future(echo(b"%d" % i)) for i in range(8)]
            await all_in.wait()  # the other five were accepted by grpc.aio itself
            assert sum(at is not None for at in inside) == 3 and accept.asked == 0
            release.set()
            assert await asyncio.gather(*calls) == [b"%d" % i for i in range(8)]
            await asyncio.gather(*accept.calls)  # (their ends seen by AcceptAhead first)
        assert accept.asked == 3  # asked for again once the calls were over
        accept.stop()
        await server.stop(None)

    _run(main)


def _order(loop: asyncio.AbstractEventLoop, waiting: int, ready_after: int) -> list:
    """In one iteration, ``waiting`` callbacks are queued, and a socket becomes readable (at
    once if ``ready_after`` is None, else as the ``ready_after``-th of them runs). In which
    order they and the socket's callback run."""
    order: list = []
    r, w = socket.socketpair()

    def ran(what) -> None:
        order.append(what)
        if len(order) == waiting + 1:
            loop.stop()

    def readable() -> None:
        loop.remove_reader(r)
        ran("io")

    def queued(i: int) -> None:
        if i == ready_after:
            w.send(b"x")
        ran(i)

    def first() -> None:
        if ready_after is None:
            w.send(b"x")
        for i in range(waiting):
            loop.call_soon(queued, i)

    loop.add_reader(r, readable)
    loop.call_soon(first)
    try:
        loop.run_forever()
    finally:
        loop.close()
        r.close()
        w.close()
    return order


def test_the_drain_first_loop_runs_io_callbacks_ahead_of_those_waiting() -> None:
    few, many = DrainFirst.BATCH // 2, DrainFirst.BATCH * 3
    # readable before the callbacks waiting run: first
    assert _order(DrainFirst(), few, None) == ["io", *range(few)]
    # readable while they run: after at most BATCH of them
    batch = list(range(DrainFirst.BATCH))
    assert _order(DrainFirst(), many, 3) == [*batch, "io", *range(DrainFirst.BATCH, many)]
    # (as asyncio does: after all of them)
    assert _order(asyncio.SelectorEventLoop(), many, 3) == [*range(many), "io"]
