"""Subcommands of the programs for people (filled in by the terminal client)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add the client subcommands to the ``nardy`` parser."""
