from nardy.v1 import game_pb2 as _game_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LadderOptions(_message.Message):
    __slots__ = ("turn_time_ms", "time_bank_ms", "max_games_per_bot", "illegal_play_limit", "max_games", "max_concurrent_games", "variant")
    TURN_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_BANK_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_GAMES_PER_BOT_FIELD_NUMBER: _ClassVar[int]
    ILLEGAL_PLAY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MAX_GAMES_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENT_GAMES_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    turn_time_ms: int
    time_bank_ms: int
    max_games_per_bot: int
    illegal_play_limit: int
    max_games: int
    max_concurrent_games: int
    variant: str
    def __init__(self, turn_time_ms: _Optional[int] = ..., time_bank_ms: _Optional[int] = ..., max_games_per_bot: _Optional[int] = ..., illegal_play_limit: _Optional[int] = ..., max_games: _Optional[int] = ..., max_concurrent_games: _Optional[int] = ..., variant: _Optional[str] = ...) -> None: ...

class CreateLadderRequest(_message.Message):
    __slots__ = ("name", "options")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    options: LadderOptions
    def __init__(self, name: _Optional[str] = ..., options: _Optional[_Union[LadderOptions, _Mapping]] = ...) -> None: ...

class CreateLadderResponse(_message.Message):
    __slots__ = ("name", "created", "options")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    name: str
    created: bool
    options: LadderOptions
    def __init__(self, name: _Optional[str] = ..., created: _Optional[bool] = ..., options: _Optional[_Union[LadderOptions, _Mapping]] = ...) -> None: ...

class JoinLadderRequest(_message.Message):
    __slots__ = ("ladder", "ready")
    LADDER_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    ready: bool
    def __init__(self, ladder: _Optional[str] = ..., ready: _Optional[bool] = ...) -> None: ...

class JoinLadderResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStandingsRequest(_message.Message):
    __slots__ = ("ladder",)
    LADDER_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    def __init__(self, ladder: _Optional[str] = ...) -> None: ...

class Interval(_message.Message):
    __slots__ = ("value", "low", "high")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    value: float
    low: float
    high: float
    def __init__(self, value: _Optional[float] = ..., low: _Optional[float] = ..., high: _Optional[float] = ...) -> None: ...

class StandingsRow(_message.Message):
    __slots__ = ("rank", "player", "elo", "skill_mu", "skill_sigma", "skill_conservative", "games", "wins", "losses", "points_for", "points_against", "mars_wins", "mars_losses", "timeouts", "disconnects", "illegal_play_losses", "avg_move_ms", "playing", "ready")
    RANK_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    ELO_FIELD_NUMBER: _ClassVar[int]
    SKILL_MU_FIELD_NUMBER: _ClassVar[int]
    SKILL_SIGMA_FIELD_NUMBER: _ClassVar[int]
    SKILL_CONSERVATIVE_FIELD_NUMBER: _ClassVar[int]
    GAMES_FIELD_NUMBER: _ClassVar[int]
    WINS_FIELD_NUMBER: _ClassVar[int]
    LOSSES_FIELD_NUMBER: _ClassVar[int]
    POINTS_FOR_FIELD_NUMBER: _ClassVar[int]
    POINTS_AGAINST_FIELD_NUMBER: _ClassVar[int]
    MARS_WINS_FIELD_NUMBER: _ClassVar[int]
    MARS_LOSSES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
    DISCONNECTS_FIELD_NUMBER: _ClassVar[int]
    ILLEGAL_PLAY_LOSSES_FIELD_NUMBER: _ClassVar[int]
    AVG_MOVE_MS_FIELD_NUMBER: _ClassVar[int]
    PLAYING_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    rank: int
    player: _game_pb2.Player
    elo: Interval
    skill_mu: float
    skill_sigma: float
    skill_conservative: float
    games: int
    wins: int
    losses: int
    points_for: int
    points_against: int
    mars_wins: int
    mars_losses: int
    timeouts: int
    disconnects: int
    illegal_play_losses: int
    avg_move_ms: float
    playing: int
    ready: bool
    def __init__(self, rank: _Optional[int] = ..., player: _Optional[_Union[_game_pb2.Player, _Mapping]] = ..., elo: _Optional[_Union[Interval, _Mapping]] = ..., skill_mu: _Optional[float] = ..., skill_sigma: _Optional[float] = ..., skill_conservative: _Optional[float] = ..., games: _Optional[int] = ..., wins: _Optional[int] = ..., losses: _Optional[int] = ..., points_for: _Optional[int] = ..., points_against: _Optional[int] = ..., mars_wins: _Optional[int] = ..., mars_losses: _Optional[int] = ..., timeouts: _Optional[int] = ..., disconnects: _Optional[int] = ..., illegal_play_losses: _Optional[int] = ..., avg_move_ms: _Optional[float] = ..., playing: _Optional[int] = ..., ready: _Optional[bool] = ...) -> None: ...

class GetStandingsResponse(_message.Message):
    __slots__ = ("ladder", "rows", "finished_games", "voided_games", "games_in_progress", "options")
    LADDER_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_GAMES_FIELD_NUMBER: _ClassVar[int]
    VOIDED_GAMES_FIELD_NUMBER: _ClassVar[int]
    GAMES_IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    rows: _containers.RepeatedCompositeFieldContainer[StandingsRow]
    finished_games: int
    voided_games: int
    games_in_progress: int
    options: LadderOptions
    def __init__(self, ladder: _Optional[str] = ..., rows: _Optional[_Iterable[_Union[StandingsRow, _Mapping]]] = ..., finished_games: _Optional[int] = ..., voided_games: _Optional[int] = ..., games_in_progress: _Optional[int] = ..., options: _Optional[_Union[LadderOptions, _Mapping]] = ...) -> None: ...

class GetCrosstableRequest(_message.Message):
    __slots__ = ("ladder",)
    LADDER_FIELD_NUMBER: _ClassVar[int]
    ladder: str
    def __init__(self, ladder: _Optional[str] = ...) -> None: ...

class CrosstableCell(_message.Message):
    __slots__ = ("player", "opponent", "pairs_lost", "pairs_split", "pairs_won", "wins", "losses", "points_for", "points_against")
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    OPPONENT_FIELD_NUMBER: _ClassVar[int]
    PAIRS_LOST_FIELD_NUMBER: _ClassVar[int]
    PAIRS_SPLIT_FIELD_NUMBER: _ClassVar[int]
    PAIRS_WON_FIELD_NUMBER: _ClassVar[int]
    WINS_FIELD_NUMBER: _ClassVar[int]
    LOSSES_FIELD_NUMBER: _ClassVar[int]
    POINTS_FOR_FIELD_NUMBER: _ClassVar[int]
    POINTS_AGAINST_FIELD_NUMBER: _ClassVar[int]
    player: str
    opponent: str
    pairs_lost: int
    pairs_split: int
    pairs_won: int
    wins: int
    losses: int
    points_for: int
    points_against: int
    def __init__(self, player: _Optional[str] = ..., opponent: _Optional[str] = ..., pairs_lost: _Optional[int] = ..., pairs_split: _Optional[int] = ..., pairs_won: _Optional[int] = ..., wins: _Optional[int] = ..., losses: _Optional[int] = ..., points_for: _Optional[int] = ..., points_against: _Optional[int] = ...) -> None: ...

class GetCrosstableResponse(_message.Message):
    __slots__ = ("cells",)
    CELLS_FIELD_NUMBER: _ClassVar[int]
    cells: _containers.RepeatedCompositeFieldContainer[CrosstableCell]
    def __init__(self, cells: _Optional[_Iterable[_Union[CrosstableCell, _Mapping]]] = ...) -> None: ...
