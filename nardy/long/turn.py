"""A turn played step by step, with the reason for every refusal.

:class:`TurnBuilder` serves people (step, undo, done) and the arbiter (a written play is
matched to a legal play, or refused naming the step and the rule it breaks).
"""

from __future__ import annotations

from nardy.game import IllegalPlay
from nardy.long.movegen import BIT, HEAD, OFF, Play, Step, Turn, legal_plays, runs
from nardy.long.notation import format_step, parse_moves
from nardy.long.position import CHECKERS, Position


class TurnBuilder:
    """The mover's board during a turn: legal steps, step, undo, and the finished play."""

    def __init__(self, position: Position, dice: tuple[int, int]) -> None:
        self.turn = Turn(position, dice)
        a, b = dice
        self.dice: tuple[int, ...] = (a,) * 4 if a == b else (max(a, b), min(a, b))
        self.plays = legal_plays(position, dice)
        self._ends = {play.end: play for play in self.plays}
        self.most = max((len(p.steps) for p in self.plays), default=0)
        self.steps: list[Step] = []
        self._m: list[tuple[int, ...]] = [self.turn.start]

    # -- state --------------------------------------------------------------------------
    @property
    def board(self) -> tuple[int, ...]:
        """The mover's counts by own point (index 0: borne off) after the steps so far."""
        return self._m[-1]

    @property
    def remaining(self) -> tuple[int, ...]:
        left = list(self.dice)
        for s in self.steps:
            left.remove(s.die)
        return tuple(left)

    @property
    def position(self) -> Position:
        """The board so far, with the opponent to move."""
        return self.turn.end_position(self.board)

    @property
    def complete(self) -> bool:
        """True when the steps so far make a legal play (or there is none to make)."""
        return not self.plays or self._is_end(self.board, len(self.steps))

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
        out = []
        m = self.board
        for die in sorted(set(self.remaining), reverse=True):
            for src, dst, n, _ in self.turn.step_targets(m, self._mask(m), self._heads(), die):
                step = Step(src, dst, die)
                if self._completable(tuple(n), self._left_after(die)):
                    out.append(step)
        return out

    def step(self, src: int, dst: int) -> list[Step]:
        """Move one checker from ``src`` to ``dst`` (0 = off) with one or more dice.

        Several dice are used when no single die covers the distance (``24/13``). Raises
        IllegalPlay with the reason when the move cannot be made; nothing changes then.
        """
        if dst == OFF and sum(self.board[7:25]) - (src >= 7) > 0:  # others still outside
            raise IllegalPlay(
                f"{format_step(src, dst)}: cannot bear off until all 15 checkers are home (§4.1)"
            )
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
        self._m.pop()
        return self.steps.pop()

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

    def _left_after(self, die: int) -> tuple[int, ...]:
        left = list(self.remaining)
        left.remove(die)
        return tuple(left)

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

    def _apply(self, src: int, dice: tuple[int, ...]) -> list[Step]:
        """Play ``dice`` in order with one checker from ``src``, all or nothing."""
        mark = len(self.steps)
        try:
            at = src
            for die in dice:
                step = self._one(at, die)
                at = step.dst
                if at == OFF and die != dice[-1]:
                    raise IllegalPlay(f"{src}: the checker is off before all dice are used")
            return self.steps[mark:]
        except IllegalPlay:
            self.rewind(mark)
            raise

    def rewind(self, mark: int) -> None:
        """Take back every step after the first ``mark``."""
        del self.steps[mark:]
        del self._m[mark + 1 :]

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
                raise IllegalPlay(f"{text}: cannot bear off until all 15 checkers are home (§4.1)")
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
        left = self._left_after(die)
        if n[OFF] != CHECKERS and not self._completable(board, left):
            raise IllegalPlay(f"{text}: {self._dead_end_reason(len(self.steps) + 1)}")
        self.steps.append(step)
        self._m.append(board)
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

    def _dead_end_reason(self, used: int) -> str:
        most = self.most
        if most == 1 and len(self.dice) == 2 and self.dice[0] != self.dice[1]:
            return f"the larger die ({self.dice[0]}) must be played (RULES §3.6)"
        return (
            f"after this step the play cannot be finished legally: a legal play uses {most} "
            f"{'die' if most == 1 else 'dice'} (RULES §3.6)"
        )

    def _incomplete_reason(self) -> str:
        most = self.most
        return (
            f"the play uses {len(self.steps)} of the dice but a legal play uses {most} "
            "(RULES §3.6: play as many dice as possible)"
        )

    def _left_text(self) -> str:
        return "-".join(map(str, self.remaining)) or "none"


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
