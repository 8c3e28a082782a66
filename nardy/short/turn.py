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
from nardy.variant import BaseTurnBuilder, not_all_home, without

Board = tuple[int, ...]  # the mover's counts by own point: 0 off, 1..24, 25 the bar


class TurnBuilder(BaseTurnBuilder):
    """The mover's board during a turn: legal steps, step, undo, and the finished play.
    Its states are ``(board, blots hit)``."""

    play_type = Play
    format_step = staticmethod(format_step)

    def __init__(self, position: Position, dice: tuple[int, int]) -> None:
        self.turn = Turn(position, dice)
        super().__init__(position, dice, legal_plays(position, dice), (self.turn.start, 0))
        self._ends = {play.end for play in self.plays}
        self._dead: set[tuple[Board, int, tuple[int, ...]]] = set()

    # -- state --------------------------------------------------------------------------
    @property
    def board(self) -> Board:
        """The mover's counts by own point (0: borne off, 25: bar) after the steps so far."""
        return self._states[-1][0]

    @property
    def position(self) -> Position:
        """The position so far (hit checkers on the bar), with the opponent to move."""
        return self.turn.end_position(*self._states[-1])

    # -- stepping -----------------------------------------------------------------------
    def legal_steps(self) -> list[Step]:
        """Every single step from here that can still be completed into a legal play."""
        if self.complete:
            return []
        m, hits = self._states[-1]
        out = []
        for die in sorted(set(self.remaining), reverse=True):
            left = without(self.remaining, die)
            for step, n, nhits in self.turn.steps_from(m, hits, die):
                if self._completable(n, nhits, left):
                    out.append(step)
        return out

    # -- internals ----------------------------------------------------------------------
    def _is_end(self, state: tuple[Board, int], used: int) -> bool:
        """Is board ``m`` (blots ``hits`` hit) after ``used`` dice one of the legal plays?
        A game over ends the play whatever dice are left (§4.6), and is legal if it ends as
        a legal play does (§3.7): ``5/off`` with 6-1 is the play ``5/4 4/off``."""
        m, hits = state
        if m[OFF] != CHECKERS and used != self.most:
            return False
        return self.turn.end_position(m, hits) in self._ends

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
                raise not_all_home(text)
            if dst < 0 and any(m[src + 1 : 7]):
                raise IllegalPlay(
                    f"{text}: a {die} cannot bear off from point {src} while a checker "
                    "stands on a higher point (RULES §4.3)"
                )
        if not self.plays:
            raise IllegalPlay(f"{text}: no legal play exists with these dice (the turn passes)")
        step, n, nhits = next(t for t in self.turn.steps_from(m, hits, die) if t[0].src == src)
        left = without(self.remaining, die)
        if not self._completable(n, nhits, left):
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
        if self._is_end((m, hits), len(self.dice) - len(left)):
            return True
        for die in set(left):
            after = without(left, die)
            for _, n, nhits in self.turn.steps_from(m, hits, die):
                if self._completable(n, nhits, after):
                    return True
        self._dead.add(key)
        return False


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
        try:
            builder.home_first(src, dst)
        except IllegalPlay as e:
            errors.append(IllegalPlay(f"move {i + 1}: {e}"))
            return
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
