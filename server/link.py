"""The link between an arbiter's edge and its core: frames of protobuf messages on one
local socket (proto/nardy/link/v1/link.proto).

A frame is a 4-byte big-endian length, then one serialized message: ToCore from the
edge, ToEdge from the core. Both halves frame and read frames here; neither imports the
other's runtime (the edge runs on asyncio, the core on trio), so this module does no I/O.
"""

from __future__ import annotations

import logging
import struct
from typing import Generic, TypeVar

from google.protobuf.message import DecodeError, Message

from nardy.link.v1 import link_pb2 as link_pb

__all__ = ["MAX_FRAME", "Frames", "frame", "link_pb"]

HEADER = struct.Struct(">I")
# The largest frame either side reads: a replay of a long game from its start is a few
# hundred KiB; anything over this is skipped whole, never buffered.
MAX_FRAME = 32 * 1024 * 1024

# The link's own methods (a Call's method when it is not one of the public API's)
HEARTBEAT = "Link/Heartbeat"  # HeartbeatRequest -> a serialized GameEvent
INDEX = "Link/Index"  # IndexRequest -> IndexResponse (the web view's front page)
HISTORY = "Link/History"  # HistoryRequest -> HistoryResponse (a game for the web view)
METRICS = "Link/Metrics"  # (empty) -> MetricsResponse
PING = "Link/Ping"  # (empty) -> (empty): the edge's probe that the core answers
SHUTDOWN = "Link/Shutdown"  # (empty) -> (empty): every stream ends with SERVER_SHUTDOWN
WHO = "Link/Who"  # WhoRequest (identify) -> (empty): who the caller's token speaks for

# Either half looks this often whether it stood still: STOOD_STILL_S or more since it last
# ran means its process (or the machine) was stopped, suspended or starved, and no clock is
# charged for that whole time (server.core.tables.Tables.stood_still). The whole gap is
# credited, not its part past the tick: a stop shorter than a turn must not lose it.
STILL_TICK_S = 0.25
STOOD_STILL_S = 2 * STILL_TICK_S
LOUD_STILL_S = 1.0  # a stop this long or longer is a warning in the log


def a_stop(gap: float, log: logging.Logger, half: str) -> bool:
    """Whether ``gap`` seconds since ``half`` ("core", "edge") last ran were a stop (see
    STOOD_STILL_S); a stop is logged."""
    if gap < STOOD_STILL_S:
        return False
    log.log(
        logging.WARNING if gap >= LOUD_STILL_S else logging.INFO,
        "the %s stood still for %.1f s: no clock is charged for it", half, gap,
    )  # fmt: skip
    return True


M = TypeVar("M", bound=Message)


def embedded(field: int, data: bytes) -> bytes:
    """``data`` (a serialized message) as field ``field`` of another message, serialized:
    a Play stream's event or answer wrapped in its PlayResponse without parsing it."""
    head = bytearray([field << 3 | 2])  # a length-delimited field
    n = len(data)
    while n >= 0x80:
        head.append(n & 0x7F | 0x80)
        n >>= 7
    head.append(n)
    return bytes(head) + data


def frame(message: Message) -> bytes:
    """``message`` as one frame."""
    data = message.SerializeToString()
    return HEADER.pack(len(data)) + data


class Frames(Generic[M]):
    """Reads frames of ``kind`` from the bytes of a stream, as they come in pieces.

    A frame longer than ``most`` is skipped (its bytes are not kept), one that does not
    parse as ``kind`` is dropped: both are counted in :attr:`dropped`, and the frames after
    them are read as usual."""

    def __init__(self, kind: type[M], most: int = MAX_FRAME) -> None:
        self.kind = kind
        self.most = most
        self.dropped = 0
        self._buffer = bytearray()
        self._skip = 0  # bytes of an oversize frame still to throw away

    def feed(self, data: bytes) -> list[M]:
        """The frames that ``data`` completes, in order."""
        out: list[M] = []
        if self._skip:
            skipped = min(self._skip, len(data))
            self._skip -= skipped
            data = data[skipped:]
        buffer = self._buffer
        buffer += data
        start = 0
        while len(buffer) - start >= HEADER.size:
            (size,) = HEADER.unpack_from(buffer, start)
            if size > self.most:
                self.dropped += 1
                available = len(buffer) - start - HEADER.size
                self._skip = max(0, size - available)
                start = min(len(buffer), start + HEADER.size + size)
                continue
            end = start + HEADER.size + size
            if end > len(buffer):
                break
            try:
                message = self.kind.FromString(bytes(buffer[start + HEADER.size : end]))
            except DecodeError:
                self.dropped += 1
            else:
                out.append(message)
            start = end
        del buffer[:start]
        return out

    @property
    def pending(self) -> int:
        """Bytes of a frame not complete yet."""
        return len(self._buffer)
