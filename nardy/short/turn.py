"""A short nardy turn played step by step, with the reason for every refusal (RULES.md §8).

:class:`TurnBuilder` serves people (step, undo, done) and the arbiter: :func:`match_play`
matches a written play to a legal play, or refuses it naming the move and the rule.
"""

from __future__ import annotations

from itertools import permutations

from nardy.game import IllegalPlay
from nardy.short.movegen import Play, Step, Turn, legal_plays
from nardy.short.notation import format_step, parse_moves
from nardy.short.position import BAR, CHECKERS, OFF, Position

Board = tuple[int, ...]  # the mover's counts by own point: 0 off, 1..24, 25 the bar


class TurnBuilder:
    """The mover's board during a turn: legal steps, step, undo, and the finished play."""

    def __init__(self, position: Position, dice: tuple[int, int]) -> None:
        self.turn = Turn(position, dice)
        a, b = dice
        self.dice: tuple[int, ...] = (a,) * 4 if a == b else (max(a, b), min(a, b))
        self.plays = legal_plays(position, dice)
        self._ends = {play.end for play in self.plays}
        self.most = max((len(p.steps) for p in self.plays), default=0)
        self.steps: list[Step] = []
        self._states: list[tuple[Board, int]] = [(self.turn.start, 0)]  # (board, blots hit)
        self._dead: set[tuple[Board, int, tuple[int, ...]]] = set()

    # -- state --------------------------------------------------------------------------
    @property
    def board(self) -> Board:
        """The mover's counts by own point (0: borne off, 25: bar) after the steps so far."""
        return self._states[-1][0]

    @property
    def remaining(self) -> tuple[int, ...]:
        left = list(self.dice)
        for s in self.steps:
            left.remove(s.die)
        return tuple(left)

    @property
    def position(self) -> Position:
        """The position so far (hit checkers on the bar), with the opponent to move."""
        return self.turn.end_position(*self._states[-1])

    @property
    def complete(self) -> bool:
        """True when the steps so far make a legal play (or there is none to make)."""
        return not self.plays or self._is_end(*self._states[-1], len(self.steps))

    def play(self) -> Play:
        """The legal play made by the steps so far; IllegalPlay if they are not one."""
        if not self.plays:
            if self.steps:
                raise IllegalPlay("no legal play exists with these dice")
            return Play((), self.turn.position.passed())
        if not self.complete:
            raise IllegalPlay(self._incomplete_reason())
        return Play(tuple(self.steps), self.position)

    # -- stepping -----------------------------------------------------------------------
    def legal_steps(self) -> list[Step]:
        """Every single step from here that can still be completed into a legal play."""
        if self.complete:
            return []
        m, hits = self._states[-1]
        out = []
        for die in sorted(set(self.remaining), reverse=True):
            left = _without(self.remaining, die)
            for step, n, nhits in self.turn.steps_from(m, hits, die):
                if self._completable(n, nhits, left):
                    out.append(step)
        return out

    def step(self, src: int, dst: int) -> list[Step]:
        """Move one checker from ``src`` (25: the bar) to ``dst`` (0: off) with one or more
        dice; several when no single die covers the distance (``24/13``, ``bar/16``).

        Raises IllegalPlay with the reason when the move cannot be made; nothing changes then.
        """
        first: IllegalPlay | None = None
        for dice in self._dice_for(src, dst):
            try:
                return self._apply(src, dice)
            except IllegalPlay as e:
                first = first or e
        raise first or IllegalPlay(f"{format_step(src, dst)}: no die left covers this move")

    def undo(self) -> Step | None:
        """Take back the last step; None if there is none."""
        if not self.steps:
            return None
        self._states.pop()
        return self.steps.pop()

    def rewind(self, mark: int) -> None:
        """Take back every step after the first ``mark``."""
        del self.steps[mark:]
        del self._states[mark + 1 :]

    # -- internals ----------------------------------------------------------------------
    def _is_end(self, m: Board, hits: int, used: int) -> bool:
        """Is board ``m`` (blots ``hits`` hit) after ``used`` dice one of the legal plays?"""
        if m[OFF] == CHECKERS:
            return True
        return used == self.most and self.turn.end_position(m, hits) in self._ends

    def _dice_for(self, src: int, dst: int) -> list[tuple[int, ...]]:
        """Readings of a move as a die sequence for one checker, the most natural first."""
        left = self.remaining
        orders = list(
            dict.fromkeys(seq for k in range(1, len(left) + 1) for seq in permutations(left, k))
        )
        if dst != OFF:
            readings = [seq for seq in orders if sum(seq) == src - dst]
        else:  # the last die bears off: exactly, or a larger die from the highest point
            readings = [seq for seq in orders if sum(seq[:-1]) < src <= sum(seq)]
            readings.sort(key=lambda seq: (len(seq), sum(seq) != src))
        return readings or [(src - dst,) if dst != OFF else (src,)]

    def _apply(self, src: int, dice: tuple[int, ...]) -> list[Step]:
        """Play ``dice`` in order with one checker from ``src``, all or nothing."""
        mark = len(self.steps)
        try:
            at = src
            for die in dice:
                if at == OFF:
                    raise IllegalPlay(
                        f"{format_step(src, OFF)}: the checker is off before all dice are used"
                    )
                at = self._one(at, die).dst
            return self.steps[mark:]
        except IllegalPlay:
            self.rewind(mark)
            raise

    def _one(self, src: int, die: int) -> Step:
        m, hits = self._states[-1]
        text = format_step(src, src - die if src - die >= 1 else OFF)
        if self.complete and self.steps:
            raise IllegalPlay(f"{text}: the play is already complete")
        if die not in self.remaining:
            raise IllegalPlay(f"{text}: no {die} left to play (dice left: {self._left_text()})")
        if not 1 <= src <= BAR or not m[src]:
            where = "on the bar" if src == BAR else f"on point {src}"
            raise IllegalPlay(f"{text}: no checker of yours {where}")
        if src != BAR and m[BAR]:
            raise IllegalPlay(f"{text}: a checker on the bar must enter first (RULES §8)")
        dst = src - die
        if dst >= 1:
            if self.turn.closed >> dst & 1:
                what = "cannot enter: point" if src == BAR else "point"
                raise IllegalPlay(
                    f"{text}: {what} {dst} is closed, the opponent holds it with two or more "
                    "checkers (RULES §8)"
                )
        else:
            if any(m[7:]):
                raise IllegalPlay(f"{text}: cannot bear off until all 15 checkers are home (§4.1)")
            if dst < 0 and any(m[src + 1 : 7]):
                raise IllegalPlay(
                    f"{text}: a {die} cannot bear off from point {src} while a checker "
                    "stands on a higher point (RULES §4.3)"
                )
        if not self.plays:
            raise IllegalPlay(f"{text}: no legal play exists with these dice (the turn passes)")
        step, n, nhits = next(t for t in self.turn.steps_from(m, hits, die) if t[0].src == src)
        left = _without(self.remaining, die)
        if n[OFF] != CHECKERS and not self._completable(n, nhits, left):
            raise IllegalPlay(f"{text}: {self._dead_end_reason()}")
        self.steps.append(step)
        self._states.append((n, nhits))
        return step

    def _completable(self, m: Board, hits: int, left: tuple[int, ...]) -> bool:
        """Can the steps so far, ending at ``m``, still end in a legal play?"""
        if not self.plays:
            return False
        key = (m, hits, left)
        if key in self._dead:
            return False
        if self._is_end(m, hits, len(self.dice) - len(left)):
            return True
        for die in set(left):
            after = _without(left, die)
            for _, n, nhits in self.turn.steps_from(m, hits, die):
                if self._completable(n, nhits, after):
                    return True
        self._dead.add(key)
        return False

    def _dead_end_reason(self) -> str:
        most = self.most
        if most == 1 and len(self.dice) == 2 and self.dice[0] != self.dice[1]:
            return f"the larger die ({self.dice[0]}) must be played (RULES §3.6)"
        return (
            f"after this step the play cannot be finished legally: a legal play uses {most} "
            f"{'die' if most == 1 else 'dice'} (RULES §3.6)"
        )

    def _incomplete_reason(self) -> str:
        return (
            f"the play uses {len(self.steps)} of the dice but a legal play uses {self.most} "
            "(RULES §3.6: play as many dice as possible)"
        )

    def _left_text(self) -> str:
        return "-".join(map(str, self.remaining)) or "none"


def _without(dice: tuple[int, ...], die: int) -> tuple[int, ...]:
    i = dice.index(die)
    return dice[:i] + dice[i + 1 :]


def match_play(position: Position, dice: tuple[int, int], text: str) -> Play:
    """The legal play written as ``text``; IllegalPlay naming the move and the rule.

    Every reading of the moves as dice is tried (``24/13`` with 6-5 is 24/18 18/13 or
    24/19 19/13). Readings that end in different positions are told apart by the ``*``
    marks: a written ``*`` needs a hit there and a point passed over without being written
    is not hit (``24/18*/13`` hits on 18, ``24/13`` does not). If the marks do not settle
    it, the play is refused as ambiguous.
    """
    moves = parse_moves(text)
    builder = TurnBuilder(position, dice)
    errors: list[IllegalPlay] = []
    found: dict[Position, tuple[Play, bool]] = {}  # end -> (play, marks agree)

    def read(i: int, agree: bool) -> None:
        if i == len(moves):
            if builder.complete:
                play = builder.play()
                old = found.get(play.end)
                if old is None or (agree and not old[1]):
                    found[play.end] = (play, agree)
            else:
                errors.append(IllegalPlay(builder._incomplete_reason()))
            return
        src, dst, starred = moves[i]
        for dice_used in builder._dice_for(src, dst):
            mark = len(builder.steps)
            try:
                steps = builder._apply(src, dice_used)
            except IllegalPlay as e:
                errors.append(IllegalPlay(f"move {i + 1} ({format_step(src, dst)}): {e}"))
                continue
            hits = [s.hit for s in steps]
            # a written * needs a hit there; a point passed over unwritten is not hit
            read(i + 1, agree and (hits[-1] or not starred) and not any(hits[:-1]))
            builder.rewind(mark)

    read(0, True)
    if not found:
        raise errors[0] if errors else IllegalPlay("no legal play matches")
    if len(found) == 1:
        return next(iter(found.values()))[0]
    marked = [play for play, agree in found.values() if agree]
    if len(marked) == 1:
        return marked[0]
    options = " or ".join(sorted(play.notation() for play, _ in found.values()))
    raise IllegalPlay(f"{text.strip()!r} is ambiguous: it can be {options}; write every step")
