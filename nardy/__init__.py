"""Long nardy: the pure game (positions, notation, legal plays, scoring) and the client SDK."""

import os

# nardy processes start children with fork+exec only (engines, checkers); grpc's fork
# handlers are not needed for that and only log noise (notes/grpc-trio.md, pitfall 5).
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from nardy.match import Colours, GameOptions, Match, Opening, opening_throw
from nardy.movegen import OFF, Play, Step, legal_plays
from nardy.notation import NotationError, parse_moves
from nardy.position import CHECKERS, HEAD, Color, Position, PositionError
from nardy.scoring import GameResult, Kind, Termination, forfeit, result
from nardy.turn import IllegalPlay, TurnBuilder, match_play
from nardy.variant import VARIANTS, Variant, variant

__all__ = [
    "CHECKERS",
    "HEAD",
    "OFF",
    "VARIANTS",
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
    "Step",
    "Termination",
    "TurnBuilder",
    "Variant",
    "forfeit",
    "legal_plays",
    "match_play",
    "opening_throw",
    "parse_moves",
    "result",
    "variant",
]
