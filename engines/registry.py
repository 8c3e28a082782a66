"""The bundled engines by name (the only list of them), and the adapter that plays them
through the SDK.

Importing this module is cheap: an engine's module (numpy for the network) is imported
only when :func:`make_engine` builds it, so commands can offer the names as choices.
"""

from __future__ import annotations

import importlib
import logging
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nardy.game import Color
from nardy.variant import variant

if TYPE_CHECKING:  # the SDK needs grpc; in-process users of the registry do not
    from nardy.client import TurnInfo
    from nardy.v1 import game_pb2 as pb

log = logging.getLogger("nardy.engines")


@dataclass(frozen=True)
class Entry:
    """A bundled engine: where its class lives and the variants it plays."""

    name: str
    cls: str  # "module:Class"
    variants: tuple[str, ...]
    about: str


ENGINES: dict[str, Entry] = {
    e.name: e
    for e in (
        Entry("random", "engines.random_engine:RandomEngine", ("long", "short"), "a random play"),
        Entry("greedy", "engines.greedy:GreedyEngine", ("long", "short"), "best 1-ply evaluation"),
        Entry("expectimax", "engines.expectimax:ExpectimaxEngine", ("long",), "2-ply search"),
        Entry("network", "engines.neural:NetworkEngine", ("long", "short"), "value network"),
    )
}


def names(variant_name: str | None = None) -> list[str]:
    """The engines' names; with a variant, only those that play it."""
    return [n for n, e in ENGINES.items() if variant_name is None or variant_name in e.variants]


def make_engine(
    name: str, level: int | None = None, seed: int | None = None, variant_name: str = "long"
):
    """A new engine object by name for ``variant_name``.

    KeyError for an unknown name; ValueError for a variant the engine does not play or a
    level it does not have."""
    entry = ENGINES[name]
    if level is not None and not levels(name):
        raise ValueError(f"the {name} engine has no levels")
    if variant_name not in entry.variants:
        raise ValueError(
            f"engine {name} plays {', '.join(entry.variants)} nardy, not {variant_name}; "
            f"for {variant_name}: {', '.join(names(variant_name))}"
        )
    factory = _class(name)
    if len(entry.variants) > 1:  # an engine for several variants is told which it plays
        engine = factory(level=level, seed=seed, rules=variant(variant_name))
    else:
        engine = factory(level=level, seed=seed)
    engine.variants = entry.variants
    return engine


def _class(name: str):
    module, cls = ENGINES[name].cls.split(":")
    return getattr(importlib.import_module(module), cls)


def levels(name: str) -> tuple[int, ...]:
    """The strength levels the engine offers (its module's ``LEVELS``; empty: none)."""
    module = sys.modules[_class(name).__module__]
    return tuple(sorted(getattr(module, "LEVELS", {})))


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

    The legal plays are generated locally by the game's variant (the engine works on the
    variant's plays) and matched to the server's list by end position; if the two
    disagree, only plays the server offered are considered, and the server's first play
    is the last resort.
    """

    def fn(turn: TurnInfo) -> pb.LegalPlay:
        offered = {lp.end_position: lp for lp in turn.legal}
        if len(offered) == 1:
            return next(iter(offered.values()))
        rules = turn.variant
        if rules.name not in getattr(engine, "variants", ("long",)):
            log.warning(
                "turn %d: this engine does not play %s nardy", turn.state.turn_id, rules.name
            )
            return turn.legal[0]
        engine.rules = rules  # a game of another variant than the last one
        t0 = time.perf_counter()
        position, dice = turn.position, turn.dice
        plays = [p for p in rules.legal_plays(position, dice) if p.end.text() in offered]
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
