"""The arguments every command shares (server address, TLS, turn time, the operator's token)
and how a subcommand is run: argparse only, so that ``nardy legal`` stays light to start."""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Callable


def runs(module: str, function: str = "main") -> Callable[[argparse.Namespace], int]:
    """A subcommand's entry point, ``module.function(args)``: the module is imported only
    when the subcommand runs, so that ``nardy legal`` stays light to start."""

    def run(args: argparse.Namespace) -> int:
        return getattr(importlib.import_module(module), function)(args)

    return run


ENV_ADMIN_TOKEN = "NARDY_ADMIN_TOKEN"


MIN_ADMIN_TOKEN = 16  # characters of an operator token chosen by the operator, at least


def read_admin_token(path: str | None, least: int = 0) -> str | None:
    """The operator token: the first line of ``path``, else ``$NARDY_ADMIN_TOKEN``; one
    shorter than ``least`` characters is refused (OSError)."""
    if path:
        with open(path, encoding="utf-8") as f:
            token = f.readline().strip()
        if not token:
            raise OSError(f"{path}: no token in the file")
    else:
        token = os.environ.get(ENV_ADMIN_TOKEN, "")
        if not token:
            return None
    if len(token) < least:
        where = path or f"${ENV_ADMIN_TOKEN}"
        raise OSError(
            f"{where}: the operator token is too short to be secret (at least "
            f"{least} characters; a new one: python3 -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')"
        )
    return token


def port(value: str) -> int:
    """A TCP port, 0..65535 (0: any)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port: {value!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"not a port (0..65535): {value}")
    return number


def _number(kind: type[int] | type[float], value: str) -> int | float:
    try:
        return kind(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None


def above_zero(kind: type[int] | type[float]) -> Callable[[str], int | float]:
    """An argparse type: a number of ``kind`` greater than 0."""

    def read(value: str) -> int | float:
        if not (number := _number(kind, value)) > 0:
            raise argparse.ArgumentTypeError(f"must be more than 0: {value}")
        return number

    return read


def at_least(lowest: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least ``lowest``."""

    def read(value: str) -> int:
        if not (number := int(_number(int, value))) >= lowest:
            raise argparse.ArgumentTypeError(f"must be at least {lowest}: {value}")
        return number

    return read


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def log_level(value: str) -> str:
    """One of LOG_LEVELS, in any case."""
    if value.upper() not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"not one of {', '.join(LOG_LEVELS)}: {value!r}")
    return value.upper()


class _OldSpelling(argparse.Action):
    """A deprecated spelling of an option, hidden from --help: it still works (converted
    to the new option's unit) and says on stderr what to write instead."""

    def __init__(self, option_strings, dest, *, new: str, scale: float = 1, **kw) -> None:
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kw)
        self.new, self.scale = new, scale

    def __call__(self, parser, namespace, value, option_string=None) -> None:
        converted = round(value * self.scale)
        how = f" {converted}" if self.scale != 1 else ""
        print(
            f"{parser.prog}: {option_string} is deprecated, use {self.new}{how}",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, converted)


def http_address(value: str) -> tuple[str | None, int]:
    """``[HOST:]PORT`` (a bracketed IPv6 host allowed) as (host or None, port)."""
    host, colon, number = value.rpartition(":")
    if not number.strip().isdigit():
        raise argparse.ArgumentTypeError(f"not [HOST:]PORT: {value!r}")
    return (host.strip("[]") or None) if colon else None, port(number)


def add_turn_time_arg(
    p: argparse.ArgumentParser,
    default: int,
    *,
    old: tuple[str, ...] = (),
    old_seconds: tuple[str, ...] = (),
) -> None:
    """``--turn-time-ms MS``: the time per turn in milliseconds, the name and unit of the
    protocol's ``turn_time_ms``, for every command (``args.turn_time_ms``). ``old`` are
    earlier spellings in milliseconds, ``old_seconds`` in seconds: hidden, deprecated,
    still accepted."""
    p.add_argument(
        "--turn-time-ms",
        type=int,
        default=default,
        metavar="MS",
        help=f"time per turn in milliseconds (default {default})",
    )
    for flag in old:
        p.add_argument(flag, dest="turn_time_ms", type=int, action=_OldSpelling,
                       new="--turn-time-ms")  # fmt: skip
    for flag in old_seconds:
        p.add_argument(flag, dest="turn_time_ms", type=float, action=_OldSpelling,
                       new="--turn-time-ms", scale=1000)  # fmt: skip


def add_tls_args(p: argparse.ArgumentParser) -> None:
    """``--tls`` / ``--tls-ca`` for a command that talks to an arbiter (see nardy.client)."""
    p.add_argument(
        "--tls",
        action="store_true",
        default=None,
        help="connect with TLS, trusting the system's roots (default $NARDY_TLS)",
    )
    p.add_argument(
        "--tls-ca",
        metavar="PEM",
        default=None,
        help="connect with TLS, trusting these roots, e.g. a self-signed server's "
        "certificate (default $NARDY_TLS_CA)",
    )


def add_server_args(p: argparse.ArgumentParser) -> None:
    """``--server`` (default ``$NARDY_SERVER``) and the TLS options of a client command."""
    add_tls_args(p)
    p.add_argument(
        "--server",
        default=os.environ.get("NARDY_SERVER") or "127.0.0.1:50051",
        help="arbiter host:port (default $NARDY_SERVER or 127.0.0.1:50051)",
    )


def apply_tls_args(args: argparse.Namespace) -> None:
    """Hand ``--tls`` / ``--tls-ca`` to the SDK (and to engines started from here) through
    the environment, where every client connection looks."""
    if getattr(args, "tls_ca", None):
        os.environ["NARDY_TLS_CA"] = os.path.abspath(args.tls_ca)
    if getattr(args, "tls", None):
        os.environ["NARDY_TLS"] = "1"


TOKEN_OPTION = "--token"
# What argparse must still read as an option after --token: -x, --name, --name=value.
_OPTION = re.compile(r"-[A-Za-z]|--[a-z][a-z0-9-]*(=.*)?", re.DOTALL)


def add_token_arg(p: argparse.ArgumentParser, help: str) -> None:
    """``--token TOKEN`` of a command that plays or acts as a player (``args.token``); a
    token that begins with ``-`` is read as the token (see :func:`glue_token_values`)."""
    p.add_argument(TOKEN_OPTION, metavar="TOKEN", help=help)


def glue_token_values(argv: list[str]) -> list[str]:
    """``--token VALUE`` as ``--token=VALUE`` where VALUE begins with ``-``: argparse reads
    such a value as an option and fails ("expected one argument"), but tokens are opaque
    text and may begin with ``-``. A VALUE that looks like an option (``-h``,
    ``--server``) is left alone, and so is everything after ``--`` (an engine's command)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return out + argv[i:]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if (
            arg == TOKEN_OPTION
            and nxt is not None
            and nxt.startswith("-")
            and nxt != "--"
            and not _OPTION.fullmatch(nxt)
        ):
            out.append(f"{TOKEN_OPTION}={nxt}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out
