"""The ``nardy`` command: one entry point, a subcommand per job.

Each subcommand imports what it needs when it runs, so that ``nardy legal`` starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys


def _legal(args: argparse.Namespace) -> int:
    from clients.legal import batch, single

    if args.position is None:
        return batch(sys.stdin, sys.stdout, args.variant)
    if args.dice is None:
        print("nardy legal: give POSITION and DICE, or neither for batch mode", file=sys.stderr)
        return 2
    return single(args.position, args.dice, sys.stdout, args.variant)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nardy")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def build_parser() -> argparse.ArgumentParser:
    from nardy.match import DEFAULT_VARIANT

    parser = argparse.ArgumentParser(
        prog="nardy",
        description="Long and short nardy: play in the terminal, run an arbiter for others, "
        "run engine ladders, check engines and records.",
        epilog="Run 'nardy COMMAND --help' for a command's options. Newcomers: 'nardy play' "
        "starts a game against an engine at once.",
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {_version()}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "legal",
        help="print the legal end positions of a turn",
        description="Print every legal end position of the turn (opponent to move), sorted. "
        "With no arguments, read 'POSITION DICE' lines from stdin and write one line each.",
    )
    p.add_argument(
        "--variant",
        default=DEFAULT_VARIANT,
        help="the rules: long or short (backgammon; position text w/2,0,...,-2/0,0 with "
        "the bar counts last); default %(default)s",
    )
    p.add_argument("position", nargs="?", help="position text, e.g. w/15,0,...,-15,...")
    p.add_argument("dice", nargs="?", help="dice, e.g. 65 or 6-5")
    p.set_defaults(func=_legal)

    from clients import subcommands

    subcommands.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from clients.cliargs import apply_tls_args, glue_token_values

    args = build_parser().parse_args(glue_token_values(sys.argv[1:] if argv is None else argv))

    apply_tls_args(args)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`nardy ... | head`): no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (nothing to flush)
        return 1
