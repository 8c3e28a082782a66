"""Property-based fuzzing of every RPC: random field values, unknown fields and
random bytes, with and without tokens. The server must answer each with a proper status
(never UNKNOWN or INTERNAL, which mean an unhandled error), keep serving, and leave every
game it holds as it was: a game in progress is checked before and after, then played on.
"""

from __future__ import annotations

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nardy.v1 import admin_pb2, arbiter_pb2, arbiter_pb2_grpc, ladder_pb2
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer

SERVICES = [
    f.services_by_name[name]
    for f, name in (
        (arbiter_pb2.DESCRIPTOR, "ArbiterService"),
        (ladder_pb2.DESCRIPTOR, "LadderService"),
        (admin_pb2.DESCRIPTOR, "AdminService"),
    )
]
METHODS = [m for s in SERVICES for m in s.methods]
BAD = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL}
INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_ENUM: (-(2**31), 2**31 - 1),
}


class World:
    """The server under fuzzing, a game in progress nobody but its seats may touch, and
    tokens of every kind for the fuzzer to use."""

    def __init__(self, tmp_path) -> None:
        self.server = EmbeddedServer(db=str(tmp_path / "fuzz.db"), heartbeat_s=0.2).start()
        self.channel = grpc.insecure_channel(self.server.address)
        self.stub = arbiter_pb2_grpc.ArbiterServiceStub(self.channel)
        admin = (("authorization", f"Bearer {self.server.admin_token}"),)
        r = self.stub.CreateMatch(
            api.CreateMatchRequest(
                options=pb.GameOptions(turn_time_ms=600_000),
                first_seat_color=pb.COLOR_WHITE,
            ),
            metadata=admin,
        )
        self.game_id = r.game_id
        self.white = (("authorization", f"Bearer {r.first_seat_token}"),)
        black = (("authorization", f"Bearer {r.second_seat_token}"),)
        stream = self.stub.SubscribeGame(
            api.SubscribeGameRequest(game_id=r.game_id), metadata=black
        )
        next(stream)
        stream.cancel()
        # white arrives too: the game starts; wait for white's first turn
        stream = self.stub.SubscribeGame(
            api.SubscribeGameRequest(game_id=r.game_id), metadata=self.white, timeout=30
        )
        for ev in stream:
            if ev.type == pb.EVENT_TYPE_TURN_STARTED and ev.state.legal_plays:
                break
        stream.cancel()
        self.before = self.stub.GetGame(
            api.GetGameRequest(game_id=self.game_id), metadata=self.white
        )
        player = self.stub.RegisterPlayer(api.RegisterPlayerRequest(name="fuzzer", bot=True))
        spare = self.stub.CreateMatch(api.CreateMatchRequest())
        self.tokens = [
            None,
            "not-a-token",
            player.token,
            spare.first_seat_token,
        ]
        self.strings = [r.game_id, r.match_id, spare.game_id, "fuzzer", "", "x" * 70_000]

    def close(self) -> None:
        self.channel.close()
        self.server.stop()


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(tmp_path_factory.mktemp("fuzz"))
    yield w
    w.close()


def values(field: FieldDescriptor, strings: list[str], depth: int) -> st.SearchStrategy:
    t = field.type
    if t in INT_RANGES:
        lo, hi = INT_RANGES[t]
        small = st.integers(-3, 12) if lo < 0 else st.integers(0, 12)
        return st.one_of(small, st.integers(lo, hi))
    if t == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if t == FieldDescriptor.TYPE_STRING:
        return st.one_of(st.sampled_from(strings), st.text(max_size=80))
    if t == FieldDescriptor.TYPE_BYTES:
        return st.binary(max_size=80)
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.floats(allow_nan=True, width=32 if t == FieldDescriptor.TYPE_FLOAT else 64)
    if t == FieldDescriptor.TYPE_MESSAGE:
        return message(field.message_type, strings, depth + 1)
    raise NotImplementedError(t)


def message(desc, strings: list[str], depth: int = 0) -> st.SearchStrategy:
    """Serialized messages of ``desc`` with random values in a random subset of fields."""
    from google.protobuf import message_factory

    cls = message_factory.GetMessageClass(desc)
    if depth > 2:
        return st.just(b"")
    fields = {}
    for f in desc.fields:
        v = values(f, strings, depth)
        fields[f.name] = st.lists(v, max_size=4) if f.is_repeated else v

    @st.composite
    def build(draw):
        msg = cls()
        for name in draw(st.lists(st.sampled_from(sorted(fields)), unique=True)) if fields else []:
            f = desc.fields_by_name[name]
            value = draw(fields[name])
            if f.type == FieldDescriptor.TYPE_MESSAGE:
                if f.is_repeated:
                    for item in value:
                        getattr(msg, name).add().MergeFromString(item)
                else:
                    getattr(msg, name).MergeFromString(value)
            elif f.is_repeated:
                getattr(msg, name).extend(value)
            else:
                setattr(msg, name, value)
        return msg.SerializeToString()

    return build()


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


unknown_field = st.builds(
    lambda number, data: varint(number << 3 | 2) + varint(len(data)) + data,
    st.integers(100, 2**29 - 1),
    st.binary(max_size=40),
)


def payloads(method, strings: list[str]) -> st.SearchStrategy:
    valid = message(method.input_type, strings)
    return st.one_of(
        valid,
        st.builds(lambda m, u: m + b"".join(u), valid, st.lists(unknown_field, max_size=3)),
        st.binary(max_size=200),
    )


def call(world: World, method, payload: bytes, token: str | None) -> grpc.StatusCode:
    path = f"/{method.containing_service.full_name}/{method.name}"
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    try:
        if method.server_streaming:
            stream = world.channel.unary_stream(path)(payload, metadata=metadata, timeout=1.0)
            for _ in stream:  # the first message tells: an error, or a stream that works
                stream.cancel()
                break
            return grpc.StatusCode.OK
        world.channel.unary_unary(path)(payload, metadata=metadata, timeout=5.0)
        return grpc.StatusCode.OK
    except grpc.RpcError as e:
        return e.code()


@st.composite
def requests(draw, strings: list[str]):
    method = draw(st.sampled_from(METHODS))
    return method, draw(payloads(method, strings))


@pytest.mark.slow
@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_fuzzed_requests_are_answered_and_harm_nothing(world, data):
    method, payload = data.draw(requests(world.strings))
    token = data.draw(st.sampled_from(world.tokens))
    code = call(world, method, payload, token)
    assert code not in BAD, f"{method.full_name}: {code}"


def test_after_the_fuzzing_the_server_serves_and_the_game_is_intact(world):
    # runs after the property (file order): the server still answers health checks ...
    health = health_pb2_grpc.HealthStub(world.channel)
    status = health.Check(health_pb2.HealthCheckRequest(), timeout=5).status
    assert status == health_pb2.HealthCheckResponse.SERVING
    # ... the protected game is exactly where it was ...
    now = world.stub.GetGame(api.GetGameRequest(game_id=world.game_id), metadata=world.white)
    for field in ("status", "position", "turn_id", "dice", "white_refused", "black_refused"):
        assert getattr(now.state, field) == getattr(world.before.state, field), field
    assert now.last_seq == world.before.last_seq
    # ... and its seat can still play its turn
    play = now.state.legal_plays[0]
    answer = world.stub.SubmitPlay(
        api.SubmitPlayRequest(
            game_id=world.game_id, turn_id=now.state.turn_id, end_position=play.end_position
        ),
        metadata=world.white,
    )
    assert answer.end_position == play.end_position
