"""Every token an arbiter has issued, as a Bloom filter of their SHA-256 digests: a digest
not in it was never issued, so a made-up token is refused without asking the store.

The core builds it as it restores (players, seat tokens, the operator's) and adds each
token it issues; it sends it to the edge when it is ready, and each new digest after it,
so the edge refuses made-up tokens without the core (server.edge.callers). Both sides add
the same digests in the same order, so their filters stay the same. It grows in slices,
each twice the last, so that it stays about 2 bytes per token with at most ~0.1% false
"maybe"s (each costs one ordinary lookup). Pure: no I/O.
"""

from __future__ import annotations

import struct

PROBES = 8  # bit positions per digest, each from 4 bytes of the digest (already random)
BITS_PER_TOKEN = 16  # at a slice's capacity: ~0.06% false positives
FIRST = 1 << 16  # tokens in the first slice
HEADER = struct.Struct(">II")  # a slice's capacity and count
WORDS = struct.Struct(f">{PROBES}I")


class Slice:
    __slots__ = ("bits", "capacity", "count", "size")

    def __init__(self, capacity: int, count: int = 0, bits: bytearray | None = None) -> None:
        self.capacity = capacity
        self.count = count
        self.size = capacity * BITS_PER_TOKEN
        self.bits = bits if bits is not None else bytearray(self.size // 8)

    def positions(self, raw: bytes) -> list[int]:
        return [int.from_bytes(raw[4 * i : 4 * i + 4], "big") % self.size for i in range(PROBES)]

    def add(self, raw: bytes) -> None:
        for p in self.positions(raw):
            self.bits[p >> 3] |= 1 << (p & 7)
        self.count += 1

    def __contains__(self, raw: bytes) -> bool:
        bits = self.bits
        return all(bits[p >> 3] & (1 << (p & 7)) for p in self.positions(raw))


class Issued:
    """Token digests (hex SHA-256) issued so far: ``digest in issued`` is False only for
    one never added."""

    def __init__(self, expected: int = 0) -> None:
        capacity = FIRST
        while capacity < 2 * expected:
            capacity *= 2
        self.slices = [Slice(capacity)]

    def add(self, digest: str) -> None:
        raw = _raw(digest)
        if raw is None or raw in self:
            return
        last = self.slices[-1]
        if last.count >= last.capacity:
            last = Slice(2 * last.capacity)
            self.slices.append(last)
        last.add(raw)

    def __contains__(self, item: str | bytes) -> bool:
        raw = item if isinstance(item, bytes) else _raw(item)
        return raw is not None and any(raw in s for s in self.slices)

    def __len__(self) -> int:
        """Tokens added (those the filter took for added already are not counted)."""
        return sum(s.count for s in self.slices)

    @property
    def nbytes(self) -> int:
        return sum(len(s.bits) for s in self.slices)

    def dump(self) -> bytes:
        """The filter as bytes (:meth:`load` reads it back)."""
        return b"".join(HEADER.pack(s.capacity, s.count) + bytes(s.bits) for s in self.slices)

    @classmethod
    def load(cls, data: bytes) -> Issued:
        """A filter from :meth:`dump`'s bytes (ValueError if they are not)."""
        slices = []
        at = 0
        while at < len(data):
            if len(data) - at < HEADER.size:
                raise ValueError("a truncated filter")
            capacity, count = HEADER.unpack_from(data, at)
            at += HEADER.size
            size = capacity * BITS_PER_TOKEN // 8
            if capacity < 1 or len(data) - at < size:
                raise ValueError("a truncated filter")
            slices.append(Slice(capacity, count, bytearray(data[at : at + size])))
            at += size
        if not slices:
            raise ValueError("an empty filter")
        issued = cls.__new__(cls)
        issued.slices = slices
        return issued


def _raw(digest: str) -> bytes | None:
    """A hex SHA-256 digest's 32 bytes (None: not a digest)."""
    if len(digest) != 64:
        return None
    try:
        return bytes.fromhex(digest)
    except ValueError:
        return None


__all__ = ["Issued"]
