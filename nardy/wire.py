"""Every conversion between ``nardy.v1`` messages and the domain, both directions, in one place.

The server builds its messages with these functions and the clients, the SDK and the
tools read messages back with them, so both ends agree by construction. Enum values are
mapped by name (``RESULT_KIND_GAMMON`` is the kind ``gammon``), so a variant's new result
kind needs a .proto value, not a code change here. Request defaults live here too
(:func:`terms_of`): an unset field (0) means the default.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from nardy.clock import DEFAULT_TURN_TIME_MS
from nardy.game import Color, GameResult, Termination
from nardy.match import DEFAULT_VARIANT, Colours, GameOptions, Opening
from nardy.record import GameRecord, TurnRecord
from nardy.v1 import game_pb2 as pb
from nardy.variant import Board, GamePlay, Variant, variant

# -- colours ------------------------------------------------------------------------------
_COLOR_PB = {Color.WHITE: pb.COLOR_WHITE, Color.BLACK: pb.COLOR_BLACK}
_PB_COLOR = {v: k for k, v in _COLOR_PB.items()}


def color_pb(color: Color | None) -> int:
    """``pb.Color`` of a side; ``COLOR_UNSPECIFIED`` for None."""
    return pb.COLOR_UNSPECIFIED if color is None else _COLOR_PB[color]


def player_name(player: pb.Player, colour: str, guests: bool = True) -> str:
    """A player's name as boards and lists show it: an open seat's marked as a guest's
    (its match's creator chose it; it may look like a registered player's), none yet
    by its colour. ``guests=False``: unmarked (for a player in its own game, who knows
    whom it plays)."""
    name = player.name or colour
    return f"guest {name}" if player.open_seat and guests else name


def names_of(state: pb.GameState, guests: bool = True) -> dict[Color, str]:
    """White's and black's names as boards and lists show them (see player_name)."""
    return {
        Color.WHITE: player_name(state.white, "white", guests),
        Color.BLACK: player_name(state.black, "black", guests),
    }


def color_of(value: int) -> Color | None:
    """The side of a ``pb.Color``; None for ``COLOR_UNSPECIFIED`` (or an unknown value)."""
    return _PB_COLOR.get(value)


def color_name(value: int) -> str:
    """``white``, ``black`` or ``?``."""
    color = _PB_COLOR.get(value)
    return "?" if color is None else color.name.lower()


# -- enums by name ------------------------------------------------------------------------
def _enum_name(enum, prefix: str, value: int) -> str | None:
    try:
        return enum.Name(value).removeprefix(prefix).lower().replace("_", "-")
    except ValueError:
        return None


def termination_pb(termination: Termination) -> int:
    return pb.Termination.Value("TERMINATION_" + termination.value.upper().replace("-", "_"))


def termination_of(value: int) -> Termination:
    """The domain termination of a ``pb.Termination``; ValueError if unknown."""
    name = _enum_name(pb.Termination, "TERMINATION_", value)
    if name is None or name == "unspecified":
        raise ValueError(f"unknown termination {value}")
    return Termination(name)


def termination_name(value: int) -> str:
    """``timeout``, ``illegal plays``, ...: a ``pb.Termination`` in words."""
    return (_enum_name(pb.Termination, "TERMINATION_", value) or "?").replace("-", " ")


def kind_pb(kind) -> int:
    """``pb.ResultKind`` of a variant's result kind (``oin`` -> ``RESULT_KIND_OIN``)."""
    return pb.ResultKind.Value("RESULT_KIND_" + kind.value.upper())


def kind_name(value: int) -> str:
    """``oin``, ``mars``, ``gammon``, ...: a ``pb.ResultKind`` by name, ``?`` if unknown."""
    name = _enum_name(pb.ResultKind, "RESULT_KIND_", value)
    return "?" if name in (None, "unspecified") else name


# -- results ------------------------------------------------------------------------------
def result_pb(result: GameResult | None) -> pb.GameResult | None:
    if result is None:
        return None
    return pb.GameResult(
        winner=color_pb(result.winner),
        kind=kind_pb(result.kind),
        termination=termination_pb(result.termination),
        points=result.points,
    )


def result_of(msg: pb.GameResult, variant: Variant) -> GameResult:
    """The domain result of a message, its kind one of ``variant``'s; ValueError if not."""
    winner = color_of(msg.winner)
    if winner is None:
        raise ValueError("a result without a winner")
    return GameResult(winner, variant.kind(kind_name(msg.kind)), termination_of(msg.termination))


# -- options and request defaults ----------------------------------------------------------
DEFAULT_START_TIMEOUT_MS = 60_000  # how long a match waits for both seats

_OPENING_PB = {
    Opening.FRESH_ROLL: pb.OPENING_RULE_FRESH_ROLL,
    Opening.USE_OPENING_DICE: pb.OPENING_RULE_USE_OPENING_DICE,
}
_COLOURS_PB = {
    Colours.ALTERNATE: pb.COLOUR_RULE_ALTERNATE,
    Colours.THROW_EACH_GAME: pb.COLOUR_RULE_THROW_EACH_GAME,
}


@dataclass(frozen=True, slots=True)
class Terms:
    """What a ``pb.GameOptions`` asks beyond the rules, with the defaults applied."""

    turn_time_ms: int = DEFAULT_TURN_TIME_MS
    time_bank_ms: int = 0
    auto_play_forced: bool = False
    illegal_play_limit: int = 0  # 0: no limit


def options_of(msg: pb.GameOptions) -> GameOptions:
    """The rule options of a request; unset fields take the variant's defaults (an
    unknown variant is left for the arbiter to refuse)."""
    name = msg.variant or DEFAULT_VARIANT
    opening = {v: k for k, v in _OPENING_PB.items()}.get(msg.opening)
    if opening is None:
        try:
            opening = variant(name).default_opening
        except ValueError:
            opening = Opening.FRESH_ROLL
    colours = {v: k for k, v in _COLOURS_PB.items()}.get(msg.colours, Colours.ALTERNATE)
    rules = frozenset({"koks"} if msg.koks else ())
    return GameOptions(variant=name, rules=rules, opening=opening, colours=colours)


def terms_of(msg: pb.GameOptions, **defaults: int | bool) -> Terms:
    """The clock and ladder terms of a request: a field left 0 takes ``defaults`` or
    :class:`Terms`' default."""
    base = Terms(**defaults)  # type: ignore[arg-type]
    return Terms(
        turn_time_ms=msg.turn_time_ms or base.turn_time_ms,
        time_bank_ms=msg.time_bank_ms or base.time_bank_ms,
        auto_play_forced=msg.auto_play_forced or base.auto_play_forced,
        illegal_play_limit=msg.illegal_play_limit or base.illegal_play_limit,
    )


def options_pb(options: GameOptions, terms: Terms) -> pb.GameOptions:
    return pb.GameOptions(
        variant=options.variant,
        koks="koks" in options.rules,
        opening=_OPENING_PB[options.opening],
        colours=_COLOURS_PB[options.colours],
        turn_time_ms=terms.turn_time_ms,
        time_bank_ms=terms.time_bank_ms,
        auto_play_forced=terms.auto_play_forced,
        illegal_play_limit=terms.illegal_play_limit,
    )


# -- boards and plays ---------------------------------------------------------------------
def board_pb(board: Board) -> pb.Board:
    return pb.Board(
        points=board.points,
        white_off=board.off[Color.WHITE],
        black_off=board.off[Color.BLACK],
        white_bar=board.bar[Color.WHITE],
        black_bar=board.bar[Color.BLACK],
    )


def legal_pb(play: GamePlay) -> pb.LegalPlay:
    return pb.LegalPlay(
        notation=play.notation(),
        end_position=play.end.text(),
        steps=[pb.Step(**{"from": s.src, "to": s.dst, "die": s.die}) for s in play.steps],
    )


def dice_of(msg_dice) -> tuple[int, int]:
    """The two dice of a message's repeated ``dice`` field (a double is sent as two)."""
    a, b = msg_dice[0], msg_dice[1]
    return a, b


# -- records ------------------------------------------------------------------------------
def record_of(
    events: Sequence[pb.GameEvent], server_seed: str = "", *, guests: bool = True
) -> GameRecord:
    """The game record of one game's events (a finished game's with its result; one in
    progress, its turns so far). ``server_seed``: the seed as revealed after the events (a
    duplicate pair's first game reveals it once its partner has ended: GetGame's state).
    ``guests``: an open seat's name marked, as boards show it (see player_name)."""
    if not events:
        raise ValueError("no events")
    first = next((e for e in events if e.type == pb.EVENT_TYPE_GAME_STARTED), events[0])
    st = first.state
    last = events[-1].state
    date = datetime.fromtimestamp(first.time.ToNanoseconds() / 1e9, UTC)
    names = names_of(st, guests)
    headers = {
        "Game": str(st.game_number),
        "Variant": st.options.variant or DEFAULT_VARIANT,
        "White": names[Color.WHITE],
        "Black": names[Color.BLACK],
        "Match": str(st.match.target),
        "TimeControl": f"{st.options.turn_time_ms} ms per turn"
        + (f" + {st.options.time_bank_ms} ms bank" if st.options.time_bank_ms else ""),
        "Date": date.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    house_rules = options_of(st.options).rules
    if house_rules:
        headers["Rules"] = ",".join(sorted(house_rules))
    if st.seeded:
        headers["Dice"] = "seeded"
    if st.ladder:
        headers["Ladder"] = st.ladder
    headers.update(_dice_headers(first, last))
    if server_seed:
        headers["ServerSeed"] = server_seed
    rules = variant(st.options.variant)
    turns = [
        TurnRecord(color_of(e.play.side), dice_of(e.play.dice), e.play.notation)
        for e in events
        if e.type in (pb.EVENT_TYPE_PLAY_MADE, pb.EVENT_TYPE_TURN_PASSED)
    ]
    result = None
    if last.status == pb.GAME_STATUS_FINISHED:
        r = last.result
        result = result_of(r, rules)
        headers["Score"] = f"{last.match.white_points}-{last.match.black_points}"
    start = rules.parse(st.position)  # the board as the game started
    return GameRecord(headers=headers, start=start, turns=turns, result=result)


def _dice_headers(started: pb.GameEvent, last: pb.GameState) -> dict[str, str]:
    """What ``nardy verify`` needs: the commitment, the client seeds, the opening throws,
    dice chosen by the game's creator (a public seed, scripted dice) and (once revealed)
    the server seed."""
    st = started.state
    out = {
        "DiceCommitment": st.dice_commitment,
        "ClientSeeds": json.dumps(list(st.client_seeds)),
        "Opening": " ".join(
            f"{t.first_player_die}-{t.second_player_die}" for t in started.opening_throws
        )
        or "none",
    }
    if st.options.opening == pb.OPENING_RULE_USE_OPENING_DICE:
        out["OpeningRule"] = "use-opening-dice"
    if st.public_seed:
        out["DiceSeed"] = "public"
    if st.scripted_dice:
        out["ScriptedDice"] = str(st.scripted_dice)
    if last.server_seed:
        out["ServerSeed"] = last.server_seed
    return out
