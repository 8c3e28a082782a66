"""Subcommands beyond the rules: registered here so that `nardy legal` stays light to start."""

from __future__ import annotations

import argparse
import logging
import sys


def register(sub: argparse._SubParsersAction) -> None:
    from clients.commands import register as register_clients

    register_clients(sub)  # play, watch, replay, standings (programs for people)
    p = sub.add_parser(
        "serve",
        help="run the arbiter (gRPC server) for others to connect to",
        description="Run the arbiter: the gRPC server that hosts games, matches, spectators "
        "and ladders, owning the dice, the clocks and the rules. Everything is journaled in "
        "the database given by --db (an SQLite file or a PostgreSQL URL); a restart on the "
        "same database resumes games in progress. SIGINT or SIGTERM shut it down gracefully.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=50051, help="port (default 50051; 0 = any)")
    p.add_argument(
        "--db",
        default="nardy.db",
        help="SQLite file, or a postgresql://user@host:port/dbname URL (default nardy.db)",
    )
    p.add_argument(
        "--commit-window-ms",
        type=float,
        default=0.0,
        help="wait this long to gather more events into one journal transaction "
        "(default 0: a batch is what arrived while the previous one was being written)",
    )
    p.add_argument(
        "--log-level",
        default="INFO",
        help="DEBUG, INFO (default), WARNING or ERROR; logs go to stderr, never with tokens",
    )
    p.add_argument(
        "--rate",
        type=float,
        default=1000.0,
        metavar="PER_S",
        help="requests per second allowed per token or connection (default 1000)",
    )
    p.add_argument(
        "--http-port",
        type=int,
        default=None,
        metavar="PORT",
        help="also serve the read-only web view (live boards, ladders, replays) and "
        "Prometheus /metrics on this port (0 = any; default: off)",
    )
    p.add_argument("--http-host", default=None, help="address for the web view (default: --host)")
    p.set_defaults(func=_serve)

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
    p.add_argument("--games", type=int, default=100, help="games to play in all (default 100)")
    p.add_argument(
        "--sprt",
        metavar="ELO0,ELO1,ALPHA,BETA",
        help="instead of --games: stop when a pair-based SPRT decides whether the first "
        "engine is stronger than the second by elo1 (H1) or by no more than elo0 (H0)",
    )
    p.add_argument("--concurrency", type=int, default=2, help="games at once (default 2)")
    p.add_argument(
        "--time-per-move",
        type=int,
        default=1000,
        metavar="MS",
        help="turn time in ms (default 1000)",
    )
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
        "--progress",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="when stdout is not a terminal: a progress line this often (default 5)",
    )
    p.set_defaults(func=_ladder)

    p = sub.add_parser(
        "export",
        help="write a game's record (text or JSON) or its board (SVG)",
        description="Fetch a game from an arbiter and write its record in the nardy text "
        "format (or JSON), or with --svg a picture of its board.",
    )
    p.add_argument("game", help="game id")
    p.add_argument("--server", default="127.0.0.1:50051", help="arbiter address")
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
    p.set_defaults(func=_export)

    p = sub.add_parser(
        "import",
        help="check a game record against the rules",
        description="Replay a game record (the nardy text format or JSON) by the rules; "
        "exit 0 if every turn is legal, else name the first illegal turn and why.",
    )
    p.add_argument("file", help="a record file (text format or JSON)")
    p.add_argument("--koks", action="store_true", help="the game used the koks option")
    p.set_defaults(func=_import)

    p = sub.add_parser(
        "demo",
        help="a short local ladder of the bundled engines (make demo)",
        description="Run a local ladder between the bundled engines (random, greedy, "
        "expectimax) on an embedded arbiter with a fast clock, for about a minute, ending "
        "with the standings and a crosstable.",
    )
    p.add_argument("--games", type=int, default=36, help="games to play (default 36)")
    p.add_argument(
        "--time-per-move", type=int, default=500, metavar="MS", help="turn time (default 500)"
    )
    p.add_argument("--db", help="SQLite file (default: a temporary one)")
    p.add_argument("--records", metavar="DIR", help="write game records here")
    p.set_defaults(func=_demo)

    p = sub.add_parser(
        "engine",
        help="run a bundled engine against an arbiter",
        description="Run a bundled engine as a process. The server and token come from "
        "--server/--token or the NARDY_SERVER/NARDY_TOKEN environment variables.",
    )
    p.add_argument("name", help="engine name: random, greedy, expectimax")
    p.add_argument("--server", help="arbiter address host:port (default $NARDY_SERVER)")
    p.add_argument("--token", help="player or seat token (default $NARDY_TOKEN)")
    p.add_argument("--level", type=int, default=None, help="strength level, if the engine has one")
    p.add_argument("--seed", type=int, default=None, help="seed for the engine's own randomness")
    p.add_argument("--max-games", type=int, default=None, help="stop after this many games")
    p.set_defaults(func=_engine)

    p = sub.add_parser(
        "check-engine",
        help="check an engine process against scripted scenarios",
        description="Start an embedded arbiter, launch the engine command given after '--' "
        "with NARDY_SERVER and NARDY_TOKEN set, and drive it through scripted scenarios.",
    )
    p.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD ... (the engine command)")
    p.add_argument("--turn-ms", type=int, default=3000, help="turn time for the scenarios")
    p.set_defaults(func=_check_engine)


def _serve(args: argparse.Namespace) -> int:
    from server.app import ServerConfig, run_forever, unwrap
    from server.store import StoreError

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    try:
        run_forever(
            ServerConfig(
                host=args.host,
                port=args.port,
                db=args.db,
                commit_window_s=args.commit_window_ms / 1000,
                rate_per_s=args.rate,
                rate_burst=2 * args.rate,
                http_port=args.http_port,
                http_host=args.http_host,
            )
        )
    except BaseException as e:
        error = unwrap(e)
        if not isinstance(error, StoreError):
            raise
        print(f"nardy serve: {error.message}", file=sys.stderr)
        return 2
    return 0


def _ladder(args: argparse.Namespace) -> int:
    from clients.ladder_runner import main

    return main(args)


def _import(args: argparse.Namespace) -> int:
    from clients.import_record import main

    return main(args)


def _export(args: argparse.Namespace) -> int:
    from clients.export import main

    return main(args)


def _engine(args: argparse.Namespace) -> int:
    from engines.cli import main

    return main(args)


def _check_engine(args: argparse.Namespace) -> int:
    from clients.check_engine import main

    return main(args)


def _demo(args: argparse.Namespace) -> int:
    from clients.demo import run

    return run(args)
