"""Following a game's events for people: resume after a lost connection and say so.

The SDK's ``Client.events`` resumes after drops and restarts (from the last event seen, so
nothing is missed or repeated); :func:`follow` gives it a :class:`~nardy.client.Reconnect`
that tells the person when the connection is lost and when the game is back, and gives up
after a while with the reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import grpc

from clients.board import side_name
from nardy import Color, variant, wire
from nardy.client import Client, Reconnect, Unreachable, over
from nardy.v1 import game_pb2 as pb

MAX_BACKOFF = 4.0
GIVE_UP_S = 60.0  # a connection lost this long: stop trying, and say so


class GameGone(Exception):
    """The game cannot be followed any more (unknown game, refused, ...)."""


async def follow(
    client: Client,
    game_id: str,
    on_event: Callable[[pb.GameEvent], None],
    say: Callable[[str], None],
    *,
    from_start: bool = False,
    give_up_s: float = GIVE_UP_S,
    client_seed: str = "",
) -> pb.GameEvent:
    """Feed every event of ``game_id`` to ``on_event`` until it ends; return the last one.
    A seat adds ``client_seed`` to the game's dice (before the start).

    Lost connections and server restarts are retried, with the person told, for up to
    ``give_up_s`` seconds in a row; then, or on a refusal (unknown game, bad token), it
    raises :class:`GameGone` saying why.
    """
    last = 0
    told = False  # the person knows the game is interrupted

    def lost(why: str, wait: float) -> None:
        nonlocal told
        if not told:
            told = True
            say(
                f"Connection lost ({why}); resuming the game by itself "
                f"(for up to {give_up_s:.0f} s)..."
            )

    def back() -> None:
        nonlocal told
        told = False
        say(f"Connection back: game resumed after event {last}.")

    reconnect = Reconnect(give_up_s=give_up_s, max_backoff=MAX_BACKOFF, on_lost=lost, on_back=back)
    events = client.events(
        game_id, from_start=from_start, reconnect=reconnect, client_seed=client_seed
    )
    try:
        async with contextlib.aclosing(events) as stream:
            async for ev in stream:
                if ev.type != pb.EVENT_TYPE_HEARTBEAT:
                    last = max(last, ev.seq)
                on_event(ev)
                if over(ev):
                    return ev
                if ev.type == pb.EVENT_TYPE_SERVER_SHUTDOWN:
                    told = True
                    say("The arbiter is restarting; the client will resume the game.")
    except grpc.RpcError as e:
        raise GameGone(f"{e.code().name.lower()}: {e.details()}") from None
    except Unreachable as e:
        raise GameGone(
            f"cannot reach the arbiter ({e.why}): gave up after {e.seconds:.0f} s"
        ) from None
    raise GameGone("the arbiter ended the game's stream before the game ended")


def who(state: pb.GameState, color: Color, you: Color | None) -> str:
    if color is you:
        return "You"
    name = wire.names_of(state, guests=you is None)[color]
    if you is None:
        return f"{side_name(color).capitalize()} ({name})"
    return name


def dice_text(dice) -> str:
    return "-".join(str(d) for d in dice)


def in_numbering(state: pb.GameState, side: Color, notation: str, viewer: Color | None) -> str:
    """``side``'s play (written in its own point numbers) in ``viewer``'s numbers, as the
    board shows them, point by point: hits (``*``), repeats (``(2)``), ``bar`` and ``off``
    kept; unchanged for the viewer's own plays and "-"."""
    if viewer is None or side is viewer or notation.strip() in ("", "-"):
        return notation
    v = variant(state.options.variant)
    mine = {v.point_index(viewer, q): q for q in range(1, 25)}

    def point(text: str) -> str:
        name = text.rstrip("*")
        if not (name.isdigit() and 1 <= int(name) <= 24):
            return text
        return str(mine[v.point_index(side, int(name))]) + text[len(name) :]

    moves = (move.partition("(") for move in notation.split())
    return " ".join("/".join(map(point, body.split("/"))) + p + r for body, p, r in moves)


def describe(
    ev: pb.GameEvent, you: Color | None = None, numbering: Color | None = None
) -> str | None:
    """One line about an event, or None for events that need no words. Plays are written
    in the point numbers of ``numbering`` (default: ``you``), as the board shows them."""
    viewer = numbering if numbering is not None else you
    st = ev.state
    t = ev.type
    if t == pb.EVENT_TYPE_GAME_STARTED:
        names = wire.names_of(st, guests=you is None)
        if you is None:
            colours = f"{names[Color.WHITE]} plays white, {names[Color.BLACK]} plays black"
        else:
            them = you.opponent
            colours = f"you play {side_name(you)}, {names[them]} plays {side_name(them)}"
        text = f"Game {st.game_number} started: {colours}."
        if ev.opening_throws:
            throws = ", ".join(
                f"{o.first_player_die}-{o.second_player_die}"
                + (" (a tie: thrown again)" if o.first_player_die == o.second_player_die else "")
                for o in ev.opening_throws
            )
            name = wire.player_name(st.first_player, "the first player", guests=you is None)
            first = f"{name}'s die"
            if you is not None and (st.white == st.first_player) == (you is Color.WHITE):
                first = "your die"
            plural = "s" if len(ev.opening_throws) > 1 else ""
            text += f" Opening throw{plural} {throws} ({first} first); white moves first."
        return text
    if t == pb.EVENT_TYPE_PLAY_MADE:
        side = wire.color_of(ev.play.side)
        auto = " (automatic)" if ev.play.automatic else ""
        notation = in_numbering(st, side, ev.play.notation, viewer)
        return f"{who(st, side, you)} played {dice_text(ev.play.dice)}: {notation}{auto}"
    if t == pb.EVENT_TYPE_TURN_PASSED:
        side = wire.color_of(ev.play.side)
        return (
            f"{who(st, side, you)} rolled {dice_text(ev.play.dice)}: no legal play, "
            "the turn passes."
        )
    if t == pb.EVENT_TYPE_GAME_FINISHED:
        return finished_text(st, you)
    if t == pb.EVENT_TYPE_GAME_ABORTED:
        return "The game was aborted (a player did not arrive in time)."
    return None


def finished_text(st: pb.GameState, you: Color | None = None) -> str:
    r = st.result
    if not r.winner:
        return "The game is over."
    winner = wire.color_of(r.winner)
    kind = wire.kind_name(r.kind)
    how = wire.termination_name(r.termination)
    pts = f"{r.points} point{'s' if r.points != 1 else ''}"
    head = f"{who(st, winner, you)} {'win' if winner is you else 'wins'} by {kind} ({pts})"
    loser = winner.opponent
    reason = {
        "timeout": "ran out of time",
        "abandonment": "left: the clock ran out while disconnected",
        "resignation": "resigned",
        "illegal plays": "had too many plays refused",
    }.get(how)
    if reason:
        name = "you" if loser is you else who(st, loser, you)
        head += f": {name} {reason}"
    return head + "."


def score_text(st: pb.GameState, you: Color | None = None) -> str:
    m = st.match
    names = wire.names_of(st, guests=you is None)
    pts = {Color.WHITE: m.white_points, Color.BLACK: m.black_points}
    if you is not None:
        them = you.opponent
        text = f"Match to {m.target}: you {pts[you]}, {names[them]} {pts[them]}"
    else:
        text = (
            f"Match to {m.target}: {names[Color.WHITE]} {pts[Color.WHITE]}, "
            f"{names[Color.BLACK]} {pts[Color.BLACK]}"
        )
    if m.over:
        leader = Color.WHITE if pts[Color.WHITE] > pts[Color.BLACK] else Color.BLACK
        if leader is you:
            text += " - you win the match!"
        else:
            text += f" - {names[leader]} wins the match."
    return text
