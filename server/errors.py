"""Refusals of the arbiter core, by kind; the transport maps each kind to a gRPC status."""

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


class ArbiterError(Exception):
    """A request the arbiter refuses; ``code`` says which kind, the message says why."""

    def __init__(self, code: Code, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


INSTANCE_KEY = "nardy-instance"  # trailing metadata: the address of the instance to call


class Elsewhere(ArbiterError):
    """The game is run by another instance on the same database: the call is answered
    UNAVAILABLE with that instance's ``host:port`` in the ``nardy-instance`` trailing
    metadata, for the caller to send it there (see docs/PROTOCOL.md)."""

    def __init__(self, address: str, message: str) -> None:
        super().__init__(Code.UNAVAILABLE, message)
        self.address = address
