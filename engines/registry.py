"""The bundled engines by name (the only list of them), and the adapter that plays them
through the SDK.

Importing this module is cheap: an engine's module (numpy for the network) is imported
only when :func:`make_engine` builds it, so commands can offer the names as choices.
"""

from __future__ import annotations

import copy
import importlib
import logging
import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engines.base import Engine, Unavailable
from nardy.game import Color
from nardy.match import DEFAULT_VARIANT
from nardy.variant import Variant, variant

if TYPE_CHECKING:  # the SDK needs grpc; in-process users of the registry do not
    from nardy.client import TurnInfo
    from nardy.v1 import game_pb2 as pb

log = logging.getLogger("nardy.engines")


@dataclass(frozen=True)
class Entry:
    """An engine ``nardy engine`` runs: where its class lives and the variants it plays;
    ``bundled``: it is this package's own (gnubg is a program of its own, installed apart)."""

    name: str
    cls: str  # "module:Class"
    variants: tuple[str, ...]
    about: str
    bundled: bool = True


# Weakest first: a variant's default opponent is the last that plays it.
ENGINES: dict[str, Entry] = {
    e.name: e
    for e in (
        Entry("random", "engines.random_engine:RandomEngine", ("long", "short"), "a random play"),
        Entry("greedy", "engines.greedy:GreedyEngine", ("long", "short"), "best 1-ply evaluation"),
        Entry("expectimax", "engines.expectimax:ExpectimaxEngine", ("long",), "2-ply search"),
        Entry("network", "engines.neural:NetworkEngine", ("long", "short"), "value network"),
        Entry("gnubg", "engines.gnubg:GnubgEngine", ("short",), "GNU Backgammon", bundled=False),
    )
}

#: The engines that judge plays in analysis (``nardy analyse``), strongest first, for each
#: variant: the first one that runs here is used (gnubg only where it is installed).
JUDGES: dict[str, tuple[str, ...]] = {"long": ("network",), "short": ("gnubg", "greedy")}


def names(variant_name: str | None = None) -> list[str]:
    """The engines' names; with a variant, only those that play it."""
    return [n for n, e in ENGINES.items() if variant_name is None or variant_name in e.variants]


def default_engine(variant_name: str) -> str:
    """The opponent for ``variant_name`` when none is chosen: the strongest bundled engine
    that plays it. ValueError if none does."""
    found = [n for n in names(variant_name) if ENGINES[n].bundled]
    if not found:
        raise ValueError(f"no bundled engine plays {variant_name} nardy")
    return found[-1]


def make_engine(
    name: str,
    level: int | None = None,
    seed: int | None = None,
    variant_name: str = DEFAULT_VARIANT,
    ply: int | None = None,
):
    """A new engine object by name for ``variant_name``, searching ``ply`` plies if it
    takes a depth.

    KeyError for an unknown name; ValueError for a variant the engine does not play or a
    level or depth it does not have; :class:`engines.base.Unavailable` for an engine that
    cannot run here (gnubg not installed)."""
    entry = ENGINES[name]
    if level is not None and not levels(name):
        raise ValueError(f"the {name} engine has no levels")
    options = {}
    if ply is not None:
        if ply not in plies(name):
            offered = ", ".join(map(str, plies(name)))
            raise ValueError(
                f"the {name} engine searches {offered} plies, not {ply}"
                if offered
                else f"the {name} engine has no --ply"
            )
        options["ply"] = ply
    if variant_name not in entry.variants:
        raise ValueError(
            f"engine {name} plays {', '.join(entry.variants)} nardy, not {variant_name}; "
            f"for {variant_name}: {', '.join(names(variant_name))}"
        )
    factory = _class(name)
    if len(entry.variants) > 1:  # an engine for several variants is told which it plays
        engine = factory(level=level, seed=seed, rules=variant(variant_name), **options)
    else:
        engine = factory(level=level, seed=seed, **options)
    engine.variants = entry.variants
    return engine


def make_judge(variant_name: str) -> tuple[Engine, list[str]]:
    """The strongest engine of :data:`JUDGES` for ``variant_name`` that runs here, and why
    each stronger one did not (:class:`engines.base.Unavailable` if none runs)."""
    passed: list[str] = []
    for name in JUDGES.get(variant_name, ()):
        try:
            return make_engine(name, variant_name=variant_name), passed
        except Unavailable as e:
            passed.append(f"{name}: {e}")
    raise Unavailable(
        f"no engine judges {variant_name} nardy here"
        + (f" ({'; '.join(passed)})" if passed else "")
    )


def _class(name: str):
    module, cls = ENGINES[name].cls.split(":")
    return getattr(importlib.import_module(module), cls)


def levels(name: str) -> tuple[int, ...]:
    """The strength levels the engine offers (its module's ``LEVELS``; empty: none)."""
    module = sys.modules[_class(name).__module__]
    return tuple(sorted(getattr(module, "LEVELS", {})))


def plies(name: str) -> tuple[int, ...]:
    """The search depths ``--ply`` may give the engine (its module's ``PLIES``; empty: none)."""
    module = sys.modules[_class(name).__module__]
    return tuple(getattr(module, "PLIES", ()))


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
    """The SDK's engine function (``TurnInfo -> LegalPlay``) for an in-process engine,
    stating the engine's ``variants`` and ``turn_time_floor_ms`` (nardy.client.Consent).

    The legal plays are generated locally by the game's variant (the engine works on the
    variant's plays) and matched to the server's list by end position; if the two
    disagree, only plays the server offered are considered, and the server's first play
    is the last resort.
    """
    variants = tuple(getattr(engine, "variants", ("long",)))
    # one engine per variant: games of both at once (an engine in a long and a short
    # ladder) are played in worker threads side by side, and an engine set to one
    # variant's rules while it chose for the other's failed on one turn in ten
    own: dict[str, Any] = {}
    making = threading.Lock()

    def of(rules: Variant):
        with making:
            if rules.name not in own:
                own[rules.name] = copy.copy(engine) if own else engine
                own[rules.name].rules = rules
            return own[rules.name]

    def fn(turn: TurnInfo) -> pb.LegalPlay:
        offered = {lp.end_position: lp for lp in turn.legal}
        if len(offered) == 1:
            return next(iter(offered.values()))
        rules = turn.variant
        if rules.name not in engine.variants:
            log.warning(
                "turn %d: this engine does not play %s nardy", turn.state.turn_id, rules.name
            )
            return turn.legal[0]
        chooser = of(rules)
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
        play = chooser.choose(
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

    fn.variants = variants  # what it states of itself, for the challenges it accepts
    fn.turn_time_floor_ms = engine.turn_time_floor_ms
    return fn
