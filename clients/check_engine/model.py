"""What a check is made of: a scenario, one run of it, the engine's turns as seen, and a
failure (the other modules of the checker build on these)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from clients.supervisor import EngineProcess
from nardy.client import Client
from nardy.match import DEFAULT_VARIANT
from nardy.v1 import game_pb2 as pb

# The engine must subscribe to its game within this of the match being made, or the game
# aborts: an engine starts in well under a second, the rest is room for a loaded machine.
JOIN_MS = 30_000
LAUNCH_MS = 5_000  # extra clock where the engine is (re)launched during its own turn
NEAR_TIMEOUT_MS = 1_500


class Fail(Exception):
    """A scenario failed; the message is the reason printed."""


@dataclass
class EngineTurn:
    """One of the engine's turns as the spectator saw it."""

    turn_id: int
    position: Any  # before the turn, engine to move (a position of the game's variant)
    dice: tuple[int, int]
    outcome: str = "open"  # "played", "passed", or "open" (no play seen)
    end: Any = None
    notation: str = ""
    used_ms: int = 0
    automatic: bool = False

    @property
    def dice_text(self) -> str:
        return f"{self.dice[0]}-{self.dice[1]}"


@dataclass
class Scenario:
    name: str
    start: str
    dice: tuple[int, ...]
    judge: Callable[[Run, list[EngineTurn]], str]
    engine_color: int = pb.COLOR_WHITE
    variant: str = DEFAULT_VARIANT
    # "normal": --turn-time-ms; "launch": plus LAUNCH_MS; "tight": at most NEAR_TIMEOUT_MS
    clock: str = "normal"
    unary_only: bool = False  # on the arbiter without Play (it answers it UNIMPLEMENTED)
    stop_after: int | None = 1  # engine plays before the checker resigns; None: to the end
    prelude: Callable[[Run], Awaitable[None]] | None = None  # before the engine starts
    # Called around the checker's plays: (run, how many it has made, the turn's id).
    before_checker_play: Callable[[Run, int, int], Awaitable[None]] | None = None
    after_checker_play: Callable[[Run, int, int], Awaitable[None]] | None = None

    def turn_time_ms(self, base: int) -> int:
        if self.clock == "launch":
            return base + LAUNCH_MS
        if self.clock == "tight":
            return min(NEAR_TIMEOUT_MS, base)
        return base

    def limit_s(self, turn_time_ms: int, join_ms: int) -> float:
        turns = 2 * (self.stop_after or 30) + 6
        return (join_ms + turns * (turn_time_ms + 250)) / 1000 + 10


@dataclass
class Run:
    """One scenario being played: the match, the engine launches, and what was seen."""

    scenario: Scenario
    client: Client
    cmd: list[str]
    log_path: str
    turn_time_ms: int
    join_ms: int = JOIN_MS  # how long the engine has to join the game
    game_id: str = ""
    engine_token: str = ""
    checker_token: str = ""
    events: list[pb.GameEvent] = field(default_factory=list)
    over: trio.Event = field(default_factory=trio.Event)
    engines: list[EngineProcess] = field(default_factory=list)
    exit_code: int | None = None  # of an engine process that ended by itself
    error: str | None = None
    notes: dict = field(default_factory=dict)
    made: float = field(default_factory=trio.current_time)  # when the match was made
    launched: float | None = None  # seconds after that, the engine's first launch

    @property
    def engine(self) -> EngineProcess | None:
        return self.engines[-1] if self.engines else None

    @property
    def started(self) -> bool:
        return any(ev.type == pb.EVENT_TYPE_GAME_STARTED for ev in self.events)

    def launch(self) -> None:
        engine = EngineProcess(
            "engine",
            self.cmd,
            Path(self.log_path),
            env={"NARDY_SERVER": self.client.address, "NARDY_TOKEN": self.engine_token},
        )
        self.engines.append(engine)
        if self.launched is None:
            self.launched = trio.current_time() - self.made
        engine.start()

    async def kill_engine(self) -> None:
        """Kill the engine as a crash would (SIGKILL), and wait until it is gone."""
        if self.engine is not None:
            await trio.to_thread.run_sync(self.engine.kill)
