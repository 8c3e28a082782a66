import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Color(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COLOR_UNSPECIFIED: _ClassVar[Color]
    COLOR_WHITE: _ClassVar[Color]
    COLOR_BLACK: _ClassVar[Color]

class GameStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GAME_STATUS_UNSPECIFIED: _ClassVar[GameStatus]
    GAME_STATUS_WAITING: _ClassVar[GameStatus]
    GAME_STATUS_IN_PROGRESS: _ClassVar[GameStatus]
    GAME_STATUS_FINISHED: _ClassVar[GameStatus]
    GAME_STATUS_ABORTED: _ClassVar[GameStatus]

class Termination(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TERMINATION_UNSPECIFIED: _ClassVar[Termination]
    TERMINATION_NORMAL: _ClassVar[Termination]
    TERMINATION_TIMEOUT: _ClassVar[Termination]
    TERMINATION_RESIGNATION: _ClassVar[Termination]
    TERMINATION_ABANDONMENT: _ClassVar[Termination]
    TERMINATION_ILLEGAL_PLAYS: _ClassVar[Termination]

class ResultKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESULT_KIND_UNSPECIFIED: _ClassVar[ResultKind]
    RESULT_KIND_OIN: _ClassVar[ResultKind]
    RESULT_KIND_MARS: _ClassVar[ResultKind]
    RESULT_KIND_KOKS: _ClassVar[ResultKind]
    RESULT_KIND_SINGLE: _ClassVar[ResultKind]
    RESULT_KIND_GAMMON: _ClassVar[ResultKind]
    RESULT_KIND_BACKGAMMON: _ClassVar[ResultKind]

class ColourRule(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COLOUR_RULE_UNSPECIFIED: _ClassVar[ColourRule]
    COLOUR_RULE_ALTERNATE: _ClassVar[ColourRule]
    COLOUR_RULE_THROW_EACH_GAME: _ClassVar[ColourRule]

class OpeningRule(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OPENING_RULE_UNSPECIFIED: _ClassVar[OpeningRule]
    OPENING_RULE_FRESH_ROLL: _ClassVar[OpeningRule]
    OPENING_RULE_USE_OPENING_DICE: _ClassVar[OpeningRule]

class EventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_TYPE_UNSPECIFIED: _ClassVar[EventType]
    EVENT_TYPE_SNAPSHOT: _ClassVar[EventType]
    EVENT_TYPE_GAME_STARTED: _ClassVar[EventType]
    EVENT_TYPE_TURN_STARTED: _ClassVar[EventType]
    EVENT_TYPE_PLAY_MADE: _ClassVar[EventType]
    EVENT_TYPE_TURN_PASSED: _ClassVar[EventType]
    EVENT_TYPE_GAME_FINISHED: _ClassVar[EventType]
    EVENT_TYPE_GAME_ABORTED: _ClassVar[EventType]
    EVENT_TYPE_HEARTBEAT: _ClassVar[EventType]
    EVENT_TYPE_SERVER_SHUTDOWN: _ClassVar[EventType]
COLOR_UNSPECIFIED: Color
COLOR_WHITE: Color
COLOR_BLACK: Color
GAME_STATUS_UNSPECIFIED: GameStatus
GAME_STATUS_WAITING: GameStatus
GAME_STATUS_IN_PROGRESS: GameStatus
GAME_STATUS_FINISHED: GameStatus
GAME_STATUS_ABORTED: GameStatus
TERMINATION_UNSPECIFIED: Termination
TERMINATION_NORMAL: Termination
TERMINATION_TIMEOUT: Termination
TERMINATION_RESIGNATION: Termination
TERMINATION_ABANDONMENT: Termination
TERMINATION_ILLEGAL_PLAYS: Termination
RESULT_KIND_UNSPECIFIED: ResultKind
RESULT_KIND_OIN: ResultKind
RESULT_KIND_MARS: ResultKind
RESULT_KIND_KOKS: ResultKind
RESULT_KIND_SINGLE: ResultKind
RESULT_KIND_GAMMON: ResultKind
RESULT_KIND_BACKGAMMON: ResultKind
COLOUR_RULE_UNSPECIFIED: ColourRule
COLOUR_RULE_ALTERNATE: ColourRule
COLOUR_RULE_THROW_EACH_GAME: ColourRule
OPENING_RULE_UNSPECIFIED: OpeningRule
OPENING_RULE_FRESH_ROLL: OpeningRule
OPENING_RULE_USE_OPENING_DICE: OpeningRule
EVENT_TYPE_UNSPECIFIED: EventType
EVENT_TYPE_SNAPSHOT: EventType
EVENT_TYPE_GAME_STARTED: EventType
EVENT_TYPE_TURN_STARTED: EventType
EVENT_TYPE_PLAY_MADE: EventType
EVENT_TYPE_TURN_PASSED: EventType
EVENT_TYPE_GAME_FINISHED: EventType
EVENT_TYPE_GAME_ABORTED: EventType
EVENT_TYPE_HEARTBEAT: EventType
EVENT_TYPE_SERVER_SHUTDOWN: EventType

class GameOptions(_message.Message):
    __slots__ = ("variant", "koks", "opening", "colours", "turn_time_ms", "time_bank_ms", "auto_play_forced", "illegal_play_limit")
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    KOKS_FIELD_NUMBER: _ClassVar[int]
    OPENING_FIELD_NUMBER: _ClassVar[int]
    COLOURS_FIELD_NUMBER: _ClassVar[int]
    TURN_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    TIME_BANK_MS_FIELD_NUMBER: _ClassVar[int]
    AUTO_PLAY_FORCED_FIELD_NUMBER: _ClassVar[int]
    ILLEGAL_PLAY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    variant: str
    koks: bool
    opening: OpeningRule
    colours: ColourRule
    turn_time_ms: int
    time_bank_ms: int
    auto_play_forced: bool
    illegal_play_limit: int
    def __init__(self, variant: _Optional[str] = ..., koks: _Optional[bool] = ..., opening: _Optional[_Union[OpeningRule, str]] = ..., colours: _Optional[_Union[ColourRule, str]] = ..., turn_time_ms: _Optional[int] = ..., time_bank_ms: _Optional[int] = ..., auto_play_forced: _Optional[bool] = ..., illegal_play_limit: _Optional[int] = ...) -> None: ...

class Board(_message.Message):
    __slots__ = ("points", "white_off", "black_off", "white_bar", "black_bar")
    POINTS_FIELD_NUMBER: _ClassVar[int]
    WHITE_OFF_FIELD_NUMBER: _ClassVar[int]
    BLACK_OFF_FIELD_NUMBER: _ClassVar[int]
    WHITE_BAR_FIELD_NUMBER: _ClassVar[int]
    BLACK_BAR_FIELD_NUMBER: _ClassVar[int]
    points: _containers.RepeatedScalarFieldContainer[int]
    white_off: int
    black_off: int
    white_bar: int
    black_bar: int
    def __init__(self, points: _Optional[_Iterable[int]] = ..., white_off: _Optional[int] = ..., black_off: _Optional[int] = ..., white_bar: _Optional[int] = ..., black_bar: _Optional[int] = ...) -> None: ...

class Step(_message.Message):
    __slots__ = ("to", "die")
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    DIE_FIELD_NUMBER: _ClassVar[int]
    to: int
    die: int
    def __init__(self, to: _Optional[int] = ..., die: _Optional[int] = ..., **kwargs) -> None: ...

class LegalPlay(_message.Message):
    __slots__ = ("notation", "end_position", "steps")
    NOTATION_FIELD_NUMBER: _ClassVar[int]
    END_POSITION_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    notation: str
    end_position: str
    steps: _containers.RepeatedCompositeFieldContainer[Step]
    def __init__(self, notation: _Optional[str] = ..., end_position: _Optional[str] = ..., steps: _Optional[_Iterable[_Union[Step, _Mapping]]] = ...) -> None: ...

class Clock(_message.Message):
    __slots__ = ("remaining_ms", "bank_ms")
    REMAINING_MS_FIELD_NUMBER: _ClassVar[int]
    BANK_MS_FIELD_NUMBER: _ClassVar[int]
    remaining_ms: int
    bank_ms: int
    def __init__(self, remaining_ms: _Optional[int] = ..., bank_ms: _Optional[int] = ...) -> None: ...

class Player(_message.Message):
    __slots__ = ("name", "bot", "owner", "open_seat")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    OPEN_SEAT_FIELD_NUMBER: _ClassVar[int]
    name: str
    bot: bool
    owner: str
    open_seat: bool
    def __init__(self, name: _Optional[str] = ..., bot: _Optional[bool] = ..., owner: _Optional[str] = ..., open_seat: _Optional[bool] = ...) -> None: ...

class GameResult(_message.Message):
    __slots__ = ("winner", "kind", "termination", "points")
    WINNER_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TERMINATION_FIELD_NUMBER: _ClassVar[int]
    POINTS_FIELD_NUMBER: _ClassVar[int]
    winner: Color
    kind: ResultKind
    termination: Termination
    points: int
    def __init__(self, winner: _Optional[_Union[Color, str]] = ..., kind: _Optional[_Union[ResultKind, str]] = ..., termination: _Optional[_Union[Termination, str]] = ..., points: _Optional[int] = ...) -> None: ...

class MatchScore(_message.Message):
    __slots__ = ("target", "white_points", "black_points", "over")
    TARGET_FIELD_NUMBER: _ClassVar[int]
    WHITE_POINTS_FIELD_NUMBER: _ClassVar[int]
    BLACK_POINTS_FIELD_NUMBER: _ClassVar[int]
    OVER_FIELD_NUMBER: _ClassVar[int]
    target: int
    white_points: int
    black_points: int
    over: bool
    def __init__(self, target: _Optional[int] = ..., white_points: _Optional[int] = ..., black_points: _Optional[int] = ..., over: _Optional[bool] = ...) -> None: ...

class GameState(_message.Message):
    __slots__ = ("game_id", "match_id", "game_number", "status", "options", "white", "black", "position", "board", "side_to_move", "dice", "turn_id", "white_clock", "black_clock", "match", "result", "legal_plays", "your_color", "seeded", "next_game_id", "white_refused", "black_refused", "ladder", "first_player", "second_player", "rated", "dice_commitment", "server_seed", "client_seeds", "public_seed", "scripted_dice", "challenge_pending")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_NUMBER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    WHITE_FIELD_NUMBER: _ClassVar[int]
    BLACK_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    BOARD_FIELD_NUMBER: _ClassVar[int]
    SIDE_TO_MOVE_FIELD_NUMBER: _ClassVar[int]
    DICE_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    WHITE_CLOCK_FIELD_NUMBER: _ClassVar[int]
    BLACK_CLOCK_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    LEGAL_PLAYS_FIELD_NUMBER: _ClassVar[int]
    YOUR_COLOR_FIELD_NUMBER: _ClassVar[int]
    SEEDED_FIELD_NUMBER: _ClassVar[int]
    NEXT_GAME_ID_FIELD_NUMBER: _ClassVar[int]
    WHITE_REFUSED_FIELD_NUMBER: _ClassVar[int]
    BLACK_REFUSED_FIELD_NUMBER: _ClassVar[int]
    LADDER_FIELD_NUMBER: _ClassVar[int]
    FIRST_PLAYER_FIELD_NUMBER: _ClassVar[int]
    SECOND_PLAYER_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    DICE_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    SERVER_SEED_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SEEDS_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_SEED_FIELD_NUMBER: _ClassVar[int]
    SCRIPTED_DICE_FIELD_NUMBER: _ClassVar[int]
    CHALLENGE_PENDING_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    match_id: str
    game_number: int
    status: GameStatus
    options: GameOptions
    white: Player
    black: Player
    position: str
    board: Board
    side_to_move: Color
    dice: _containers.RepeatedScalarFieldContainer[int]
    turn_id: int
    white_clock: Clock
    black_clock: Clock
    match: MatchScore
    result: GameResult
    legal_plays: _containers.RepeatedCompositeFieldContainer[LegalPlay]
    your_color: Color
    seeded: bool
    next_game_id: str
    white_refused: int
    black_refused: int
    ladder: str
    first_player: Player
    second_player: Player
    rated: bool
    dice_commitment: str
    server_seed: str
    client_seeds: _containers.RepeatedScalarFieldContainer[str]
    public_seed: bool
    scripted_dice: int
    challenge_pending: bool
    def __init__(self, game_id: _Optional[str] = ..., match_id: _Optional[str] = ..., game_number: _Optional[int] = ..., status: _Optional[_Union[GameStatus, str]] = ..., options: _Optional[_Union[GameOptions, _Mapping]] = ..., white: _Optional[_Union[Player, _Mapping]] = ..., black: _Optional[_Union[Player, _Mapping]] = ..., position: _Optional[str] = ..., board: _Optional[_Union[Board, _Mapping]] = ..., side_to_move: _Optional[_Union[Color, str]] = ..., dice: _Optional[_Iterable[int]] = ..., turn_id: _Optional[int] = ..., white_clock: _Optional[_Union[Clock, _Mapping]] = ..., black_clock: _Optional[_Union[Clock, _Mapping]] = ..., match: _Optional[_Union[MatchScore, _Mapping]] = ..., result: _Optional[_Union[GameResult, _Mapping]] = ..., legal_plays: _Optional[_Iterable[_Union[LegalPlay, _Mapping]]] = ..., your_color: _Optional[_Union[Color, str]] = ..., seeded: _Optional[bool] = ..., next_game_id: _Optional[str] = ..., white_refused: _Optional[int] = ..., black_refused: _Optional[int] = ..., ladder: _Optional[str] = ..., first_player: _Optional[_Union[Player, _Mapping]] = ..., second_player: _Optional[_Union[Player, _Mapping]] = ..., rated: _Optional[bool] = ..., dice_commitment: _Optional[str] = ..., server_seed: _Optional[str] = ..., client_seeds: _Optional[_Iterable[str]] = ..., public_seed: _Optional[bool] = ..., scripted_dice: _Optional[int] = ..., challenge_pending: _Optional[bool] = ...) -> None: ...

class PlayRecord(_message.Message):
    __slots__ = ("side", "dice", "notation", "turn_id", "automatic", "used_ms")
    SIDE_FIELD_NUMBER: _ClassVar[int]
    DICE_FIELD_NUMBER: _ClassVar[int]
    NOTATION_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    AUTOMATIC_FIELD_NUMBER: _ClassVar[int]
    USED_MS_FIELD_NUMBER: _ClassVar[int]
    side: Color
    dice: _containers.RepeatedScalarFieldContainer[int]
    notation: str
    turn_id: int
    automatic: bool
    used_ms: int
    def __init__(self, side: _Optional[_Union[Color, str]] = ..., dice: _Optional[_Iterable[int]] = ..., notation: _Optional[str] = ..., turn_id: _Optional[int] = ..., automatic: _Optional[bool] = ..., used_ms: _Optional[int] = ...) -> None: ...

class OpeningThrow(_message.Message):
    __slots__ = ("first_player_die", "second_player_die")
    FIRST_PLAYER_DIE_FIELD_NUMBER: _ClassVar[int]
    SECOND_PLAYER_DIE_FIELD_NUMBER: _ClassVar[int]
    first_player_die: int
    second_player_die: int
    def __init__(self, first_player_die: _Optional[int] = ..., second_player_die: _Optional[int] = ...) -> None: ...

class GameEvent(_message.Message):
    __slots__ = ("seq", "type", "state", "play", "opening_throws", "time")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PLAY_FIELD_NUMBER: _ClassVar[int]
    OPENING_THROWS_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    seq: int
    type: EventType
    state: GameState
    play: PlayRecord
    opening_throws: _containers.RepeatedCompositeFieldContainer[OpeningThrow]
    time: _timestamp_pb2.Timestamp
    def __init__(self, seq: _Optional[int] = ..., type: _Optional[_Union[EventType, str]] = ..., state: _Optional[_Union[GameState, _Mapping]] = ..., play: _Optional[_Union[PlayRecord, _Mapping]] = ..., opening_throws: _Optional[_Iterable[_Union[OpeningThrow, _Mapping]]] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
