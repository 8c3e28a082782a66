"""The person's side of a game on screen: events in, the board and messages out, the
person's commands applied to the turn being built and submitted."""

from __future__ import annotations

import contextlib
import logging
import secrets
import signal
from dataclasses import dataclass, field

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
    score_text,
)
from clients.play import entry
from clients.play.commands import HELP, parse_command
from clients.play.explore import Turn, hint_lines, targets
from clients.supervisor import EngineProcess
from clients.term import Screen
from nardy import wire
from nardy.client import RETRYABLE, Client, my_turn
from nardy.game import Color, IllegalPlay, Termination
from nardy.v1 import game_pb2 as pb
from nardy.variant import OFF

log = logging.getLogger("nardy.play")


NEXT_GAME_S = 15.0  # the next game of a match starts by itself after this
SUBMIT_ATTEMPTS = 30  # a play is sent again for about a minute while the arbiter is away


@dataclass
class PlayUI:
    screen: Screen
    client: Client  # holds the seat's (or player's) token
    game_id: str
    title: str = "nardy"
    where: str = ""  # the arbiter's address, for a game joined there
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
    local: bool = False  # the arbiter is this process's own (it stops when we leave)
    record_dir: str = ""  # where the games are saved when the session ends
    games: list[str] = field(default_factory=list)  # every game id followed, in order
    saved: object = None  # the record's Path once saved, or why it was not
    give_up_s: float = 60.0  # a lost connection is retried this long
    judges: dict = field(default_factory=dict)  # analysis: the judge of each variant
    _clock_key: tuple = ()
    _pause_scope: trio.CancelScope | None = None
    _pause_text: str = ""
    _analysing: bool = False  # one analysis at a time (a judge is not shared by threads)

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
                for judge, _ in self.judges.values():
                    judge.close()

    async def _games(self) -> None:
        game_id = self.game_id
        while game_id and not self.quitting:
            self.game_id = game_id
            if game_id not in self.games:
                self.games.append(game_id)
            self.turn = None
            self.marks = set()
            self.status_line()
            self.redraw()
            try:
                final = await follow(
                    self.client,
                    game_id,
                    self.on_event,
                    self.note,
                    give_up_s=self.give_up_s,
                    client_seed=secrets.token_hex(8),  # the person's share of the dice
                )
            except GameGone as e:
                self.note(f"Cannot follow the game: {e}", "bold red")
                self.redraw()
                await self._pause("Press Enter to leave.", None)
                return
            st = final.state
            if final.type == pb.EVENT_TYPE_GAME_ABORTED:
                await self._pause("Press Enter to leave.", None)
                return
            self.note("Type analyse for each play's equity loss against the best play.", "grey50")
            if st.next_game_id:
                await self._pause(
                    f"Game {st.game_number + 1} starts in {NEXT_GAME_S:.0f} s: press Enter "
                    "to start now.",
                    NEXT_GAME_S,
                    held=f"Game {st.game_number + 1} waits: press Enter to start it.",
                )
                game_id = st.next_game_id
            else:
                await self._pause("The match is over. Press Enter to leave.", None)
                return

    async def _pause(self, text: str, timeout: float | None, held: str = "") -> None:
        """Wait for Enter, or ``timeout`` seconds; ``held`` is the prompt once the person
        holds the wait (analyse)."""
        self.between = trio.Event()
        self._pause_text = held or text
        self.screen.set_status(Text(text, style="bold"))
        if not self.screen.live:
            self.screen.say(text)
        self.redraw()
        with trio.move_on_after(timeout if timeout is not None else float("inf")) as scope:
            self._pause_scope = scope
            await self.between.wait()
        self._pause_scope = None
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
        """The supervisor restarts an engine that exits (it rejoins with its seat token);
        one that keeps dying is left down, and the person is told."""
        assert self.engine is not None
        while not self.quitting:
            await trio.sleep(0.5)
            if self.quitting:
                return
            event = self.engine.check()
            if event is None:
                continue
            self.note(f"The engine: {event}.", "bold red")
            for line in self.engine.tail(3):
                self.note(f"  engine: {line}", "grey50")
            self.redraw()
            if self.engine.crash_loop:
                return

    # -- events -------------------------------------------------------------------------
    def note(self, text: str, style: str = "") -> None:
        self.screen.say(Text(text, style=style))

    def on_event(self, ev: pb.GameEvent) -> None:
        st = ev.state
        joined = self.state is None  # this session's first look at the match
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
        if joined and st.game_number > 1 and st.match.target:  # the games before: their score
            self.note(f"Game {st.game_number} of the match. {score_text(st, self.me)}.", "bold")
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
                name = wire.names_of(st, guests=False)[mover]
                self.note(f"{name} to play {dice_text(st.dice)}...", "grey50")
        if t == pb.EVENT_TYPE_SNAPSHOT and st.status == pb.GAME_STATUS_WAITING:
            who = "to accept the challenge" if st.challenge_pending else "to join"
            self.note(f"Waiting for the other player {who}...", "grey50")
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

    def heading(self) -> str:
        """The board's title: who plays whom, and on what terms, once the game says
        (``where``: the arbiter it is played on, for a game joined there)."""
        st = self.state
        if st is None or self.me is None or not self.where:  # (a local game's title says)
            return self.title
        target = st.match.target
        match = f"match to {target}" if target > 1 else "one game"
        turn = fmt_clock(st.options.turn_time_ms)
        return f"nardy - you vs {self.opponent_name()} - {match} - {turn} per turn - {self.where}"

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
                "targets": set(targets(turn.builder, turn.selected)) if turn.selected else set(),
            }
        self._clock_key = self._clocks_shown()
        w, bl = live_clocks(st, trio.current_time() - self.received)
        return render(
            st,
            self.me or Color.WHITE,
            you=self.me,
            clocks=(w, bl),
            marks=self.marks if turn is None or not turn.builder.steps else set(),
            title=self.heading(),
            unicode=self.screen.unicode,
            compact=self.screen.compact,
            **kw,
        )

    def status_text(self) -> Text:
        st = self.state
        turn = self.turn
        if self.confirm is not None:  # (the question itself is in the messages above)
            return Text(f"{self.confirm.capitalize()}? Type y to confirm.", style="bold")
        if st is None or st.status == pb.GAME_STATUS_WAITING:
            return Text("Waiting for the game to start...", style="grey50")
        if st.status != pb.GAME_STATUS_IN_PROGRESS:
            return Text(finished_text(st, self.me), style="bold")
        if turn is None:
            mover = wire.color_of(st.side_to_move)
            if mover is None or not st.dice:
                return Text("")
            name = wire.names_of(st, guests=False)[mover]
            return Text(f"{name} is playing {dice_text(st.dice)}...", "grey50")
        return entry.status(turn)

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
        cmd = parse_command(line)
        kind = cmd.kind
        if self.confirm is not None:
            what, self.confirm = self.confirm, None
            if kind == "yes":
                if what == "resign":
                    await self._resign()
                else:
                    self.note(self.leaving_text())
                    self._leave()
            else:
                self.note(f"Not {'resigning' if what == 'resign' else 'leaving'}.")
            self.status_line()
            return
        if self.between is not None and kind in ("enter", "next"):
            self.between.set()
            return
        if kind == "help":
            self.screen.say_lines(HELP.splitlines())
            return
        if kind == "analyse":
            await self._analyse()
            return
        if kind == "quit":
            self.confirm = "quit"
            if self.between is not None or self._game_over():
                self.confirm = None
                self._leave()
                return
            self.note(self._quit_question(), "bold")
            self.status_line()
            return
        if kind == "resign":
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
        if kind == "enter":  # submits a play begun (or says what it still lacks)
            if turn is not None and turn.builder.steps and not turn.sent:
                await self._submit(entry.done(turn, self.note))
                self.status_line()
            return
        if turn is None or turn.sent:
            if self.state is not None and self.state.status == pb.GAME_STATUS_IN_PROGRESS:
                self.note("It is not your turn.")
            else:
                self.note("There is nothing to play now.")
            return
        if kind in ("hint", "hint-all"):
            self.screen.say_lines(hint_lines(turn, every=kind == "hint-all"))
        elif kind == "undo":
            step = turn.builder.undo()
            turn.selected = None
            self.note(f"Took back {step}." if step else "Nothing to undo.")
        elif kind == "done":
            await self._submit(entry.done(turn, self.note))
        elif kind in ("off", "point"):
            await self._submit(entry.point(turn, OFF if kind == "off" else cmd.point, self.note))
        else:
            await self._submit(entry.moves(turn, cmd.text, self.note))
        self.status_line()

    async def _analyse(self) -> None:
        """Analyse the game just ended (engines/analysis.py), in a worker thread, and show
        each side's error rate and the biggest losses; the next game of a match waits."""
        if not self._game_over() or self.state is None:
            self.note("Analysis is offered once the game is over.")
            return
        if self._analysing:
            self.note("The analysis is under way.")
            return
        if self._pause_scope is not None:
            self._pause_scope.deadline = float("inf")  # the person reads first
            self.screen.set_status(Text(self._pause_text, style="bold"))
        self.note("Analysing the game...", "grey50")
        self.redraw()
        self._analysing = True
        try:
            lines = await trio.to_thread.run_sync(self._analysis, self.game_id)
        except Exception as e:  # the arbiter, the judge (gnubg), the record
            detail = e.details() if isinstance(e, grpc.RpcError) else str(e)
            self.note(f"Cannot analyse the game: {detail}", "bold red")
            return
        finally:
            self._analysing = False
        for line in lines:
            self.note(line)
        if self.between is not None:
            self.note(self._pause_text, "bold")

    def _analysis(self, game_id: str) -> list[str]:
        """The analysis's lines for game ``game_id`` (blocking: run in a thread)."""
        from clients.analyse import brief
        from clients.export import fetch_record
        from engines.analysis import analyse_game
        from engines.registry import make_judge

        game = fetch_record(self.client.stub, game_id, guests=False)  # (its own game)
        name = game.rules.name
        if name not in self.judges:
            self.judges[name] = make_judge(name)
        return brief(analyse_game(game, self.judges[name][0]), self.me, self.state)

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
        return f"Leave now? {self.leaving_text(question=True)} Type y to leave."

    def opponent_name(self) -> str:
        if self.state is None or self.me is None:
            return "opponent"
        return wire.names_of(self.state, guests=False)[self.me.opponent]

    def leaving_text(self, *, question: bool = False, saved: bool = True) -> str:
        """What becomes of the game if the person leaves now."""
        saved = f" It is saved in {self.record_dir}." if self.record_dir and saved else ""
        if self._game_over():
            return "Leaving." + saved
        if self.local:
            return (
                "The game is played on this computer's own arbiter, which stops when you "
                f"leave: the game ends unfinished, with no result.{saved}"
            )
        lead = "The game goes on" if question else "Left the game; it goes on"
        double = "mars"  # the variant's name for a loss with nothing borne off
        if self.state is not None:
            rules = rules_of(self.state)
            double = rules.forfeit(rules.start(), Color.WHITE, Termination.TIMEOUT).kind
        return (
            f"{lead} on the arbiter without you: your clock runs, and when it runs out you "
            f"lose the game (a {double} if you have borne off nothing). Run the same command "
            "again to rejoin."
        )

    def _send(self, play) -> None:
        assert self.nursery is not None
        self.nursery.start_soon(self._submit, play)

    async def _submit(self, play) -> None:
        """Send ``play`` (None: nothing to send) for the turn being built."""
        turn = self.turn
        if play is None or turn is None or turn.sent:
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
        try:  # plays are idempotent (by turn id): the SDK retries a lost connection
            await self.client.submit(self.game_id, turn.turn_id, **fields, attempts=SUBMIT_ATTEMPTS)
        except grpc.RpcError as e:
            if self.turn is not turn:  # the turn ended meanwhile (e.g. on time)
                return
            turn.sent = False
            lost = e.code() in RETRYABLE
            why = "could not be sent (the arbiter is unreachable)" if lost else "was refused"
            self.note(f"The play {why}: {e.details()}", "bold red")
            self.status_line()
            self.redraw()

    async def _resign(self) -> None:
        try:
            await self.client.resign(self.game_id)
        except grpc.RpcError as e:
            self.note(f"Could not resign: {e.details()}", "bold red")
