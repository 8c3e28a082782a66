"""``nardy replay FILE|GAME``: step through a recorded game.

GAME is a game id on an arbiter (``--server``): every event is fetched as a spectator with
``SubscribeGame(from_start=True)``. FILE is a game record (``nardy.record``: the text
format or JSON); each turn is checked by the rules as it is read, and every game of the
file is shown in turn.

Keys: Enter, ``n`` or space: next; ``p`` or backspace: previous; ``g`` first; ``G`` last;
``q`` quit. ``--print`` prints every position at once, without waiting for keys.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import dataclass, field

import grpc
from rich.console import Console
from rich.text import Text

from clients.board import play_marks, render, rules_of, side_name, state_for
from clients.follow import dice_text, finished_text
from clients.term import Screen
from nardy import Color, wire
from nardy.client import Client, over, run
from nardy.v1 import game_pb2 as pb


@dataclass
class Frame:
    state: pb.GameState
    label: str
    marks: set[int] = field(default_factory=set)
    header: str = ""


def _moved(state: pb.GameState, side: int, dice) -> pb.GameState:
    """A copy of ``state`` showing ``dice`` in the half of ``side`` (the side that moved)."""
    shown = pb.GameState()
    shown.CopyFrom(state)
    shown.status = pb.GAME_STATUS_IN_PROGRESS
    shown.side_to_move = side
    del shown.dice[:]
    shown.dice.extend(dice)
    return shown


def frames_from_events(events: list[pb.GameEvent]) -> list[Frame]:
    frames: list[Frame] = []
    turn = 0
    for ev in events:
        st = ev.state
        names = wire.names_of(st)
        white, black = names[Color.WHITE], names[Color.BLACK]
        header = f"game {st.game_number} ({st.game_id}): {white} (white) vs {black} (black)"
        if st.match.target > 1:
            header += f", match to {st.match.target}"
        if ev.type == pb.EVENT_TYPE_GAME_STARTED:
            frames.append(Frame(st, f"Start: {white} white, {black} black", set(), header))
        elif ev.type in (pb.EVENT_TYPE_PLAY_MADE, pb.EVENT_TYPE_TURN_PASSED):
            turn += 1
            side = wire.color_of(ev.play.side)
            name = names[side]
            notation = ev.play.notation if ev.type == pb.EVENT_TYPE_PLAY_MADE else "- (no play)"
            took = f" ({ev.play.used_ms / 1000:.1f} s)" if ev.play.used_ms else ""
            label = f"Turn {turn}: {side_name(side)} ({name}) {dice_text(ev.play.dice)}: {notation}"
            frames.append(
                Frame(
                    _moved(st, ev.play.side, ev.play.dice),
                    label + took,
                    play_marks(rules_of(st), side, ev.play.notation),
                    header,
                )
            )
        elif ev.type == pb.EVENT_TYPE_GAME_FINISHED:
            frames.append(Frame(st, f"End: {finished_text(st)}", set(), header))
        elif ev.type == pb.EVENT_TYPE_GAME_ABORTED:
            frames.append(Frame(st, "The game was aborted.", set(), header))
    return frames


def frames_from_record(path: str) -> list[Frame]:
    from nardy import record

    frames: list[Frame] = []
    for game in record.load(path):
        positions = record.replay(game)
        h = game.headers
        white, black = h.get("White", "white"), h.get("Black", "black")
        header = f"{os.path.basename(path)} game {game.number}: {white} (white) vs {black} (black)"
        if h.get("Match") and h.get("Match") not in ("1", "0"):
            header += f", match to {h['Match']}"
        rules = game.rules
        start = state_for(positions[0], rules=rules, white=white, black=black, to_move=False)
        start.game_number = game.number
        frames.append(Frame(start, "Start", set(), header))
        for n, (t, after) in enumerate(zip(game.turns, positions[1:], strict=True), 1):
            st = state_for(after, rules=rules, dice=t.dice, white=white, black=black)
            st.side_to_move = wire.color_pb(t.side)
            st.game_number = game.number
            play = t.play if t.play.strip() != "-" else "- (no play)"
            name = white if t.side is Color.WHITE else black
            label = f"Turn {n}: {side_name(t.side)} ({name}) {dice_text(t.dice)}: {play}"
            frames.append(Frame(st, label, play_marks(rules, t.side, t.play), header))
        if game.result is not None:
            r = game.result
            end = state_for(positions[-1], rules=rules, white=white, black=black, to_move=False)
            end.game_number = game.number
            end.result.CopyFrom(wire.result_pb(r))
            frames.append(Frame(end, f"End: {finished_text(end)}", set(), header))
    return frames


async def fetch_events(client: Client, game_id: str) -> list[pb.GameEvent]:
    """Every event of the game so far (the whole game when it is over)."""
    info = await client.get_game(game_id)
    last = info.last_seq
    events: list[pb.GameEvent] = []
    if last == 0:
        return events
    async with contextlib.aclosing(client.events(game_id, from_start=True)) as stream:
        async for ev in stream:
            if ev.type == pb.EVENT_TYPE_HEARTBEAT:
                continue
            events.append(ev)
            if over(ev) or ev.seq >= last:
                break
    return events


def draw(
    frame: Frame, i: int, n: int, perspective: Color, unicode: bool, compact: bool = False
) -> Text:
    board = render(
        frame.state,
        perspective,
        marks=frame.marks,
        title=f"nardy replay - {frame.header}",
        unicode=unicode,
        compact=compact,
        show_clocks=False,
        turn_label="moved" if frame.label.startswith("Turn") else "to move",
    )
    board.append("\n")
    board.append(f"[{i + 1}/{n}] {frame.label}", style="bold")
    return board


async def step_through(frames: list[Frame], screen: Screen, perspective: Color) -> None:
    i = 0
    keys = "Enter/n next, p previous, g first, G last, f flip, q quit"

    def show() -> None:
        body = draw(frames[i], i, len(frames), perspective, screen.unicode, screen.compact)
        if screen.live:
            screen.body = body
            screen.set_status(Text(keys, style="grey50"))
            screen.refresh()
        else:
            screen.show(body)
            screen.say(Text(f"({keys})", style="grey50"))

    screen.line_editing = False
    screen.prompt = ""
    async with screen.session():
        show()
        while True:
            key = await screen.read_key()
            if key in (None, "q", "Q", "quit"):
                break
            if key in ("enter", "n", " ", "right", "down", "next"):
                if i + 1 < len(frames):
                    i += 1
                else:
                    screen.say("End of the record: p goes back, q quits.")
            elif key in ("p", "backspace", "left", "up", "prev", "previous"):
                if i > 0:
                    i -= 1
            elif key == "g":
                i = 0
            elif key == "G":
                i = len(frames) - 1
            elif key in ("f", "F"):
                perspective = perspective.opponent
            elif key.isdigit() and 1 <= int(key) <= len(frames):
                i = int(key) - 1
            show()
        screen.finish()


async def _main(args: argparse.Namespace) -> int:
    perspective = Color.BLACK if args.side == "black" else Color.WHITE
    if os.path.exists(args.source):
        from nardy.record import RecordError

        try:
            frames = frames_from_record(args.source)
        except (RecordError, OSError, ValueError) as e:
            print(f"nardy replay: {e}", file=sys.stderr)
            return 1
    else:
        async with Client(args.server) as client:
            try:
                frames = frames_from_events(await fetch_events(client, args.source))
            except grpc.RpcError as e:
                print(
                    f"nardy replay: {args.source!r} is neither a file nor a game on "
                    f"{args.server} ({e.details()})",
                    file=sys.stderr,
                )
                return 1
    if not frames:
        print("nardy replay: the game has no moves yet", file=sys.stderr)
        return 1
    if args.print:
        console = Console(highlight=False, soft_wrap=True)
        unicode = (sys.stdout.encoding or "").lower().replace("-", "").startswith("utf")
        for i, frame in enumerate(frames):
            console.print(draw(frame, i, len(frames), perspective, unicode))
            console.print()
        return 0
    screen = Screen(live=False if args.plain else None)
    await step_through(frames, screen, perspective)
    return 0


def main(args: argparse.Namespace) -> int:
    try:
        return run(_main, args)
    except KeyboardInterrupt:
        return 130
