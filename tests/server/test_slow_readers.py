"""Readers that do not read (server.edge.streams): a client's HTTP/2 flow control stalls
what the edge writes to it. A Play stream whose answers go unread has no more plays read
(they wait in the transport, not in the edge's memory); a stream too far behind is ended at
once with RESOURCE_EXHAUSTED, its queue dropped. Real servers on loopback; the slow reader
is a grpcio client whose receive window stays small until its application reads."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

import grpc
import pytest

from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc
from nardy.v1 import game_pb2 as pb
from server.app import EmbeddedServer
from server.edge import streams

# A client that lets through about 1 KiB of a stream's messages until it reads them.
SLOW_READER = [("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 1024)]
RESOURCE_EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED


def flood(srv: EmbeddedServer, plays: int, unread: int):
    """A seat's Play stream on a new game, sending ``plays`` plays for a turn that is not
    its own; its responses, once ``unread`` plays have been sent without reading any (or
    the stream is over)."""
    with grpc.insecure_channel(srv.address) as ch:
        stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
        game = stub.CreateMatch(api.CreateMatchRequest(start_timeout_ms=600_000))
    sent = threading.Event()

    def requests():
        yield api.PlayRequest(subscribe=api.SubscribeGameRequest(game_id=game.game_id))
        for n in range(plays):
            if n == unread:
                sent.set()
            yield api.PlayRequest(play=api.SubmitPlayRequest(turn_id=999, notation="x" * 150))

    channel = grpc.insecure_channel(srv.address, options=SLOW_READER)
    stub = arbiter_pb2_grpc.ArbiterServiceStub(channel)
    metadata = (("authorization", f"Bearer {game.first_seat_token}"),)
    responses = stub.Play(requests(), metadata=metadata)
    responses.add_done_callback(lambda _: sent.set())
    assert sent.wait(60)
    return channel, responses


@contextlib.contextmanager
def logged(*texts: str) -> Iterator[tuple[threading.Event, list[logging.LogRecord]]]:
    """An event set once a record whose message holds one of ``texts`` (or one with a
    traceback) is logged, and every record logged meanwhile."""
    seen, records = threading.Event(), []

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)
            if any(t in record.getMessage() for t in texts) or record.exc_info:
                seen.set()

    watch, root = Watch(logging.DEBUG), logging.getLogger()
    level = root.level
    root.addHandler(watch)
    root.setLevel(logging.DEBUG)
    try:
        yield seen, records
    finally:
        root.removeHandler(watch)
        root.setLevel(level)


def test_a_play_stream_reads_no_plays_while_its_answers_go_unread(tmp_path, monkeypatch):
    """Plays sent faster than their answers are read wait for the reader: the edge queues a
    few answers, never enough to fall behind (it read every play it was sent, and queued
    all their answers, ending the stream, or holding MAX_BACKLOG answers per stream)."""
    monkeypatch.setattr(streams, "MAX_BACKLOG", 100)
    with EmbeddedServer(db=str(tmp_path / "a.db"), heartbeat_s=60.0) as srv:
        channel, responses = flood(srv, plays=3000, unread=300)
        try:
            first = next(responses)
            assert first.event.type == pb.EVENT_TYPE_SNAPSHOT
            for _ in range(3000):  # every play is answered, in order; the stream goes on
                answer = next(responses)
                assert answer.WhichOneof("kind") == "refused", answer
        finally:
            responses.cancel()
            channel.close()


def test_a_stream_too_far_behind_ends_with_resource_exhausted(tmp_path, monkeypatch):
    """The reader is told why its stream ended (it ended OK, as if the game were over, once
    the reader had read what was queued, and held that queue until then)."""
    monkeypatch.setattr(streams, "MAX_BACKLOG", 20)
    with (
        EmbeddedServer(db=str(tmp_path / "a.db"), heartbeat_s=60.0) as srv,
        logged("messages behind; ending its stream") as (behind, _),
    ):
        channel, responses = flood(srv, plays=200, unread=150)
        try:
            assert behind.wait(30)  # (reading before it fell behind, it would not)
            with pytest.raises(grpc.RpcError) as info:
                for _ in responses:
                    pass
            assert info.value.code() == RESOURCE_EXHAUSTED
            assert "resubscribe with after_seq" in info.value.details()
        finally:
            responses.cancel()
            channel.close()


def test_a_reader_gone_under_a_stalled_write_ends_its_stream_quietly(tmp_path):
    """A caller that goes away while a write to it is stalled: its stream ends without
    grpc's "ExecuteBatchError raised ... by servicer method" traceback in the log."""
    with EmbeddedServer(db=str(tmp_path / "a.db"), heartbeat_s=60.0) as srv:
        with logged("no more plays read") as (stalled, _):
            channel, responses = flood(srv, plays=3000, unread=300)
            assert stalled.wait(30)  # (its answers unread: the edge's write is stalled)
        # its write refused (or, if it was between writes, its handler cancelled by grpc)
        with logged("went away under a write", "RPC cancelled") as (ended, records):
            channel.close()
            assert ended.wait(30)
    assert not [r.getMessage() for r in records if r.exc_info]
