"""Subcommands of the programs for people: play, watch, replay, standings.

Only argparse here: each program's module (rich, trio, gRPC) is imported when the
subcommand runs, so that ``nardy legal`` stays light to start.
"""

from __future__ import annotations

import argparse
import getpass

from clients.cliargs import add_token_arg, add_turn_time_arg, runs
from engines.registry import default_engine, names
from nardy.clock import DEFAULT_TURN_TIME_MS
from nardy.match import DEFAULT_VARIANT
from nardy.variant import available


def _play(args: argparse.Namespace) -> int:
    from clients.play import main

    if args.engine is None:
        args.engine = default_engine(args.variant)
    if args.engine == "network" and args.level is None:
        from engines.neural import BEGINNER

        args.level = BEGINNER  # a newcomer can beat it sometimes
    return main(args)


def dice_list(text: str) -> list[int]:
    """``2,1,6,5`` or ``21 65`` -> [2, 1, 6, 5]."""
    out = [int(ch) for ch in text if ch.isdigit()]
    if not out or any(not 1 <= d <= 6 for d in out):
        raise argparse.ArgumentTypeError("dice are digits 1-6, e.g. 2,1,6,5")
    return out


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "you"


def _server_arg(p: argparse.ArgumentParser) -> None:
    from clients.cliargs import add_server_args

    add_server_args(p)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the client subcommands to the ``nardy`` parser."""
    p = sub.add_parser(
        "play",
        help="play long or short nardy in the terminal (against an engine, or on an arbiter)",
        description="Play long nardy in the terminal. With no --server, start an arbiter "
        "and an engine here and play at once; with --server and --token, join your game on "
        "a remote arbiter. Moves: '24/18 18/13' or '24/13' (a whole play, sent at once), "
        "'24/18' then '18/13' then 'done' (step by step), '24' shows where a checker can "
        "go; undo, hint, resign, help.",
    )
    p.add_argument(
        "--engine",
        choices=names(),
        default=None,
        help="the opponent (default: the strongest that plays the variant: "
        + ", ".join(f"{default_engine(v)} for {v} nardy" for v in available())
        + ")",
    )
    p.add_argument(
        "--variant",
        choices=available(),
        default=DEFAULT_VARIANT,
        help="long nardy or short nardy (backgammon without the cube); default %(default)s",
    )
    p.add_argument(
        "--level",
        type=int,
        default=None,
        help="engine strength: expectimax 0-3, network 0-3 (0, the default, slips like a "
        "beginner; 3 is full strength)",
    )
    p.add_argument("--points", type=int, default=1, help="match length in points (default 1)")
    p.add_argument(
        "--colour",
        "--color",
        choices=("white", "black", "random"),
        default="random",
        help="your colour in the first game; white moves first (default random: the "
        "opening throw decides). A chosen colour is set up, so the match is marked seeded.",
    )
    add_turn_time_arg(p, DEFAULT_TURN_TIME_MS, old_seconds=("--turn-time",))
    p.add_argument("--name", default=_user(), help="your name on the board")
    p.add_argument(
        "--dice",
        type=dice_list,
        default=None,
        help="for lessons and tests: scripted dice, e.g. 6,5,3,1, played in order before the "
        "arbiter's own; the first are the opening throw's where one is made (--colour "
        "random; short nardy always). The match is marked seeded.",
    )
    p.add_argument(
        "--start",
        default=None,
        metavar="POSITION",
        help="for lessons and tests: the first game starts from this position text "
        "(white moves first)",
    )
    p.add_argument("--server", default=None, help="join your game on this arbiter (host:port)")
    from clients.cliargs import add_tls_args

    add_tls_args(p)
    add_token_arg(p, "your player or seat token (or $NARDY_TOKEN)")
    p.add_argument("--game", default=None, help="with --server: the game id to join")
    p.add_argument("--plain", action="store_true", help="line by line output, no live screen")
    p.add_argument("--log", default=None, help="write the client's log to this file")
    p.add_argument("--keep-logs", action="store_true", help="keep the arbiter and engine logs")
    p.add_argument(
        "--give-up",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="with --server: stop trying to reach the arbiter after this long without a "
        "connection (default 60)",
    )
    p.add_argument(
        "--records",
        metavar="DIR",
        default=None,
        help="save the games here (default $NARDY_RECORDS or ~/.local/share/nardy/games); "
        "the nardy replay command is printed at the end",
    )
    p.set_defaults(func=_play)

    p = sub.add_parser(
        "watch",
        help="follow a game live as a spectator",
        description="Follow a game live: the board, both clocks, every play and the result; "
        "a match is followed into its next game. Without GAME, the newest game in progress. "
        "Keys: f flips the board, q quits.",
    )
    p.add_argument("game", nargs="?", help="the game id (default: the newest in progress)")
    _server_arg(p)
    p.add_argument(
        "--as", dest="side", choices=("white", "black"), default="white", help="board side"
    )
    p.add_argument("--plain", action="store_true", help="line by line output, no live screen")
    p.set_defaults(func=runs("clients.watch"))

    p = sub.add_parser(
        "replay",
        help="step through a recorded game (a record file or a game on an arbiter)",
        description="Step through a game: a record FILE (nardy record text or JSON) or a "
        "GAME id on an arbiter. Keys: Enter/n next, p previous, g first, G last, f flip, "
        "q quit.",
    )
    p.add_argument("source", metavar="FILE|GAME", help="a record file, or a game id")
    _server_arg(p)
    p.add_argument(
        "--as", dest="side", choices=("white", "black"), default="white", help="board side"
    )
    p.add_argument("--print", action="store_true", help="print every position and exit")
    p.add_argument("--plain", action="store_true", help="line by line, no live screen")
    p.set_defaults(func=runs("clients.replay"))

    p = sub.add_parser(
        "standings",
        help="a ladder's standings, or a table of the arbiter's newest finished games",
        description="With --ladder: the ladder's standings (Elo, skill, points, mars, "
        "timeouts) and crosstable. Without: per player games, wins, losses, points won and "
        "lost, wins by mars, computed from the arbiter's newest 500 finished games.",
    )
    _server_arg(p)
    p.add_argument("--ladder", metavar="NAME", help="a ladder hosted by the arbiter")
    p.set_defaults(func=runs("clients.standings"))
