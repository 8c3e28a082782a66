"""Legal plays of a short nardy (backgammon) turn (RULES.md §8, §3.6-3.7, §4).

The search works in the mover's own points: byte ``p`` of one packed int is the mover's
count on its point ``p`` (1..24), byte 25 its bar and byte 0 its borne-off count. The
opponent's checkers only change by being hit, and only a blot (a lone checker) can be hit,
so the closed points (two or more opposing checkers) are fixed for the whole turn and the
opponent's side of any intermediate position is given by the set of blots hit so far.

Plays are searched breadth-first, one die per level, merging step sequences that reach the
same intermediate position (board plus blots hit): the legal plays are distinct end
positions (§3.7). Each keeps the first step sequence that reaches it, trying higher dice
first and points from the bar down, which is its canonical notation and an order that can
really be played (a checker on the bar enters before any other step).
"""

from __future__ import annotations

import operator
from typing import NamedTuple

from nardy.compiled import load
from nardy.game import Color
from nardy.short.notation import format_step
from nardy.short.position import BAR, CHECKERS, OFF, Position, absolute

SHIFT = tuple(8 * p for p in range(26))
UNIT = tuple(1 << s for s in SHIFT)  # one checker on point p (0: off, 25: bar)
BAR_BIT = 1 << BAR
ABOVE = tuple(~((2 << d) - 1) for d in range(7))  # bits of the points above d: src - d >= 1
HITS = 8 * 26  # bit offset of the blots-hit mask in a state key
TAG = HITS + 26  # bit offset of the die left for a non-double's second step
_OFF_ALL = CHECKERS * UNIT[OFF]  # the packed board of a side that has borne off all 15
OPPONENT = (Color.BLACK, Color.WHITE)


class Step(NamedTuple):
    """One die moving one checker: ``src`` -> ``dst`` in the mover's points.

    ``src`` 25 is the bar, ``dst`` 0 is off; ``hit``: the step hits a blot (§8).
    """

    src: int
    dst: int
    die: int
    hit: bool = False

    def __str__(self) -> str:
        return format_step(self.src, self.dst, self.hit)


class Play(NamedTuple):
    """A legal play: the end position (opponent to move) and a canonical step sequence."""

    steps: tuple[Step, ...]
    end: Position

    def notation(self) -> str:
        return " ".join(map(str, self.steps)) or "-"

    def __str__(self) -> str:
        return self.notation()


def pack(m: tuple[int, ...] | list[int]) -> int:
    return int.from_bytes(bytes(m), "little")


def unpack(packed: int) -> tuple[int, ...]:
    return tuple((packed & ((1 << HITS) - 1)).to_bytes(26, "little"))


def occupancy(m: tuple[int, ...] | list[int]) -> int:
    """Bit ``p`` set when the mover has a checker on point ``p`` (1..24) or the bar (25)."""
    return sum(1 << p for p in range(1, 26) if m[p])


class Turn:
    """The fixed facts of one turn: the mover's start, closed points, blots and dice."""

    __slots__ = ("position", "color", "next_turn", "dice", "closed", "blots", "start", "_ends")

    def __init__(self, position: Position, dice: tuple[int, int]) -> None:
        self.position = position
        self.color = color = position.turn
        self.next_turn = OPPONENT[color]
        self.dice = dice
        board = position.board
        # The board by the mover's points 1..24, the mover's checkers positive (§9).
        rel = board[::-1] if color is Color.WHITE else [-c for c in board]
        m = [0, *[c if c > 0 else 0 for c in rel], position.bar[color]]
        m[OFF] = CHECKERS - sum(m)
        closed = blots = 0
        bit = 2
        for c in rel:
            if c < 0:
                if c == -1:
                    blots |= bit
                else:
                    closed |= bit
            bit <<= 1
        self.closed = closed  # bit p: the opponent holds the mover's point p (§8)
        self.blots = blots  # bit p: a lone opposing checker on the mover's point p
        self.start = tuple(m)
        self._ends: dict[int, tuple[tuple[int, ...], int]] = {}

    def end_position(self, m: tuple[int, ...] | list[int], hits: int = 0) -> Position:
        """The position after the mover's board ``m`` with the blots ``hits`` hit."""
        return self._end(pack(m) | hits << HITS)

    def _end(self, key: int) -> Position:
        """The position of a state key (packed board | hits << HITS), opponent to move."""
        hits = key >> HITS
        others = self._ends.get(hits)
        if others is None:
            others = self._ends[hits] = self._opponent_after(hits)
        board_part, opp_bar = others
        b = (key & ((1 << HITS) - 1)).to_bytes(26, "little")
        if self.color is Color.WHITE:
            board = tuple(map(operator.add, board_part, b[24:0:-1]))
            bar = (b[BAR], opp_bar)
        else:
            board = tuple(map(operator.sub, board_part, b[1:25]))
            bar = (opp_bar, b[BAR])
        return tuple.__new__(Position, (self.next_turn, board, bar))  # skips NamedTuple.__new__

    def _opponent_after(self, hits: int) -> tuple[tuple[int, ...], int]:
        """The opponent's signed counts by absolute index and its bar, after ``hits``."""
        color = self.color
        if color is Color.WHITE:
            board = [c if c < 0 else 0 for c in self.position.board]
        else:
            board = [c if c > 0 else 0 for c in self.position.board]
        n = 0
        while hits:
            p = hits.bit_length() - 1
            hits ^= 1 << p
            board[absolute(color, p)] = 0
            n += 1
        return tuple(board), self.position.bar[self.next_turn] + n

    def steps_from(
        self, m: tuple[int, ...], hits: int, die: int
    ) -> list[tuple[Step, tuple[int, ...], int]]:
        """Every single step of ``die`` the rules allow from board ``m`` (blots ``hits`` hit):
        ``(step, m', hits')``, in search order. Must-play (§3.6) is not applied here."""
        packed = pack(m)
        out = []
        for src, dst, n, nhits in _single_steps(
            packed, occupancy(m), hits, die, self.closed, self.blots
        ):
            out.append((Step(src, dst, die, nhits != hits), unpack(n), nhits))
        return out


def _single_steps(m: int, occ: int, hits: int, die: int, closed: int, blots: int):
    """Single steps of ``die`` from packed board ``m``: ``(src, dst, m', hits')``."""
    # a checker on the bar enters before any other step (§8)
    srcs = [BAR] if occ & BAR_BIT else [p for p in range(24, 0, -1) if occ >> p & 1]
    home_only = not occ >> 7
    highest = occ.bit_length() - 1
    out = []
    for src in srcs:
        dst = src - die
        if dst >= 1:
            if closed >> dst & 1:
                continue
            nhits = hits | (blots & ~hits & (1 << dst))
            out.append((src, dst, m - UNIT[src] + UNIT[dst], nhits))
        elif home_only and (dst == 0 or src == highest):  # bear off (§4.1-4.4)
            out.append((src, OFF, m - UNIT[src] + 1, hits))
    return out


def legal_plays(position: Position, dice: tuple[int, int]) -> list[Play]:
    """Every legal play of ``dice`` from ``position``: distinct end positions, in search order.

    An empty list means no die can be played (e.g. a checker on the bar that cannot enter):
    the turn passes and the position is unchanged with the opponent to move (§3.6, §8).
    """
    turn = Turn(position, dice)
    end, new = turn._end, tuple.__new__
    return [
        new(Play, (tuple([new(Step, s) for s in steps]), end(key))) for key, steps in _search(turn)
    ]


_compiled = load("nardy.short._movegen")


def end_boards(position: Position, dice: tuple[int, int]) -> bytes:
    """The end positions of the legal plays, in :func:`legal_plays` order, 26 signed bytes
    each: the 24 counts by absolute index (white positive), then the bars of white and
    black (``b""`` when the turn passes). For engines that judge thousands of positions
    and need no plays: the compiled search (``_movegen.c``, the same search as
    :func:`_search`) builds them without Python objects when it was built."""
    if _compiled is not None:
        return _compiled.end_boards(position.turn, position.board, position.bar, *dice)
    return end_boards_py(position, dice)


def end_boards_py(position: Position, dice: tuple[int, int]) -> bytes:
    """:func:`end_boards` from :func:`legal_plays`: the reference for the compiled one."""
    return b"".join(
        bytes(c & 0xFF for c in p.end.board + p.end.bar) for p in legal_plays(position, dice)
    )


Path = tuple[tuple[int, int, int, bool], ...]  # (src, dst, die, hit) steps


def _search(turn: Turn) -> list[tuple[int, Path]]:
    """Breadth-first search over dice; returns ``(state key, canonical steps)`` per play.

    The single-step rules of :func:`_single_steps` are unrolled into the level loop: this
    is the hot path of engines and the arbiter, cross-checked against a naive reference.
    """
    a, b = turn.dice
    dice = (a,) * 4 if a == b else (max(a, b), min(a, b))
    closed, blots = turn.closed, turn.blots
    unit, shift = UNIT, SHIFT
    start = pack(turn.start)
    # A level maps a key (board | hits << HITS, plus the die left for a non-double's first
    # step) to (board, occupancy, hits, dice left, first step sequence reaching it).
    level: dict = {start: (start, occupancy(turn.start), 0, dice, (), BAR)}
    double = a == b
    finished: dict[int, Path] = {}
    complete: dict[int, Path] = {}
    depth = 0
    while True:
        nxt: dict = {}
        depth += 1
        for m, occ, hits, remaining, steps, top in level.values():
            # §8: a checker on the bar enters before any other step. With a double, every
            # play can be reordered to take its steps from points never higher than the
            # step before (a checker's own steps stay in order, and moving a higher
            # checker first never blocks a lower one), so only sources up to ``top``, the
            # highest last source among the ways of reaching this state, are tried.
            sources = BAR_BIT if occ & BAR_BIT else occ & ((2 << top) - 1)
            home_only = not occ >> 7
            highest = occ.bit_length() - 1
            open_blots = blots & ~hits
            hkey = hits << HITS
            for i, die in enumerate(remaining):
                if i and die == remaining[i - 1]:
                    continue
                rest = remaining[:i] + remaining[i + 1 :]
                last = not rest
                tag = rest[0] << TAG if len(rest) == 1 else 0
                # sources whose landing point is on the board and not closed (§8) ...
                movers = sources & ~(closed << die) & ABOVE[die]
                targets = []
                while movers:
                    src = movers.bit_length() - 1
                    movers ^= 1 << src
                    targets.append(src)
                # ... then bearing off: all home, the exact point or the highest (§4.1-4.4)
                if home_only:
                    if occ >> die & 1:
                        targets.append(die)
                    elif highest < die and occ:
                        targets.append(highest)
                for src in targets:
                    dst = src - die
                    if dst > 0:
                        n = m - unit[src] + unit[dst]
                        hit = open_blots >> dst & 1
                        if hit:
                            nhits = hits | 1 << dst
                            key = n | nhits << HITS
                        else:
                            nhits = hits
                            key = n | hkey
                    else:
                        dst = hit = 0
                        n = m - unit[src] + 1
                        nhits = hits
                        key = n | hkey
                        if n == _OFF_ALL:  # the game ends; unplayed dice lapse (§4.6)
                            if len(finished.get(key, ())) < depth:  # the most dice played
                                finished[key] = (*steps, (src, OFF, die, False))
                            continue
                    if last:  # the last die: a complete play, nothing to expand
                        if key not in complete:
                            complete[key] = (*steps, (src, dst, die, hit == 1))
                    elif key + tag not in nxt:
                        nocc = occ | 1 << dst if dst else occ
                        if (m >> shift[src]) & 255 == 1:
                            nocc &= ~(1 << src)
                        step = (src, dst, die, hit == 1)
                        nxt[key + tag] = (
                            n,
                            nocc,
                            nhits,
                            rest,
                            (*steps, step),
                            src if double else BAR,
                        )
                    elif double and src > nxt[key][5]:
                        nxt[key] = (*nxt[key][:5], src)
        if not nxt:
            break
        level = nxt
    # The plays that use the most dice (§3.6): every die, or the states of the last level
    # (none when no die can be played: the turn passes) ...
    if complete:
        most, states = len(dice), list(complete.items())
    else:
        most = depth - 1
        states = [(m | h << HITS, steps) for m, _, h, _, steps, _ in level.values()] if most else []
    # ... where a play that ends the game counts the dice it really played (§3.6; the rest
    # lapse, §4.6): bearing off the last checker with one die is not legal when another
    # play uses both, e.g. hitting a blot on the way off (gnubg agrees; docs/RULES.md, Readings).
    longest = max(map(len, finished.values()), default=0)
    if longest > most:
        most, states = longest, []
    states = [s for s in finished.items() if len(s[1]) == most] + states
    if len(dice) == 2 and most == 1:
        # If either die can be played alone but not both, the larger (§3.6).
        larger = [s for s in states if s[1][0][2] == dice[0]]
        states = larger or states
    plays: dict[int, Path] = {}
    for key, steps in states:
        plays.setdefault(key, steps)
    return list(plays.items())
