"""A hand-written evaluation of short nardy (backgammon) positions for the greedy engine.

It reads only the variant's board view (:class:`nardy.variant.Board`), so it needs no
short-nardy internals. From one side's point of view it weighs the race (pip counts),
checkers borne off and on the bar, points made in the home board and just in front of it
(blocks and primes), and the blots the opponent can hit: a blot is counted by the
opponent's checkers (or bar checkers, for blots in the home) within 6 pips behind it in
the opponent's direction, 12 pips for an indirect shot, weighted by how far the blot has
travelled (a hit far forward costs more). Once the armies have passed each other only the
race and the checkers off count. A higher value is better for ``color``.
"""

from __future__ import annotations

from nardy.game import Color
from nardy.variant import Variant

W_PIPS = 0.02  # per pip of race lead
W_OFF = 0.06
W_BAR = 0.35  # per checker on the bar
W_HOME_POINT = 0.12  # a made point (2+) in the home board, points 1..6
W_FRONT_POINT = 0.08  # a made point on 7..9, in front of the home
W_PRIME = 0.06  # per point of the longest run of made points beyond 2
W_ANCHOR = 0.05  # a made point in the opponent's home (own points 19..24)
W_DIRECT = 0.10  # per direct shot at a blot, scaled by how far the blot has come
W_INDIRECT = 0.03


def _mine(rules: Variant, board, color: Color) -> list[int]:
    """``color``'s checkers on its own points 1..24 (index 0 unused)."""
    out = [0] * 25
    for p in range(1, 25):
        c = board.points[rules.point_index(color, p)] * color.sign
        out[p] = c if c > 0 else 0
    return out


def evaluate(rules: Variant, position, color: Color) -> float:
    board = rules.board(position)
    opp = color.opponent
    me, them = _mine(rules, board, color), _mine(rules, board, opp)
    # Where the opponent's checkers are, in my numbering: its point q is my 25 - q.
    theirs_in_mine = [0] * 26
    for q in range(1, 25):
        theirs_in_mine[25 - q] = them[q]
    value = W_PIPS * (rules.pips(position, opp) - rules.pips(position, color))
    value += W_OFF * (board.off[color] - board.off[opp])
    my_back = max((p for p in range(1, 25) if me[p]), default=0) + (25 if board.bar[color] else 0)
    their_back_in_mine = min((p for p in range(1, 25) if theirs_in_mine[p]), default=25)
    if board.bar[opp]:
        their_back_in_mine = 0
    if my_back < their_back_in_mine:  # no contact: a race
        return value
    value += W_BAR * (board.bar[opp] - board.bar[color])
    made = [p for p in range(1, 25) if me[p] >= 2]
    value += W_HOME_POINT * sum(1 for p in made if p <= 6)
    value += W_FRONT_POINT * sum(1 for p in made if 7 <= p <= 9)
    value += W_ANCHOR * sum(1 for p in made if p >= 19)
    run = longest = 0
    for p in range(1, 25):
        run = run + 1 if me[p] >= 2 else 0
        longest = max(longest, run)
    value += W_PRIME * max(0, longest - 2)
    # Opponent shooters move toward my higher points: a checker on my point q (or the bar,
    # q = 0, entering on my 1..6) hits a blot on my point p > q at distance p - q.
    shooters = [q for q in range(1, 25) if theirs_in_mine[q]] + ([0] if board.bar[opp] else [])
    for p in range(1, 25):
        if me[p] != 1:
            continue
        direct = sum(1 for q in shooters if 1 <= p - q <= 6)
        indirect = sum(1 for q in shooters if 7 <= p - q <= 12)
        stake = (25 - p) / 24  # how far the blot has come from its back
        value -= stake * (W_DIRECT * min(direct, 3) + W_INDIRECT * min(indirect, 3))
    return value
