"""``nardy admin ...``: operator commands against a running arbiter, with the admin token.

register NAME (prints the player's token, shown once), create-match (prints the game id
and the seat tokens), create-ladder NAME, void GAME, players.
"""

from __future__ import annotations

import argparse
import sys

import grpc

from clients.calls import run_with_token
from clients.cliargs import ENV_ADMIN_TOKEN, read_admin_token
from nardy.v1 import admin_pb2 as admin_pb
from nardy.v1 import admin_pb2_grpc as admin_grpc
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as lpb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc

TIMEOUT = 10.0


def _register(ch: grpc.Channel, auth, args: argparse.Namespace) -> None:
    r = api_grpc.ArbiterServiceStub(ch).RegisterPlayer(
        api.RegisterPlayerRequest(name=args.name, bot=not args.human, owner=args.owner),
        metadata=auth,
        timeout=TIMEOUT,
    )
    print(f"registered {args.name} (player id {r.player_id})")
    print(f"token: {r.token}")
    print("(shown only once: give it to the player, e.g. as NARDY_TOKEN for its engine)")


def _create_match(ch: grpc.Channel, auth, args: argparse.Namespace) -> None:
    req = api.CreateMatchRequest(
        options=pb.GameOptions(turn_time_ms=args.turn_time_ms),
        target_points=args.points,
        first=api.SeatSpec(player_name=args.first),
        second=api.SeatSpec(player_name=args.second),
        start_timeout_ms=args.start_timeout_ms,
    )
    if args.seed is not None:
        req.seed = args.seed
    r = api_grpc.ArbiterServiceStub(ch).CreateMatch(req, metadata=auth, timeout=TIMEOUT)
    print(f"match: {r.match_id}")
    print(f"game: {r.game_id}")
    print(f"dice commitment: {r.dice_commitment}")
    for seat, name, token in (
        ("first", args.first, r.first_seat_token),
        ("second", args.second, r.second_seat_token),
    ):
        print(f"{seat} seat token: {token}" if token else f"{seat} seat: {name} (its own token)")


def _create_ladder(ch: grpc.Channel, auth, args: argparse.Namespace) -> None:
    options = lpb.LadderOptions(
        turn_time_ms=args.turn_time_ms,
        max_games=args.max_games,
        max_games_per_bot=args.max_games_per_bot,
        illegal_play_limit=args.illegal_play_limit,
    )
    r = ladder_grpc.LadderServiceStub(ch).CreateLadder(
        lpb.CreateLadderRequest(name=args.name, options=options), metadata=auth, timeout=TIMEOUT
    )
    state = "created" if r.created else "exists already (its first settings are kept)"
    print(f"ladder {r.name} {state}: {r.options.turn_time_ms} ms per turn")


def _void(ch: grpc.Channel, auth, args: argparse.Namespace) -> None:
    r = admin_grpc.AdminServiceStub(ch).VoidGame(
        admin_pb.VoidGameRequest(game_id=args.game), metadata=auth, timeout=TIMEOUT
    )
    print(f"game {args.game} voided ({pb.GameStatus.Name(r.status)})")


def _players(ch: grpc.Channel, auth, args: argparse.Namespace) -> None:
    r = admin_grpc.AdminServiceStub(ch).ListPlayers(
        admin_pb.ListPlayersRequest(), metadata=auth, timeout=TIMEOUT
    )
    for p in r.players:
        kind = "bot" if p.player.bot else "person"
        owner = f" owner={p.player.owner}" if p.player.owner else ""
        print(f"{p.player.name}\t{p.player_id}\t{kind}{owner}")
    print(f"({len(r.players)} players)", file=sys.stderr)


ACTIONS = {
    "register": _register,
    "create-match": _create_match,
    "create-ladder": _create_ladder,
    "void": _void,
    "players": _players,
}


def main(args: argparse.Namespace) -> int:
    try:
        token = read_admin_token(args.admin_token_file)
    except OSError as e:
        print(f"nardy admin: {e}", file=sys.stderr)
        return 2
    return run_with_token(
        f"nardy admin {args.action}",
        args.server,
        token,
        f"the admin token (--admin-token-file or ${ENV_ADMIN_TOKEN})",
        lambda ch, auth: ACTIONS[args.action](ch, auth, args),
    )
