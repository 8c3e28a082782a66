"""``nardy verify RECORD|GAME``: check a game's dice against the server's commitment.

A record file (text or JSON, e.g. from ``nardy export``) or a game id on an arbiter. Prints
``fair`` for each game whose revealed server seed matches the commitment and gives every
die, else the first throw that does not match (exit status 1). A game whose dice its creator
chose (a public seed, scripted dice) is "NOT A FAIR-DICE GAME" (exit status 3, unless a
mismatch elsewhere makes it 1): not a mismatch, but not fair dice either. Exit status 0 only
when every game has fair dice.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grpc

from nardy.client import channel
from nardy.record import GameRecord, RecordError, load
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.verify import verify


def fetch(address: str, game_id: str) -> GameRecord:
    """The record of a game on an arbiter, with its server seed if revealed."""
    from clients.export import fetch_record

    with channel(address) as ch:
        return fetch_record(api_grpc.ArbiterServiceStub(ch), game_id)


def main(args: argparse.Namespace) -> int:
    try:
        if Path(args.source).exists():
            games = load(args.source)
        else:
            games = [fetch(args.server, args.source)]
    except (RecordError, ValueError) as e:
        print(f"nardy verify: {e}", file=sys.stderr)
        return 2
    except grpc.RpcError as e:
        print(f"nardy verify: {args.server}: {e.details()}", file=sys.stderr)
        return 2
    status = 0
    for game in games:
        verdict = verify(game)
        if not verdict.fair:
            print("NOT FAIR: " + verdict.message)
            status = 1
        elif verdict.chosen:
            print("NOT A FAIR-DICE GAME: " + verdict.message)
            status = status or 3
        else:
            print("fair: " + verdict.message)
    return status
