"""A hand-written evaluation of long nardy positions (RULES.md), fast enough for search.

:func:`evaluate` turns a position into an **equity** for one side: the expected value of
the game's outcome, where each of the four outcomes (win oin, win mars, lose oin, lose
mars) is worth :class:`Values` (points by default, match winning chances with
:func:`match_values`). It is built from three estimates:

* ``p_win``: the chance that the side wins, a logistic function of features that
  compare the two sides (``CONTACT`` weights while the armies can still block each other,
  ``RACE`` weights once they have passed each other);
* ``p_mars_win`` / ``p_mars_loss``: the chance that a win (a loss) is a mars, given that
  it happens, a logistic function of how far the loser is from bearing off its first
  checker against the winner's race (``MARS`` weights); exactly 0 when the loser has
  already borne off a checker.

The features, for each side S against its opponent T (always taken as "S minus T", so
the evaluation is antisymmetric: what is good for one side is bad for the other):

``pips``        the race: T's pip count minus S's, in 10s of pips.
``head``        checkers still on the head (one may leave per turn: a time bomb).
``head_late``   head checkers weighted by how far the opponent has got (worse late).
``off``         checkers borne off.
``home``        checkers in the home (points 6..1).
``cross``       pips S still needs to bring every checker home, in 10s.
``points``      distinct points held outside the head (spread: flexibility, blocking).
``stack``       checkers beyond 3 on one point (outside the head): rigid, wasted.
``key``         points held in the quarter just after the opponent's head (S's 11..7 =
                T's 23..19), which every one of T's head checkers has to pass (a small
                negative weight: ``block1..6`` already value them, a little too much).
``block1..6``   T's checkers with exactly 1..6 of the six points in front of them held
                by S: their blocked landing spots. A 4- or 5-point block right in front
                of a checker (or of T's head) shows up as ``block4``/``block5``; 6 is
                possible only when the six-point rule allows it. T's head checkers all
                count (HEAD_CAP): a block in front of the head holds the whole army.
``run3..5``     T's checkers anywhere behind a run of 3, 4, 5+ consecutive points of S
                along T's path (weight 0 for now: with ``block1..6`` in, it did not help).
``roll``        +1 when S is on roll (the side to move has a tempo, about 8 pips).

In a race only the race matters: effective pip counts (pips plus a penalty for checkers
stacked deep in the home and for gaps), checkers left and the roll. Mars: a win is a
mars when the loser has borne off nothing; its chance compares the pips the loser needs
to reach its first bear-off with the winner's race.

How the weights were set: by hand first, then tuned by play. Each change was tried in
greedy-vs-greedy matches of 300-400 duplicate-dice pairs against the weights before it
and kept when it won clearly (more blocking, a stronger head penalty, crossover pips,
no bonus for the quarter after the opponent's head beyond what the blocks give, ...).
A logistic regression fit of the weights to self-play outcomes (``engines/tune.py``)
predicts outcomes well but plays far worse (its weights pick up correlations, not
causes), so it is only a starting point.

Speed: the same arithmetic is compiled in ``_evaluate.c`` (built at install when a C
compiler is there, like the move generator): :func:`estimates`, :func:`evaluate`,
:func:`evaluate_ends` and :func:`worst_end` use it when it is present (about 1 microsecond a
position instead of 25), and the pure-Python reference (:func:`estimates_py`,
:func:`evaluate_py`) otherwise or when ``NARDY_PURE_PYTHON`` is set. The two give
bit-identical equities, so an engine makes the same choices with either
(tests/engines/test_evaluate_compiled.py). The weights below stay the one place where the
evaluation is tuned: they are handed to the compiled code when this module is imported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import mul
from types import ModuleType

from nardy import Color, Play, Position
from nardy.compiled import load

# ---------------------------------------------------------------------------------------
# Weights: the single place where the evaluation is tuned.
# ---------------------------------------------------------------------------------------

#: Contact phase: logit of S's winning chance = sum of weight * feature (S minus T).
CONTACT: dict[str, float] = {
    "pips": 0.70,
    "head": -0.30,
    "head_late": -1.20,
    "off": 0.10,
    "home": -0.05,
    "cross": -0.20,
    "points": 0.12,
    "stack": -0.15,
    "key": -0.15,
    "block1": 0.03,
    "block2": 0.09,
    "block3": 0.18,
    "block4": 0.30,
    "block5": 0.48,
    "block6": 0.75,
    "run3": 0.0,
    "run4": 0.0,
    "run5": 0.0,
    "roll": 0.30,
}

#: Race phase (no more contact): logit = weights * features scaled by the race length.
RACE: dict[str, float] = {
    "epc": 3.2,  # (T's effective pips - S's) / sqrt(total pips)
    "roll": 0.75,  # S on roll (+1) or not (-1), / sqrt(total pips) * 10
}

#: Mars given a win: logit = weights * features of the loser's lag.
MARS: dict[str, float] = {
    "bias": -1.0,
    "lag": 2.0,  # (loser's pips to its first bear-off - winner's effective pips) / sqrt
    "roll": 0.2,  # winner on roll
}

#: Checkers on T's head counted in ``block1..6`` (they leave one a turn, not all at once).
HEAD_CAP = 15

FEATURES = tuple(CONTACT)
EPC_STACK = (0.0, 2.0, 1.0, 0.5)  # wasted pips per extra checker on home points 1, 2, 3
EPC_GAP = 1.0  # wasted pips per empty point among 4..6 while checkers are above it


# ---------------------------------------------------------------------------------------
# Outcome values
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Values:
    """What each outcome is worth to the side evaluated (any affine scale)."""

    win: float = 1.0
    win_mars: float = 2.0
    loss: float = -1.0
    loss_mars: float = -2.0


POINTS = Values()
#: Mars rate assumed by the match equity table.
MARS_RATE = 0.15


def match_winning_chance(need: int, opp_need: int, mars_rate: float = MARS_RATE) -> float:
    """Chance to win a match needing ``need`` points against ``opp_need``, if each game is
    won by either side half the time and is a mars with probability ``mars_rate``."""
    table: dict[tuple[int, int], float] = {}

    def mwc(a: int, b: int) -> float:
        if a <= 0:
            return 1.0
        if b <= 0:
            return 0.0
        key = (a, b)
        if key not in table:
            g = mars_rate
            table[key] = 0.5 * (
                (1 - g) * mwc(a - 1, b)
                + g * mwc(a - 2, b)
                + (1 - g) * mwc(a, b - 1)
                + g * mwc(a, b - 2)
            )
        return table[key]

    return mwc(need, opp_need)


@lru_cache(maxsize=256)
def match_values(target: int, mine: int, theirs: int) -> Values:
    """Outcome values in match winning chances, rescaled so that an oin is worth about 1.

    With a match to ``target`` points at ``mine``:``theirs``: a mars is worth no more than
    an oin when one point is enough, and double when the points count in full.
    """
    if target <= 0:
        return POINTS
    need, opp = max(target - mine, 1), max(target - theirs, 1)
    w1 = match_winning_chance(need - 1, opp)
    w2 = match_winning_chance(need - 2, opp)
    l1 = match_winning_chance(need, opp - 1)
    l2 = match_winning_chance(need, opp - 2)
    mid, half = (w1 + l1) / 2, (w1 - l1) / 2 or 1.0
    return Values((w1 - mid) / half, (w2 - mid) / half, (l1 - mid) / half, (l2 - mid) / half)


def values_for(match) -> Values:
    """Outcome values for ``match``: None (points), a :class:`Values`, or a
    ``(target, my_points, their_points)`` tuple (match winning chances)."""
    if match is None:
        return POINTS
    if isinstance(match, Values):
        return match
    target, mine, theirs = match
    return match_values(int(target), int(mine), int(theirs))


# ---------------------------------------------------------------------------------------
# Features
# ---------------------------------------------------------------------------------------


def sides(board: tuple[int, ...], color: Color) -> tuple[list[int], list[int]]:
    """``(s, t)``: each side's counts by its own point, index ``p - 1`` (S = ``color``)."""
    w = [c if c > 0 else 0 for c in reversed(board)]
    b = [-c if c < 0 else 0 for c in board[11::-1] + board[:11:-1]]
    return (w, b) if color is Color.WHITE else (b, w)


_R24 = range(1, 25)
_R18 = range(1, 19)
_KEY = 0b11111 << 18  # T's points 23..19 (index q - 1)


def _side(s: list[int], t: list[int]) -> tuple:
    """Per-side numbers for S (counts ``s``) against T (counts ``t``), by own points."""
    pips = sum(map(mul, s, _R24))
    home = s[0] + s[1] + s[2] + s[3] + s[4] + s[5]
    cross = sum(map(mul, s[6:], _R18))
    inner = s[:23]
    points = 23 - inner.count(0)
    stack = sum([c - 3 for c in inner if c > 3])
    # S's points along T's path as a bit mask: bit q - 1 for T's point q.
    hmask = 0
    bit = 1
    for c in s[12:] + s[:12]:
        if c:
            hmask |= bit
        bit <<= 1
    key = (hmask & _KEY).bit_count()
    # blocked landing spots in front of every T checker (the six points below it)
    b = [0, 0, 0, 0, 0, 0, 0]
    wide = hmask << 6
    for j in range(24):
        tj = t[j]
        if tj:
            b[((wide >> j) & 63).bit_count()] += tj if j < 23 or tj < HEAD_CAP else HEAD_CAP
    # runs of held points and T checkers behind them (further from T's home)
    r3 = r4 = r5 = 0
    h = hmask & (hmask >> 1) & (hmask >> 2)  # bits where a run of 3+ starts
    if h:
        h = hmask
        while h:
            i = (h & -h).bit_length() - 1
            sh = h >> i
            n = (sh ^ (sh + 1)).bit_length() - 1  # run length
            if n >= 3:
                behind = sum(t[i + n :])
                if n == 3:
                    r3 += behind
                elif n == 4:
                    r4 += behind
                else:
                    r5 += behind
            h &= ~(((1 << n) - 1) << i)
    return pips, sum(s), home, cross, points, stack, key, b, r3, r4, r5, s[23]


def _contact(s: list[int], t: list[int]) -> bool:
    """True while some checker of one side still has to pass a checker of the other."""
    top = 23
    while top >= 0 and not s[top]:
        top -= 1
    ts = t[12:] + t[:12]  # T's checkers by S's points
    if any(ts[:top]):
        return True
    top = 23
    while top >= 0 and not t[top]:
        top -= 1
    st = s[12:] + s[:12]
    return any(st[:top])


def _epc(s: list[int], pips: int) -> float:
    """Effective pip count of a side in a race: pips plus bear-off waste."""
    e = pips + EPC_STACK[1] * max(0, s[0] - 1) + EPC_STACK[2] * max(0, s[1] - 1)
    e += EPC_STACK[3] * max(0, s[2] - 2)
    above = any(s[6:])
    for i in (5, 4, 3):
        if s[i]:
            above = True
        elif above:
            e += EPC_GAP
    return e


def _mars_lag(t: list[int], s_epc: float) -> float:
    """How far the loser T is behind in the race to its first checker off, scaled."""
    need = sum(map(mul, t[6:], _R18))
    # once all are home, a checker must still reach off: at least its own point
    for i in range(6):
        if t[i]:
            need += i + 1
            break
    else:
        need += 1
    return (need + 4 - s_epc) / math.sqrt(need + s_epc + 16)


def features(pos: Position, color: Color) -> dict[str, float]:
    """The contact features of ``pos`` for ``color`` (S) against its opponent (T)."""
    s, t = sides(pos.board, color)
    a = _side(s, t)
    z = _side(t, s)
    return _contact_features(a, z, 1 if pos.turn is color else -1)


def _contact_features(a: tuple, z: tuple, roll: int) -> dict[str, float]:
    ps, pt = a[0], z[0]
    prog_t = (360 - pt) / 360  # how far each side's opponent has got
    prog_s = (360 - ps) / 360
    ba, bz = a[7], z[7]
    return {
        "pips": (pt - ps) / 10,
        "head": a[11] - z[11],
        "head_late": a[11] * prog_t - z[11] * prog_s,
        "off": (15 - a[1]) - (15 - z[1]),
        "home": a[2] - z[2],
        "cross": (a[3] - z[3]) / 10,
        "points": a[4] - z[4],
        "stack": a[5] - z[5],
        "key": a[6] - z[6],
        "block1": ba[1] - bz[1],
        "block2": ba[2] - bz[2],
        "block3": ba[3] - bz[3],
        "block4": ba[4] - bz[4],
        "block5": ba[5] - bz[5],
        "block6": ba[6] - bz[6],
        "run3": a[8] - z[8],
        "run4": a[9] - z[9],
        "run5": a[10] - z[10],
        "roll": roll,
    }


def _sigmoid(x: float) -> float:
    if x < -30:
        return 0.0
    if x > 30:
        return 1.0
    return 1.0 / (1.0 + math.exp(-x))


def estimates_py(pos: Position, color: Color) -> tuple[float, float, float]:
    """``(p_win, p_mars_given_win, p_mars_given_loss)`` for ``color`` (the reference)."""
    s, t = sides(pos.board, color)
    on_s = sum(s)
    on_t = sum(t)
    if on_s == 0 or on_t == 0:  # the game is over
        if on_s == 0:
            return 1.0, (1.0 if on_t == 15 else 0.0), 0.0
        return 0.0, 0.0, (1.0 if on_s == 15 else 0.0)
    roll = 1 if pos.turn is color else -1
    ps = sum(map(mul, s, _R24))
    pt = sum(map(mul, t, _R24))
    es, et = _epc(s, ps), _epc(t, pt)
    if _contact(s, t):
        a = _side(s, t)
        z = _side(t, s)
        f = _contact_features(a, z, roll)
        x = 0.0
        for name, w in CONTACT.items():
            x += w * f[name]
    else:
        scale = math.sqrt(ps + pt + 20)
        x = RACE["epc"] * (et - es) / scale + RACE["roll"] * roll * 10 / scale
    p = _sigmoid(x)
    mw = (
        _sigmoid(MARS["bias"] + MARS["lag"] * _mars_lag(t, es) + MARS["roll"] * roll)
        if (on_t == 15)
        else 0.0
    )
    ml = (
        _sigmoid(MARS["bias"] + MARS["lag"] * _mars_lag(s, et) - MARS["roll"] * roll)
        if (on_s == 15)
        else 0.0
    )
    return p, mw, ml


def evaluate_py(pos: Position, color: Color, values: Values = POINTS) -> float:
    """The equity of ``pos`` for ``color``: expected outcome value (the reference)."""
    p, mw, ml = estimates_py(pos, color)
    v = values
    return p * (v.win + mw * (v.win_mars - v.win)) + (1 - p) * (
        v.loss + ml * (v.loss_mars - v.loss)
    )


# ---------------------------------------------------------------------------------------
# The compiled evaluation (same results), when it was built
# ---------------------------------------------------------------------------------------


def _load() -> ModuleType | None:
    module = load("engines._evaluate")
    if module is not None and tuple(module.FEATURES) != FEATURES:
        raise ImportError("engines._evaluate is stale: rebuild it (make install)")
    return module


COMPILED: ModuleType | None = _load()
#: Everything the compiled code needs to know of the weights, in its order.
_WEIGHTS: tuple[float, ...] = (
    *(float(CONTACT[name]) for name in FEATURES),
    float(RACE["epc"]),
    float(RACE["roll"]),
    float(MARS["bias"]),
    float(MARS["lag"]),
    float(MARS["roll"]),
    *map(float, EPC_STACK[1:]),
    float(EPC_GAP),
    float(HEAD_CAP),
)


def estimates(pos: Position, color: Color) -> tuple[float, float, float]:
    """``(p_win, p_mars_given_win, p_mars_given_loss)`` for ``color``."""
    if COMPILED is None:
        return estimates_py(pos, color)
    return COMPILED.estimates(pos.board, color, pos.turn, _WEIGHTS)


def evaluate(pos: Position, color: Color, values: Values = POINTS) -> float:
    """The equity of ``pos`` for ``color``: expected outcome value (see :class:`Values`)."""
    if COMPILED is None:
        return evaluate_py(pos, color, values)
    return COMPILED.evaluate(pos.board, color, pos.turn, _WEIGHTS, values)


def evaluate_ends(plays: Sequence[Play], color: Color, values: Values = POINTS) -> list[float]:
    """The equity for ``color`` of every play's end position, in order."""
    if COMPILED is None:
        return [evaluate_py(p.end, color, values) for p in plays]
    return COMPILED.evaluate_ends(plays, color, _WEIGHTS, values)


def worst_end(plays: Sequence[Play], color: Color, values: Values = POINTS) -> float:
    """The lowest equity for ``color`` among the plays' end positions (at least one play):
    the value of the opponent's best reply, when ``plays`` are its replies."""
    if COMPILED is None:
        return min(evaluate_py(p.end, color, values) for p in plays)
    return COMPILED.worst_end(plays, color, _WEIGHTS, values)
