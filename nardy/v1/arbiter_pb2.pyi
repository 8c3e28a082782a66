from nardy.v1 import game_pb2 as _game_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EventFilter(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVENT_FILTER_UNSPECIFIED: _ClassVar[EventFilter]
    EVENT_FILTER_OWN_TURNS: _ClassVar[EventFilter]

class PlayerEventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PLAYER_EVENT_TYPE_UNSPECIFIED: _ClassVar[PlayerEventType]
    PLAYER_EVENT_TYPE_GAME_ASSIGNED: _ClassVar[PlayerEventType]
    PLAYER_EVENT_TYPE_GAME_OVER: _ClassVar[PlayerEventType]
    PLAYER_EVENT_TYPE_HEARTBEAT: _ClassVar[PlayerEventType]
    PLAYER_EVENT_TYPE_SERVER_SHUTDOWN: _ClassVar[PlayerEventType]
    PLAYER_EVENT_TYPE_CHALLENGE: _ClassVar[PlayerEventType]
EVENT_FILTER_UNSPECIFIED: EventFilter
EVENT_FILTER_OWN_TURNS: EventFilter
PLAYER_EVENT_TYPE_UNSPECIFIED: PlayerEventType
PLAYER_EVENT_TYPE_GAME_ASSIGNED: PlayerEventType
PLAYER_EVENT_TYPE_GAME_OVER: PlayerEventType
PLAYER_EVENT_TYPE_HEARTBEAT: PlayerEventType
PLAYER_EVENT_TYPE_SERVER_SHUTDOWN: PlayerEventType
PLAYER_EVENT_TYPE_CHALLENGE: PlayerEventType

class RegisterPlayerRequest(_message.Message):
    __slots__ = ("name", "bot", "owner")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BOT_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    name: str
    bot: bool
    owner: str
    def __init__(self, name: _Optional[str] = ..., bot: _Optional[bool] = ..., owner: _Optional[str] = ...) -> None: ...

class RegisterPlayerResponse(_message.Message):
    __slots__ = ("player_id", "token")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    token: str
    def __init__(self, player_id: _Optional[str] = ..., token: _Optional[str] = ...) -> None: ...

class SeatSpec(_message.Message):
    __slots__ = ("player_name", "display_name")
    PLAYER_NAME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    player_name: str
    display_name: str
    def __init__(self, player_name: _Optional[str] = ..., display_name: _Optional[str] = ...) -> None: ...

class CreateMatchRequest(_message.Message):
    __slots__ = ("options", "target_points", "first", "second", "seed", "start_timeout_ms", "start_position", "dice", "first_seat_color")
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    TARGET_POINTS_FIELD_NUMBER: _ClassVar[int]
    FIRST_FIELD_NUMBER: _ClassVar[int]
    SECOND_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    START_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    START_POSITION_FIELD_NUMBER: _ClassVar[int]
    DICE_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEAT_COLOR_FIELD_NUMBER: _ClassVar[int]
    options: _game_pb2.GameOptions
    target_points: int
    first: SeatSpec
    second: SeatSpec
    seed: int
    start_timeout_ms: int
    start_position: str
    dice: _containers.RepeatedScalarFieldContainer[int]
    first_seat_color: _game_pb2.Color
    def __init__(self, options: _Optional[_Union[_game_pb2.GameOptions, _Mapping]] = ..., target_points: _Optional[int] = ..., first: _Optional[_Union[SeatSpec, _Mapping]] = ..., second: _Optional[_Union[SeatSpec, _Mapping]] = ..., seed: _Optional[int] = ..., start_timeout_ms: _Optional[int] = ..., start_position: _Optional[str] = ..., dice: _Optional[_Iterable[int]] = ..., first_seat_color: _Optional[_Union[_game_pb2.Color, str]] = ...) -> None: ...

class CreateMatchResponse(_message.Message):
    __slots__ = ("match_id", "game_id", "first_seat_token", "second_seat_token", "dice_commitment", "challenge")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEAT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SECOND_SEAT_TOKEN_FIELD_NUMBER: _ClassVar[int]
    DICE_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    CHALLENGE_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    game_id: str
    first_seat_token: str
    second_seat_token: str
    dice_commitment: str
    challenge: bool
    def __init__(self, match_id: _Optional[str] = ..., game_id: _Optional[str] = ..., first_seat_token: _Optional[str] = ..., second_seat_token: _Optional[str] = ..., dice_commitment: _Optional[str] = ..., challenge: _Optional[bool] = ...) -> None: ...

class AcceptChallengeRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class AcceptChallengeResponse(_message.Message):
    __slots__ = ("game_id",)
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    def __init__(self, game_id: _Optional[str] = ...) -> None: ...

class DeclineChallengeRequest(_message.Message):
    __slots__ = ("match_id",)
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    def __init__(self, match_id: _Optional[str] = ...) -> None: ...

class DeclineChallengeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListChallengesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Challenge(_message.Message):
    __slots__ = ("match_id", "game_id", "challenger", "target_points", "options", "start_timeout_ms")
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    CHALLENGER_FIELD_NUMBER: _ClassVar[int]
    TARGET_POINTS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    START_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    match_id: str
    game_id: str
    challenger: _game_pb2.Player
    target_points: int
    options: _game_pb2.GameOptions
    start_timeout_ms: int
    def __init__(self, match_id: _Optional[str] = ..., game_id: _Optional[str] = ..., challenger: _Optional[_Union[_game_pb2.Player, _Mapping]] = ..., target_points: _Optional[int] = ..., options: _Optional[_Union[_game_pb2.GameOptions, _Mapping]] = ..., start_timeout_ms: _Optional[int] = ...) -> None: ...

class ListChallengesResponse(_message.Message):
    __slots__ = ("challenges",)
    CHALLENGES_FIELD_NUMBER: _ClassVar[int]
    challenges: _containers.RepeatedCompositeFieldContainer[Challenge]
    def __init__(self, challenges: _Optional[_Iterable[_Union[Challenge, _Mapping]]] = ...) -> None: ...

class GetGameRequest(_message.Message):
    __slots__ = ("game_id",)
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    def __init__(self, game_id: _Optional[str] = ...) -> None: ...

class GetGameResponse(_message.Message):
    __slots__ = ("state", "last_seq")
    STATE_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    state: _game_pb2.GameState
    last_seq: int
    def __init__(self, state: _Optional[_Union[_game_pb2.GameState, _Mapping]] = ..., last_seq: _Optional[int] = ...) -> None: ...

class ListGamesRequest(_message.Message):
    __slots__ = ("status", "limit", "ladder", "page_token")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    LADDER_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    status: _game_pb2.GameStatus
    limit: int
    ladder: str
    page_token: str
    def __init__(self, status: _Optional[_Union[_game_pb2.GameStatus, str]] = ..., limit: _Optional[int] = ..., ladder: _Optional[str] = ..., page_token: _Optional[str] = ...) -> None: ...

class GameSummary(_message.Message):
    __slots__ = ("game_id", "match_id", "game_number", "status", "white", "black", "result", "match", "first_player", "second_player", "rated", "seeded", "ladder")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    GAME_NUMBER_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    WHITE_FIELD_NUMBER: _ClassVar[int]
    BLACK_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    FIRST_PLAYER_FIELD_NUMBER: _ClassVar[int]
    SECOND_PLAYER_FIELD_NUMBER: _ClassVar[int]
    RATED_FIELD_NUMBER: _ClassVar[int]
    SEEDED_FIELD_NUMBER: _ClassVar[int]
    LADDER_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    match_id: str
    game_number: int
    status: _game_pb2.GameStatus
    white: _game_pb2.Player
    black: _game_pb2.Player
    result: _game_pb2.GameResult
    match: _game_pb2.MatchScore
    first_player: _game_pb2.Player
    second_player: _game_pb2.Player
    rated: bool
    seeded: bool
    ladder: str
    def __init__(self, game_id: _Optional[str] = ..., match_id: _Optional[str] = ..., game_number: _Optional[int] = ..., status: _Optional[_Union[_game_pb2.GameStatus, str]] = ..., white: _Optional[_Union[_game_pb2.Player, _Mapping]] = ..., black: _Optional[_Union[_game_pb2.Player, _Mapping]] = ..., result: _Optional[_Union[_game_pb2.GameResult, _Mapping]] = ..., match: _Optional[_Union[_game_pb2.MatchScore, _Mapping]] = ..., first_player: _Optional[_Union[_game_pb2.Player, _Mapping]] = ..., second_player: _Optional[_Union[_game_pb2.Player, _Mapping]] = ..., rated: _Optional[bool] = ..., seeded: _Optional[bool] = ..., ladder: _Optional[str] = ...) -> None: ...

class ListGamesResponse(_message.Message):
    __slots__ = ("games", "next_page_token")
    GAMES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    games: _containers.RepeatedCompositeFieldContainer[GameSummary]
    next_page_token: str
    def __init__(self, games: _Optional[_Iterable[_Union[GameSummary, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class SubscribeGameRequest(_message.Message):
    __slots__ = ("game_id", "after_seq", "from_start", "client_seed", "filter")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    FROM_START_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SEED_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    after_seq: int
    from_start: bool
    client_seed: str
    filter: EventFilter
    def __init__(self, game_id: _Optional[str] = ..., after_seq: _Optional[int] = ..., from_start: _Optional[bool] = ..., client_seed: _Optional[str] = ..., filter: _Optional[_Union[EventFilter, str]] = ...) -> None: ...

class PlayerEvent(_message.Message):
    __slots__ = ("type", "game_id", "match_id", "color", "opponent")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    MATCH_ID_FIELD_NUMBER: _ClassVar[int]
    COLOR_FIELD_NUMBER: _ClassVar[int]
    OPPONENT_FIELD_NUMBER: _ClassVar[int]
    type: PlayerEventType
    game_id: str
    match_id: str
    color: _game_pb2.Color
    opponent: _game_pb2.Player
    def __init__(self, type: _Optional[_Union[PlayerEventType, str]] = ..., game_id: _Optional[str] = ..., match_id: _Optional[str] = ..., color: _Optional[_Union[_game_pb2.Color, str]] = ..., opponent: _Optional[_Union[_game_pb2.Player, _Mapping]] = ...) -> None: ...

class SubscribePlayerRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SubmitPlayRequest(_message.Message):
    __slots__ = ("game_id", "turn_id", "notation", "end_position")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    NOTATION_FIELD_NUMBER: _ClassVar[int]
    END_POSITION_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    turn_id: int
    notation: str
    end_position: str
    def __init__(self, game_id: _Optional[str] = ..., turn_id: _Optional[int] = ..., notation: _Optional[str] = ..., end_position: _Optional[str] = ...) -> None: ...

class SubmitPlayResponse(_message.Message):
    __slots__ = ("notation", "end_position", "duplicate", "used_ms")
    NOTATION_FIELD_NUMBER: _ClassVar[int]
    END_POSITION_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    USED_MS_FIELD_NUMBER: _ClassVar[int]
    notation: str
    end_position: str
    duplicate: bool
    used_ms: int
    def __init__(self, notation: _Optional[str] = ..., end_position: _Optional[str] = ..., duplicate: _Optional[bool] = ..., used_ms: _Optional[int] = ...) -> None: ...

class PlayRequest(_message.Message):
    __slots__ = ("subscribe", "play")
    SUBSCRIBE_FIELD_NUMBER: _ClassVar[int]
    PLAY_FIELD_NUMBER: _ClassVar[int]
    subscribe: SubscribeGameRequest
    play: SubmitPlayRequest
    def __init__(self, subscribe: _Optional[_Union[SubscribeGameRequest, _Mapping]] = ..., play: _Optional[_Union[SubmitPlayRequest, _Mapping]] = ...) -> None: ...

class PlayResponse(_message.Message):
    __slots__ = ("event", "played", "refused")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    PLAYED_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    event: _game_pb2.GameEvent
    played: SubmitPlayResponse
    refused: PlayRefused
    def __init__(self, event: _Optional[_Union[_game_pb2.GameEvent, _Mapping]] = ..., played: _Optional[_Union[SubmitPlayResponse, _Mapping]] = ..., refused: _Optional[_Union[PlayRefused, _Mapping]] = ...) -> None: ...

class PlayRefused(_message.Message):
    __slots__ = ("turn_id", "code", "message")
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    turn_id: int
    code: int
    message: str
    def __init__(self, turn_id: _Optional[int] = ..., code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class ResignRequest(_message.Message):
    __slots__ = ("game_id",)
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    def __init__(self, game_id: _Optional[str] = ...) -> None: ...

class ResignResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _game_pb2.GameResult
    def __init__(self, result: _Optional[_Union[_game_pb2.GameResult, _Mapping]] = ...) -> None: ...
