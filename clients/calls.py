"""One command-line action's calls to a running arbiter with a bearer token, and what the
person sees when the token is missing or a call is refused."""

from __future__ import annotations

import sys
from collections.abc import Callable

import grpc

from nardy.client import channel, instance_of, unreachable_hint

Metadata = tuple[tuple[str, str], ...]


def run_with_token(
    program: str,
    server: str,
    token: str | None,
    missing: str | None,
    action: Callable[[grpc.Channel, Metadata], None],
) -> int:
    """Call ``action(channel, auth)``; exit status 2 without a token (``missing`` says how
    to give one; None: the call needs none), 1 when the server refuses a call, else 0."""
    if not token and missing is not None:
        print(f"{program}: give {missing}", file=sys.stderr)
        return 2
    auth = (("authorization", f"Bearer {token}"),) if token else ()
    try:
        try:
            with channel(server) as ch:
                action(ch, auth)
        except grpc.RpcError as e:
            elsewhere = instance_of(e)  # another instance runs that game: call it there
            if not elsewhere:
                raise
            with channel(elsewhere) as ch:
                action(ch, auth)
    except grpc.RpcError as e:
        details = e.details() or ""
        hint = unreachable_hint(details) if e.code() == grpc.StatusCode.UNAVAILABLE else ""
        print(f"{program}: {e.code().name}: {details}{hint}", file=sys.stderr)
        return 1
    return 0
