"""A deliberately naive reference generator of legal short-nardy (backgammon) plays.

Written only from docs/RULES.md §8-9, §3.6-3.7 and §4, independently of
``nardy.short.movegen`` and ``nardy.short.turn`` (only ``Position`` is used, for input and
output). It is slow on purpose: it copies the absolute board and bar for every single step,
checks every rule on the whole board, and tries every die order depth first without
remembering what it has seen. Tests compare it with :func:`nardy.short.legal_plays`.

Also here: random *valid* short-nardy positions for the property and cross-check tests.
"""

from __future__ import annotations

import random

from nardy.game import Color
from nardy.short.position import Position  # I/O only: no movegen, no turn

N = 24
CHECKERS = 15
BAR = 25


def abs_index(color: Color, point: int) -> int:
    """§9: white's point p is at a = 24 - p, black's point q at a = q - 1."""
    return 24 - point if color is Color.WHITE else point - 1


def sign(color: Color) -> int:
    return 1 if color is Color.WHITE else -1


def own(board, color: Color, a: int) -> int:
    """Checkers of ``color`` on absolute index ``a``."""
    c = board[a] * sign(color)
    return c if c > 0 else 0


def off(board, bar, color: Color) -> int:
    return CHECKERS - sum(own(board, color, a) for a in range(N)) - bar[color]


def _try_step(board, bar, color: Color, src: int, die: int):
    """(board, bar) after one checker of ``color`` moves from its point ``src`` (25: the
    bar) by ``die``, or None when a rule forbids that single step."""
    opp = color.opponent
    s = sign(color)
    if bar[color] and src != BAR:  # §8: a checker on the bar enters before anything else
        return None
    if src == BAR:
        if not bar[color]:
            return None
    elif own(board, color, abs_index(color, src)) == 0:
        return None
    new, newbar = list(board), list(bar)
    if src == BAR:
        newbar[color] -= 1
    else:
        new[abs_index(color, src)] -= s
    to = src - die
    if to >= 1:
        a = abs_index(color, to)
        theirs = own(board, opp, a)
        if theirs >= 2:  # §8: two or more opposing checkers close a point
            return None
        if theirs == 1:  # §8: a blot is hit and goes to the bar
            new[a] = 0
            newbar[opp] += 1
        new[a] += s
        return new, newbar
    # §4.1: bearing off only with all 15 home (points 6..1) or off, none on the bar
    if bar[color] or any(own(board, color, abs_index(color, p)) for p in range(7, 25)):
        return None
    # §4.2-4.4: the exact point, or a larger die from the highest occupied point
    if to < 0 and any(own(board, color, abs_index(color, p)) for p in range(src + 1, 7)):
        return None
    return new, newbar


def _text(board, bar, to_move: Color) -> str:
    return f"{'wb'[to_move]}/{','.join(map(str, board))}/{bar[0]},{bar[1]}"


def naive_plays(pos: Position, dice: tuple[int, int]) -> set[str]:
    """The distinct end positions (texts, opponent to move) of every legal play of ``dice``
    from ``pos`` (§3.7); the empty set when no die can be played (§3.6, §8)."""
    color = pos.turn
    d1, d2 = dice
    all_dice = [d1] * 4 if d1 == d2 else [d1, d2]
    n = len(all_dice)
    nodes: set[tuple[str, int, tuple[int, ...]]] = set()  # (end text, dice counted, order)

    def dfs(board, bar, remaining: list[int], used: tuple[int, ...]) -> None:
        finished = off(board, bar, color) == CHECKERS
        # §4.6: the game ends when the 15th checker is off and the other dice lapse; it
        # counts the dice really played (§3.6), so another play using more dice wins.
        nodes.add((_text(board, bar, color.opponent), len(used), used))
        if finished:
            return
        for i, die in enumerate(remaining):
            if die in remaining[:i]:
                continue
            rest = remaining[:i] + remaining[i + 1 :]
            for src in range(BAR, 0, -1):
                step = _try_step(board, bar, color, src, die)
                if step is not None:
                    dfs(*step, rest, (*used, die))

    dfs(list(pos.board), list(pos.bar), all_dice, ())
    most = max(count for _, count, _ in nodes)
    if most == 0:
        return set()
    best = [(text, used) for text, count, used in nodes if count == most]
    if n == 2 and most == 1:  # §3.6: either die alone but not both: the larger if it can
        with_larger = [(t, u) for t, u in best if u == (max(all_dice),)]
        best = with_larger or best
    return {text for text, _ in best}


# -- random valid positions ---------------------------------------------------------------

KINDS = ("any", "bar", "bearoff", "nearhome", "contact")


def _place(rng: random.Random, board, color: Color, points: list[int], n: int, blots=0.3):
    """Put up to ``n`` checkers of ``color`` on points (its own numbering) from ``points``
    that are empty; returns how many were placed."""
    free = [p for p in points if board[abs_index(color, p)] == 0]
    rng.shuffle(free)
    placed = 0
    for p in free:
        if placed >= n:
            break
        c = 1 if rng.random() < blots else rng.randint(2, 4)
        c = min(c, n - placed)
        board[abs_index(color, p)] = sign(color) * c
        placed += c
    return placed


def random_position(rng: random.Random, kind: str | None = None) -> Position:
    """A random valid §9 position: no shared points, 15 per side with bar and off, the
    game not over. ``kind``: "any", "bar" (the mover has checkers on the bar against a
    home board with closed points), "bearoff" (the mover all home, the opponent maybe with
    blots there or on the bar), "nearhome" (all home but one to three, maybe on the bar),
    "contact" (many blots and single points, both sides)."""
    kind = kind or rng.choice(KINDS)
    while True:
        board = [0] * N
        bar = [0, 0]
        mover = rng.choice(list(Color))
        opp = mover.opponent
        everywhere = list(range(1, 25))
        if kind == "bar":
            bar[mover] = rng.choice([1, 1, 2, 2, 3, 4])
            # the opponent's home is the mover's points 19..24
            closed = rng.randint(2, 6)
            for p in rng.sample(range(19, 25), closed):
                board[abs_index(mover, p)] = -sign(mover) * rng.randint(2, 3)
            left_opp = CHECKERS - sum(own(board, opp, a) for a in range(N))
            if left_opp < 0:
                continue
            left_opp -= _place(rng, board, opp, everywhere, rng.randint(0, left_opp))
            _place(rng, board, mover, everywhere, rng.randint(0, CHECKERS - bar[mover]), 0.4)
        elif kind == "bearoff":
            _place(rng, board, mover, list(range(1, 7)), rng.randint(1, 15), 0.3)
            if rng.random() < 0.4:
                bar[opp] = rng.randint(1, 2)
            _place(rng, board, opp, everywhere, rng.randint(1, CHECKERS - bar[opp]), 0.5)
        elif kind == "nearhome":
            far = rng.randint(1, 3)
            if rng.random() < 0.3:
                bar[mover] = 1
                far -= 1
            _place(rng, board, mover, list(range(7, 14)), far, 0.5)
            _place(rng, board, mover, list(range(1, 7)), rng.randint(1, 12), 0.3)
            _place(rng, board, opp, everywhere, rng.randint(1, 15), 0.5)
        elif kind == "contact":
            if rng.random() < 0.3:
                bar[mover] = 1
            if rng.random() < 0.3:
                bar[opp] = 1
            _place(rng, board, mover, everywhere, CHECKERS - bar[mover], 0.6)
            _place(rng, board, opp, everywhere, CHECKERS - bar[opp], 0.6)
        else:
            for color in (mover, opp):
                if rng.random() < 0.2:
                    bar[color] = rng.randint(1, 3)
                _place(rng, board, color, everywhere, rng.randint(0, CHECKERS - bar[color]))
        totals = [CHECKERS - off(board, bar, c) for c in Color]
        if min(totals) == 0 or max(totals) > CHECKERS:
            continue
        return Position.from_board(mover, board, bar)


def random_dice(rng: random.Random) -> tuple[int, int]:
    return rng.randint(1, 6), rng.randint(1, 6)
