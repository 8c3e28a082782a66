"""Judging a scenario: the engine's turns as a spectator saw them, and what each must show."""

from __future__ import annotations

import grpc

from clients.check_engine.model import EngineTurn, Fail, Run
from nardy import wire
from nardy.game import Color
from nardy.v1 import game_pb2 as pb
from nardy.variant import Variant, variant

ILLEGAL = "24/21 24/23"  # with 3-1 from the start: two checkers off the head (RULES §3.4)

TYPE_NAMES = {v.number: v.name.removeprefix("EVENT_TYPE_") for v in pb.EventType.DESCRIPTOR.values}


# -- what happened in a game ------------------------------------------------------------
def rules_of(events: list[pb.GameEvent]) -> Variant:
    """The variant of the game the events are of."""
    return variant(events[0].state.options.variant if events else "")


def engine_turns(events: list[pb.GameEvent], color: int) -> list[EngineTurn]:
    parse = rules_of(events).parse
    turns: list[EngineTurn] = []
    current: EngineTurn | None = None
    before = ""
    for ev in events:
        st = ev.state
        if ev.type == pb.EVENT_TYPE_TURN_STARTED and st.side_to_move == color:
            current = EngineTurn(st.turn_id, parse(st.position), tuple(st.dice))
            turns.append(current)
        elif ev.type == pb.EVENT_TYPE_TURN_PASSED and ev.play.side == color:
            turns.append(
                EngineTurn(
                    ev.play.turn_id,
                    rules_of(events).passed(parse(st.position)),
                    tuple(ev.play.dice),
                    "passed",
                    notation="-",
                    automatic=True,
                )
            )
        elif ev.type == pb.EVENT_TYPE_PLAY_MADE and ev.play.side == color:
            if current is None or current.turn_id != ev.play.turn_id:  # auto-played
                current = EngineTurn(ev.play.turn_id, parse(before), tuple(ev.play.dice))
                turns.append(current)
            current.outcome = "played"
            current.end = parse(st.position)
            current.notation = ev.play.notation
            current.used_ms = ev.play.used_ms
            current.automatic = ev.play.automatic
            current = None
        if st.position:
            before = st.position
    return turns


def common(run: Run) -> list[EngineTurn]:
    """Checks for every scenario; returns the engine's turns."""
    events = run.events
    if any(ev.type == pb.EVENT_TYPE_GAME_ABORTED for ev in events):
        how = (
            "this arbiter answers Play with UNIMPLEMENTED: the engine must then "
            "SubscribeGame and SubmitPlay"
            if run.scenario.unary_only
            else "it must SubscribeGame, or open a Play stream, with NARDY_TOKEN"
        )
        started = (
            f"; its process was started {run.launched:.1f} s after the match was made"
            if run.launched is not None
            else ""
        )
        raise Fail(
            f"the engine never joined the game: the arbiter aborted it after "
            f"{run.join_ms / 1000:g} s ({how}{started})"
        )
    started = next((ev for ev in events if ev.type == pb.EVENT_TYPE_GAME_STARTED), None)
    if started is None:
        last = (
            f"; {len(events)} events seen, the last {pb.EventType.Name(events[-1].type)}"
            f" ({pb.GameStatus.Name(events[-1].state.status)})"
            if events
            else "; no event seen"
        )
        raise Fail(f"the game never started{last}")
    a, b = (
        started.opening_throws[-1].first_player_die,
        started.opening_throws[-1].second_player_die,
    )
    color = pb.COLOR_WHITE if a > b else pb.COLOR_BLACK
    run.notes["color"] = color
    if color != run.scenario.engine_color:
        raise Fail(f"setup: the engine got {wire.color_name(color)} (opening throw {a}-{b})")
    turns = engine_turns(events, color)
    rules = rules_of(events)
    for t in turns:
        if t.outcome != "played":
            continue
        if t.end not in {p.end for p in rules.legal_plays(t.position, t.dice)}:
            raise Fail(f"turn {t.turn_id} ({t.dice_text}): {t.notation} is not a legal play")
        if t.used_ms > run.turn_time_ms:
            raise Fail(
                f"turn {t.turn_id} ({t.dice_text}): answered in {t.used_ms} ms, "
                f"over the {run.turn_time_ms} ms clock"
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
            why = f"no play within the clock ({where}{run.turn_time_ms} ms clock)"
            if res.termination == pb.TERMINATION_ABANDONMENT:
                why += "; the engine was not connected"
            if run.exit_code is not None:
                why += f"; the engine process had exited with code {run.exit_code}"
            raise Fail(why)
        if res.termination == pb.TERMINATION_RESIGNATION:
            raise Fail("the engine resigned")
        raise Fail(f"the engine lost the game ({wire.termination_name(res.termination)})")
    # A play the arbiter refused counts against the engine (a ladder's third loses the
    # game), even when a legal one followed: none may be refused but the scenario's own.
    st = last.state
    refused = st.white_refused if color == pb.COLOR_WHITE else st.black_refused
    own = 1 if run.notes.get("refusal") else 0  # (the illegal play the scenario sent)
    if refused > own:
        raise Fail(
            f"the arbiter refused {refused - own} of the engine's plays (illegal or unreadable:"
            " the engine log says which); a ladder game is lost at the third"
        )
    return turns


def played(turns: list[EngineTurn], n: int = 1) -> list[EngineTurn]:
    plays = [t for t in turns if t.outcome == "played"]
    if len(plays) < n:
        raise Fail(f"the engine made {len(plays)} plays; the scenario needs {n}")
    return plays


def judge_first_double(run: Run, turns: list[EngineTurn]) -> str:
    t = played(turns)[0]
    color = wire.color_of(run.scenario.engine_color)
    rules = rules_of(run.events)
    assert color is not None and rules.head is not None, "a scenario of long nardy's head rule"
    head = rules.point_index(color, rules.head)

    def on_head(position) -> int:
        return rules.board(position).points[head] * color.sign

    if on_head(t.position) != 15 or t.dice[0] != t.dice[1]:
        raise Fail(f"setup: turn {t.turn_id} is not a first turn with a double")
    left = 15 - on_head(t.end)
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
    if len(rules_of(run.events).legal_plays(t.position, t.dice)) != 1:
        raise Fail(f"setup: turn {t.turn_id} has more than one legal play")
    return f"submitted the only play {t.notation} ({t.dice_text}) in {t.used_ms} ms"


def judge_enter(run: Run, turns: list[EngineTurn]) -> str:
    """Short nardy: a checker on the bar must enter before any other move (§8)."""
    t = played(turns)[0]
    rules = rules_of(run.events)
    color = t.position.turn
    if not rules.board(t.position).bar[color]:
        raise Fail(f"setup: turn {t.turn_id} has no checker on the bar")
    if rules.board(t.end).bar[color]:
        raise Fail(f"turn {t.turn_id} ({t.dice_text}): {t.notation} left a checker on the bar")
    return f"entered from the bar: {t.notation} ({t.dice_text}) in {t.used_ms} ms"


def judge_hit(run: Run, turns: list[EngineTurn]) -> str:
    """Short nardy: the only play hits a blot with the first die and moves on (§8)."""
    t = played(turns)[0]
    rules = rules_of(run.events)
    opponent = t.position.turn.opponent
    if len(rules.legal_plays(t.position, t.dice)) != 1:
        raise Fail(f"setup: turn {t.turn_id} has more than one legal play")
    if rules.board(t.end).bar[opponent] != rules.board(t.position).bar[opponent] + 1:
        raise Fail(f"turn {t.turn_id} ({t.dice_text}): {t.notation} did not hit")
    return f"hit mid-turn: {t.notation} ({t.dice_text}) in {t.used_ms} ms"


def judge_bear_off(run: Run, turns: list[EngineTurn]) -> str:
    res = run.events[-1].state.result
    if res.termination != pb.TERMINATION_NORMAL:
        raise Fail(
            f"the game ended by {wire.termination_name(res.termination)}, "
            "not by the engine bearing off"
        )
    plays = played(turns)
    return (
        f"bore off all 15 in {len(plays)} turns ({wire.kind_name(res.kind)}), "
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


def judge_without_play(run: Run, turns: list[EngineTurn]) -> str:
    plays = played(turns, run.scenario.stop_after or 1)
    return (
        f"{len(plays)} plays on an arbiter that answers Play with UNIMPLEMENTED, so over "
        f"SubscribeGame and SubmitPlay; slowest {max(t.used_ms for t in plays)} ms"
    )


def judge_near_timeout(run: Run, turns: list[EngineTurn]) -> str:
    plays = played(turns, run.scenario.stop_after or 1)
    slowest = max(plays, key=lambda t: t.used_ms)
    return (
        f"{len(plays)} plays on a {run.turn_time_ms} ms clock, slowest {slowest.used_ms} ms "
        f"(turn {slowest.turn_id}, "
        f"{len(rules_of(run.events).legal_plays(slowest.position, slowest.dice))} "
        "legal plays)"
    )
