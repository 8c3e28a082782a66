"""Tokens are opaque text and may begin with ``-``: every command that takes ``--token``
reads ``--token VALUE`` as the token, not as an option (argparse alone fails with "expected
one argument"). The real command lines against a real arbiter whose operator token begins
with ``-``, and the rule itself."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from clients.cliargs import glue_token_values

OPERATOR = "-Xoperator-token-that-begins-with-a-dash"
UNKNOWN = "-unknown-token-that-begins-with-a-dash"


pytestmark = pytest.mark.arbiter(admin_token=OPERATOR)


def nardy(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NARDY_TOKEN", "NARDY_SERVER")}
    return subprocess.run(
        [sys.executable, "-m", "clients", *args],
        capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_the_operator_token_reaches_the_arbiter_whole(arbiter):
    """The arbiter knows the token: it answers as to its operator, not "unknown token"."""
    r = nardy("challenges", "--server", arbiter.address, "--token", OPERATOR)
    assert r.returncode == 1, r.stderr
    assert r.stderr == (
        "nardy challenges: PERMISSION_DENIED: challenges are made to a player token\n"
    )


@pytest.mark.parametrize(
    "command, said",
    [
        (["engine", "random", "--give-up", "5"], "does not accept the token (unknown token)"),
        (["play", "--plain"], "does not accept this token (unknown token)"),
        (["accept", "some-match"], "UNAUTHENTICATED: unknown token"),
    ],
    ids=["engine", "play", "accept"],
)
def test_every_command_reads_a_dash_token_as_its_token(arbiter, command, said):
    r = nardy(*command, "--server", arbiter.address, "--token", UNKNOWN)
    assert "expected one argument" not in r.stderr
    assert r.returncode == 1, r.stdout + r.stderr
    assert said in r.stdout + r.stderr


def test_an_option_after_token_is_still_an_option():
    r = nardy("challenges", "--token", "--server", "127.0.0.1:1")
    assert r.returncode == 2
    assert "argument --token: expected one argument" in r.stderr


@pytest.mark.parametrize(
    "argv, read",
    [
        (["engine", "x", "--token", "-abc"], ["engine", "x", "--token=-abc"]),
        (["--token", "--a_b-C"], ["--token=--a_b-C"]),  # not an option's name
        (["--token", "-h"], ["--token", "-h"]),
        (["--token", "--server"], ["--token", "--server"]),
        (["--token", "--server=a"], ["--token", "--server=a"]),
        (["--token", "--"], ["--token", "--"]),
        (["--token=-abc"], ["--token=-abc"]),
        (["--token"], ["--token"]),
        (["--", "bot", "--token", "-abc"], ["--", "bot", "--token", "-abc"]),  # an engine's
    ],
)  # fmt: skip
def test_which_values_are_glued_to_token(argv, read):
    assert glue_token_values(argv) == read
