"""``nardy admin ...``: operator commands against a running arbiter, with the admin token.

register NAME (prints the player's token, shown once), create-match (prints the game id
and the seat tokens), create-ladder NAME, void GAME, players, archive (finished games out
of the live journal: at once, or on a schedule).
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import UTC, datetime, timedelta

import grpc

from clients.calls import run_with_token
from clients.cliargs import ENV_ADMIN_TOKEN, read_admin_token
from nardy.match import DEFAULT_VARIANT
from nardy.v1 import admin_pb2 as admin_pb
from nardy.v1 import admin_pb2_grpc as admin_grpc
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as lpb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc

TIMEOUT = 10.0


def register_player(ch: grpc.Channel, auth, args: argparse.Namespace) -> None:
    """Register ``args.name`` (``nardy register``, or the operator's ``nardy admin
    register``) and print its token, shown only this once."""
    r = api_grpc.ArbiterServiceStub(ch).RegisterPlayer(
        api.RegisterPlayerRequest(name=args.name, bot=not args.human, owner=args.owner),
        metadata=auth,
        timeout=TIMEOUT,
    )
    print(f"registered {args.name} (player id {r.player_id})")
    print(f"token: {r.token}")
    use = (
        "to sign in at the web view's /play, or for nardy play"
        if args.human
        else ("e.g. as NARDY_TOKEN for its engine")
    )
    print(f"(shown only once: keep it, {use})")


def _create_match(ch: grpc.Channel, auth, args: argparse.Namespace) -> None:
    req = api.CreateMatchRequest(
        options=pb.GameOptions(turn_time_ms=args.turn_time_ms, variant=args.variant),
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
        time_bank_ms=args.time_bank_ms,
        max_concurrent_games=args.max_concurrent_games,
        variant=args.variant,
    )
    r = ladder_grpc.LadderServiceStub(ch).CreateLadder(
        lpb.CreateLadderRequest(name=args.name, options=options), metadata=auth, timeout=TIMEOUT
    )
    state = "created" if r.created else "exists already (its first settings are kept)"
    variant = r.options.variant or DEFAULT_VARIANT
    print(f"ladder {r.name} {state}: {variant} nardy, {r.options.turn_time_ms} ms per turn")


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
    n = len(r.players)
    print(f"({n} player{'' if n == 1 else 's'})", file=sys.stderr)


def parse_date(text: str) -> datetime:
    """``--before``: a date (midnight UTC) or an ISO date and time (UTC unless it says)."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"--before: {text[:40]!r} is not a date (YYYY-MM-DD, or YYYY-MM-DDTHH:MM[:SS] "
            "with an optional Z or +HH:MM)"
        ) from None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _when(ts) -> str:
    return ts.ToDatetime(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _archive(ch: grpc.Channel, auth, args: argparse.Namespace) -> None:
    """Archive now (--before), set the schedule (--keep: it runs once at once), or show
    both; then wait for the run, its progress on a terminal."""
    admin = admin_grpc.AdminServiceStub(ch)
    status = admin_pb.GetRetentionRequest()
    if args.keep is not None:
        keep = admin_pb.SetRetentionRequest()
        keep.keep.FromTimedelta(timedelta(days=args.keep))
        r = admin.SetRetention(keep, metadata=auth, timeout=TIMEOUT).retention
        print(_schedule_line(r))
        if not r.HasField("keep"):
            return
    elif args.before is not None:
        request = admin_pb.ArchiveGamesRequest()
        request.before.FromDatetime(args.before)
        r = admin.ArchiveGames(request, metadata=auth, timeout=TIMEOUT).retention
    else:
        r = admin.GetRetention(status, metadata=auth, timeout=TIMEOUT).retention
        print(_schedule_line(r))
        if r.HasField("run"):
            print(("now " if r.run.running else "last run: ") + _run_line(r.run))
        return
    started, tty = r.run.started, sys.stderr.isatty()
    while r.run.running and not args.no_wait:
        if tty:
            progress = f"\r{r.run.archived} archived, about {r.run.remaining} left "
            print(progress, end="", file=sys.stderr, flush=True)
        time.sleep(0.5)
        r = admin.GetRetention(status, metadata=auth, timeout=TIMEOUT).retention
        if r.run.started != started:
            print("\nthe run goes on at another instance (see its log)", file=sys.stderr)
            return
    if tty and not args.no_wait:
        print("\r\033[K", end="", file=sys.stderr)
    print(_run_line(r.run))
    if r.run.error:
        raise SystemExit(1)


def _schedule_line(r: admin_pb.Retention) -> str:
    if not r.HasField("keep"):
        return "schedule: none (nardy admin archive --keep DAYS sets one)"
    days = r.keep.ToTimedelta() / timedelta(days=1)
    unit = "day" if days == 1 else "days"
    return f"schedule: once an hour, the games that ended more than {days:g} {unit} ago"


def _run_line(run: admin_pb.ArchiveRun) -> str:
    if run.running:
        done = f"{run.archived} archived, about {run.remaining} left"
        if not run.archived and not run.remaining:  # (just started: not counted yet)
            done = "counting them"
        return (
            f"archiving the games that ended before {_when(run.before)} (since "
            f"{_when(run.started)}): {done}"
        )
    games = "game" if run.archived == 1 else "games"
    line = f"archived {run.archived} {games} that ended before {_when(run.before)}"
    line += f" (the run: {_when(run.started)} to {_when(run.finished)})"
    if run.remaining:
        line += f"; {run.remaining} not yet: their match goes on"
    if run.error:
        line += f"; stopped: {run.error}"
    return line


ACTIONS = {
    "register": register_player,
    "create-match": _create_match,
    "create-ladder": _create_ladder,
    "void": _void,
    "players": _players,
    "archive": _archive,
}


def main(args: argparse.Namespace) -> int:
    try:
        token = read_admin_token(args.admin_token_file)
        if getattr(args, "before", None) is not None:
            args.before = parse_date(args.before)
    except (OSError, ValueError) as e:
        print(f"nardy admin{' ' + args.action if args.action else ''}: {e}", file=sys.stderr)
        return 2
    return run_with_token(
        f"nardy admin {args.action}",
        args.server,
        token,
        f"the admin token (--admin-token-file or ${ENV_ADMIN_TOKEN})",
        lambda ch, auth: ACTIONS[args.action](ch, auth, args),
    )
