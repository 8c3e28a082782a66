"""``nardy play``: a person plays long nardy in the terminal.

With no ``--server`` the client starts an arbiter of its own (``EmbeddedServer`` on a
loopback port, its journal in a temporary directory), creates a match with two open seats,
launches the chosen engine as a process on the second seat (``python -m nardy engine NAME``
with ``NARDY_SERVER``/``NARDY_TOKEN``) and plays the first seat in this process. With
``--server ADDR --token T`` it joins the game the token is seated in on a remote arbiter.

A turn is entered as a whole (``24/18 18/13``, ``24/13``, ``6/off``: submitted at once) or
step by step (``24/18``, then ``18/13``, then ``done``), with ``undo`` taking back the last
step. A point number alone (``24``) selects that checker and shows where it can go; a
number then moves it there. Steps the rules refuse are refused at once with the reason.

Colour: ``--colour white`` or ``black`` gives the person that colour in the first game
(CreateMatch's ``first_seat_color``); ``--colour random`` (the default) leaves it to the
opening throw. Every die comes from the arbiter's CSPRNG unless ``--dice`` scripts them.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import grpc
import trio
from rich.text import Text

from clients.board import fmt_clock, live_clocks, play_marks, render, rules_of
from clients.follow import (
    GameGone,
    describe,
    dice_text,
    finished_text,
    follow,
    names_of,
    score_text,
)
from clients.term import Screen, run_trio
from nardy import wire
from nardy.client import RETRYABLE, Client, my_turn
from nardy.game import Color, IllegalPlay, NotationError, Termination
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from nardy.variant import OFF, Variant, variant

log = logging.getLogger("nardy.play")

OPENING = {"white": pb.COLOR_WHITE, "black": pb.COLOR_BLACK}  # the person's first colour
NEXT_GAME_S = 15.0  # the next game of a match starts by itself after this
HELP = """\
Commands (your turn):
  24/18 18/13   a whole play: submitted at once (also 24/13, 24/16(2), 6/off)
  24/18         one step; more steps follow, then 'done' (or Enter) submits
  24            choose the checker on 24: its legal targets are shown; then 18 moves it
  off           bear the chosen checker off
  undo  (u)     take back the last step           done (d)   submit the play
  hint  (h)     show the legal plays              resign     resign this game (asks)
  help          this text                         quit       leave (asks)"""


# -- the engine process -----------------------------------------------------------------
# On Linux the engine is started through this stub, which asks the kernel to end it when
# the client dies (PR_SET_PDEATHSIG), even by SIGKILL, then becomes the engine (execv).
_ORPHAN_GUARD = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(0)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)


class EngineProcess:
    """The opponent engine as a process in its own session, output to a log file; it never
    outlives the client (stopped on exit, and on Linux by the kernel if the client dies)."""

    def __init__(self, cmd: list[str], env: dict[str, str], log_path: str) -> None:
        self.cmd = cmd
        self.log_path = log_path
        if sys.platform.startswith("linux"):
            cmd = [sys.executable, "-c", _ORPHAN_GUARD, str(os.getpid()), *cmd]
        with open(log_path, "ab") as f:
            self.proc = subprocess.Popen(
                cmd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=f,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def poll(self) -> int | None:
        return self.proc.poll()

    def tail(self, n: int = 3) -> list[str]:
        try:
            with open(self.log_path, errors="replace") as f:
                return [line.rstrip() for line in f.readlines()[-n:]]
        except OSError:
            return []

    def stop(self) -> None:
        if self.proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=wait)
                return


# -- the person's side of a game --------------------------------------------------------
@dataclass
class Turn:
    """The person's turn being built."""

    turn_id: int
    rules: Variant
    position: Any  # the variant's position before the turn
    dice: tuple[int, int]
    builder: Any  # the variant's turn builder
    selected: int | None = None
    sent: bool = False


@dataclass
class PlayUI:
    screen: Screen
    client: Client  # holds the seat's (or player's) token
    game_id: str
    title: str = "nardy"
    engine: EngineProcess | None = None
    state: pb.GameState | None = None
    received: float = 0.0
    me: Color | None = None
    turn: Turn | None = None
    marks: set[int] = field(default_factory=set)
    confirm: str | None = None  # "resign" or "quit" awaiting y
    between: trio.Event | None = None  # set when the person is done looking at a result
    quitting: bool = False
    nursery: trio.Nursery | None = None
    _clock_key: tuple = ()

    # -- running ------------------------------------------------------------------------
    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            self.nursery = nursery
            nursery.start_soon(self._signals)
            nursery.start_soon(self._input)
            nursery.start_soon(self._ticker)
            if self.engine is not None:
                nursery.start_soon(self._watch_engine)
            try:
                await self._games()
            finally:
                nursery.cancel_scope.cancel()

    async def _games(self) -> None:
        game_id = self.game_id
        while game_id and not self.quitting:
            self.game_id = game_id
            self.turn = None
            self.marks = set()
            self.status_line()
            self.redraw()
            try:
                final = await follow(self.client, game_id, self.on_event, self.note)
            except GameGone as e:
                self.note(f"Cannot follow the game: {e}", "bold red")
                self.redraw()
                await self._pause("Press Enter to leave.", None)
                return
            st = final.state
            if final.type == pb.EVENT_TYPE_GAME_ABORTED:
                await self._pause("Press Enter to leave.", None)
                return
            if st.next_game_id:
                await self._pause(
                    f"Game {st.game_number + 1} starts in {NEXT_GAME_S:.0f} s: press Enter "
                    "to start now.",
                    NEXT_GAME_S,
                )
                game_id = st.next_game_id
            else:
                await self._pause("The match is over. Press Enter to leave.", None)
                return

    async def _pause(self, text: str, timeout: float | None) -> None:
        self.between = trio.Event()
        self.screen.set_status(Text(text, style="bold"))
        if not self.screen.live:
            self.screen.say(text)
        self.redraw()
        with trio.move_on_after(timeout if timeout is not None else float("inf")):
            await self.between.wait()
        self.between = None

    async def _signals(self) -> None:
        """SIGHUP (terminal closed) or SIGTERM: leave cleanly, stopping the engine."""
        with trio.open_signal_receiver(signal.SIGHUP, signal.SIGTERM) as signals:
            async for _ in signals:
                self._leave()
                return

    async def _ticker(self) -> None:
        """Redraw when a clock shown changes (about once a second while one runs)."""
        while True:
            await trio.sleep(0.2)
            if self.state is None or not self.screen.live:
                continue
            key = self._clocks_shown()
            if key != self._clock_key:
                self.redraw()

    async def _watch_engine(self) -> None:
        assert self.engine is not None
        while self.engine.poll() is None:
            await trio.sleep(0.5)
        if self.quitting:
            return
        self.note(f"The engine process exited (code {self.engine.poll()}).", "bold red")
        for line in self.engine.tail():
            self.note(f"  engine: {line}", "grey50")
        self.redraw()

    # -- events -------------------------------------------------------------------------
    def note(self, text: str, style: str = "") -> None:
        self.screen.say(Text(text, style=style))

    def on_event(self, ev: pb.GameEvent) -> None:
        st = ev.state
        self.state = st
        self.received = trio.current_time()
        if wire.color_of(st.your_color) is not None:
            self.me = wire.color_of(st.your_color)
        t = ev.type
        if t == pb.EVENT_TYPE_HEARTBEAT:
            return
        text = describe(ev, self.me)
        if t == pb.EVENT_TYPE_GAME_STARTED and st.game_number > 1:
            self.screen.messages.clear()  # a new game, a fresh log
        if t == pb.EVENT_TYPE_PLAY_MADE:
            self.turn = None
            self.marks = play_marks(rules_of(st), wire.color_of(ev.play.side), ev.play.notation)
        elif t == pb.EVENT_TYPE_TURN_PASSED:
            self.turn = None
            self.marks = set()
        if text:
            style = "bold" if t in (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_STARTED) else ""
            self.note(text, style)
        if t == pb.EVENT_TYPE_GAME_FINISHED and st.match.target:
            self.note(score_text(st, self.me), "bold")
        if my_turn(ev) and (self.turn is None or self.turn.turn_id != st.turn_id):
            self._start_turn(st)
        elif t == pb.EVENT_TYPE_TURN_STARTED and self.me is not None:
            mover = wire.color_of(st.side_to_move)
            if mover is not self.me:
                self.note(f"{names_of(st)[mover]} to play {dice_text(st.dice)}...", "grey50")
        if t == pb.EVENT_TYPE_SNAPSHOT and st.status == pb.GAME_STATUS_WAITING:
            self.note("Waiting for the other player to join...", "grey50")
        self.status_line()
        self.redraw()
        if (
            not self.screen.live
            and t
            in (
                pb.EVENT_TYPE_GAME_STARTED,
                pb.EVENT_TYPE_PLAY_MADE,
                pb.EVENT_TYPE_TURN_PASSED,
                pb.EVENT_TYPE_GAME_FINISHED,
            )
            and not my_turn(ev)
        ):
            self.screen.show(self.board())

    def _start_turn(self, st: pb.GameState) -> None:
        rules = rules_of(st)
        position = rules.parse(st.position)
        a, b = st.dice
        builder = rules.turn_builder(position, (a, b))
        self.turn = Turn(st.turn_id, rules, position, (a, b), builder)
        offered = {lp.end_position for lp in st.legal_plays}
        if offered != {p.end.text() for p in builder.plays}:
            log.warning("turn %d: local legal plays differ from the arbiter's", st.turn_id)
            self.note(
                "Warning: this client's rules and the arbiter's differ on this turn "
                f"({len(builder.plays)} plays here, {len(offered)} there).",
                "bold red",
            )
        if len(builder.plays) == 1:
            play = builder.plays[0]
            self.note(f"Your roll {a}-{b} has one legal play: {play.notation()} (played for you).")
            for step in play.steps:
                builder.step(step.src, step.dst)
            self._send(play)
            return
        self.note(f"Your turn: {a}-{b}.", "bold")
        if not self.screen.live:
            self.screen.show(self.board(), self.status_text())

    # -- drawing ------------------------------------------------------------------------
    def _clocks_shown(self) -> tuple:
        if self.state is None:
            return ()
        w, b = live_clocks(self.state, trio.current_time() - self.received)
        return (fmt_clock(w), fmt_clock(b), self.state.turn_id)

    def board(self) -> Text:
        st = self.state
        if st is None:
            return Text(self.title, style="bold")
        turn = self.turn
        kw: dict = {}
        if turn is not None:
            b = turn.builder
            kw = {
                "position": b.position if b.steps else turn.position,
                "dice_left": b.remaining,
                "selected": turn.selected,
                "targets": set(self.targets(turn.selected)) if turn.selected else set(),
            }
        self._clock_key = self._clocks_shown()
        w, bl = live_clocks(st, trio.current_time() - self.received)
        return render(
            st,
            self.me or Color.WHITE,
            you=self.me,
            clocks=(w, bl),
            marks=self.marks if turn is None else set(),
            title=self.title,
            unicode=self.screen.unicode,
            **kw,
        )

    def status_text(self) -> Text:
        st = self.state
        turn = self.turn
        if self.confirm == "resign":
            return Text(self._resign_question(), style="bold")
        if self.confirm == "quit":
            return Text(self._quit_question(), style="bold")
        if st is None or st.status == pb.GAME_STATUS_WAITING:
            return Text("Waiting for the game to start...", style="grey50")
        if st.status != pb.GAME_STATUS_IN_PROGRESS:
            return Text(finished_text(st, self.me), style="bold")
        if turn is None:
            mover = wire.color_of(st.side_to_move)
            if mover is None or not st.dice:
                return Text("")
            return Text(f"{names_of(st)[mover]} is playing {dice_text(st.dice)}...", "grey50")
        b = turn.builder
        if turn.sent:
            return Text(f"Play sent: {b.play().notation() if b.complete else ''}", "grey50")
        if b.complete and b.steps:
            return Text(
                f"Play complete: {' '.join(map(str, b.steps))}. "
                "Type done (or press Enter) to submit, undo to take back.",
                style="bold",
            )
        if turn.selected is not None:
            targets = self.targets(turn.selected)
            parts = [
                f"{'off' if d == OFF else d} ({'+'.join(map(str, dice))})"
                for d, dice in sorted(targets.items(), key=lambda kv: -kv[0] or 99)
            ]
            return Text(f"From {turn.selected}: " + ", ".join(parts) + ". Type a target.")
        sources = sorted({s.src for s in b.legal_steps()}, reverse=True)
        left = "-".join(map(str, b.remaining))
        done = f"played {' '.join(map(str, b.steps))}; " if b.steps else ""
        return Text(
            f"Your move, {done}dice left {left}. Move from: {' '.join(map(str, sources))}. "
            "(24/18, a point, hint, undo, help)"
        )

    def status_line(self) -> None:
        self.screen.set_status(self.status_text())

    def redraw(self) -> None:
        if self.screen.live:
            self.screen.body = self.board()
            if self.between is None:
                self.status_line()
            self.screen.refresh()

    # -- the person's input -------------------------------------------------------------
    async def _input(self) -> None:
        while True:
            line = await self.screen.read_line()
            if line is None:
                if self.screen.live:
                    line = "quit"
                else:
                    self.note("Input closed; leaving the game.")
                    self._leave()
                    return
            before = self._turn_key()
            await self.command(line.strip())
            self.redraw()
            turn = self.turn
            changed = self._turn_key() != before
            if not self.screen.live and changed and turn is not None and not turn.sent:
                self.screen.show(self.board(), self.status_text())

    def _turn_key(self) -> tuple:
        """What the person's input can change on the board (lines mode reprints on change)."""
        turn = self.turn
        if turn is None:
            return ()
        return turn.turn_id, tuple(turn.builder.steps), turn.selected

    def _leave(self) -> None:
        self.quitting = True
        if self.nursery is not None:
            self.nursery.cancel_scope.cancel()

    async def command(self, line: str) -> None:
        word = line.lower()
        if self.confirm is not None:
            what, self.confirm = self.confirm, None
            if word in ("y", "yes"):
                if what == "resign":
                    await self._resign()
                else:
                    self.note("Leaving.")
                    self._leave()
            else:
                self.note(f"Not {'resigning' if what == 'resign' else 'leaving'}.")
            self.status_line()
            return
        if self.between is not None and word in ("", "n", "next", "c", "continue"):
            self.between.set()
            return
        if word in ("help", "?"):
            for text in HELP.splitlines():
                self.note(text)
            return
        if word in ("quit", "exit", "q"):
            self.confirm = "quit"
            if self.between is not None or self._game_over():
                self.confirm = None
                self._leave()
                return
            self.note(self._quit_question(), "bold")
            self.status_line()
            return
        if word == "resign":
            if self._game_over() or self.state is None:
                self.note("There is no game in progress to resign.")
                return
            self.confirm = "resign"
            self.note(self._resign_question(), "bold")
            self.status_line()
            return
        if self.between is not None:
            self.note("The game is over: press Enter to go on, or quit.")
            return
        turn = self.turn
        if word == "":
            if turn is not None and turn.builder.complete and turn.builder.steps and not turn.sent:
                await self._done()
            return
        if turn is None or turn.sent:
            if self.state is not None and self.state.status == pb.GAME_STATUS_IN_PROGRESS:
                self.note("It is not your turn.")
            else:
                self.note("There is nothing to play now.")
            return
        if word in ("hint", "h"):
            self._hint()
        elif word in ("undo", "u"):
            step = turn.builder.undo()
            turn.selected = None
            self.note(f"Took back {step}." if step else "Nothing to undo.")
        elif word in ("done", "d"):
            await self._done()
        elif word == "off" or word.isdigit():
            await self._point(0 if word == "off" else int(word))
        else:
            await self._moves(line)
        self.status_line()

    def _game_over(self) -> bool:
        return self.state is None or self.state.status in (
            pb.GAME_STATUS_FINISHED,
            pb.GAME_STATUS_ABORTED,
        )

    def _resign_question(self) -> str:
        pts = "the game"
        st, me = self.state, self.me
        if st is not None and me is not None:
            rules = rules_of(st)
            loss = rules.forfeit(rules.parse(st.position), me, Termination.RESIGNATION)
            pts = f"{loss.points} point{'s' if loss.points != 1 else ''} ({loss.kind})"
        number = st.game_number if st is not None else 1
        return f"Resign game {number}? It counts as a loss of {pts}. Type y to confirm."

    def _quit_question(self) -> str:
        return "Leave now? The game is not over. Type y to leave."

    def _hint(self) -> None:
        assert self.turn is not None
        plays = self.turn.builder.plays
        shown = [p.notation() for p in plays[:12]]
        self.note(
            f"{len(plays)} legal play{'s' if len(plays) != 1 else ''}: "
            + "  |  ".join(shown)
            + ("  ..." if len(plays) > 12 else "")
        )

    async def _done(self) -> None:
        assert self.turn is not None
        b = self.turn.builder
        if not b.steps:
            self.note("Nothing played yet: enter a move first (hint lists the plays).")
            return
        try:
            play = b.play()
        except IllegalPlay as e:
            self.note(f"Not yet: {e}", "bold red")
            return
        await self._submit(play)

    async def _point(self, n: int) -> None:
        turn = self.turn
        assert turn is not None
        if turn.selected is not None and n in self.targets(turn.selected):
            src = turn.selected
            turn.selected = None
            await self._moves(f"{src}/{'off' if n == OFF else n}", whole=False)
            return
        if n == OFF:
            self.note("Choose a checker first (type its point), then 'off'.")
            return
        if not 1 <= n <= 24:
            self.note(f"There is no point {n}: points are 1 to 24.")
            return
        b = turn.builder
        if b.complete:
            self.note("The play is complete: done submits it, undo takes a step back.")
            return
        if any(s.src == n for s in b.legal_steps()):
            turn.selected = n
            return
        turn.selected = None
        self.note(f"Nothing can move from {n}: {self._why_not(n)}", "bold red")

    def _why_not(self, src: int) -> str:
        b = self.turn.builder if self.turn else None
        if b is None:
            return ""
        for die in sorted(set(b.remaining), reverse=True):
            mark = len(b.steps)
            try:
                b.step(src, max(0, src - die))
            except IllegalPlay as e:
                return str(e)
            b.rewind(mark)
        return "no legal play starts there."

    def targets(self, src: int | None) -> dict[int, list[int]]:
        """Where the checker on ``src`` can go this turn: target -> dice used."""
        if src is None or self.turn is None:
            return {}
        b = self.turn.builder
        out: dict[int, list[int]] = {}

        def walk(at: int, used: list[int]) -> None:
            for dst in sorted({s.dst for s in b.legal_steps() if s.src == at}):
                mark = len(b.steps)
                try:
                    steps = b.step(at, dst)
                except IllegalPlay:
                    continue
                dice = used + [s.die for s in steps]
                if dst not in out or len(dice) < len(out[dst]):
                    out[dst] = dice
                if dst != OFF:
                    walk(dst, dice)
                b.rewind(mark)

        walk(src, [])
        return out

    async def _moves(self, text: str, *, whole: bool = True) -> None:
        """Apply the moves of ``text``; a whole play typed at once is submitted at once
        (``whole``), anything else waits for done."""
        turn = self.turn
        assert turn is not None
        b = turn.builder
        turn.selected = None
        try:
            moves = turn.rules.parse_moves(text)
        except NotationError as e:
            self.note(f"Not understood: {e}. Type help for the commands.", "bold red")
            return
        if not moves:
            self.note("You have a legal play, so you must move (hint lists them).")
            return
        if whole and not b.steps:
            try:
                play = turn.rules.match_play(turn.position, turn.dice, text)
            except (IllegalPlay, ValueError):
                pass
            else:  # a whole play at once
                for step in play.steps:
                    b.step(step.src, step.dst)
                await self._submit(play)
                return
        mark = len(b.steps)
        try:
            for src, dst in moves:
                b.step(src, dst)
        except IllegalPlay as e:
            b.rewind(mark)
            self.note(f"Not allowed: {e}", "bold red")
            return
        made = " ".join(map(str, b.steps[mark:]))
        if b.complete:
            self.note(f"Moved {made}. The play is complete: done (or Enter) submits it.")
        else:
            self.note(f"Moved {made}; dice left {'-'.join(map(str, b.remaining))}.")

    def _send(self, play) -> None:
        assert self.nursery is not None
        self.nursery.start_soon(self._submit, play)

    async def _submit(self, play) -> None:
        turn = self.turn
        if turn is None or turn.sent:
            return
        turn.sent = True
        turn.selected = None
        self.status_line()
        self.redraw()
        # Send the steps as the person played them, so that the record shows them; the end
        # position is the fallback should the arbiter read the notation differently.
        fields = {"end_position": play.end.text()}
        notation = " ".join(map(str, turn.builder.steps))
        with contextlib.suppress(IllegalPlay, ValueError):
            if (
                notation
                and turn.rules.match_play(turn.position, turn.dice, notation).end == play.end
            ):
                fields = {"notation": notation}
        delay = 0.2
        while True:
            try:
                await self.client.submit(self.game_id, turn.turn_id, **fields)
                return
            except grpc.RpcError as e:
                if e.code() in RETRYABLE:
                    await trio.sleep(delay)
                    delay = min(2.0, delay * 2)
                    if self.turn is not turn:  # the turn ended meanwhile (e.g. on time)
                        return
                    continue
                if self.turn is turn:
                    turn.sent = False
                self.note(f"The arbiter refused the play: {e.details()}", "bold red")
                self.status_line()
                self.redraw()
                return

    async def _resign(self) -> None:
        try:
            await self.client.resign(self.game_id)
        except grpc.RpcError as e:
            self.note(f"Could not resign: {e.details()}", "bold red")


# -- entry points -----------------------------------------------------------------------
def _first_seat_color(args: argparse.Namespace) -> int:
    return OPENING.get(args.colour, pb.COLOR_UNSPECIFIED)


def _engine_label(args: argparse.Namespace) -> str:
    return args.engine + (f" L{args.level}" if args.level is not None else "")


def _title(args: argparse.Namespace) -> str:
    turn = fmt_clock(int(args.turn_time * 1000))
    match = f"match to {args.points}" if args.points > 1 else "one game"
    return f"nardy - you vs {_engine_label(args)} - {match} - {turn} per turn"


async def _embedded(args: argparse.Namespace, address: str, logdir: str, screen: Screen) -> int:
    async with Client(address) as client, screen.session():
        r = await client.create_match(
            options=pb.GameOptions(
                turn_time_ms=max(1, int(args.turn_time * 1000)), auto_play_forced=False
            ),
            target_points=args.points,
            first=api.SeatSpec(display_name=args.name),
            second=api.SeatSpec(display_name=_engine_label(args)),
            dice=list(args.dice or []),
            first_seat_color=_first_seat_color(args),
            start_position=args.start or "",
        )
        cmd = [sys.executable, "-m", "nardy", "engine", args.engine]
        if args.level is not None:
            cmd += ["--level", str(args.level)]
        env = dict(
            os.environ,
            NARDY_SERVER=address,
            NARDY_TOKEN=r.second_seat_token,
            PYTHONUNBUFFERED="1",
        )
        engine = EngineProcess(cmd, env, os.path.join(logdir, "engine.log"))
        ui = PlayUI(
            screen,
            client.with_token(r.first_seat_token),
            r.game_id,
            title=_title(args),
            engine=engine,
        )
        ui.note(f"Starting {_engine_label(args)}... Type help for the commands.", "grey50")
        try:
            await ui.run()
        finally:
            ui.quitting = True
            engine.stop()
            screen.finish()
    return 0


async def _assigned_game(client: Client, screen: Screen, server: str) -> str:
    """The first game the token is seated in (waiting for one to be created if need be)."""
    screen.say("Waiting for a game to be assigned to this token...")
    screen.refresh()
    told = False
    while True:
        try:
            async with contextlib.aclosing(client.player_events(resume=False)) as events:
                async for ev in events:
                    if ev.type == api.PLAYER_EVENT_TYPE_GAME_ASSIGNED:
                        return ev.game_id
        except grpc.RpcError as e:
            if e.code() not in RETRYABLE:
                raise
            if not told:
                screen.say(
                    f"Cannot reach the arbiter at {server} ({e.code().name.lower()}); "
                    "trying again..."
                )
                screen.refresh()
                told = True
        await trio.sleep(1.0)


async def _remote(args: argparse.Namespace, screen: Screen) -> int:
    async with Client(args.server, args.token) as client, screen.session():
        game_id = args.game
        if not game_id:
            try:
                game_id = await _assigned_game(client, screen, args.server)
            except grpc.RpcError as e:
                screen.finish([f"nardy play: {e.details()} ({e.code().name})"])
                return 1
        ui = PlayUI(screen, client, game_id, title=f"nardy - {args.server}")
        ui.note("Joined the game. Type help for the commands.", "grey50")
        try:
            await ui.run()
        finally:
            screen.finish()
    return 0


def _quiet_logging(path: str | None) -> None:
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    if path:
        logging.basicConfig(
            filename=path,
            level=logging.INFO,
            format="%(asctime)s %(levelname)s %(name)s %(message)s",
        )
    else:
        root.addHandler(logging.NullHandler())


@contextlib.contextmanager
def _stderr_to(path: str):
    """Send fd 2 to a file while the screen is live (gRPC's C core writes there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def main(args: argparse.Namespace) -> int:
    if args.server and not args.token and not os.environ.get("NARDY_TOKEN"):
        print("nardy play: --server needs --token (or NARDY_TOKEN)", file=sys.stderr)
        return 2
    if args.start:
        try:
            variant(getattr(args, "variant", "long")).parse(args.start)
        except ValueError as e:
            print(f"nardy play: --start: {e}", file=sys.stderr)
            return 2
    if args.server is None and not 1 <= args.points <= 99:
        print("nardy play: --points is a match length such as 1, 3, 5 or 7", file=sys.stderr)
        return 2
    if args.server is None:
        try:
            from engines.registry import make_engine

            make_engine(args.engine, level=args.level)
        except ValueError as e:
            print(f"nardy play: --engine {args.engine}: {e}", file=sys.stderr)
            return 2
        except (ImportError, KeyError):
            pass  # the engine process will say what is wrong
    screen = Screen(live=False if args.plain else None)
    logdir = tempfile.mkdtemp(prefix="nardy-play-")
    log_path = args.log or os.path.join(logdir, "client.log")
    _quiet_logging(log_path)
    keep_logs = False
    try:
        with _stderr_to(log_path) if screen.live else contextlib.nullcontext():
            if args.server:
                args.token = args.token or os.environ.get("NARDY_TOKEN")
                return run_trio(_remote, args, screen)
            from server.app import EmbeddedServer

            server = EmbeddedServer(db=os.path.join(logdir, "arbiter.db")).start()
            try:
                return run_trio(_embedded, args, server.address, logdir, screen)
            finally:
                for sig in (signal.SIGHUP, signal.SIGTERM):
                    signal.signal(sig, signal.SIG_IGN)
                t0 = time.monotonic()
                server.stop()
                log.info("arbiter stopped in %.2f s", time.monotonic() - t0)
    except KeyboardInterrupt:
        print("\nnardy play: interrupted")
        return 130
    except Exception:
        keep_logs = True
        raise
    finally:
        # the terminal may be gone (SIGHUP again): let nothing stop the clean-up now
        for sig in (signal.SIGHUP, signal.SIGTERM):
            signal.signal(sig, signal.SIG_IGN)
        if keep_logs or args.keep_logs:
            print(f"nardy play: logs in {logdir}", file=sys.stderr)
        else:
            shutil.rmtree(logdir, ignore_errors=True)
