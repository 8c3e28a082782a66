"""Subcommands beyond the rules: registered here so that `nardy legal` stays light to start."""

from __future__ import annotations

import argparse
import logging


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the arbiter (gRPC server)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=50051, help="port (default 50051; 0 = any)")
    p.add_argument("--db", default="nardy.db", help="SQLite file (default nardy.db)")
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(func=_serve)

    p = sub.add_parser("demo", help="play a quick game and print it")
    p.set_defaults(func=_demo)


def _serve(args: argparse.Namespace) -> int:
    from server.app import ServerConfig, run_forever

    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    run_forever(ServerConfig(host=args.host, port=args.port, db=args.db))
    return 0


def _demo(args: argparse.Namespace) -> int:
    from clients.demo import run

    return run(args)
