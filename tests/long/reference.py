"""A deliberately simple reference generator of legal long-nardy plays.

Written only from docs/RULES.md and the position-text format, independently of
``nardy.long.movegen`` and ``nardy.long.turn`` (only ``Position`` is used, for input and output).
It is slow on purpose: it copies the absolute board for every single step, checks every
rule on the whole board after each step, and tries every die order depth first. Tests
compare it with :func:`nardy.legal_plays`.

Also here: random *valid* positions for the property and cross-check tests.
"""

from __future__ import annotations

import random

from nardy import Color, Position  # I/O only: no movegen, no turn

N = 24
CHECKERS = 15
HEAD = 24
# §3.4: the doubles that let two checkers leave the head on a side's first turn.
FIRST_TURN_DOUBLES = (3, 4, 6)

# §1: white's point p is at a = 24 - p; black's point q at a = (36 - q) % 24.
_ABS = {
    Color.WHITE: {p: 24 - p for p in range(1, 25)},
    Color.BLACK: {q: (36 - q) % 24 for q in range(1, 25)},
}
# A side's own path in absolute indices, from its head (point 24) to its point 1.
PATH = {color: [_ABS[color][p] for p in range(24, 0, -1)] for color in Color}


def abs_index(color: Color, point: int) -> int:
    """Absolute index of ``color``'s player-relative ``point`` (1..24), RULES §1."""
    return _ABS[color][point]


def _sign(color: Color) -> int:
    return 1 if color is Color.WHITE else -1


def own(board, color: Color, a: int) -> int:
    """Checkers of ``color`` on absolute index ``a``."""
    c = board[a] * _sign(color)
    return c if c > 0 else 0


def on_board(board, color: Color) -> int:
    return sum(own(board, color, a) for a in range(N))


def illegal_block(board, color: Color) -> bool:
    """§3.5: does ``color`` hold six consecutive points (along the opponent's path) with no
    opposing checker ahead of them (further along that path, or borne off)?"""
    opp = color.opponent
    path = PATH[opp]  # the opponent's path: runs follow it and never wrap around its end
    held = [own(board, color, a) > 0 for a in path]
    opp_here = [own(board, opp, a) > 0 for a in path]
    opp_off = on_board(board, opp) < CHECKERS
    for i in range(N - 5):
        if all(held[i : i + 6]):
            ahead = opp_off or any(opp_here[i + 6 :])
            if not ahead:
                return True
    return False


def _try_step(board, color: Color, point: int, die: int, heads_left: int):
    """The board after moving one checker of ``color`` from ``point`` by ``die``, or None
    when a rule forbids that single step. ``heads_left``: checkers that may still leave
    the head this turn (§3.4)."""
    sign = _sign(color)
    src = abs_index(color, point)
    if own(board, color, src) == 0:
        return None
    if point == HEAD and heads_left <= 0:  # §3.4 head rule
        return None
    dst_point = point - die
    new = list(board)
    new[src] -= sign
    if dst_point >= 1:
        dst = abs_index(color, dst_point)
        if own(board, color.opponent, dst) > 0:  # §3.2: a point with an opposing checker
            return None
        new[dst] += sign
    else:
        # §4.1: all 15 home (points 6..1) or off, judged at this moment of the turn.
        if any(own(board, color, abs_index(color, p)) for p in range(7, 25)):
            return None
        # §4.2-4.4: exact point, or the highest occupied point when the die is larger.
        if dst_point < 0 and any(
            own(board, color, abs_index(color, p)) for p in range(point + 1, 7)
        ):
            return None
    if illegal_block(new, color):  # §3.5, after every single step
        return None
    return new


def _text(board, to_move: Color) -> str:
    return "wb"[to_move] + "/" + ",".join(str(c) for c in board)


def reference_plays(pos: Position, dice: tuple[int, int]) -> set[str]:
    """The distinct end positions (texts, opponent to move) of every legal play of
    ``dice`` from ``pos`` (§3.7); the empty set when no die can be played (§3.6)."""
    color = pos.turn
    board = list(pos.board)
    d1, d2 = dice
    all_dice = [d1] * 4 if d1 == d2 else [d1, d2]
    n = len(all_dice)
    first_turn = own(board, color, abs_index(color, HEAD)) == CHECKERS  # §1
    head_limit = 2 if first_turn and d1 == d2 and d1 in FIRST_TURN_DOUBLES else 1

    # nodes: (end text, dice counted, dice used in order) for every reachable state.
    # Deliberately no memo of visited states: every step sequence is walked.
    nodes: set[tuple[str, int, tuple[int, ...]]] = set()

    def dfs(b, remaining: list[int], heads_left: int, used: tuple[int, ...]) -> None:
        finished = on_board(b, color) == 0
        # §4.6: the game ends when the 15th checker is off; the other dice lapse, so a
        # finished game counts as having played every die.
        nodes.add((_text(b, color.opponent), n if finished else len(used), used))
        if finished:
            return
        for i, die in enumerate(remaining):
            if die in remaining[:i]:
                continue
            rest = remaining[:i] + remaining[i + 1 :]
            for point in range(24, 0, -1):
                new = _try_step(b, color, point, die, heads_left)
                if new is not None:
                    dfs(new, rest, heads_left - (point == HEAD), (*used, die))

    dfs(board, all_dice, head_limit, ())
    most = max(count for _, count, _ in nodes)
    if most == 0:  # §3.6: nothing can be played, the turn passes
        return set()
    best = [(text, used) for text, count, used in nodes if count == most]
    if n == 2 and most == 1:
        # §3.6: either die alone but not both: the larger must be played if it can be.
        larger = max(all_dice)
        with_larger = [(t, u) for t, u in best if u == (larger,)]
        if with_larger:
            best = with_larger
    return {text for text, _ in best}


# -- random valid positions ---------------------------------------------------------------

KINDS = ("any", "bearoff", "nearhome", "head", "block")


def valid(pos_or_board) -> bool:
    """No side holds an illegal six-point block and the game is not over."""
    board = pos_or_board.board if isinstance(pos_or_board, Position) else pos_or_board
    return all(not illegal_block(board, c) and on_board(board, c) > 0 for c in Color)


def _scatter(rng: random.Random, board: list[int], color: Color, points: list[int], n: int) -> None:
    """Put ``n`` checkers of ``color`` on free points chosen from ``points`` (its own)."""
    free = [p for p in points if board[abs_index(color, p)] == 0]
    if not free or n <= 0:
        return
    k = rng.randint(1, min(len(free), n))
    chosen = rng.sample(free, k)
    # consecutive runs are what the six-point rule is about: sometimes prefer them
    if rng.random() < 0.4:
        start = rng.randrange(len(points))
        run = [p for p in points[start : start + k] if board[abs_index(color, p)] == 0]
        if run:
            chosen = run
    counts = [1] * len(chosen)
    for _ in range(n - len(chosen)):
        counts[rng.randrange(len(chosen))] += 1
    sign = _sign(color)
    for p, c in zip(chosen, counts, strict=True):
        board[abs_index(color, p)] = sign * c


def random_position(rng: random.Random, kind: str | None = None) -> Position:
    """A random valid position (RULES §1 text): no shared points, at most 15 per side,
    no illegal six-point block (§3.5), neither side finished.

    ``kind``: "any" (scattered), "bearoff" (the mover all home), "nearhome" (the mover
    all home but one or two), "head" (the mover still has checkers on its head), "block"
    (the mover holds most of a six-point window of the opponent's path, §3.5).
    """
    kind = kind or rng.choice(KINDS)
    while True:
        board = [0] * N
        mover = rng.choice([Color.WHITE, Color.BLACK])
        other = mover.opponent
        all_points = list(range(1, 25))
        if kind == "block":
            if _block(rng, board, mover):
                continue
            pos = Position(mover, tuple(board))
            if valid(pos):
                return pos
            continue
        if kind == "bearoff":
            n = rng.randint(1, 15)
            _scatter(rng, board, mover, list(range(1, 7)), n)
        elif kind == "nearhome":
            n = rng.randint(2, 15)
            far = rng.randint(1, min(2, n - 1))
            _scatter(rng, board, mover, list(range(7, 13)), far)
            _scatter(rng, board, mover, list(range(1, 7)), n - far)
        elif kind == "head":
            on_head = 15 if rng.random() < 0.3 else rng.randint(1, 15)  # 15: first turn
            board[abs_index(mover, HEAD)] = _sign(mover) * on_head
            if on_head < 15:
                _scatter(rng, board, mover, list(range(1, 24)), 15 - on_head)
        else:
            _scatter(rng, board, mover, all_points, rng.randint(1, 15))
        # the opponent: usually all 15 on board, sometimes some borne off
        m = 15 if rng.random() < 0.7 else rng.randint(1, 15)
        if rng.random() < 0.3:
            board_head = abs_index(other, HEAD)
            if board[board_head] == 0:
                h = rng.randint(1, m)
                board[board_head] = _sign(other) * h
                m -= h
        pts = all_points[:]
        rng.shuffle(pts)
        _scatter(rng, board, other, pts, m)  # checkers with no free point stay off
        if on_board(board, other) == 0:
            continue
        pos = Position(mover, tuple(board))
        if valid(pos):
            return pos


def _block(rng: random.Random, board: list[int], mover: Color) -> bool:
    """Fill ``board`` for kind "block"; True to reject and retry."""
    other = mover.opponent
    path = PATH[other]  # runs follow the opponent's path (§3.5)
    i = rng.randrange(N - 5)
    window = path[i : i + 6]
    gaps = set(rng.sample(window, rng.choice([1, 1, 2])))
    sign = _sign(mover)
    left = 15
    for a in window:
        if a not in gaps:
            c = rng.randint(1, 3)
            board[a] = sign * c
            left -= c
    # the rest of the mover's checkers elsewhere: some can step into a gap
    mine = [p for p in range(1, 25) if board[abs_index(mover, p)] == 0]
    if left > 0:
        _scatter(rng, board, mover, mine, rng.randint(1, left))
    # the opponent: ahead of the window, behind it only, or with checkers borne off
    mode = rng.choice(["ahead", "behind", "behind", "off"])
    behind = [a for a in path[:i] if board[a] == 0]
    ahead = [a for a in path[i + 6 :] if board[a] == 0]
    theirs = {"ahead": behind + ahead, "behind": behind, "off": behind}[mode]
    if not theirs:
        return True
    m = rng.randint(1, 14) if mode == "off" else 15
    osign = _sign(other)
    k = rng.randint(1, min(len(theirs), m))
    chosen = rng.sample(theirs, k)
    counts = [1] * k
    for _ in range(m - k):
        counts[rng.randrange(k)] += 1
    for a, c in zip(chosen, counts, strict=True):
        board[a] = osign * c
    return False


def random_dice(rng: random.Random) -> tuple[int, int]:
    return rng.randint(1, 6), rng.randint(1, 6)
