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

The same search is compiled in ``_movegen.c`` (built at install when a C compiler is there):
:func:`legal_plays` uses it when it is present, and the pure-Python :func:`legal_plays_py`
otherwise (or when ``NARDY_PURE_PYTHON`` is set, see :mod:`nardy.long.compiled`). The
Python code is the reference: the two give the same plays, in the same order, with the
same steps (tests/long/test_accelerator.py).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import compress
from typing import NamedTuple

from nardy.game import Color
from nardy.long import compiled
from nardy.long.notation import format_step
from nardy.long.position import CHECKERS, HEAD, POINTS, Position

OFF = 0
FIRST_TURN_DOUBLES = frozenset({3, 4, 6})
_ALL = (1 << POINTS) - 1

# BIT[p]: the mask bit of the mover's point p on the opponent's path.
BIT = (0, *(1 << ((p + 12 if p <= 12 else p - 12) - 1) for p in range(1, 25)))


class Step(NamedTuple):
    """One die moving one checker: ``src`` -> ``dst`` in the mover's points (``dst`` 0 = off)."""

    src: int
    dst: int
    die: int

    def __str__(self) -> str:
        return format_step(self.src, self.dst)


class Play(NamedTuple):
    """A legal play: the end position (opponent to move) and a canonical step sequence."""

    steps: tuple[Step, ...]
    end: Position

    def notation(self) -> str:
        if _compiled is not None:
            return _compiled.notation(self.steps)
        return " ".join(map(str, self.steps)) or "-"

    def __str__(self) -> str:
        return self.notation()


def runs(mask: int) -> int:
    """Bits ``lo-1`` of every six-point run ``lo..lo+5`` (opponent points) in ``mask``."""
    return mask & (mask >> 1) & (mask >> 2) & (mask >> 3) & (mask >> 4) & (mask >> 5)


# The search packs the mover's counts into one int, a byte per point: byte p holds the
# count on point p (1..24) and byte 0 the borne-off count. A step is two additions.
UNIT = tuple(1 << (8 * p) for p in range(25))
HOME_BITS = 0b1111110  # occupancy bits of points 1..6
SHIFT = tuple(8 * p for p in range(25))
ONE = (0, *(1 << p for p in range(1, 25)))  # occupancy bit of each point (none for "off")
NOT_BIT = tuple(~b for b in BIT)
OPPONENT = (Color.BLACK, Color.WHITE)


def pack(m: tuple[int, ...] | list[int]) -> int:
    return int.from_bytes(bytes(m), "little")


def unpack(packed: int) -> tuple[int, ...]:
    return tuple(packed.to_bytes(25, "little"))


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
        "_movers",
    )

    def __init__(self, position: Position, dice: tuple[int, int]) -> None:
        self.position = position
        self.color = color = position.turn
        self.next_turn = OPPONENT[color]
        self.dice = dice
        board = position.board
        white = color is Color.WHITE
        # The board as the mover's points 1..24 (see position.ABS); closed[p]: an opposing
        # checker stands on the mover's point p; opp: the opponent's checkers on the board.
        if white:
            rel = board[::-1]
            m = [0, *[c if c > 0 else 0 for c in rel]]
            self.closed = (False, *[c < 0 for c in rel])
            opp = -sum(c for c in board if c < 0)
            self._others = tuple([c if c < 0 else 0 for c in board])
        else:
            rel = board[11::-1] + board[:11:-1]
            m = [0, *[-c if c < 0 else 0 for c in rel]]
            self.closed = (False, *[c > 0 for c in rel])
            opp = sum(c for c in board if c > 0)
            self._others = tuple([c if c > 0 else 0 for c in board])
        m[OFF] = CHECKERS - sum(m)
        # The opponent's points 1..12 are the mover's 13..24, its 13..24 the mover's 1..12;
        # lowest: the lowest opponent point with an opposing checker (0 if any is off).
        closed_by_q = self.closed[13:] + self.closed[1:13]
        lowest = closed_by_q.index(True) + 1 if opp == CHECKERS else 0
        # forbidden: runs whose lowest point lo has no opposing checker below it.
        self.forbidden = (1 << lowest) - 1
        self.start = tuple(m)
        double = dice[0] == dice[1]
        first = m[HEAD] == CHECKERS
        self.head_limit = 2 if first and double and dice[0] in FIRST_TURN_DOUBLES else 1
        self._movers = white  # end positions list the mover's bytes in absolute order

    def mask(self, m: tuple[int, ...] | list[int]) -> int:
        """The run mask (opponent's path order) of the mover's board ``m``."""
        return sum(compress(BIT, m))  # BIT[0] is 0: the borne-off count adds nothing

    def end_position(self, m: tuple[int, ...] | list[int]) -> Position:
        """The board after the mover's play ``m``, with the opponent to move."""
        return self._end(pack(m))

    def _end(self, packed: int) -> Position:
        b = packed.to_bytes(25, "little")
        mine = b[24:0:-1] if self._movers else b[12:0:-1] + b[24:12:-1]
        if self.color is Color.WHITE:
            board = tuple(map(operator.add, self._others, mine))
        else:
            board = tuple(map(operator.sub, self._others, mine))
        return tuple.__new__(Position, (self.next_turn, board))  # skips a Python-level __new__

    def step_targets(self, m: tuple[int, ...], mask: int, heads_used: int, die: int):
        """Every single step of ``die`` legal from board ``m``: ``(src, dst, m', mask')``."""
        packed = pack(m)
        occ = sum(1 << p for p in range(1, 25) if m[p])
        return [
            (src, dst, unpack(n), nmask)
            for src, dst, n, _, nmask in self._steps(packed, occ, mask, heads_used, die)
        ]

    def _steps(self, m: int, occ: int, mask: int, heads_used: int, die: int) -> list:
        """Single steps of ``die``: ``(src, dst, m', occ', mask')`` in search order."""
        closed = self.closed
        forbidden = self.forbidden
        home_only = not occ >> 7
        sources = occ & HOME_BITS if home_only else occ
        highest = occ.bit_length() - 1
        out = []
        while sources:
            src = sources.bit_length() - 1
            sources ^= 1 << src
            if src == HEAD and heads_used >= self.head_limit:
                continue
            single = (m >> (8 * src)) & 255 == 1
            dst = src - die
            if dst >= 1:
                if closed[dst]:
                    continue
                nmask = mask | BIT[dst]
                nocc = occ | (1 << dst)
                if single:
                    nmask &= ~BIT[src]
                    nocc &= ~(1 << src)
                if runs(nmask) & forbidden:
                    continue
            else:
                # bear off: all home, and an exact die or no checker higher (§4.2-4.4)
                if not home_only or (dst < 0 and src != highest):
                    continue
                dst = OFF
                nmask, nocc = (mask & ~BIT[src], occ & ~(1 << src)) if single else (mask, occ)
            out.append((src, dst, m - UNIT[src] + UNIT[dst], nocc, nmask))
        return out


def legal_plays(position: Position, dice: tuple[int, int]) -> list[Play]:
    """Every legal play of ``dice`` from ``position``: distinct end positions, in search order.

    An empty list means no die can be played: the turn passes (§3.6).
    """
    if _compiled is not None:
        return _compiled.legal_plays(position.turn, position.board, dice[0], dice[1])
    return legal_plays_py(position, dice)


def end_texts(position: Position, dice: tuple[int, int]) -> list[str]:
    """The sorted end-position texts of the legal plays (``[]`` when the turn passes),
    without building the plays when the compiled generator is there (``nardy legal``)."""
    if _compiled is not None:
        return _compiled.end_texts(position.turn, position.board, dice[0], dice[1])
    return sorted(p.end.text() for p in legal_plays_py(position, dice))


def end_boards(position: Position, dice: tuple[int, int]) -> bytes:
    """The end boards of the legal plays, in :func:`legal_plays` order, 24 signed bytes
    each (``b""`` when the turn passes): for engines that judge thousands of boards and
    need no plays, built without Python objects when the compiled generator is there."""
    if _compiled is not None:
        return _compiled.end_boards(position.turn, position.board, dice[0], dice[1])
    return b"".join(bytes(c & 0xFF for c in p.end.board) for p in legal_plays_py(position, dice))


def legal_plays_wire(plays: Sequence[Play]) -> bytes | None:
    """``plays`` as the protobuf entries of ``GameState.legal_plays`` (field 17: notation,
    end position, steps), written by the compiled generator in one call; None without it
    (the server then encodes them in Python, the reference: server/core/views.py)."""
    if _compiled is not None:
        return _compiled.legal_plays_wire(plays)
    return None


def legal_plays_py(position: Position, dice: tuple[int, int]) -> list[Play]:
    """:func:`legal_plays` in pure Python: the reference for the compiled generator."""
    turn = Turn(position, dice)
    end, make, new = turn._end, Step._make, tuple.__new__
    return [new(Play, (tuple(map(make, steps)), end(m))) for m, steps in _search(turn)]


Path = tuple[tuple[int, int, int], ...]  # (src, dst, die) steps
_OFF_ALL = CHECKERS * UNIT[OFF]  # the packed board of a side that has borne off all 15
_REST = 1 << 200  # key offset: which die is left, for the two orders of a non-double


def _search(turn: Turn) -> list[tuple[int, Path]]:
    """Breadth-first search over dice; returns (packed mover board, canonical steps) per play.

    This is :meth:`Turn._steps` unrolled into the level loop: it is the hot path of every
    engine and of the arbiter, and the two are cross-checked against a naive reference.
    """
    a, b = turn.dice
    dice = (a,) * 4 if a == b else (max(a, b), min(a, b))
    start = pack(turn.start)
    head0 = turn.start[HEAD]
    head_limit = turn.head_limit
    closed = turn.closed
    forbidden = turn.forbidden
    bit, notbit, unit, shift = BIT, NOT_BIT, UNIT, SHIFT
    occ0 = sum(compress(ONE, turn.start))
    # A level maps a key (board, plus the die left for a non-double's first step) to
    # (board, occupancy, run mask, dice left, first step sequence reaching it).
    level: dict = {start: (start, occ0, turn.mask(turn.start), dice, ())}
    finished: dict[int, Path] = {}
    complete: dict[int, Path] = {}
    while True:
        nxt: dict = {}
        for m, occ, mask, remaining, steps in level.values():
            home_only = not occ >> 7
            srcs = occ & HOME_BITS if home_only else occ
            if head0 - (m >> 192) >= head_limit:
                srcs &= ~(1 << HEAD)  # the head rule (§3.4)
            highest = occ.bit_length() - 1
            sources = []
            while srcs:
                src = srcs.bit_length() - 1
                srcs ^= 1 << src
                sources.append(src)
            for i, die in enumerate(remaining):
                if i and die == remaining[i - 1]:
                    continue
                rest = remaining[:i] + remaining[i + 1 :]
                last = not rest
                tag = _REST * rest[0] if len(rest) == 1 else 0
                for src in sources:
                    dst = src - die
                    if dst >= 1:
                        if closed[dst]:  # §3.2
                            continue
                        single = (m >> shift[src]) & 255 == 1
                        nmask = (mask | bit[dst]) & notbit[src] if single else mask | bit[dst]
                        if forbidden and (
                            nmask
                            & (nmask >> 1)
                            & (nmask >> 2)
                            & (nmask >> 3)
                            & (nmask >> 4)
                            & (nmask >> 5)
                            & forbidden
                        ):
                            continue  # the six-point rule (§3.5)
                    else:
                        # bear off: all home, and an exact die or no checker higher (§4.2-4.4)
                        if not home_only or (dst < 0 and src != highest):
                            continue
                        dst = OFF
                        single = (m >> shift[src]) & 255 == 1
                        nmask = mask & notbit[src] if single else mask
                    n = m - unit[src] + unit[dst]
                    if n == _OFF_ALL:  # the game ends; unplayed dice lapse (§4.6)
                        finished.setdefault(n, (*steps, (src, dst, die)))
                    elif last:  # the last die: a complete play, nothing to expand
                        if n not in complete:
                            complete[n] = (*steps, (src, dst, die))
                    elif n + tag not in nxt:
                        nocc = occ | (1 << dst) if dst else occ
                        if single:
                            nocc &= ~(1 << src)
                        nxt[n + tag] = (n, nocc, nmask, rest, (*steps, (src, dst, die)))
        if not nxt:
            break
        level = nxt
    if complete or finished:  # every die played, or the game over (counts as all, §4.6)
        finished.update((m, steps) for m, steps in complete.items() if m not in finished)
        return list(finished.items())
    # Not every die can be played: the plays that use the most dice (§3.6).
    plays = {m: steps for m, _, _, _, steps in level.values() if steps}
    return _larger_die_rule(list(plays.items()), dice)


def _larger_die_rule(
    plays: list[tuple[int, Path]], dice: tuple[int, ...]
) -> list[tuple[int, Path]]:
    """With two different dice of which only one can be played, the larger must be (§3.6)."""
    if len(dice) == 2 and plays and all(len(s) == 1 for _, s in plays):
        larger = [(m, s) for m, s in plays if s[0][2] == dice[0]]
        if larger:
            return larger
    return plays


_compiled = compiled.MODULE
if _compiled is not None:
    _compiled.setup(Step, Play, Position, Color.WHITE, Color.BLACK)
COMPILED = _compiled is not None  # which generator legal_plays uses
