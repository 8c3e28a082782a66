"""``nardy watch [GAME]``: follow a game live as a spectator.

The board is drawn from white's side (``--as black`` for black's), with both clocks
counting down, every play as it is made, and the result; a match is followed into its next
game. Without GAME the newest game in progress is followed. Keys: ``f`` flips the board,
``q`` quits. A lost connection is resumed by itself from the last event seen.
"""

from __future__ import annotations

import argparse
import os
import sys

import grpc
import trio
from rich.text import Text

from clients.board import fmt_clock, live_clocks, play_marks, render, rules_of
from clients.follow import GameGone, describe, follow, score_text
from clients.term import Screen
from nardy import Color, wire
from nardy.client import Client, run
from nardy.v1 import game_pb2 as pb

SHOWN = (
    pb.EVENT_TYPE_SNAPSHOT,
    pb.EVENT_TYPE_GAME_STARTED,
    pb.EVENT_TYPE_PLAY_MADE,
    pb.EVENT_TYPE_TURN_PASSED,
    pb.EVENT_TYPE_GAME_FINISHED,
    pb.EVENT_TYPE_GAME_ABORTED,
)


def default_server() -> str:
    return os.environ.get("NARDY_SERVER") or "127.0.0.1:50051"


async def newest_game(client: Client) -> str | None:
    """The newest game in progress (or, failing that, waiting to start)."""
    for status in (pb.GAME_STATUS_IN_PROGRESS, pb.GAME_STATUS_WAITING):
        games = await client.all_games(status=status, limit=1)
        if games:
            return games[0].game_id
    return None


class WatchUI:
    def __init__(self, screen: Screen, client: Client, game_id: str, perspective: Color) -> None:
        self.screen = screen
        self.client = client
        self.game_id = game_id
        self.perspective = perspective
        self.state: pb.GameState | None = None
        self.received = 0.0
        self.marks: set[int] = set()
        self._clock_key: tuple = ()
        self.final: pb.GameEvent | None = None
        self.error: str | None = None

    async def run(self) -> pb.GameEvent | None:
        async with trio.open_nursery() as nursery:
            if self.screen.live:
                nursery.start_soon(self._keys, nursery.cancel_scope)
                nursery.start_soon(self._ticker)
            try:
                await self._games()
            finally:
                nursery.cancel_scope.cancel()
        return self.final

    async def _games(self) -> None:
        """The game asked for, from now on; then each next game of its match from its
        start (a fast game may be over before it is followed: its plays and result are
        told all the same)."""
        game_id = self.game_id
        from_start = False
        while game_id:
            self.game_id = game_id
            self.screen.set_status(
                Text(f"Watching game {game_id}. Keys: f flip, q quit.", "grey50")
            )
            self.redraw()
            try:
                ev = await follow(
                    self.client, game_id, self.on_event, self.note, from_start=from_start
                )
            except GameGone as e:
                self.error = str(e)
                return
            self.final = ev
            from_start = True
            game_id = ev.state.next_game_id
            if game_id:
                self.note(f"The match goes on: game {ev.state.game_number + 1} ({game_id}).")

    async def _keys(self, scope: trio.CancelScope) -> None:
        while True:
            key = await self.screen.read_key()
            if key in (None, "q", "Q"):
                self.note("Stopped watching.")
                scope.cancel()
                return
            if key in ("f", "F"):
                self.perspective = self.perspective.opponent
                self.redraw()

    async def _ticker(self) -> None:
        while True:
            await trio.sleep(0.2)
            if self.state is not None and self._clocks_shown() != self._clock_key:
                self.redraw()

    def _clocks_shown(self) -> tuple:
        if self.state is None:
            return ()
        w, b = live_clocks(self.state, trio.current_time() - self.received)
        return fmt_clock(w), fmt_clock(b), self.state.turn_id

    def note(self, text: str, style: str = "") -> None:
        self.screen.say(Text(text, style=style))

    def on_event(self, ev: pb.GameEvent) -> None:
        st = ev.state
        self.state = st
        self.received = trio.current_time()
        if ev.type == pb.EVENT_TYPE_HEARTBEAT:
            return
        if ev.type == pb.EVENT_TYPE_PLAY_MADE:
            self.marks = play_marks(rules_of(st), wire.color_of(ev.play.side), ev.play.notation)
        text = describe(ev)  # a spectator reads each side's plays in its own numbers
        if text:
            self.note(text, "bold" if ev.type == pb.EVENT_TYPE_GAME_FINISHED else "")
        if ev.type == pb.EVENT_TYPE_GAME_FINISHED and st.match.target > 1:
            self.note(score_text(st), "bold")
        if self.screen.live:
            self.redraw()
        elif ev.type in SHOWN:
            self.screen.show(self.board())

    def board(self) -> Text:
        st = self.state
        if st is None:
            return Text(f"nardy watch - game {self.game_id}", style="bold")
        w, b = live_clocks(st, trio.current_time() - self.received)
        self._clock_key = self._clocks_shown()
        names = " vs ".join(wire.names_of(st).values())
        return render(
            st,
            self.perspective,
            clocks=(w, b),
            marks=self.marks,
            title=f"nardy watch - game {st.game_number} ({st.game_id}) - {names}",
            unicode=self.screen.unicode,
            compact=self.screen.compact,
        )

    def redraw(self) -> None:
        if self.screen.live:
            self.screen.body = self.board()
            self.screen.refresh()


async def _main(args: argparse.Namespace, screen: Screen) -> int:
    async with Client(args.server) as client:
        game_id = args.game
        if not game_id:
            try:
                game_id = await newest_game(client)
            except grpc.RpcError as e:
                print(f"nardy watch: cannot reach {args.server}: {e.details()}", file=sys.stderr)
                return 1
            if not game_id:
                print("nardy watch: no game in progress on this arbiter", file=sys.stderr)
                return 1
        perspective = Color.BLACK if args.side == "black" else Color.WHITE
        screen.line_editing = False
        screen.prompt = ""
        async with screen.session(read_input=screen.live):
            ui = WatchUI(screen, client, game_id, perspective)
            final = await ui.run()
            if ui.error:
                screen.finish([f"nardy watch: {ui.error}"])
                return 1
            screen.finish()
        return 0 if final is None or final.type != pb.EVENT_TYPE_GAME_ABORTED else 1


def main(args: argparse.Namespace) -> int:
    screen = Screen(live=False if args.plain else None)
    try:
        return run(_main, args, screen)
    except KeyboardInterrupt:
        return 130
