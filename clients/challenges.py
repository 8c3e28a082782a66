"""``nardy register NAME``, ``nardy challenge NAME``, ``nardy challenges``, ``nardy accept
MATCH``, ``nardy decline MATCH``.

Consent without writing Python: a registered player challenges another by name (with its
own token), and the other lists the challenges made to it and accepts or declines one.
Every command takes the player's token from ``--token`` or ``$NARDY_TOKEN``.
"""

from __future__ import annotations

import argparse
import os
import sys

from clients.admin import register_player
from clients.calls import run_with_token
from nardy.match import DEFAULT_VARIANT
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb

TIMEOUT = 10.0
ENV_TOKEN = "NARDY_TOKEN"


def _challenge(stub, auth, args: argparse.Namespace) -> None:
    me = args.name
    req = api.CreateMatchRequest(
        options=pb.GameOptions(
            turn_time_ms=args.turn_time_ms,
            variant=args.variant,
        ),
        target_points=args.points,
        first=api.SeatSpec(player_name=me),
        second=api.SeatSpec(player_name=args.opponent),
        start_timeout_ms=args.start_timeout_ms,
    )
    r = stub.CreateMatch(req, metadata=auth, timeout=TIMEOUT)
    print(f"match: {r.match_id}")
    print(f"game: {r.game_id}")
    if r.challenge:
        print(f"{args.opponent} is challenged: the match starts once it accepts (nardy accept)")


def _list(stub, auth, args: argparse.Namespace) -> None:
    r = stub.ListChallenges(api.ListChallengesRequest(), metadata=auth, timeout=TIMEOUT)
    for c in r.challenges:
        o = c.options
        points = f"{c.target_points} point" + ("s" if c.target_points != 1 else "")
        print(
            f"{c.match_id}\tfrom {c.challenger.name}\t{o.variant or DEFAULT_VARIANT} nardy, "
            f"{points}, {o.turn_time_ms / 1000:g} s per turn"
        )
    n = len(r.challenges)
    hint = "; answer with nardy accept MATCH or nardy decline MATCH" if n else ""
    print(f"({n} challenge{'s' if n != 1 else ''} waiting for you{hint})", file=sys.stderr)


def _accept(stub, auth, args: argparse.Namespace) -> None:
    r = stub.AcceptChallenge(
        api.AcceptChallengeRequest(match_id=args.match), metadata=auth, timeout=TIMEOUT
    )
    print(f"accepted: game {r.game_id}")
    print("your engine (nardy engine NAME with the same token) is told on its player stream")


def _decline(stub, auth, args: argparse.Namespace) -> None:
    stub.DeclineChallenge(
        api.DeclineChallengeRequest(match_id=args.match), metadata=auth, timeout=TIMEOUT
    )
    print(f"declined: match {args.match} is called off")


ACTIONS = {
    "challenge": _challenge,
    "challenges": _list,
    "accept": _accept,
    "decline": _decline,
}


def main(args: argparse.Namespace) -> int:
    if args.command == "register":  # (needs no token)
        return run_with_token(
            "nardy register",
            args.server,
            None,
            None,
            lambda ch, auth: register_player(ch, auth, args),
        )
    return run_with_token(
        f"nardy {args.command}",
        args.server,
        args.token or os.environ.get(ENV_TOKEN),
        f"your player token (--token or ${ENV_TOKEN})",
        lambda ch, auth: ACTIONS[args.command](api_grpc.ArbiterServiceStub(ch), auth, args),
    )
