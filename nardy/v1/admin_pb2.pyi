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
