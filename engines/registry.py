"""The bundled engines by name, and the adapter that plays them through the SDK."""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING

from engines.expectimax import ExpectimaxEngine
from engines.greedy import GreedyEngine
from engines.neural import NetworkEngine
from engines.random_engine import RandomEngine
from nardy import Color, legal_plays

if TYPE_CHECKING:  # the SDK needs grpc; in-process users of the registry do not
    from nardy.client import TurnInfo
    from nardy.v1 import game_pb2 as pb

log = logging.getLogger("nardy.engines")

ENGINES = {
    "random": RandomEngine,
    "greedy": GreedyEngine,
    "expectimax": ExpectimaxEngine,
    "network": NetworkEngine,
}


def levels(name: str) -> tuple[int, ...]:
    """The strength levels the engine offers (its module's ``LEVELS``; empty: none)."""
    module = sys.modules[ENGINES[name].__module__]
    return tuple(sorted(getattr(module, "LEVELS", {})))


def make_engine(name: str, level: int | None = None, seed: int | None = None):
    """A new engine object by name; KeyError for an unknown name, ValueError for a level
    the engine does not have."""
    if level is not None and not levels(name):
        raise ValueError(f"the {name} engine has no levels")
    return ENGINES[name](level=level, seed=seed)


def match_of(turn: TurnInfo) -> tuple[int, int, int] | None:
    """``(target, my points, their points)`` of the turn's match, or None if unknown."""
    m = turn.state.match
    if not m.target:
        return None
    mine, theirs = m.white_points, m.black_points
    if turn.color is Color.BLACK:
        mine, theirs = theirs, mine
    return m.target, mine, theirs


def sdk_adapter(engine):
    """The SDK's engine function (``TurnInfo -> LegalPlay``) for an in-process engine.

    The legal plays are generated locally (the engine works on :class:`nardy.Play`) and
    matched to the server's list by end position; if the two disagree, only plays the
    server offered are considered, and the server's first play is the last resort.
    """

    def fn(turn: TurnInfo) -> pb.LegalPlay:
        offered = {lp.end_position: lp for lp in turn.legal}
        if len(offered) == 1:
            return next(iter(offered.values()))
        t0 = time.perf_counter()
        position, dice = turn.position, turn.dice
        plays = [p for p in legal_plays(position, dice) if p.end.text() in offered]
        if len(plays) != len(offered):
            log.warning(
                "turn %d: %d local legal plays match %d offered by the server",
                turn.state.turn_id,
                len(plays),
                len(offered),
            )
        if not plays:
            return turn.legal[0]
        play = engine.choose(
            position, dice, plays, time_left_ms=turn.time_left_ms, match=match_of(turn)
        )
        log.debug(
            "turn %d: %s %s in %.0f ms",
            turn.state.turn_id,
            dice,
            play.notation(),
            1000 * (time.perf_counter() - t0),
        )
        return offered[play.end.text()]

    return fn
