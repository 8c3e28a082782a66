"""Running the scenarios: one match per scenario, the engine launched by the supervisor,
the checker's seat and a spectator in this process."""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Awaitable, Callable

import grpc
import trio

from clients.check_engine.judge import TYPE_NAMES, common
from clients.check_engine.model import Fail, Run, Scenario
from clients.check_engine.output import Output
from nardy.client import INSTEAD, Client, my_turn
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb

STOP_GRACE_S = 1.0  # SIGTERM, then SIGKILL after this


# -- the checker's side of a game -------------------------------------------------------
async def spectate(run: Run) -> None:
    """Record every event of the game as a spectator (no token) until it ends."""
    async for ev in run.client.events(run.game_id, from_start=True):
        if ev.type != pb.EVENT_TYPE_HEARTBEAT:
            run.events.append(ev)
    run.over.set()


async def checker_seat(run: Run) -> None:
    """Play the second seat: seeded random legal plays; resign once the engine has made
    ``stop_after`` plays."""
    sc = run.scenario
    seat = run.client.with_token(run.checker_token)
    rng = random.Random(sc.name)
    mine = pb.COLOR_UNSPECIFIED
    engine_plays = 0
    index = 0
    done: set[int] = set()
    async with contextlib.aclosing(seat.events(run.game_id)) as events:
        async for ev in events:
            st = ev.state
            if st.your_color:
                mine = st.your_color
            if ev.type == pb.EVENT_TYPE_PLAY_MADE and ev.play.side != mine:
                engine_plays += 1
            if not my_turn(ev) or st.turn_id in done:
                continue
            done.add(st.turn_id)
            if sc.stop_after is not None and engine_plays >= sc.stop_after:
                with contextlib.suppress(grpc.RpcError):
                    await seat.resign(run.game_id)
                return
            if sc.before_checker_play is not None:
                await sc.before_checker_play(run, index, st.turn_id)
            play = rng.choice(list(st.legal_plays))
            try:
                await seat.submit(run.game_id, st.turn_id, end_position=play.end_position)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.FAILED_PRECONDITION:  # e.g. the game ended
                    raise
            if sc.after_checker_play is not None:
                await sc.after_checker_play(run, index, st.turn_id)
            index += 1


async def guarded(run: Run, task: Callable[[Run], Awaitable[None]]) -> None:
    """Run a checker task; a gRPC error ends the scenario with the error as the reason."""
    try:
        await task(run)
    except grpc.RpcError as e:
        run.error = run.error or f"checker error ({task.__name__}): {e.code().name}: {e.details()}"
        run.over.set()
    except Fail as e:
        run.error = run.error or str(e)
        run.over.set()


async def watch(run: Run) -> None:
    """Wait for the game to end; notice an engine that exits before it has joined."""
    while not run.over.is_set():
        with trio.move_on_after(0.1):
            await run.over.wait()
        engine = run.engine
        if engine is None or engine.expected_exit or run.exit_code is not None:
            continue
        code = engine.poll()
        if code is not None:
            run.exit_code = code
            if not run.started:
                run.error = f"the engine exited with code {code} before joining the game"
                return


async def run_scenario(
    client: Client, cmd: list[str], sc: Scenario, base_ms: int, log_path: str, join_ms: int
) -> tuple[bool, str]:
    run = Run(sc, client, cmd, log_path, sc.turn_time_ms(base_ms), join_ms)
    try:
        r = await client.create_match(
            options=pb.GameOptions(
                variant=sc.variant,
                turn_time_ms=run.turn_time_ms,
                auto_play_forced=False,
                # the script's first two dice are the opening throw in every variant
                opening=pb.OPENING_RULE_FRESH_ROLL,
            ),
            target_points=1,
            first=api.SeatSpec(display_name="engine"),
            second=api.SeatSpec(display_name="checker"),
            start_timeout_ms=run.join_ms,
            start_position=sc.start,
            dice=list(sc.dice),
        )
    except grpc.RpcError as e:
        return False, f"the arbiter refused the scenario's match: {e.code().name}: {e.details()}"
    run.game_id, run.engine_token, run.checker_token = (
        r.game_id,
        r.first_seat_token,
        r.second_seat_token,
    )
    limit = sc.limit_s(run.turn_time_ms, run.join_ms)
    try:
        with trio.move_on_after(limit) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(guarded, run, spectate)
                nursery.start_soon(guarded, run, checker_seat)
                if sc.prelude is not None:
                    await guarded(run, sc.prelude)
                if run.error is None:
                    run.launch()
                    await watch(run)
                nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            for engine in run.engines:
                await trio.to_thread.run_sync(engine.stop, STOP_GRACE_S)
    try:
        if run.error is not None:
            raise Fail(run.error)
        if scope.cancelled_caught:
            last = run.events[-1] if run.events else None
            where = (
                f"last event {TYPE_NAMES.get(last.type)} on turn {last.state.turn_id}"
                if last
                else "no event"
            )
            raise Fail(f"scenario time limit of {limit:.0f} s reached ({where})")
        turns = common(run)
        verdict = sc.judge(run, turns)
        if run.engine is not None:
            failed = next((ln for ln in run.engine.tail(400) if INSTEAD in ln), None)
            if failed is not None:  # the SDK covered for it: the engine's own choice failed
                raise Fail(f"the engine failed on a turn: {failed.strip()[:200]}")
        return True, verdict
    except Fail as e:
        reason = str(e)
        tail = run.engine.tail(12) if run.engine else []
        if tail:  # (a Python traceback's last line is often only a frame of its group)
            shown = " | ".join(line.strip()[:160] for line in tail if line.strip(" +-|\n"))
            reason += f"  [engine log: ...{shown[-600:]}]"
        return False, reason


async def run_all(
    addresses: dict[str, str],
    cmd: list[str],
    todo: list[Scenario],
    base_ms: int,
    logdir: str,
    out: Output,
    join_ms: int,
) -> list[tuple[str, bool, str]]:
    """The scenarios ``todo`` in turn, each on its arbiter (``addresses``: "plain", and
    "unary" for the arbiter that does not offer Play), the engine given ``join_ms`` to join
    each."""
    results = []
    width = max(len(sc.name) for sc in todo)
    async with (
        Client(addresses["plain"], token="") as plain,
        Client(addresses["unary"], token="") as unary,
    ):
        for i, sc in enumerate(todo, 1):
            path = os.path.join(logdir, f"{i:02d}-{sc.name}.log")
            client = unary if sc.unary_only else plain
            ok, text = await run_scenario(client, cmd, sc, base_ms, path, join_ms)
            out.line(ok, sc.name, text, width)
            results.append((sc.name, ok, text))
    return results
