"""The ``nardy`` command explains itself: --version, a description for every command and
help for every option; failures to reach or be accepted by an arbiter are one line."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import version

import pytest

from clients.cli import build_parser
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
        [sys.executable, "-m", "clients", "--version"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout.strip() == f"nardy {version('nardy')}"
    text = build_parser().format_help()
    assert "``" not in text and "imports are lazy" not in text  # no markup, no internals
    assert "nardy COMMAND --help" in text


def test_engine_with_a_wrong_or_missing_token_says_so_in_one_line():
    with EmbeddedServer() as srv:
        cmd = [sys.executable, "-m", "clients", "engine", "random", "--server", srv.address]
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


TURN_TIME = {  # command: (its default in ms, the old spellings in ms, in seconds)
    "play": (120_000, (), ("--turn-time",)),
    "ladder": (1000, ("--time-per-move",), ()),
    "demo": (500, ("--time-per-move",), ()),
    "check-engine": (3000, ("--turn-ms",), ()),
}


def test_one_name_for_the_turn_time_in_every_command(capsys):
    """--turn-time-ms (milliseconds, the .proto's turn_time_ms) everywhere; the old
    spellings are hidden from --help, still work and say what to write instead."""
    commands = _subcommands()
    admin = next(a for a in commands["admin"]._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("create-match", "create-ladder"):
        assert "--turn-time-ms MS" in admin.choices[name].format_help()
    assert "--turn-time-ms MS" in commands["challenge"].format_help()
    for name, (default, old_ms, old_s) in TURN_TIME.items():
        parser = commands[name]
        text = parser.format_help()
        assert "--turn-time-ms MS" in text and f"(default {default})" in text, name
        for old in (*old_ms, *old_s):
            assert old + " " not in text and old + "\n" not in text, (name, old)
        base = ["--engine", "a=true"] if name == "ladder" else []  # its required option
        assert parser.parse_args(base).turn_time_ms == default
        assert parser.parse_args([*base, "--turn-time-ms", "2500"]).turn_time_ms == 2500
        capsys.readouterr()
        for old in old_ms:
            assert parser.parse_args([*base, old, "2500"]).turn_time_ms == 2500
            assert f"{old} is deprecated, use --turn-time-ms" in capsys.readouterr().err
        for old in old_s:
            assert parser.parse_args([*base, old, "2.5"]).turn_time_ms == 2500
            assert f"{old} is deprecated, use --turn-time-ms 2500" in capsys.readouterr().err


@pytest.mark.slow
def test_old_spellings_reach_the_commands_checks():
    """A real process with an old spelling: converted, then checked like the new option."""
    for args, message in (
        (("play", "--turn-time", "0"), "--turn-time-ms is a number of milliseconds above 0"),
        (("check-engine", "--turn-ms", "0", "--", "true"), "--turn-time-ms must be positive"),
        (
            ("ladder", "--engine", "a=true", "--engine", "b=true", "--time-per-move", "0"),
            "--turn-time-ms must be at least 1",
        ),
    ):
        out = subprocess.run([sys.executable, "-m", "clients", *args], capture_output=True,
                             text=True, timeout=60)  # fmt: skip
        assert out.returncode != 0 and message in out.stderr, (args, out.stderr)
        old = next(a for a in args if a in ("--turn-time", "--turn-ms", "--time-per-move"))
        assert f"{old} is deprecated, use --turn-time-ms" in out.stderr


def test_a_reader_that_goes_away_gets_no_traceback(tmp_path):
    """`nardy ... | head`: the pipe closed under the command ended it with a
    BrokenPipeError traceback."""
    lines = tmp_path / "lines.txt"
    lines.write_text("w/15,0,0,0,0,0,0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0 6-5\n" * 50_000)
    with lines.open("rb") as given:
        proc = subprocess.Popen(
            [sys.executable, "-m", "clients", "legal"],
            stdin=given,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout.readline()  # one line read, then the reader goes
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(60) == 1 and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--games", "3"), "--games must be even, not 3"),  # it played 2 and blamed a void
        (("--games", "1"), "--games must be at least 2"),  # it played none
        (("--sprt", "0,inf,0.05,0.05"), "elo0 and elo1 must be finite"),  # it decided H0
    ],
)
def test_a_ladder_that_cannot_mean_what_it_says_is_refused(extra, message):
    from clients.ladder_runner import run

    args = _subcommands()["ladder"].parse_args(["--engine", "a=true", "--engine", "b=true", *extra])
    with pytest.raises(SystemExit, match=message):
        run(args)


@pytest.mark.parametrize(
    "bad, message",
    [
        (("--port", "99999"), "argument --port: not a port (0..65535): 99999"),  # (it bound 34463)
        (("--log-level", "LOUD"), "argument --log-level: not one of DEBUG, INFO"),  # (traceback)
        (("--rate", "-5"), "argument --rate: must be more than 0"),  # (refused every call)
        (("--streams", "-1"), "argument --streams: must be more than 0"),
        (("--lease-ms", "0"), "argument --lease-ms: must be more than 0"),
    ],
)
def test_serve_refuses_options_that_cannot_work(bad, message, capsys):
    with pytest.raises(SystemExit):
        _subcommands()["serve"].parse_args(list(bad))
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "bad, message",
    [
        (("--max-games", "-5"), "argument --max-games: must be at least 0"),  # (a traceback)
        (("--turn-time-ms", "0"), "argument --turn-time-ms: must be at least 1"),  # (120 s)
        (("--max-games-per-bot", "0"), "argument --max-games-per-bot: must be at least 2"),
        (("--illegal-play-limit", "-1"), "argument --illegal-play-limit: must be at least 1"),
    ],
)
def test_create_ladder_refuses_what_the_server_would_read_otherwise(bad, message, capsys):
    """A zero is the protocol's "the default" (--turn-time-ms 0 made a ladder of 120 s
    turns, --max-games-per-bot 0 one of 2) and a negative number a traceback."""
    admin = _subcommands()["admin"]
    with pytest.raises(SystemExit):
        admin.parse_args(["create-ladder", "club", *bad])
    assert message in capsys.readouterr().err


def test_serve_refuses_an_operator_token_too_short_to_be_secret(tmp_path):
    token = tmp_path / "token"
    token.write_text("short\n")
    out = subprocess.run(
        [sys.executable, "-m", "clients", "serve", "--admin-token-file", str(token),
         "--db", str(tmp_path / "x.db"), "--port", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 2
    assert "the operator token is too short to be secret (at least 16 characters" in out.stderr
    assert not (tmp_path / "x.db").exists()  # refused before anything was made
