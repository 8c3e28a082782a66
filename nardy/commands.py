"""Subcommands beyond the rules: registered here so that `nardy legal` stays light to start."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # noqa: SLF001 - argparse's own type
    p = sub.add_parser("demo", help="play a quick game and print it")
    p.set_defaults(func=_demo)


def _demo(args: argparse.Namespace) -> int:
    from clients.demo import run

    return run(args)
