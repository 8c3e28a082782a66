"""A turn played step by step, with the reason for every refusal.

:class:`TurnBuilder` serves people (step, undo, done) and the arbiter (a written play is
matched to a legal play, or refused naming the step and the rule it breaks).
"""

from __future__ import annotations

from nardy.game import IllegalPlay
from nardy.long.movegen import BIT, HEAD, OFF, Play, Step, Turn, legal_plays, runs
from nardy.long.notation import format_step, parse_moves
from nardy.long.position import CHECKERS, Position
from nardy.variant import BaseTurnBuilder, not_all_home, without


class TurnBuilder(BaseTurnBuilder):
    """The mover's board during a turn: legal steps, step, undo, and the finished play.
    Its states are the mover's counts by own point (index 0: borne off)."""

    play_type = Play
    format_step = staticmethod(format_step)

    def __init__(self, position: Position, dice: tuple[int, int]) -> None:
        self.turn = Turn(position, dice)
        super().__init__(position, dice, legal_plays(position, dice), self.turn.start)
        self._ends = {play.end: play for play in self.plays}

    # -- state --------------------------------------------------------------------------
    @property
    def board(self) -> tuple[int, ...]:
        """The mover's counts by own point (index 0: borne off) after the steps so far."""
        return self._states[-1]

    @property
    def position(self) -> Position:
        """The board so far, with the opponent to move."""
        return self.turn.end_position(self.board)

    # -- stepping -----------------------------------------------------------------------
    def legal_steps(self) -> list[Step]:
        """Every single step from here that can still be completed into a legal play."""
        if self.complete:
            return []
        out = []
        m = self.board
        for die in sorted(set(self.remaining), reverse=True):
            for src, dst, n, _ in self.turn.step_targets(m, self._mask(m), self._heads(), die):
                step = Step(src, dst, die)
                if self._completable(tuple(n), without(self.remaining, die)):
                    out.append(step)
        return out

    # -- internals ----------------------------------------------------------------------
    def _is_end(self, m: tuple[int, ...], used: int) -> bool:
        """Is board ``m`` after ``used`` dice one of the legal plays?"""
        if m[OFF] == CHECKERS:
            return True
        return used == self.most and self.turn.end_position(m) in self._ends

    def _heads(self) -> int:
        return self.turn.start[HEAD] - self.board[HEAD]

    def _mask(self, m: tuple[int, ...]) -> int:
        return self.turn.mask(m)

    def _dice_for(self, src: int, dst: int) -> list[tuple[int, ...]]:
        """Readings of a move as a die sequence, the most natural first."""
        left = self.remaining
        readings: list[tuple[int, ...]] = []
        if dst != OFF:
            dist = src - dst
            if dist in left:
                readings.append((dist,))
            readings += [seq for seq in _sequences(left) if len(seq) > 1 and sum(seq) == dist]
        else:
            if src in left:
                readings.append((src,))
            readings += [(d,) for d in sorted(set(left)) if d > src]
            readings += [
                seq
                for seq in _sequences(left)
                if len(seq) > 1 and sum(seq[:-1]) < src and sum(seq) >= src
            ]
        if not readings:
            readings = [(src - dst,)] if dst != OFF else [(src,)]
        return list(dict.fromkeys(readings))

    def _one(self, src: int, die: int) -> Step:
        m = self.board
        text = f"{src}/{'off' if src - die < 1 else src - die}"
        if self.complete and self.steps:
            raise IllegalPlay(f"{text}: the play is already complete")
        if die not in self.remaining:
            raise IllegalPlay(f"{text}: no {die} left to play (dice left: {self._left_text()})")
        if not 1 <= src <= 24 or not m[src]:
            raise IllegalPlay(f"{text}: no checker of yours on point {src}")
        if src == HEAD and self._heads() >= self.turn.head_limit:
            raise IllegalPlay(
                f"{text}: head rule (RULES §3.4): only one checker may leave the head per turn"
                + (", two on a first-turn 6-6, 4-4 or 3-3" if self.turn.head_limit > 1 else "")
            )
        dst = src - die
        if dst >= 1:
            if self.turn.closed[dst]:
                raise IllegalPlay(f"{text}: point {dst} is held by the opponent (RULES §3.2)")
            mask = self._mask(m) | BIT[dst]
            if m[src] == 1:
                mask &= ~BIT[src]
            bad = runs(mask) & self.turn.forbidden
            if bad:
                raise IllegalPlay(
                    f"{text}: six-point rule (RULES §3.5): this makes a block of six points "
                    "with no opposing checker ahead of it"
                )
        else:
            if any(m[7:25]):
                raise not_all_home(text)
            if dst < 0 and any(m[src + 1 : 7]):
                raise IllegalPlay(
                    f"{text}: a {die} cannot bear off from point {src} while a checker "
                    "stands on a higher point (RULES §4.3)"
                )
            dst = OFF
        n = list(m)
        n[src] -= 1
        n[dst] += 1
        board = tuple(n)
        step = Step(src, dst, die)
        left = without(self.remaining, die)
        if n[OFF] != CHECKERS and not self._completable(board, left):
            raise IllegalPlay(f"{text}: {self._dead_end_reason()}")
        self.steps.append(step)
        self._states.append(board)
        return step

    def _completable(self, board: tuple[int, ...], left: tuple[int, ...]) -> bool:
        """Can the steps so far plus ``board`` still end in a legal play?"""
        if not self.plays:
            return False
        seen: set[tuple[tuple[int, ...], tuple[int, ...]]] = set()
        heads0 = self.turn.start[HEAD]

        def reach(m: tuple[int, ...], rest: tuple[int, ...]) -> bool:
            if self._is_end(m, len(self.dice) - len(rest)):
                return True
            if (m, rest) in seen:
                return False
            seen.add((m, rest))
            heads = heads0 - m[HEAD]
            mask = self.turn.mask(m)
            for die in set(rest):
                after = list(rest)
                after.remove(die)
                for _, _, n, _ in self.turn.step_targets(m, mask, heads, die):
                    if reach(tuple(n), tuple(after)):
                        return True
            return False

        return reach(board, left)


def _sequences(dice: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Ordered die sequences drawn from ``dice`` (for one checker using several dice)."""
    out: list[tuple[int, ...]] = []

    def grow(prefix: tuple[int, ...], left: list[int]) -> None:
        if prefix:
            out.append(prefix)
        for d in sorted(set(left), reverse=True):
            rest = list(left)
            rest.remove(d)
            grow((*prefix, d), rest)

    grow((), list(dice))
    return out


def match_play(position: Position, dice: tuple[int, int], text: str) -> Play:
    """The legal play written as ``text`` (notation); IllegalPlay naming the step and rule.

    Each written move may have several readings as dice (``5/off`` with 6-1 is a 6, or
    a 1 then a 6); the readings are tried in order until the whole play is legal.
    """
    moves = parse_moves(text)
    builder = TurnBuilder(position, dice)
    errors: list[IllegalPlay] = []

    def read(i: int) -> bool:
        if i == len(moves):
            if builder.complete:
                return True
            errors.append(IllegalPlay(builder._incomplete_reason()))
            return False
        src, dst = moves[i]
        try:
            builder.home_first(src, dst)
        except IllegalPlay as e:
            errors.append(IllegalPlay(f"move {i + 1}: {e}"))
            return False
        for dice_used in builder._dice_for(src, dst):
            mark = len(builder.steps)
            try:
                builder._apply(src, dice_used)
            except IllegalPlay as e:
                errors.append(IllegalPlay(f"move {i + 1} ({format_step(src, dst)}): {e}"))
                continue
            if read(i + 1):
                return True
            builder.rewind(mark)
        return False

    if read(0):
        return builder.play()
    raise errors[0]
