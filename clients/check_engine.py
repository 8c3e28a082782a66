"""`nardy check-engine -- CMD ...`: drive an engine process through scripted scenarios.

The checker starts an embedded arbiter, and for each scenario creates a match with two open
seats from a scripted start position and scripted dice, so that every scenario is the same
on every run. The engine under test gets the first seat: CMD is launched as its own process
with NARDY_SERVER and NARDY_TOKEN (the seat token) in its environment. The checker plays the
second seat in-process with the SDK, follows the game as a spectator and judges it.

The opening throw is scripted too: the first die is the engine's, so (2, 1) gives it white
and (1, 2) black. After the scripted dice run out the arbiter's own dice take over.

Engine output (stdout and stderr) goes to one log file per scenario in a temporary
directory, kept and named on failure. Every engine process is killed at the end, also on
Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import grpc
import trio

from nardy import HEAD, Color, Position, legal_plays, match_play
from nardy.client import END_TYPES, Client, my_turn
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb

JOIN_MS = 15_000  # the engine must subscribe to its game within this, or the game aborts
LAUNCH_MS = 5_000  # extra clock where the engine is (re)launched during its own turn
NEAR_TIMEOUT_MS = 1_500
STOP_GRACE_S = 1.0  # SIGTERM, then SIGKILL after this

ENGINE_WHITE = (2, 1)  # opening throw: first die (the engine's) higher -> engine is white
ENGINE_BLACK = (1, 2)

START = Position.start().text()
# White (the engine) to move with 6-5: each of its checkers on a=0, 1, 2 would land on a
# black point (a=5..8), so the turn has no legal play and the arbiter passes it.
BLOCKED = "w/13,1,1,0,0,-1,-1,-1,-1,0,0,0,-11,0,0,0,0,0,0,0,0,0,0,0"
# White has all 15 home (points 6..1); black has not left its head.
BEAR_OFF = "w/0,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,3,3,3,2,2,2"
# A middle game where 2-2 has 172 legal plays: an engine that searches must watch its clock.
MIDDLE = "w/5,0,0,1,3,0,0,0,0,0,-1,-3,-9,2,1,1,0,0,-2,0,0,1,0,1"
ILLEGAL = "24/21 24/23"  # with 3-1 from the start: two checkers off the head (RULES §3.4)

TYPE_NAMES = {v.number: v.name.removeprefix("EVENT_TYPE_") for v in pb.EventType.DESCRIPTOR.values}
TERMINATION_NAMES = {
    v.number: v.name.removeprefix("TERMINATION_").lower() for v in pb.Termination.DESCRIPTOR.values
}
KIND_NAMES = {
    v.number: v.name.removeprefix("RESULT_KIND_").lower() for v in pb.ResultKind.DESCRIPTOR.values
}
PB_COLOR = {Color.WHITE: pb.COLOR_WHITE, Color.BLACK: pb.COLOR_BLACK}
COLOR_NAME = {pb.COLOR_WHITE: "white", pb.COLOR_BLACK: "black"}

log = logging.getLogger("nardy.check")


class Fail(Exception):
    """A scenario failed; the message is the reason printed."""


# -- engine processes -------------------------------------------------------------------
_LIVE: set[EngineProcess] = set()


class EngineProcess:
    """One launch of the engine command, in its own session so that its whole process
    group can be killed (a shell or launcher wrapper included)."""

    def __init__(self, cmd: list[str], env: dict[str, str], log_path: str) -> None:
        self.cmd = cmd
        self.env = env
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None
        self.expected_exit = False

    def start(self) -> None:
        with open(self.log_path, "ab") as f:
            f.write(f"--- {time.strftime('%H:%M:%S')} launch: {shlex.join(self.cmd)}\n".encode())
            self.proc = subprocess.Popen(
                self.cmd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=f,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        _LIVE.add(self)

    def poll(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def signal_group(self, sig: int) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    async def stop(self, sig: int = signal.SIGTERM, grace: float = STOP_GRACE_S) -> int | None:
        """End the process (and its group): ``sig``, then SIGKILL after ``grace`` seconds."""
        if self.proc is None:
            return None
        self.expected_exit = True
        if self.proc.poll() is None:
            self.signal_group(sig)
            with trio.move_on_after(grace):
                while self.proc.poll() is None:
                    await trio.sleep(0.02)
        self.kill_now()
        return self.proc.returncode

    def kill_now(self) -> None:
        """SIGKILL the whole group and reap the process (also for stragglers of the group)."""
        if self.proc is None:
            return
        self.expected_exit = True
        self.signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        _LIVE.discard(self)


def kill_all() -> None:
    for engine in list(_LIVE):
        engine.kill_now()


# -- what happened in a game ------------------------------------------------------------
@dataclass
class EngineTurn:
    """One of the engine's turns as the spectator saw it."""

    turn_id: int
    position: Position  # before the turn, engine to move
    dice: tuple[int, int]
    outcome: str = "open"  # "played", "passed", or "open" (no play seen)
    end: Position | None = None
    notation: str = ""
    used_ms: int = 0
    automatic: bool = False

    @property
    def dice_text(self) -> str:
        return f"{self.dice[0]}-{self.dice[1]}"


def engine_turns(events: list[pb.GameEvent], color: int) -> list[EngineTurn]:
    turns: list[EngineTurn] = []
    current: EngineTurn | None = None
    before = ""
    for ev in events:
        st = ev.state
        if ev.type == pb.EVENT_TYPE_TURN_STARTED and st.side_to_move == color:
            current = EngineTurn(st.turn_id, Position.parse(st.position), tuple(st.dice))
            turns.append(current)
        elif ev.type == pb.EVENT_TYPE_TURN_PASSED and ev.play.side == color:
            turns.append(
                EngineTurn(
                    ev.play.turn_id,
                    Position.parse(st.position).passed(),
                    tuple(ev.play.dice),
                    "passed",
                    notation="-",
                    automatic=True,
                )
            )
        elif ev.type == pb.EVENT_TYPE_PLAY_MADE and ev.play.side == color:
            if current is None or current.turn_id != ev.play.turn_id:  # auto-played
                current = EngineTurn(ev.play.turn_id, Position.parse(before), tuple(ev.play.dice))
                turns.append(current)
            current.outcome = "played"
            current.end = Position.parse(st.position)
            current.notation = ev.play.notation
            current.used_ms = ev.play.used_ms
            current.automatic = ev.play.automatic
            current = None
        if st.position:
            before = st.position
    return turns


@dataclass
class Scenario:
    name: str
    start: str
    dice: tuple[int, ...]
    judge: Callable[[Run, list[EngineTurn]], str]
    engine_color: int = pb.COLOR_WHITE
    clock: str = "normal"  # "normal": --turn-ms; "launch": plus LAUNCH_MS; "short"
    stop_after: int | None = 1  # engine plays before the checker resigns; None: to the end
    prelude: Callable[[Run], Awaitable[None]] | None = None  # before the engine starts
    # Called around the checker's plays: (run, how many it has made, the turn's id).
    before_checker_play: Callable[[Run, int, int], Awaitable[None]] | None = None
    after_checker_play: Callable[[Run, int, int], Awaitable[None]] | None = None

    def turn_ms(self, base: int) -> int:
        if self.clock == "launch":
            return base + LAUNCH_MS
        if self.clock == "short":
            return min(NEAR_TIMEOUT_MS, base)
        return base

    def limit_s(self, turn_ms: int) -> float:
        turns = 2 * (self.stop_after or 30) + 6
        return (JOIN_MS + turns * (turn_ms + 250)) / 1000 + 10


@dataclass
class Run:
    """One scenario being played: the match, the engine launches, and what was seen."""

    scenario: Scenario
    client: Client
    cmd: list[str]
    log_path: str
    turn_ms: int
    game_id: str = ""
    engine_token: str = ""
    checker_token: str = ""
    events: list[pb.GameEvent] = field(default_factory=list)
    over: trio.Event = field(default_factory=trio.Event)
    engines: list[EngineProcess] = field(default_factory=list)
    exit_code: int | None = None  # of an engine process that ended by itself
    error: str | None = None
    notes: dict = field(default_factory=dict)

    @property
    def engine(self) -> EngineProcess | None:
        return self.engines[-1] if self.engines else None

    @property
    def started(self) -> bool:
        return any(ev.type == pb.EVENT_TYPE_GAME_STARTED for ev in self.events)

    def launch(self) -> None:
        env = dict(
            os.environ,
            NARDY_SERVER=self.client.address,
            NARDY_TOKEN=self.engine_token,
            PYTHONUNBUFFERED="1",
        )
        engine = EngineProcess(self.cmd, env, self.log_path)
        self.engines.append(engine)
        engine.start()

    async def kill_engine(self) -> None:
        """Kill the engine as a crash would (SIGKILL), and wait until it is gone."""
        if self.engine is not None:
            await self.engine.stop(signal.SIGKILL, grace=5.0)


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


# -- judging ----------------------------------------------------------------------------
def common(run: Run) -> list[EngineTurn]:
    """Checks for every scenario; returns the engine's turns."""
    events = run.events
    if any(ev.type == pb.EVENT_TYPE_GAME_ABORTED for ev in events):
        raise Fail(
            f"the engine never joined the game: the arbiter aborted it after "
            f"{JOIN_MS // 1000} s (it must SubscribeGame with NARDY_TOKEN)"
        )
    started = next((ev for ev in events if ev.type == pb.EVENT_TYPE_GAME_STARTED), None)
    if started is None:
        raise Fail("the game never started")
    a, b = (
        started.opening_throws[-1].first_player_die,
        started.opening_throws[-1].second_player_die,
    )
    color = pb.COLOR_WHITE if a > b else pb.COLOR_BLACK
    run.notes["color"] = color
    if color != run.scenario.engine_color:
        raise Fail(f"setup: the engine got {COLOR_NAME[color]} (opening throw {a}-{b})")
    turns = engine_turns(events, color)
    for t in turns:
        if t.outcome != "played":
            continue
        if t.end not in {p.end for p in legal_plays(t.position, t.dice)}:
            raise Fail(f"turn {t.turn_id} ({t.dice_text}): {t.notation} is not a legal play")
        if t.used_ms > run.turn_ms:
            raise Fail(
                f"turn {t.turn_id} ({t.dice_text}): answered in {t.used_ms} ms, "
                f"over the {run.turn_ms} ms clock"
            )
        if t.automatic:
            raise Fail(f"turn {t.turn_id}: played by the arbiter, not the engine")
    last = events[-1]
    if last.type != pb.EVENT_TYPE_GAME_FINISHED:
        raise Fail(f"the game did not finish (last event {TYPE_NAMES.get(last.type)})")
    res = last.state.result
    if res.winner != color:
        open_turn = next((t for t in reversed(turns) if t.outcome == "open"), None)
        if res.termination in (pb.TERMINATION_TIMEOUT, pb.TERMINATION_ABANDONMENT):
            where = f"turn {open_turn.turn_id}, dice {open_turn.dice_text}, " if open_turn else ""
            why = f"no play within the clock ({where}{run.turn_ms} ms clock)"
            if res.termination == pb.TERMINATION_ABANDONMENT:
                why += "; the engine was not connected"
            if run.exit_code is not None:
                why += f"; the engine process had exited with code {run.exit_code}"
            raise Fail(why)
        if res.termination == pb.TERMINATION_RESIGNATION:
            raise Fail("the engine resigned")
        raise Fail(f"the engine lost the game ({TERMINATION_NAMES[res.termination]})")
    return turns


def played(turns: list[EngineTurn], n: int = 1) -> list[EngineTurn]:
    plays = [t for t in turns if t.outcome == "played"]
    if len(plays) < n:
        raise Fail(f"the engine made {len(plays)} plays; the scenario needs {n}")
    return plays


def judge_first_double(run: Run, turns: list[EngineTurn]) -> str:
    t = played(turns)[0]
    color = Color.WHITE if run.scenario.engine_color == pb.COLOR_WHITE else Color.BLACK
    if not t.position.is_first_turn(color) or t.dice[0] != t.dice[1]:
        raise Fail(f"setup: turn {t.turn_id} is not a first turn with a double")
    left = 15 - t.end.count(color, HEAD)
    if left != 2:
        raise Fail(
            f"turn {t.turn_id} ({t.dice_text}): {left} checkers left the head; "
            "the first-turn exception needs two"
        )
    prefix = f"{t.dice_text} as black: " if color is Color.BLACK else ""
    return f"{prefix}{t.notation} in {t.used_ms} ms"


def judge_pass(run: Run, turns: list[EngineTurn]) -> str:
    if not turns or turns[0].outcome != "passed":
        raise Fail("setup: the engine's first turn was not passed by the arbiter")
    passed = turns[0]
    t = played(turns)[0]
    return (
        f"turn {passed.turn_id} ({passed.dice_text}) passed by the arbiter; then turn "
        f"{t.turn_id} ({t.dice_text}) {t.notation} in {t.used_ms} ms"
    )


def judge_forced(run: Run, turns: list[EngineTurn]) -> str:
    t = played(turns)[0]
    if len(legal_plays(t.position, t.dice)) != 1:
        raise Fail(f"setup: turn {t.turn_id} has more than one legal play")
    return f"submitted the only play {t.notation} ({t.dice_text}) in {t.used_ms} ms"


def judge_bear_off(run: Run, turns: list[EngineTurn]) -> str:
    res = run.events[-1].state.result
    if res.termination != pb.TERMINATION_NORMAL:
        raise Fail(
            f"the game ended by {TERMINATION_NAMES[res.termination]}, not by the engine bearing off"
        )
    plays = played(turns)
    return (
        f"bore off all 15 in {len(plays)} turns ({KIND_NAMES[res.kind]}), "
        f"slowest {max(t.used_ms for t in plays)} ms"
    )


def judge_illegal(run: Run, turns: list[EngineTurn]) -> str:
    refusal = run.notes.get("refusal")
    if refusal is None:
        raise Fail(f"the arbiter accepted the illegal play {ILLEGAL!r} from the engine's seat")
    code, details = refusal
    if code != grpc.StatusCode.INVALID_ARGUMENT:
        raise Fail(
            f"the arbiter answered the illegal play {ILLEGAL!r} with {code.name} "
            f"({details}), not INVALID_ARGUMENT"
        )
    t = played(turns)[0]
    if t.turn_id != run.notes["turn_id"]:
        raise Fail(f"the engine did not play turn {run.notes['turn_id']} after the refusal")
    return (
        f"{ILLEGAL!r} refused with INVALID_ARGUMENT; the engine then played "
        f"{t.notation} ({t.dice_text}) in {t.used_ms} ms"
    )


def judge_resume(run: Run, turns: list[EngineTurn]) -> str:
    killed = run.notes.get("killed_at")
    if killed is None or len(run.engines) < 2:
        raise Fail("setup: the engine was not killed and relaunched")
    after = [t for t in played(turns) if t.turn_id > killed]
    if not after:
        raise Fail(f"the relaunched engine made no play after turn {killed}")
    t = after[0]
    return (
        f"killed during turn {killed}, relaunched; resumed with {t.notation} ({t.dice_text}) "
        f"{t.used_ms} ms into turn {t.turn_id}, {len(after)} plays after the relaunch"
    )


def judge_near_timeout(run: Run, turns: list[EngineTurn]) -> str:
    plays = played(turns, run.scenario.stop_after or 1)
    slowest = max(plays, key=lambda t: t.used_ms)
    return (
        f"{len(plays)} plays on a {run.turn_ms} ms clock, slowest {slowest.used_ms} ms "
        f"(turn {slowest.turn_id}, {len(legal_plays(slowest.position, slowest.dice))} "
        "legal plays)"
    )


# -- scenario hooks ---------------------------------------------------------------------
async def submit_illegal(run: Run) -> None:
    """Before the engine runs: join as the engine's seat (which starts the game), submit an
    illegal play for its turn, and record the arbiter's answer."""
    seat = run.client.with_token(run.engine_token)
    with trio.move_on_after(JOIN_MS / 1000):
        async with contextlib.aclosing(seat.events(run.game_id)) as events:
            async for ev in events:
                if ev.type in END_TYPES:
                    break
                if not my_turn(ev):
                    continue
                run.notes["turn_id"] = ev.state.turn_id
                try:
                    await seat.submit(run.game_id, ev.state.turn_id, notation=ILLEGAL)
                    run.notes["refusal"] = None
                except grpc.RpcError as e:
                    run.notes["refusal"] = (e.code(), e.details())
                return
    raise Fail("setup: the engine's turn did not start")


async def kill_before_first_reply(run: Run, index: int, turn_id: int) -> None:
    """The engine has played its first turn: kill it as a crash would."""
    if index == 0:
        await run.kill_engine()
        run.notes["killed_at"] = turn_id


async def relaunch_after_first_reply(run: Run, index: int, turn_id: int) -> None:
    """The checker has played, so the engine's turn is running: relaunch it, with the same
    token, into a game in progress (it starts from a SNAPSHOT)."""
    if index == 0:
        run.launch()


def scenarios() -> list[Scenario]:
    w = ENGINE_WHITE
    return [
        Scenario("first-turn-6-6", START, (*w, 6, 6), judge_first_double),
        Scenario("first-turn-4-4", START, (*w, 4, 4), judge_first_double),
        Scenario("first-turn-3-3", START, (*w, 3, 3), judge_first_double),
        Scenario(
            "black-first-double",
            START,
            (*ENGINE_BLACK, 5, 2, 3, 3),
            judge_first_double,
            engine_color=pb.COLOR_BLACK,
        ),
        Scenario("no-legal-play", BLOCKED, (*w, 6, 5, 1, 2, 3, 1), judge_pass),
        Scenario("forced-play", START, (*w, 6, 5), judge_forced),
        Scenario(
            "bear-off",
            BEAR_OFF,
            (
                *w,
                6,
                5,
                3,
                1,
                4,
                2,
                5,
                2,
                6,
                6,
                2,
                1,
                5,
                3,
                4,
                1,
                3,
                3,
                6,
                2,
                6,
                4,
                3,
                2,
                5,
                5,
                4,
                3,
                2,
                1,
                1,
                1,
                6,
                3,
                5,
                4,
                4,
                4,
                2,
                2,
                6,
                6,
                3,
                1,
                5,
                5,
            ),
            judge_bear_off,
            stop_after=None,
        ),
        Scenario(
            "illegal-play-refused",
            START,
            (*w, 3, 1, 4, 2, 5, 3),
            judge_illegal,
            clock="launch",
            stop_after=2,
            prelude=submit_illegal,
        ),
        Scenario(
            "drop-and-resume",
            START,
            (*w, 3, 1, 4, 2, 5, 3, 6, 1, 4, 1, 5, 2, 6, 2, 3, 2),
            judge_resume,
            clock="launch",
            stop_after=3,
            before_checker_play=kill_before_first_reply,
            after_checker_play=relaunch_after_first_reply,
        ),
        Scenario(
            "near-timeout",
            MIDDLE,
            (*w, 2, 2, 3, 1, 1, 1, 6, 4, 5, 5, 4, 2, 3, 3, 6, 5),
            judge_near_timeout,
            clock="short",
            stop_after=4,
        ),
    ]


def check_setups() -> None:
    """The scripted positions do what the scenarios say (cheap; run by the tests)."""
    blocked = Position.parse(BLOCKED)
    assert legal_plays(blocked, (6, 5)) == []
    assert len(legal_plays(Position.start(), (6, 5))) == 1
    try:
        match_play(Position.start(), (3, 1), ILLEGAL)
    except ValueError:
        pass
    else:
        raise AssertionError(f"{ILLEGAL} should be illegal")


# -- running ----------------------------------------------------------------------------
def log_tail(path: str) -> str:
    """The last non-empty line the engine wrote, if any."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 4096))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    lines = [ln.strip() for ln in lines if ln.strip() and not ln.startswith("--- ")]
    return lines[-1][:160] if lines else ""


async def run_scenario(
    client: Client, cmd: list[str], sc: Scenario, base_ms: int, log_path: str
) -> tuple[bool, str]:
    run = Run(sc, client, cmd, log_path, sc.turn_ms(base_ms))
    try:
        r = await client.create_match(
            options=pb.GameOptions(turn_time_ms=run.turn_ms, auto_play_forced=False),
            target_points=1,
            first=api.SeatSpec(display_name="engine"),
            second=api.SeatSpec(display_name="checker"),
            start_timeout_ms=JOIN_MS,
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
    limit = sc.limit_s(run.turn_ms)
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
                await engine.stop()
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
        return True, sc.judge(run, turns)
    except Fail as e:
        reason = str(e)
        tail = log_tail(log_path)
        if tail:
            reason += f"  [engine log: {tail}]"
        return False, reason


@dataclass
class Output:
    colour: bool

    def line(self, ok: bool, name: str, text: str, width: int) -> None:
        tag = "PASS" if ok else "FAIL"
        if self.colour:
            tag = f"\x1b[{32 if ok else 31}m{tag}\x1b[0m"
        body = f"({text})" if ok else text
        print(f"{tag} {name.ljust(width)}  {body}", flush=True)


async def run_all(
    address: str, cmd: list[str], base_ms: int, logdir: str, out: Output
) -> list[tuple[str, bool, str]]:
    results = []
    todo = scenarios()
    width = max(len(sc.name) for sc in todo)
    async with Client(address, token="") as client:
        for i, sc in enumerate(todo, 1):
            path = os.path.join(logdir, f"{i:02d}-{sc.name}.log")
            ok, text = await run_scenario(client, cmd, sc, base_ms, path)
            out.line(ok, sc.name, text, width)
            results.append((sc.name, ok, text))
    return results


def interrupted(error: BaseException) -> bool:
    """True for Ctrl-C, also when trio delivers it inside an exception group."""
    if isinstance(error, BaseExceptionGroup):
        return error.subgroup(KeyboardInterrupt) is not None
    return isinstance(error, KeyboardInterrupt)


def usage() -> int:
    print(
        "usage: nardy check-engine [--turn-ms MS] -- CMD [ARG ...]\n"
        "nardy check-engine: give the engine command after '--', e.g. "
        "nardy check-engine -- python -m nardy engine random",
        file=sys.stderr,
    )
    return 2


def main(args: argparse.Namespace) -> int:
    cmd = list(args.cmd or [])
    if cmd[:1] == ["--"]:
        cmd = cmd[1:]
    if not cmd:
        return usage()
    if args.turn_ms <= 0:
        print("nardy check-engine: --turn-ms must be positive", file=sys.stderr)
        return 2
    if shutil.which(cmd[0]) is None:
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
        kill_all()
        os.write(2, f"terminated; engine logs in {logdir}\n".encode())
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_term)
    server = EmbeddedServer(db=os.path.join(logdir, "arbiter.db"))
    results: list[tuple[str, bool, str]] = []
    try:
        server.start()
        print(
            f"checking: {shlex.join(cmd)}  (turn time {args.turn_ms} ms, arbiter {server.address})",
            flush=True,
        )
        results = trio.run(run_all, server.address, cmd, args.turn_ms, logdir, out)
    except BaseException as e:
        if not interrupted(e):
            raise
        kill_all()
        print(f"interrupted; engine logs in {logdir}", file=sys.stderr)
        return 130
    finally:
        kill_all()
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
