"""Refusals of the arbiter core, by kind: each kind is a gRPC status code, by name and by
its number on the link (``status``), without importing gRPC."""

from __future__ import annotations

from enum import StrEnum


class Code(StrEnum):
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    ALREADY_EXISTS = "ALREADY_EXISTS"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    UNAVAILABLE = "UNAVAILABLE"
    UNIMPLEMENTED = "UNIMPLEMENTED"
    INTERNAL = "INTERNAL"

    @property
    def status(self) -> int:
        """The gRPC status code's number (google.rpc.Code)."""
        return _NUMBERS[self]


_NUMBERS = {
    Code.INVALID_ARGUMENT: 3,
    Code.NOT_FOUND: 5,
    Code.ALREADY_EXISTS: 6,
    Code.PERMISSION_DENIED: 7,
    Code.RESOURCE_EXHAUSTED: 8,
    Code.FAILED_PRECONDITION: 9,
    Code.UNIMPLEMENTED: 12,
    Code.INTERNAL: 13,
    Code.UNAVAILABLE: 14,
    Code.UNAUTHENTICATED: 16,
}


class ArbiterError(Exception):
    """A request the arbiter refuses; ``code`` says which kind, the message says why."""

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


MISSING_TOKEN = "missing token: send 'authorization: Bearer <token>'"
INSTANCE_KEY = "nardy-instance"  # trailing metadata: the address of the instance to call


class Elsewhere(ArbiterError):
    """The game is run by another instance on the same database: the call is answered
    UNAVAILABLE with that instance's ``host:port`` in the ``nardy-instance`` trailing
    metadata, for the caller to send it there (see docs/PROTOCOL.md)."""

    def __init__(self, address: str, message: str) -> None:
        super().__init__(Code.UNAVAILABLE, message)
        self.address = address


QUOTE = 100  # characters of a request's text an error message may repeat


def clip(text: str, limit: int = 3 * QUOTE) -> str:
    """An error message cut to a sane length (it may repeat parts of a request)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quote(text: str) -> str:
    """``text`` as an error message quotes it: repr'd, at most QUOTE characters."""
    return repr(text if len(text) <= QUOTE else text[:QUOTE] + "…")
