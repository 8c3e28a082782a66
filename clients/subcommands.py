"""Subcommands beyond the rules and the programs for people: the arbiter, ladders, engines,
records, the operator's commands. Argparse only, so that `nardy legal` stays light to start."""

from __future__ import annotations

import argparse
import logging
import sys

from clients.cliargs import (
    MIN_ADMIN_TOKEN,
    above_zero,
    add_server_args,
    add_tls_args,
    add_token_arg,
    add_turn_time_arg,
    at_least,
    http_address,
    log_level,
    port,
    read_admin_token,
    runs,
)
from nardy.match import DEFAULT_VARIANT


def register(sub: argparse._SubParsersAction) -> None:
    from clients.commands import register as register_clients
    from nardy.variant import available

    register_clients(sub)  # play, watch, replay, standings (programs for people)
    from clients.analyse import register as register_analyse

    register_analyse(sub)  # analyse
    p = sub.add_parser(
        "serve",
        help="run the arbiter (gRPC server) for others to connect to",
        description="Run the arbiter: the gRPC server that hosts games, matches, spectators "
        "and ladders, owning the dice, the clocks and the rules. Everything is journaled in "
        "the database given by --db (an SQLite file or a PostgreSQL URL); a restart on the "
        "same database resumes games in progress. SIGINT or SIGTERM shut it down gracefully.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=port, default=50051, help="port (default 50051; 0 = any)")
    p.add_argument(
        "--db",
        default="nardy.db",
        help="SQLite file, or a postgresql://user@host:port/dbname URL (default nardy.db)",
    )
    p.add_argument(
        "--log-level",
        type=log_level,
        default="INFO",
        help="DEBUG, INFO (default), WARNING or ERROR; logs go to stderr, never with tokens",
    )
    p.add_argument(
        "--rate",
        type=above_zero(float),
        default=1000.0,
        metavar="PER_S",
        help="requests per second allowed per token or connection (default 1000)",
    )
    p.add_argument(
        "--streams",
        type=above_zero(int),
        default=100,
        metavar="N",
        help="streams (SubscribeGame, Play, SubscribePlayer, health Watch, reflection) and "
        "calls in progress (until their answers have gone) one caller may hold at once; "
        "the seats of a match "
        "count as its creator (default 100; the operator: no limit)",
    )
    p.add_argument(
        "--http-port",
        type=http_address,
        default=None,
        metavar="[HOST:]PORT",
        help="also serve the web view (live boards, ladders, replays, play in a browser) and "
        "Prometheus /metrics on this port (0 = any; HOST default: --host; default: off)",
    )
    p.add_argument(
        "--admin-token-file",
        metavar="FILE",
        help="read the operator (admin) token from FILE (default $NARDY_ADMIN_TOKEN; with "
        "neither, the token stored hashed in --db is kept, or a new one is printed once)",
    )
    p.add_argument(
        "--registration",
        choices=("open", "closed"),
        default="open",
        help="open: anyone may register a player (a few per hour per address); closed: "
        "only the operator (default open)",
    )
    p.add_argument(
        "--tls",
        nargs=2,
        metavar=("CERT", "KEY"),
        help="serve TLS only, with this certificate chain and its private key (PEM files)",
    )
    p.add_argument(
        "--lease-ms",
        type=above_zero(float),
        default=10_000,
        metavar="MS",
        help="several instances on one PostgreSQL: an instance that stops renewing its "
        "lease for this long has its games taken over by another (default 10000: its games "
        "go on a median 11.6 s after a kill -9, `make failover`; shorter hands them over "
        "sooner, but an instance that stalls longer loses them)",
    )
    p.add_argument(
        "--advertise",
        metavar="HOST:PORT",
        help="several instances: the address other instances send clients to for this "
        "one's games (default: --host and the bound port)",
    )
    p.add_argument(
        "--forward",
        action="store_true",
        help="several instances behind a load balancer: forward a call about a game "
        "another instance runs to it (at its --advertise address) instead of sending the "
        "client there (the web view's calls too), so that clients need only the "
        "balancer's address",
    )
    p.add_argument(
        "--trusted-proxy",
        action="append",
        default=[],
        metavar="ADDR",
        help="a reverse proxy's (or another instance's) address or network, e.g. 10.0.0.0/24 "
        "(repeat, or separate with commas): its x-real-ip metadata (on the web view, its "
        "X-Real-IP header) names the client, whose address the limits kept per address then "
        "count",
    )
    p.set_defaults(func=_serve)
    register_operator(sub)

    p = sub.add_parser(
        "ladder",
        help="run a local tournament between engine processes",
        description="Start an embedded arbiter, launch each engine command as a process and "
        "play duplicate-dice pairs until --games are done or the SPRT decides.",
    )
    p.add_argument(
        "--engine",
        action="append",
        default=[],
        metavar="NAME=CMD",
        required=True,
        help="an engine: its name and the command that runs it (repeat)",
    )
    p.add_argument(
        "--games", type=int, default=100, help="games to play in all, in pairs (default 100)"
    )
    p.add_argument(
        "--sprt",
        metavar="ELO0,ELO1,ALPHA,BETA",
        help="instead of --games: stop when a pair-based SPRT decides whether the first "
        "engine is stronger than the second by elo1 (H1) or by no more than elo0 (H0)",
    )
    p.add_argument("--concurrency", type=int, default=2, help="games at once (default 2)")
    add_turn_time_arg(p, 1000, old=("--time-per-move",))
    p.add_argument(
        "--db",
        help="SQLite file; running again with it continues (default: a temporary one, "
        "removed at the end)",
    )
    p.add_argument(
        "--logs",
        metavar="DIR",
        help="keep the engines' logs here (default: a temporary folder, removed at the end)",
    )
    p.add_argument("--records", metavar="DIR", help="write a record of every game here")
    p.add_argument(
        "--variant",
        choices=available(),
        default=DEFAULT_VARIANT,
        help="the rules of every game: long nardy or short nardy (backgammon); default %(default)s",
    )
    p.add_argument(
        "--progress",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="when stdout is not a terminal: a progress line this often (default 5)",
    )
    p.set_defaults(func=runs("clients.ladder_runner"))

    p = sub.add_parser(
        "export",
        help="write a game's record (text or JSON) or its board (SVG)",
        description="Fetch a game from an arbiter and write its record in the nardy text "
        "format (or JSON), or with --svg a picture of its board.",
    )
    p.add_argument("game", help="game id")
    add_server_args(p)
    p.add_argument("--json", action="store_true", help="JSON instead of the text format")
    p.add_argument(
        "--svg",
        action="store_true",
        help="the board as an SVG picture instead (the web view's board), last play ringed",
    )
    p.add_argument(
        "--ply",
        type=int,
        default=None,
        metavar="N",
        help="with --svg: the board after N plays (0 = the start; default: the last)",
    )
    p.add_argument("-o", "--output", help="file to write (default stdout)")
    p.set_defaults(func=runs("clients.export"))

    p = sub.add_parser(
        "import",
        help="check a game record against the rules",
        description="Replay a game record (the nardy text format or JSON) by the rules; "
        "exit 0 if every turn is legal, else name the first illegal turn and why.",
    )
    p.add_argument("file", help="a record file (text format or JSON)")
    p.add_argument("--koks", action="store_true", help="the game used the koks option")
    p.set_defaults(func=runs("clients.import_record"))

    p = sub.add_parser(
        "demo",
        help="a short local ladder of the bundled engines (make demo)",
        description="Run a local ladder between the bundled engines (random, greedy, "
        "expectimax, network) on an embedded arbiter with a fast clock, for about a minute, "
        "ending with the standings and a crosstable.",
    )
    p.add_argument("--games", type=int, default=36, help="games to play (default 36)")
    add_turn_time_arg(p, 500, old=("--time-per-move",))
    p.add_argument("--db", help="SQLite file (default: a temporary one)")
    p.add_argument("--records", metavar="DIR", help="write game records here")
    p.set_defaults(func=runs("clients.demo", "run"))

    p = sub.add_parser(
        "engine",
        help="run a bundled engine against an arbiter",
        description="Run a bundled engine as a process. The server and token come from "
        "--server/--token or the NARDY_SERVER/NARDY_TOKEN environment variables.",
    )
    from engines.registry import names

    p.add_argument("name", help="engine name: " + ", ".join(names()))
    p.add_argument("--server", help="arbiter address host:port (default $NARDY_SERVER)")
    add_tls_args(p)
    add_token_arg(p, "player or seat token (default $NARDY_TOKEN)")
    p.add_argument("--level", type=int, default=None, help="strength level, if the engine has one")
    p.add_argument(
        "--ply",
        type=int,
        default=None,
        metavar="N",
        help="search depth, for an engine that takes one (gnubg: 0-3, default 0)",
    )
    p.add_argument("--seed", type=int, default=None, help="seed for the engine's own randomness")
    p.add_argument("--max-games", type=int, default=None, help="stop after this many games")
    p.add_argument(
        "--give-up",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="an arbiter that cannot be reached is retried (with a line on stderr each "
        "time) for this long, then the engine exits with an error (default 120)",
    )
    p.add_argument(
        "--unary",
        action="store_true",
        help="play over SubscribeGame and a SubmitPlay call per turn instead of the Play "
        "stream (the default, which falls back to those where the arbiter does not offer it)",
    )
    p.add_argument(
        "--ladder",
        action="append",
        default=[],
        metavar="NAME",
        help="be paired in the server's ladder NAME while the engine runs (a player token; "
        "repeat for several): ready at the start, no longer at the end; SIGTERM leaves "
        "the ladders and stops once the games being played are over (a second stops at once)",
    )
    p.add_argument(
        "--accept-challenges",
        action="store_true",
        help="accept the challenges other players make to this player (a person on the web "
        "view's /play page, nardy challenge) that the engine can play: its variants, turns "
        "of at least its floor; decline the others",
    )
    p.add_argument(
        "--max-games-at-once",
        type=int,
        default=4,
        metavar="N",
        help="with --accept-challenges: accept none while N matches are being played "
        "(default 4), nor a second at once from the same challenger",
    )
    p.set_defaults(func=runs("engines.cli"))

    p = sub.add_parser(
        "check-engine",
        help="check an engine process against scripted scenarios",
        description="Start an embedded arbiter, launch the engine command given after '--' "
        "with NARDY_SERVER and NARDY_TOKEN set, and drive it through scripted scenarios.",
    )
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ... (the engine command)")
    add_turn_time_arg(p, 3000, old=("--turn-ms",))
    p.add_argument(
        "--join-ms",
        type=int,
        metavar="MS",
        help="how long each scenario's game waits for the engine to join it "
        "(default 30000; an engine that loads for longer needs more)",
    )
    p.add_argument(
        "--variant",
        choices=("long", "short"),
        help="only this variant's scenarios, for an engine that plays one (default: both)",
    )
    p.set_defaults(func=runs("clients.check_engine"))


def _serve(args: argparse.Namespace) -> int:
    import os

    # gRPC's own C logging (each failed TLS handshake, at INFO) only from its errors up,
    # whatever --log-level, unless the operator's environment says otherwise
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    from server.app import CoreDidNotStart, ServerConfig, run_forever, unwrap

    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    try:
        admin_token = read_admin_token(args.admin_token_file, MIN_ADMIN_TOKEN)
    except OSError as e:
        print(f"nardy serve: {e}", file=sys.stderr)
        return 2
    try:
        run_forever(
            ServerConfig(
                host=args.host.strip("[]"),  # (an IPv6 host with or without brackets)
                port=args.port,
                db=args.db,
                rate_per_s=args.rate,
                rate_burst=2 * args.rate,
                streams_per_caller=args.streams,
                http_port=args.http_port and args.http_port[1],
                http_host=args.http_port and args.http_port[0],
                admin_token=admin_token,
                registration_open=args.registration == "open",
                tls_cert=args.tls and args.tls[0],
                tls_key=args.tls and args.tls[1],
                lease_s=args.lease_ms / 1000,
                advertise=args.advertise,
                forward=args.forward,
                trusted_proxies=[a for arg in args.trusted_proxy for a in arg.split(",") if a],
                log_level=args.log_level,
            )
        )
    except BaseException as e:
        error = unwrap(e)
        if not isinstance(error, (CoreDidNotStart, OSError, ValueError)):
            raise
        print(f"nardy serve: {error}", file=sys.stderr)
        return 2
    return 0


def add_register_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="the player's name (1-40 ASCII letters, digits, . _ -)")
    p.add_argument("--owner", default="", help="who runs it (shown beside its name)")
    p.add_argument("--human", action="store_true", help="a person, not a bot")


def variant_arg(p: argparse.ArgumentParser) -> None:
    from nardy.variant import available

    p.add_argument(
        "--variant", choices=available(), default=DEFAULT_VARIANT, help="default %(default)s"
    )


def register_operator(sub: argparse._SubParsersAction) -> None:
    """``nardy verify`` and ``nardy admin ...``."""
    p = sub.add_parser(
        "verify",
        help="check a game's dice against the server's commitment (provably fair dice)",
        description="Recompute the commitment and every throw of a finished game from its "
        "revealed server seed and client seeds: a record FILE (nardy export) or a GAME id on "
        "an arbiter. Prints 'fair', or the first throw that does not match (exit status 1).",
    )
    p.add_argument("source", metavar="RECORD|GAME", help="a record file, or a game id")
    add_server_args(p)
    p.set_defaults(func=runs("clients.verify"))

    register_challenges(sub)

    p = sub.add_parser(
        "admin",
        help="operator commands against a running arbiter (admin token)",
        description="Operator commands against a running arbiter. The admin token comes "
        "from --admin-token-file or $NARDY_ADMIN_TOKEN.",
    )
    add_server_args(p)
    p.add_argument("--admin-token-file", metavar="FILE", help="default $NARDY_ADMIN_TOKEN")
    cmds = p.add_subparsers(
        dest="action", required=True, metavar="ACTION", help="the operator action"
    )
    q = cmds.add_parser("register", help="register a player; prints its token (shown once)")
    add_register_args(q)
    q = cmds.add_parser(
        "create-match",
        help="seat two players (registered names, or open seats); prints the game id and "
        "the seat tokens",
    )
    q.add_argument(
        "--first",
        default="",
        help="registered player of the first seat (default: an open seat, its token printed)",
    )
    q.add_argument(
        "--second",
        default="",
        help="registered player of the second seat (default: an open seat, its token printed)",
    )
    q.add_argument("--points", type=int, default=1, help="match length (default 1)")
    q.add_argument(
        "--turn-time-ms", type=int, default=0, metavar="MS", help="default 120000 (two minutes)"
    )
    q.add_argument("--start-timeout-ms", type=int, default=0, help="default 60000")
    q.add_argument("--seed", type=int, default=None, help="public dice seed (not rated)")
    variant_arg(q)
    q = cmds.add_parser("create-ladder", help="create a ladder (bots join it themselves)")
    q.add_argument("name", help="the ladder's name")
    variant_arg(q)
    q.add_argument(
        "--turn-time-ms", type=at_least(1), default=1000, metavar="MS", help="default 1000"
    )
    q.add_argument(
        "--max-games", type=at_least(0), default=0, help="stop after this many (0: never)"
    )
    q.add_argument(
        "--max-games-per-bot",
        type=at_least(2),
        default=2,
        help="games one bot plays at once, at most (default 2: one duplicate pair; more "
        "lets the first bots to join take the ladder's games before the others come)",
    )
    q.add_argument("--illegal-play-limit", type=at_least(1), default=3, help="default 3")
    q.add_argument(
        "--time-bank-ms", type=at_least(0), default=0, metavar="MS", help="per side per game"
    )
    q.add_argument(
        "--max-concurrent-games",
        type=at_least(0),
        default=0,
        metavar="N",
        help="games in progress at once, all bots together (0: no limit)",
    )
    q = cmds.add_parser("void", help="void a game: it ends (or stays) without a result")
    q.add_argument("game", help="the game id")
    cmds.add_parser("players", help="list the registered players")
    q = cmds.add_parser(
        "archive",
        help="archive finished games out of the live journal (nothing is lost), now or on a "
        "schedule; alone: show the schedule and the last run",
    )
    when = q.add_mutually_exclusive_group()
    when.add_argument(
        "--before",
        metavar="DATE",
        help="the games that ended before DATE (YYYY-MM-DD, UTC; or an ISO date and time)",
    )
    when.add_argument(
        "--keep",
        type=float,
        metavar="DAYS",
        help="schedule: once an hour, the games that ended more than DAYS days ago (0: none)",
    )
    q.add_argument("--no-wait", action="store_true", help="return once the archiving starts")
    for choice in cmds._choices_actions:  # each action's --help says what it does
        sub = cmds.choices[choice.dest]
        sub.description = sub.description or choice.help[:1].upper() + choice.help[1:] + "."
    p.set_defaults(func=runs("clients.admin"))


def register_challenges(sub: argparse._SubParsersAction) -> None:
    """``nardy register`` (no token), ``challenge``, ``challenges``, ``accept`` and
    ``decline`` (a player token)."""
    p = sub.add_parser(
        "register",
        help="register yourself (or your bot) as a player on an arbiter; prints its token",
        description="Register NAME on an arbiter whose registration is open (else ask its "
        "operator: nardy admin register). Prints the player's token, once: keep it.",
    )
    add_server_args(p)
    add_register_args(p)
    p.set_defaults(func=runs("clients.challenges"), command="register")

    def player(name: str, help: str, description: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=description)
        add_server_args(p)
        add_token_arg(p, "your player token (default $NARDY_TOKEN)")
        p.set_defaults(func=runs("clients.challenges"), command=name)
        return p

    p = player(
        "challenge",
        "challenge another registered player to a match (it must accept)",
        "Create a match between you (--as, with your own player token) and OPPONENT. "
        "OPPONENT holds no seat until it accepts (nardy accept); prints the match id.",
    )
    p.add_argument("opponent", help="the registered player you challenge")
    p.add_argument("--as", dest="name", required=True, help="your own player name")
    p.add_argument("--points", type=int, default=1, help="match length (default 1)")
    p.add_argument("--turn-time-ms", type=int, default=0, metavar="MS", help="default 120000")
    p.add_argument(
        "--start-timeout-ms", type=int, default=0, help="time to accept and arrive (default 60000)"
    )
    variant_arg(p)
    player(
        "challenges",
        "list the challenges waiting for your answer",
        "List the challenges other players made to you (your player token): the match id, "
        "who challenges you and the terms. Answer with nardy accept or nardy decline.",
    )
    p = player(
        "accept",
        "accept a challenge: take your seat in the match",
        "Accept the challenge MATCH (from nardy challenges): you take your seat and the "
        "match goes ahead; your engine is told on its player stream (nardy engine).",
    )
    p.add_argument("match", help="the match id of the challenge")
    p = player(
        "decline",
        "decline a challenge (or withdraw one you made): the match is called off",
        "Decline the challenge MATCH (from nardy challenges), or withdraw a challenge you "
        "made while it waits: the match is aborted.",
    )
    p.add_argument("match", help="the match id of the challenge")
