"""``nardy engine NAME``: run a bundled engine as a process against an arbiter."""

from __future__ import annotations

import argparse
import logging
import sys

from engines.base import Unavailable
from engines.registry import ENGINES, make_engine, sdk_adapter

log = logging.getLogger("nardy.engines")


def main(args: argparse.Namespace) -> int:
    """Build the engine named ``args.name`` and play games with it until ``max_games``."""
    import os

    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format=f"%(asctime)s %(levelname)s [{args.name}] %(name)s %(message)s",
    )
    if args.name not in ENGINES:
        print(
            f"nardy engine: unknown engine {args.name!r}; choose one of "
            f"{', '.join(sorted(ENGINES))}",
            file=sys.stderr,
        )
        return 2
    if not args.give_up > 0:
        print(f"nardy engine {args.name}: --give-up is a number of seconds above 0",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.max_games_at_once < 1:
        print(f"nardy engine {args.name}: --max-games-at-once is 1 or more", file=sys.stderr)
        return 2
    if not (args.token or os.environ.get("NARDY_TOKEN")):
        print(
            f"nardy engine {args.name}: no token: give --token or set NARDY_TOKEN "
            "(a player token from RegisterPlayer, or a seat token)",
            file=sys.stderr,
        )
        return 2
    try:
        engine = make_engine(
            args.name,
            level=args.level,
            seed=args.seed,
            variant_name=ENGINES[args.name].variants[0],  # each turn says its own
            ply=getattr(args, "ply", None),
        )
    except (ValueError, Unavailable) as e:
        print(f"nardy engine {args.name}: {e}", file=sys.stderr)
        return 2
    try:
        return _play(
            args, engine, args.server or os.environ.get("NARDY_SERVER") or "127.0.0.1:50051"
        )
    finally:
        if engine.summary():
            log.info("%s", engine.summary())
        engine.close()


def _play(args: argparse.Namespace, engine, server: str) -> int:
    from nardy.client import PLAY, UNARY, Consent, Reconnect, run_engine

    transport = UNARY if args.unary else PLAY
    log.info(
        "engine %s starting (level %s, seed %s, max games %s, over %s)",
        args.name,
        args.level,
        args.seed,
        args.max_games,
        "SubscribeGame and SubmitPlay" if args.unary else "the Play stream",
    )
    play = sdk_adapter(engine)
    if args.ladder:
        log.info("ready in the ladders %s while it runs", ", ".join(args.ladder))
    consent: Consent | bool = False
    if args.accept_challenges:
        consent = Consent(max_games_at_once=args.max_games_at_once).stated(play)
        log.info(
            "accepting challenges: %s nardy, turns of %d-%d ms, matches to at most %d points, "
            "at most %d at once (%d per challenger)",
            ", ".join(consent.variants or ()),
            consent.min_turn_time_ms,
            consent.max_turn_time_ms,
            consent.max_points,
            consent.max_games_at_once,
            consent.max_per_opponent,
        )

    def lost(why: str, wait: float) -> None:
        print(f"nardy engine {args.name}: cannot reach {server} ({why}), retrying in "
              f"{wait:.1f} s", file=sys.stderr, flush=True)  # fmt: skip

    def back() -> None:
        print(f"nardy engine {args.name}: connected to {server} again", file=sys.stderr,
              flush=True)  # fmt: skip

    reconnect = Reconnect(give_up_s=args.give_up, on_lost=lost, on_back=back)
    try:
        run_engine(
            play,
            address=server,
            token=args.token,
            max_games=args.max_games,
            reconnect=reconnect,
            transport=transport,
            accept_challenges=consent,
            ladders=args.ladder,
        )
    except KeyboardInterrupt:
        return 130
    except BaseException as e:
        why = rpc_failure(e, server)
        if why is None:
            raise
        print(f"nardy engine {args.name}: {why}", file=sys.stderr)
        return 1
    log.info("engine %s done", args.name)
    return 0


def rpc_failure(error: BaseException, server: str) -> str | None:
    """A gRPC failure or an arbiter given up on (also inside trio's exception groups) as
    one line, else None."""
    import grpc

    from nardy.client import Unreachable, unreachable_hint

    if isinstance(error, BaseExceptionGroup):
        if error.subgroup(KeyboardInterrupt) is not None:
            return None
        group = error.subgroup(lambda e: isinstance(e, grpc.RpcError | Unreachable))
        if group is None:
            return None
        while isinstance(group, BaseExceptionGroup):
            group = group.exceptions[0]
        error = group
    if isinstance(error, Unreachable):
        return str(error)
    if not isinstance(error, grpc.RpcError):
        return None
    code, details = error.code(), error.details()
    if code == grpc.StatusCode.UNAUTHENTICATED:
        return f"the arbiter at {server} does not accept the token ({details})"
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"cannot reach the arbiter at {server} ({details}){unreachable_hint(details)}"
    return f"the arbiter at {server} answered {code.name}: {details}"
