"""The ``nardy`` command explains itself: --version, a description for every command and
help for every option; failures to reach or be accepted by an arbiter are one line."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import version

from nardy.cli import build_parser
from server.app import EmbeddedServer


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _check(name: str, parser: argparse.ArgumentParser) -> None:
    assert parser.description, f"{name} has no description"
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):  # e.g. nardy admin ACTION
            for sub, subparser in action.choices.items():
                _check(f"{name} {sub}", subparser)
            continue
        assert action.help, f"{name}: {action.option_strings or action.dest} has no help"


def test_every_command_has_a_description_and_every_option_help():
    commands = _subcommands()
    assert {"play", "serve", "ladder", "export", "import", "demo", "engine"} <= set(commands)
    for name, parser in commands.items():
        _check(f"nardy {name}", parser)


def test_version_and_top_level_help():
    out = subprocess.run(
        [sys.executable, "-m", "nardy", "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.strip() == f"nardy {version('nardy')}"
    text = build_parser().format_help()
    assert "``" not in text and "imports are lazy" not in text  # no markup, no internals
    assert "nardy COMMAND --help" in text


def test_engine_with_a_wrong_or_missing_token_says_so_in_one_line():
    with EmbeddedServer() as srv:
        cmd = [sys.executable, "-m", "nardy", "engine", "random", "--server", srv.address]
        out = subprocess.run([*cmd, "--token", "wrong"], capture_output=True, text=True,
                             timeout=60, env={"PATH": "/usr/bin:/bin"})  # fmt: skip
        assert out.returncode == 1
        assert out.stderr.strip().splitlines()[-1] == (
            f"nardy engine random: the arbiter at {srv.address} does not accept the token "
            "(unknown token)"
        )
        assert "Traceback" not in out.stderr
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                             env={"PATH": "/usr/bin:/bin"})  # fmt: skip
        assert out.returncode == 2 and "no token: give --token or set NARDY_TOKEN" in out.stderr
