import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from nardy.v1 import game_pb2 as _game_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ListPlayersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PlayerInfo(_message.Message):
    __slots__ = ("player_id", "player")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    player: _game_pb2.Player
    def __init__(self, player_id: _Optional[str] = ..., player: _Optional[_Union[_game_pb2.Player, _Mapping]] = ...) -> None: ...

class ListPlayersResponse(_message.Message):
    __slots__ = ("players",)
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    players: _containers.RepeatedCompositeFieldContainer[PlayerInfo]
    def __init__(self, players: _Optional[_Iterable[_Union[PlayerInfo, _Mapping]]] = ...) -> None: ...

class VoidGameRequest(_message.Message):
    __slots__ = ("game_id",)
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    def __init__(self, game_id: _Optional[str] = ...) -> None: ...

class VoidGameResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: _game_pb2.GameStatus
    def __init__(self, status: _Optional[_Union[_game_pb2.GameStatus, str]] = ...) -> None: ...

class ArchiveGamesRequest(_message.Message):
    __slots__ = ("before",)
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    before: _timestamp_pb2.Timestamp
    def __init__(self, before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ArchiveGamesResponse(_message.Message):
    __slots__ = ("retention",)
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    retention: Retention
    def __init__(self, retention: _Optional[_Union[Retention, _Mapping]] = ...) -> None: ...

class SetRetentionRequest(_message.Message):
    __slots__ = ("keep",)
    KEEP_FIELD_NUMBER: _ClassVar[int]
    keep: _duration_pb2.Duration
    def __init__(self, keep: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class SetRetentionResponse(_message.Message):
    __slots__ = ("retention",)
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    retention: Retention
    def __init__(self, retention: _Optional[_Union[Retention, _Mapping]] = ...) -> None: ...

class GetRetentionRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetRetentionResponse(_message.Message):
    __slots__ = ("retention",)
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    retention: Retention
    def __init__(self, retention: _Optional[_Union[Retention, _Mapping]] = ...) -> None: ...

class Retention(_message.Message):
    __slots__ = ("keep", "run")
    KEEP_FIELD_NUMBER: _ClassVar[int]
    RUN_FIELD_NUMBER: _ClassVar[int]
    keep: _duration_pb2.Duration
    run: ArchiveRun
    def __init__(self, keep: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., run: _Optional[_Union[ArchiveRun, _Mapping]] = ...) -> None: ...

class ArchiveRun(_message.Message):
    __slots__ = ("running", "before", "started", "finished", "archived", "remaining", "error")
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_FIELD_NUMBER: _ClassVar[int]
    REMAINING_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    running: bool
    before: _timestamp_pb2.Timestamp
    started: _timestamp_pb2.Timestamp
    finished: _timestamp_pb2.Timestamp
    archived: int
    remaining: int
    error: str
    def __init__(self, running: _Optional[bool] = ..., before: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., archived: _Optional[int] = ..., remaining: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...
