"""Subcommands beyond the rules: registered here so that `nardy legal` stays light to start."""

from __future__ import annotations

import argparse
import logging


def register(sub: argparse._SubParsersAction) -> None:
    from clients.commands import register as register_clients

    register_clients(sub)  # play, watch, replay, standings (programs for people)
    p = sub.add_parser("serve", help="run the arbiter (gRPC server)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=50051, help="port (default 50051; 0 = any)")
    p.add_argument("--db", default="nardy.db", help="SQLite file (default nardy.db)")
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(func=_serve)

    p = sub.add_parser("demo", help="play a quick game and print it")
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
    from server.app import ServerConfig, run_forever

    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    run_forever(ServerConfig(host=args.host, port=args.port, db=args.db))
    return 0


def _engine(args: argparse.Namespace) -> int:
    from engines.cli import main

    return main(args)


def _check_engine(args: argparse.Namespace) -> int:
    from clients.check_engine import main

    return main(args)


def _demo(args: argparse.Namespace) -> int:
    from clients.demo import run

    return run(args)
