"""Nardy: the pure games behind one variant API (:mod:`nardy.variant`) and the client SDK.

The names exported here are the shared types and, for convenience, long nardy's rules
(``Position``, ``legal_plays``, ...); code that must work for every variant uses
:func:`variant` instead.
"""

import os

# nardy processes start children with fork+exec only (engines, checkers); grpc's fork
# handlers are not needed for that and only log noise.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from nardy.game import (
    Color,
    GameResult,
    IllegalPlay,
    NotationError,
    PositionError,
    ResultKind,
    Termination,
)
from nardy.long.movegen import OFF, Play, Step, end_boards, legal_plays
from nardy.long.notation import parse_moves
from nardy.long.position import CHECKERS, HEAD, Position
from nardy.long.scoring import Kind, forfeit, result
from nardy.long.turn import TurnBuilder, match_play
from nardy.match import Colours, GameOptions, Match, Opening, opening_throw
from nardy.variant import BAR, Board, Variant, available, variant

__all__ = [
    "BAR",
    "CHECKERS",
    "HEAD",
    "OFF",
    "Board",
    "Color",
    "Colours",
    "GameOptions",
    "GameResult",
    "IllegalPlay",
    "Kind",
    "Match",
    "NotationError",
    "Opening",
    "Play",
    "Position",
    "PositionError",
    "ResultKind",
    "Step",
    "Termination",
    "TurnBuilder",
    "Variant",
    "available",
    "end_boards",
    "forfeit",
    "legal_plays",
    "match_play",
    "opening_throw",
    "parse_moves",
    "result",
    "variant",
]
