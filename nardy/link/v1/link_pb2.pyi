from nardy.v1 import arbiter_pb2 as _arbiter_pb2
from nardy.v1 import game_pb2 as _game_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Caller(_message.Message):
    __slots__ = ("digest", "address")
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    digest: str
    address: str
    def __init__(self, digest: _Optional[str] = ..., address: _Optional[str] = ...) -> None: ...

class ToCore(_message.Message):
    __slots__ = ("call", "leave", "fenced", "stood_still")
    CALL_FIELD_NUMBER: _ClassVar[int]
    LEAVE_FIELD_NUMBER: _ClassVar[int]
    FENCED_FIELD_NUMBER: _ClassVar[int]
    STOOD_STILL_FIELD_NUMBER: _ClassVar[int]
    call: Call
    leave: Leave
    fenced: Fenced
    stood_still: StoodStill
    def __init__(self, call: _Optional[_Union[Call, _Mapping]] = ..., leave: _Optional[_Union[Leave, _Mapping]] = ..., fenced: _Optional[_Union[Fenced, _Mapping]] = ..., stood_still: _Optional[_Union[StoodStill, _Mapping]] = ...) -> None: ...

class Call(_message.Message):
    __slots__ = ("id", "method", "request", "caller", "arrival", "identify", "sent")
    ID_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    CALLER_FIELD_NUMBER: _ClassVar[int]
    ARRIVAL_FIELD_NUMBER: _ClassVar[int]
    IDENTIFY_FIELD_NUMBER: _ClassVar[int]
    SENT_FIELD_NUMBER: _ClassVar[int]
    id: int
    method: str
    request: bytes
    caller: Caller
    arrival: float
    identify: bool
    sent: float
    def __init__(self, id: _Optional[int] = ..., method: _Optional[str] = ..., request: _Optional[bytes] = ..., caller: _Optional[_Union[Caller, _Mapping]] = ..., arrival: _Optional[float] = ..., identify: _Optional[bool] = ..., sent: _Optional[float] = ...) -> None: ...

class Leave(_message.Message):
    __slots__ = ("tap",)
    TAP_FIELD_NUMBER: _ClassVar[int]
    tap: int
    def __init__(self, tap: _Optional[int] = ...) -> None: ...

class Fenced(_message.Message):
    __slots__ = ("id", "sent")
    ID_FIELD_NUMBER: _ClassVar[int]
    SENT_FIELD_NUMBER: _ClassVar[int]
    id: int
    sent: float
    def __init__(self, id: _Optional[int] = ..., sent: _Optional[float] = ...) -> None: ...

class StoodStill(_message.Message):
    __slots__ = ("seconds",)
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    seconds: float
    def __init__(self, seconds: _Optional[float] = ...) -> None: ...

class ToEdge(_message.Message):
    __slots__ = ("reply", "tell", "close", "fence", "ready", "issued")
    REPLY_FIELD_NUMBER: _ClassVar[int]
    TELL_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    FENCE_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    ISSUED_FIELD_NUMBER: _ClassVar[int]
    reply: Reply
    tell: Tell
    close: Close
    fence: Fence
    ready: Ready
    issued: Issued
    def __init__(self, reply: _Optional[_Union[Reply, _Mapping]] = ..., tell: _Optional[_Union[Tell, _Mapping]] = ..., close: _Optional[_Union[Close, _Mapping]] = ..., fence: _Optional[_Union[Fence, _Mapping]] = ..., ready: _Optional[_Union[Ready, _Mapping]] = ..., issued: _Optional[_Union[Issued, _Mapping]] = ...) -> None: ...

class Reply(_message.Message):
    __slots__ = ("id", "code", "message", "instance", "body", "identity")
    ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    id: int
    code: int
    message: str
    instance: str
    body: bytes
    identity: Identity
    def __init__(self, id: _Optional[int] = ..., code: _Optional[int] = ..., message: _Optional[str] = ..., instance: _Optional[str] = ..., body: _Optional[bytes] = ..., identity: _Optional[_Union[Identity, _Mapping]] = ...) -> None: ...

class Identity(_message.Message):
    __slots__ = ("known", "key", "operator", "final")
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    FINAL_FIELD_NUMBER: _ClassVar[int]
    known: bool
    key: str
    operator: bool
    final: bool
    def __init__(self, known: _Optional[bool] = ..., key: _Optional[str] = ..., operator: _Optional[bool] = ..., final: _Optional[bool] = ...) -> None: ...

class WhoRequest(_message.Message):
    __slots__ = ("store",)
    STORE_FIELD_NUMBER: _ClassVar[int]
    store: bool
    def __init__(self, store: _Optional[bool] = ...) -> None: ...

class Opened(_message.Message):
    __slots__ = ("tap", "backlog", "game_id", "seq", "turn")
    TAP_FIELD_NUMBER: _ClassVar[int]
    BACKLOG_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    tap: int
    backlog: _containers.RepeatedScalarFieldContainer[bytes]
    game_id: str
    seq: int
    turn: int
    def __init__(self, tap: _Optional[int] = ..., backlog: _Optional[_Iterable[bytes]] = ..., game_id: _Optional[str] = ..., seq: _Optional[int] = ..., turn: _Optional[int] = ...) -> None: ...

class Tell(_message.Message):
    __slots__ = ("tap", "message", "turn_id", "seq")
    TAP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    tap: int
    message: bytes
    turn_id: int
    seq: int
    def __init__(self, tap: _Optional[int] = ..., message: _Optional[bytes] = ..., turn_id: _Optional[int] = ..., seq: _Optional[int] = ...) -> None: ...

class Close(_message.Message):
    __slots__ = ("tap",)
    TAP_FIELD_NUMBER: _ClassVar[int]
    tap: int
    def __init__(self, tap: _Optional[int] = ...) -> None: ...

class Fence(_message.Message):
    __slots__ = ("id", "game_id", "before", "turn_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    TURN_ID_FIELD_NUMBER: _ClassVar[int]
    id: int
    game_id: str
    before: float
    turn_id: int
    def __init__(self, id: _Optional[int] = ..., game_id: _Optional[str] = ..., before: _Optional[float] = ..., turn_id: _Optional[int] = ...) -> None: ...

class Ready(_message.Message):
    __slots__ = ("instance", "tokens")
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    instance: str
    tokens: bytes
    def __init__(self, instance: _Optional[str] = ..., tokens: _Optional[bytes] = ...) -> None: ...

class Issued(_message.Message):
    __slots__ = ("digests",)
    DIGESTS_FIELD_NUMBER: _ClassVar[int]
    digests: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, digests: _Optional[_Iterable[str]] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("tap", "seq")
    TAP_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    tap: int
    seq: int
    def __init__(self, tap: _Optional[int] = ..., seq: _Optional[int] = ...) -> None: ...

class IndexRequest(_message.Message):
    __slots__ = ("live", "finished")
    LIVE_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    live: int
    finished: int
    def __init__(self, live: _Optional[int] = ..., finished: _Optional[int] = ...) -> None: ...

class Board(_message.Message):
    __slots__ = ("state", "last")
    STATE_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    state: _game_pb2.GameState
    last: _game_pb2.PlayRecord
    def __init__(self, state: _Optional[_Union[_game_pb2.GameState, _Mapping]] = ..., last: _Optional[_Union[_game_pb2.PlayRecord, _Mapping]] = ...) -> None: ...

class IndexResponse(_message.Message):
    __slots__ = ("live", "finished", "ladders")
    LIVE_FIELD_NUMBER: _ClassVar[int]
    FINISHED_FIELD_NUMBER: _ClassVar[int]
    LADDERS_FIELD_NUMBER: _ClassVar[int]
    live: _containers.RepeatedCompositeFieldContainer[Board]
    finished: _containers.RepeatedCompositeFieldContainer[_arbiter_pb2.GameSummary]
    ladders: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, live: _Optional[_Iterable[_Union[Board, _Mapping]]] = ..., finished: _Optional[_Iterable[_Union[_arbiter_pb2.GameSummary, _Mapping]]] = ..., ladders: _Optional[_Iterable[str]] = ...) -> None: ...

class HistoryRequest(_message.Message):
    __slots__ = ("game_id", "events", "after_seq")
    GAME_ID_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    game_id: str
    events: bool
    after_seq: int
    def __init__(self, game_id: _Optional[str] = ..., events: _Optional[bool] = ..., after_seq: _Optional[int] = ...) -> None: ...

class HistoryResponse(_message.Message):
    __slots__ = ("state", "events")
    STATE_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    state: _game_pb2.GameState
    events: _containers.RepeatedCompositeFieldContainer[_game_pb2.GameEvent]
    def __init__(self, state: _Optional[_Union[_game_pb2.GameState, _Mapping]] = ..., events: _Optional[_Iterable[_Union[_game_pb2.GameEvent, _Mapping]]] = ...) -> None: ...

class MetricsResponse(_message.Message):
    __slots__ = ("exposition",)
    EXPOSITION_FIELD_NUMBER: _ClassVar[int]
    exposition: bytes
    def __init__(self, exposition: _Optional[bytes] = ...) -> None: ...
