"""The "gnubg" engine: GNU Backgammon plays short nardy (backgammon without the cube).

A third-party player for bot authors to measure against: Debian's ``gnubg`` (``make gnubg``
installs it in /usr/games) runs as one long-lived process per engine, driven through its
embedded Python by :mod:`engines.gnubg_worker` on a pair of pipes. For each turn gnubg is
given the board and the dice and asked for its best move (``findbestmove``); the move is
applied to the board here and the legal play with that end position is played. A move that
matches none, or no answer before the turn's time runs out (gnubg is then stopped and
started again), is logged as an error and the first legal play is played instead (a
*fallback*, counted: :attr:`GnubgEngine.fallbacks`).

gnubg's settings (docs/ENGINES.md, "GNU Backgammon as an opponent"): money play, cubeless
(no cube, the Jacoby rule off, so gammons count 2 and backgammons 3 as RULES.md §8 scores
them), ``ply`` plies (0 unless told), deterministic, noise 0, pruning on, gnubg's default
move filters, one thread.

For analysis the engine is also a judge (:meth:`GnubgEngine.judge`): gnubg's ``hint``
values every legal play in one request, and the played one is valued at the full ply if
gnubg's move filters left it at a lower one.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from engines.base import Engine, Play, Position, Unavailable
from nardy.game import Color
from nardy.variant import BAR, OFF, Board, Variant, variant

log = logging.getLogger("nardy.engines.gnubg")

#: The plies ``--ply`` may ask for (gnubg's 2 ply takes about 0.2-0.5 s a move here, 3 ply
#: several seconds).
PLIES = (0, 1, 2, 3)
#: The shortest turn each ply accepts a challenge for: the times above with room to spare.
FLOOR_MS = {0: 1000, 1: 1000, 2: 2000, 3: 15000}
WORKER = Path(__file__).with_name("gnubg_worker.py")
START_S = 60.0  # gnubg loads its networks and bear-off databases: about 0.2-3 s here
ANSWER_S = 300.0  # the longest one request may take before gnubg is given up
SAFETY_S = 0.2  # kept back from the turn's time for the play to reach the arbiter
CHECKERS = 15

GnubgBoard = tuple[tuple[int, ...], tuple[int, ...]]  # (opponent, on roll), 25 counts each


def gnubg_path() -> str | None:
    """gnubg's executable (Debian installs it in /usr/games), or None."""
    return shutil.which("gnubg", path=os.environ.get("PATH", "") + os.pathsep + "/usr/games")


class GnubgError(RuntimeError):
    """gnubg answered with an error, stopped, or did not answer in time."""


class Gnubg:
    """One gnubg process serving requests (:mod:`engines.gnubg_worker`) until closed.

    Its HOME is a temporary folder (no user settings are read, nothing is written to the
    user's), and it runs ``-r`` (no rc files), ``-q`` (no sound), ``-t`` (no GUI)."""

    def __init__(self, path: str | None = None) -> None:
        exe = path or gnubg_path()
        if exe is None:
            raise Unavailable("gnubg is not installed (make gnubg, or apt-get install gnubg)")
        self.home = tempfile.TemporaryDirectory(prefix="nardy-gnubg-")
        req_r, req_w = os.pipe()
        ans_r, ans_w = os.pipe()
        self._errors = open(os.path.join(self.home.name, "stderr"), "w+b")  # noqa: SIM115
        try:
            self.proc = subprocess.Popen(
                [exe, "-t", "-q", "-r", "-p", str(WORKER)],
                pass_fds=(req_r, ans_w),
                env={**os.environ, "HOME": self.home.name, "NARDY_GNUBG_FDS": f"{req_r},{ans_w}"},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._errors,
            )
        except OSError as e:
            for fd in (req_r, req_w, ans_r, ans_w):
                os.close(fd)
            self._errors.close()
            self.home.cleanup()
            raise Unavailable(f"cannot start gnubg ({exe}): {e}") from None
        os.close(req_r)
        os.close(ans_w)
        self._requests = os.fdopen(req_w, "w")
        self._answers = os.fdopen(ans_r, "r")
        try:
            self._read(START_S)
        except GnubgError as e:
            self.close()
            raise Unavailable(f"gnubg did not start: {e}") from None

    def ask(self, request: dict[str, Any], timeout: float = ANSWER_S) -> dict[str, Any]:
        """gnubg's answer to one request (GnubgError if it fails, stops or takes too long)."""
        try:
            self._requests.write(json.dumps(request) + "\n")
            self._requests.flush()
        except (BrokenPipeError, ValueError):
            raise GnubgError(f"gnubg has stopped{self._why()}") from None
        answer = self._read(timeout)
        if "error" in answer:
            raise GnubgError(f"gnubg: {answer['error']}")
        return answer

    def _read(self, timeout: float) -> dict[str, Any]:
        ready, _, _ = select.select([self._answers], [], [], timeout)
        if not ready:
            self.proc.kill()
            raise GnubgError(f"no answer in {timeout:.0f} s")
        line = self._answers.readline()
        if not line:
            raise GnubgError(f"gnubg has stopped{self._why()}")
        return json.loads(line)

    def _why(self) -> str:
        code = self.proc.poll()
        self._errors.seek(0)
        tail = self._errors.read()[-400:].decode(errors="replace").strip()
        return (f" (exit status {code})" if code is not None else "") + (
            f": {tail}" if tail else ""
        )

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """Close gnubg's input (it ends), waiting briefly, then kill it if need be."""
        for f in (self._requests, self._answers):
            with contextlib.suppress(OSError, ValueError):
                f.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._errors.close()
        self.home.cleanup()


# -- boards: the variant's view <-> gnubg's -----------------------------------------------


def to_gnubg(rules: Variant, position: Position) -> GnubgBoard:
    """gnubg's board of ``position`` for its side to move: (opponent, on roll)."""
    board = rules.board(position)
    me = position.turn

    def side(color: Color) -> tuple[int, ...]:
        counts = [
            max(board.points[rules.point_index(color, p)] * color.sign, 0) for p in range(1, 25)
        ]
        return (*counts, board.bar[color])

    return side(me.opponent), side(me)


def end_of(rules: Variant, position: Position, steps: list[tuple[int, int]]) -> tuple:
    """The end position (as :func:`key` gives it) of the side to move's ``steps``, each a
    checker moved ``(from, to)`` in the mover's points (``BAR``, ``OFF``), landing only where
    a step ends: a lone opposing checker there goes to the bar (RULES.md §8)."""
    board = rules.board(position)
    me = position.turn
    points, bar = list(board.points), list(board.bar)
    for src, dst in steps:
        if src == BAR:
            if bar[me] <= 0:
                raise ValueError(f"{src}/{dst}: no checker on the bar")
            bar[me] -= 1
        else:
            a = rules.point_index(me, src)
            if points[a] * me.sign <= 0:
                raise ValueError(f"{src}/{dst}: no checker on {src}")
            points[a] -= me.sign
        if dst != OFF:
            a = rules.point_index(me, dst)
            theirs = -points[a] * me.sign
            if theirs >= 2:
                raise ValueError(f"{src}/{dst}: {dst} is closed")
            if theirs == 1:
                points[a] = 0
                bar[me.opponent] += 1
            points[a] += me.sign
    return tuple(points), tuple(bar)


def key(board: Board) -> tuple:
    """A board's checkers (points and bar: what is off follows) as a comparable value."""
    return tuple(board.points), tuple(board.bar)


def equity(probs: list[float]) -> float:
    """Cubeless money equity of gnubg's five probabilities (win, win gammon, win
    backgammon, lose gammon, lose backgammon): points won, -3..3."""
    win, wg, wbg, lg, lbg = probs
    return 2.0 * win - 1.0 + wg + wbg - lg - lbg


# -- the engine ---------------------------------------------------------------------------


class GnubgEngine(Engine):
    """GNU Backgammon's best move at ``ply`` plies; see the module docstring."""

    name = "gnubg"
    judge_plies = PLIES  # analysis: as deep as it plays
    judge_in_points = True

    def __init__(
        self,
        level: int | None = None,
        seed: int | None = None,
        *,
        ply: int | None = None,
        rules: Variant | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(rules=rules or variant("short"))
        self.ply = 0 if ply is None else ply
        if self.ply not in PLIES:
            raise ValueError(f"--ply for gnubg is one of {', '.join(map(str, PLIES))}, not {ply}")
        self.path = path
        self.gnubg = Gnubg(path)
        self.plays = 0  # plays chosen by gnubg (forced plays are not asked)
        self.fallbacks = 0  # gnubg's move matched no legal play: the first one was played

    @property
    def turn_time_floor_ms(self) -> int:  # type: ignore[override]
        return FLOOR_MS[self.ply]

    def close(self) -> None:
        self.gnubg.close()

    def summary(self) -> str:
        return f"gnubg {self.ply}-ply chose {self.plays} plays, {self.fallbacks} fallbacks"

    def _ask(self, request: dict[str, Any], timeout: float = ANSWER_S) -> dict[str, Any]:
        """Ask gnubg, starting it again first if it has stopped (or was stopped for taking
        too long)."""
        if not self.gnubg.alive:
            log.error("gnubg had stopped; starting it again")
            self.gnubg.close()
            self.gnubg = Gnubg(self.path)
        return self.gnubg.ask(request, timeout)

    def pick(
        self,
        position: Position,
        dice: tuple[int, int],
        plays: list[Play],
        *,
        time_left_ms: int | None,
        match,
    ) -> Play:
        rules = self.rules
        board = to_gnubg(rules, position)
        request = {"op": "best", "board": board, "dice": list(dice), "ply": self.ply}
        timeout = ANSWER_S
        if time_left_ms is not None:  # an answer too late for the clock is no answer
            timeout = min(timeout, max(0.1, time_left_ms / 1000 - SAFETY_S))
        try:
            steps = [tuple(s) for s in self._ask(request, timeout)["steps"]]
            found = {key(rules.board(p.end)): p for p in plays}.get(end_of(rules, position, steps))
            why = "matches none of the legal plays"
        except (GnubgError, ValueError) as e:
            found, steps, why = None, [], str(e)
        if found is None:
            self.fallbacks += 1
            log.error(
                "FALLBACK %d: gnubg's move %s for %s with %d-%d %s; playing the first legal "
                "play %s instead",
                self.fallbacks,
                " ".join(f"{s}/{d}" for s, d in steps) or "-",
                position.text(),
                *dice,
                why,
                plays[0].notation(),
            )
            return plays[0]
        self.plays += 1
        return found

    def judge(
        self, position: Position, dice: tuple[int, int], plays: list[Play], played: int, ply: int
    ) -> dict[int, float]:
        """Cubeless money equity, for the side to move, of the plays gnubg values at
        ``ply`` plies: every play at 0 ply; deeper, those its move filters keep, and always
        its best and ``plays[played]`` (valued again at ``ply`` if the filters left them
        at a lower one, as when one candidate stands out)."""
        rules = self.rules
        mover = position.turn
        index = {key(rules.board(p.end)): i for i, p in enumerate(plays)}
        request = {"op": "hint", "board": to_gnubg(rules, position), "dice": list(dice), "ply": ply}
        out: dict[int, float] = {}
        first = None
        for move in self._ask(request)["moves"]:
            i = index.get(end_of(rules, position, [tuple(s) for s in move["steps"]]))
            if i is None:
                raise GnubgError(f"gnubg's move {move['steps']} is not a legal play here")
            first = i if first is None else first
            if move["ply"] == ply:
                out[i] = equity(move["probs"])
        todo = [i for i in dict.fromkeys((first, played)) if i is not None and i not in out]
        for i in todo:
            over = rules.result(plays[i].end)
            if over is not None:
                out[i] = float(over.points if over.winner is mover else -over.points)
        todo = [i for i in todo if i not in out]
        if todo:
            boards = [to_gnubg(rules, plays[i].end) for i in todo]
            probs = self._ask({"op": "evaluate", "boards": boards, "ply": ply})["probs"]
            out.update({i: -equity(p) for i, p in zip(todo, probs, strict=True)})
        return out
