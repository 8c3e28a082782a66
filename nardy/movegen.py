"""Legal plays of a long nardy turn (RULES.md §3, §4).

The search works in the mover's own coordinates: ``m[p]`` is the mover's count on its
point ``p`` (1..24) and ``m[0]`` its borne-off count. The opponent does not move during
the turn, so the closed points and the six-point rule's "checker ahead" test are fixed
for the whole turn and computed once.

Six-point runs follow the opponent's path. The opponent numbers its points ``q`` from 24
(its head) down to 1; the mover's point ``p`` is the opponent's ``q = p+12`` (p <= 12) or
``p-12``. Bit ``q-1`` of ``mask`` is set when the mover holds that point, so six
consecutive set bits are a run, and the 24-bit mask cannot wrap across the opponent's
home -> head seam. A run whose lowest opponent point is ``lo`` is allowed only when an
opposing checker stands on a point below ``lo`` or is borne off.

Plays are searched breadth-first, one die per level, merging step sequences that reach the
same intermediate board: the legal plays are distinct end positions (§3.7). Each keeps the
first step sequence that reaches it, trying higher dice first and points from the head down,
which is its canonical notation.
"""

from __future__ import annotations

from dataclasses import dataclass

from nardy.notation import format_step
from nardy.position import ABS, CHECKERS, HEAD, POINTS, Position

OFF = 0
FIRST_TURN_DOUBLES = frozenset({3, 4, 6})
_ALL = (1 << POINTS) - 1

# BIT[p]: the mask bit of the mover's point p on the opponent's path.
BIT = (0, *(1 << ((p + 12 if p <= 12 else p - 12) - 1) for p in range(1, 25)))


@dataclass(frozen=True, slots=True)
class Step:
    """One die moving one checker: ``src`` -> ``dst`` in the mover's points (``dst`` 0 = off)."""

    src: int
    dst: int
    die: int

    def __str__(self) -> str:
        return format_step(self.src, self.dst)


@dataclass(frozen=True, slots=True)
class Play:
    """A legal play: the end position (opponent to move) and a canonical step sequence."""

    steps: tuple[Step, ...]
    end: Position

    def notation(self) -> str:
        return " ".join(map(str, self.steps)) or "-"

    __str__ = notation


def runs(mask: int) -> int:
    """Bits ``lo-1`` of every six-point run ``lo..lo+5`` (opponent points) in ``mask``."""
    return mask & (mask >> 1) & (mask >> 2) & (mask >> 3) & (mask >> 4) & (mask >> 5)


class Turn:
    """The fixed facts of one turn: mover's board, closed points, dice and head allowance."""

    __slots__ = (
        "position",
        "color",
        "next_turn",
        "dice",
        "closed",
        "forbidden",
        "head_limit",
        "start",
        "_others",
        "_order",
    )

    def __init__(self, position: Position, dice: tuple[int, int]) -> None:
        self.position = position
        self.color = color = position.turn
        self.next_turn = color.opponent
        self.dice = dice
        s = color.sign
        idx = ABS[color]
        opp = ABS[self.next_turn]
        board = position.board
        m = [0] * (POINTS + 1)
        for p in range(1, 25):
            c = board[idx[p]] * s
            if c > 0:
                m[p] = c
        m[OFF] = CHECKERS - sum(m)
        # closed[p]: an opposing checker stands on the mover's point p.
        self.closed = tuple(p > 0 and board[idx[p]] * s < 0 for p in range(25))
        # lowest opponent point holding an opposing checker (0 if any is borne off).
        opp_on = [q for q in range(1, 25) if board[opp[q]] * s < 0]
        lowest = 0 if sum(-board[opp[q]] * s for q in opp_on) < CHECKERS else min(opp_on)
        # forbidden: runs whose lowest point lo has no opposing checker below it.
        self.forbidden = (1 << lowest) - 1
        self.start = tuple(m)
        double = dice[0] == dice[1]
        first = m[HEAD] == CHECKERS
        self.head_limit = 2 if first and double and dice[0] in FIRST_TURN_DOUBLES else 1
        # For end positions: the opponent's signed counts alone, and the mover's points
        # listed in absolute order (a = 0..23).
        self._others = tuple(c if c * s < 0 else 0 for c in board)
        self._order = tuple(idx.index(a) for a in range(POINTS))

    def mask(self, m: tuple[int, ...] | list[int]) -> int:
        mask = 0
        for p in range(1, 25):
            if m[p]:
                mask |= BIT[p]
        return mask

    def end_position(self, m: tuple[int, ...] | list[int]) -> Position:
        """The board after the mover's play ``m``, with the opponent to move."""
        s = self.color.sign
        others = self._others
        board = tuple(others[a] + s * m[p] for a, p in enumerate(self._order))
        return Position(self.next_turn, board)

    def step_targets(self, m, mask: int, heads_used: int, die: int):
        """Every single step of ``die`` legal from ``m``: ``(src, dst, m', mask')`` tuples."""
        home_only = not any(m[7:25])
        sources = [p for p in range(6 if home_only else 24, 0, -1) if m[p]]
        return self._steps(m, mask, heads_used, die, sources, home_only)

    def _steps(self, m, mask, heads_used, die, sources, home_only):
        closed = self.closed
        forbidden = self.forbidden
        out = []
        for src in sources:
            if src == HEAD and heads_used >= self.head_limit:
                continue
            dst = src - die
            if dst >= 1:
                if closed[dst]:
                    continue
                nmask = mask | BIT[dst]
                if m[src] == 1:
                    nmask &= ~BIT[src]
                if runs(nmask) & forbidden:
                    continue
            else:
                # bear off: all home, and an exact die or no checker higher (§4.2-4.4)
                if not home_only or (dst < 0 and src != sources[0]):
                    continue
                dst = OFF
                nmask = mask if m[src] > 1 else mask & ~BIT[src]
            n = list(m)
            n[src] -= 1
            n[dst] += 1
            out.append((src, dst, n, nmask))
        return out


def legal_plays(position: Position, dice: tuple[int, int]) -> list[Play]:
    """Every legal play of ``dice`` from ``position``: distinct end positions, in search order.

    An empty list means no die can be played: the turn passes (§3.6).
    """
    turn = Turn(position, dice)
    return [
        Play(tuple(Step(*s) for s in steps), turn.end_position(m)) for m, steps in _search(turn)
    ]


Path = tuple[tuple[int, int, int], ...]  # (src, dst, die) steps


def _search(turn: Turn) -> list[tuple[tuple[int, ...], Path]]:
    """Breadth-first search over dice; returns (mover board, canonical steps) of each play."""
    a, b = turn.dice
    dice = (a,) * 4 if a == b else (max(a, b), min(a, b))
    start = turn.start
    head0 = start[HEAD]
    steps_of = turn._steps
    # A level maps (board, remaining dice) to (run mask, first step sequence reaching it).
    level: dict = {(start, dice): (turn.mask(start), ())}
    finished: dict[tuple[int, ...], Path] = {}
    while True:
        nxt: dict = {}
        for (m, remaining), (mask, steps) in level.items():
            heads = head0 - m[HEAD]
            home_only = not any(m[7:25])
            sources = [p for p in range(6 if home_only else 24, 0, -1) if m[p]]
            for i, die in enumerate(remaining):
                if i and die == remaining[i - 1]:
                    continue
                rest = remaining[:i] + remaining[i + 1 :]
                for src, dst, n, nmask in steps_of(m, mask, heads, die, sources, home_only):
                    board = tuple(n)
                    if board[OFF] == CHECKERS:  # the game ends; unplayed dice lapse (§4.6)
                        finished.setdefault(board, (*steps, (src, dst, die)))
                    elif (board, rest) not in nxt:
                        nxt[board, rest] = (nmask, (*steps, (src, dst, die)))
        if not nxt:
            break
        level = nxt
    # A play that ends the game counts as using every die; others must use the most dice.
    most = len(dice) if finished else len(next(iter(level.values()))[1])
    plays = dict(finished)
    for (m, _), (_, steps) in level.items():
        if steps and len(steps) == most:
            plays.setdefault(m, steps)
    return _larger_die_rule(list(plays.items()), dice)


def _larger_die_rule(
    plays: list[tuple[tuple[int, ...], Path]], dice: tuple[int, ...]
) -> list[tuple[tuple[int, ...], Path]]:
    """With two different dice of which only one can be played, the larger must be (§3.6)."""
    if len(dice) == 2 and plays and all(len(s) == 1 for _, s in plays):
        larger = [(m, s) for m, s in plays if s[0][2] == dice[0]]
        if larger:
            return larger
    return plays
