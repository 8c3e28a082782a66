"""A client that knows nothing but the server's address: every descriptor comes from server
reflection (a fresh descriptor pool fed by the server, no generated nardy stubs), as
grpcurl, grpcui or Postman work. It creates a game, joins both seats and makes a play."""

from __future__ import annotations

import queue
import threading

import grpc
from google.protobuf import descriptor_pool, json_format, message_factory
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

from server.app import EmbeddedServer

SERVICE = "nardy.v1.ArbiterService"


class ReflectedService:
    """Callables for a service's methods, built from descriptors fetched from the server."""

    def __init__(self, channel: grpc.Channel, name: str) -> None:
        self.reflection = ProtoReflectionDescriptorDatabase(channel)
        self.pool = descriptor_pool.DescriptorPool(self.reflection)
        self.service = self.pool.FindServiceByName(name)
        self.channel = channel

    def message(self, method: str, fields: dict):
        """The request message of ``method``, filled from JSON-like ``fields``."""
        desc = self.service.FindMethodByName(method).input_type
        return json_format.ParseDict(fields, message_factory.GetMessageClass(desc)())

    def call(self, method: str):
        m = self.service.FindMethodByName(method)
        request = message_factory.GetMessageClass(m.input_type)
        response = message_factory.GetMessageClass(m.output_type)
        make = self.channel.unary_stream if m.server_streaming else self.channel.unary_unary
        return make(
            f"/{self.service.full_name}/{method}",
            request_serializer=request.SerializeToString,
            response_deserializer=response.FromString,
        )

    def enum_name(self, enum: str, number: int) -> str:
        return self.pool.FindEnumTypeByName(enum).values_by_number[number].name


def test_a_reflection_only_client_creates_a_game_and_makes_a_play():
    with EmbeddedServer() as srv, grpc.insecure_channel(srv.address) as channel:
        api = ReflectedService(channel, SERVICE)
        assert SERVICE in api.reflection.get_services()
        assert api.service.file.pool is api.pool  # from the server, not from nardy.v1
        # scripted dice (allowed between open seats): the first seat is white with 6-5
        created = api.call("CreateMatch")(
            api.message("CreateMatch", {"dice": [2, 1, 6, 5], "options": {"turnTimeMs": 60000}})
        )
        events: dict[str, queue.Queue] = {"first": queue.Queue(), "second": queue.Queue()}
        streams = {}
        for seat, token in (
            ("first", created.first_seat_token),
            ("second", created.second_seat_token),
        ):
            request = api.message("SubscribeGame", {"gameId": created.game_id})
            streams[seat] = api.call("SubscribeGame")(
                request, metadata=(("authorization", f"Bearer {token}"),), timeout=60
            )

            def read(stream=streams[seat], into=events[seat]):
                try:
                    for ev in stream:
                        into.put(ev)
                except grpc.RpcError:
                    pass  # cancelled at the end of the test

            threading.Thread(target=read, daemon=True).start()

        def next_of(seat: str, kind: str):
            while True:
                ev = events[seat].get(timeout=30)
                if api.enum_name("nardy.v1.EventType", ev.type) == kind:
                    return ev

        turn = next_of("first", "EVENT_TYPE_TURN_STARTED")
        state = turn.state
        assert api.enum_name("nardy.v1.Color", state.your_color) == "COLOR_WHITE"
        assert list(state.dice) == [6, 5] and len(state.legal_plays) > 0
        play = state.legal_plays[0]
        answer = api.call("SubmitPlay")(
            api.message(
                "SubmitPlay",
                {
                    "gameId": created.game_id,
                    "turnId": str(state.turn_id),
                    "endPosition": play.end_position,
                },
            ),
            metadata=(("authorization", f"Bearer {created.first_seat_token}"),),
            timeout=10,
        )
        assert answer.notation == play.notation and not answer.duplicate
        made = next_of("second", "EVENT_TYPE_PLAY_MADE")
        assert made.play.notation == play.notation and made.state.position == play.end_position
        game = api.call("GetGame")(api.message("GetGame", {"gameId": created.game_id}))
        assert game.state.turn_id == 2 and game.last_seq >= made.seq
        for stream in streams.values():
            stream.cancel()
