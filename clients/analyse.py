"""``nardy analyse RECORD|GAME``: each play of a game against the best play a judge finds.

The record is a file (the text format or JSON, as ``nardy export`` writes), ``-`` for one
on stdin, or a game id on an arbiter (``--server``). The judge is the strongest engine
for the game's variant that runs here (engines/registry.py's ``JUDGES``: the network for
long nardy, gnubg for short nardy, else greedy); the analysis itself is
:mod:`engines.analysis`. Output: a table on a terminal, plain text otherwise, or
``--json``. Exit status 0, 2 for a record that cannot be read or breaks the rules (or an
option the judge does not take), 1 when the judge or the arbiter fails.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command's registration imports nothing more than argparse
    from engines.analysis import GameAnalysis
    from nardy.record import GameRecord

MARK_STYLE = {"??": "bold red", "?": "red", "?!": "yellow"}


def read_games(source: str, server: str) -> list[GameRecord]:
    """The games of a record file, of ``-`` (stdin), or of a game id on ``server``."""
    from nardy.record import from_json, load, loads

    if source == "-":
        text = sys.stdin.read()
        return from_json(text) if text.lstrip().startswith("{") else loads(text)
    if Path(source).exists():
        return load(source)
    if os.sep in source or Path(source).suffix in (".nrd", ".json", ".txt"):
        raise FileNotFoundError(f"{source}: no such file")
    from clients.verify import fetch

    return [fetch(server, source)]


def judge_line(g: GameAnalysis) -> str:
    units = "money equity in points, cubeless" if g.in_points else "its own score, not equity"
    return f"judge {g.judge} at {g.ply} ply ({units})"


def side_line(colour: str, s) -> str:
    from engines.analysis import MARKS

    counts = ", ".join(f"{m} {s.marks[m]}" for _, m, _ in MARKS)
    plays = f"{s.plays} play{'' if s.plays == 1 else 's'}"
    return (
        f"{colour} {s.name}: {plays} judged, error rate {s.error_rate:.1f} "
        f"(total loss {s.loss:.3f}); {counts}"
    )


def blunder_line(p) -> str:
    return (
        f"turn {p.turn} {p.side.name.lower()} {p.dice[0]}-{p.dice[1]}: {p.played} "
        f"(best {p.best}) -{p.loss:.3f} {p.mark}".rstrip()
    )


def summary_lines(g: GameAnalysis, *, worst: bool = True) -> list[str]:
    """A game's summary: the judge, each side's error rate and marks, and (``worst``) the
    biggest losses."""
    lines = [f"Game {g.number} ({g.variant} nardy), {judge_line(g)}:"]
    lines += [f"  {side_line(c.name.lower(), s)}" for c, s in g.sides.items()]
    if not worst:
        return lines
    if g.blunders():
        lines.append("  biggest losses:")
        lines += [f"    {blunder_line(p)}" for p in g.blunders()]
    else:
        lines.append("  no play lost anything by the judge's values")
    return lines


def brief(g: GameAnalysis, you=None, state=None) -> list[str]:
    """A game's summary and its marked plays, for the terminal client (``you``: the
    person's colour, whose plays are named so; with the game's ``state``, every play in
    the person's point numbers, as the game showed the opponent's)."""
    from clients.follow import in_numbering

    lines = summary_lines(g, worst=False)
    marked = [p for p in g.plays if p.mark]
    numbers = " (in your point numbers)" if state is not None else ""
    lines.append(f"  marked plays{numbers}:" if marked else "  no play marked")
    for p in marked:
        who = "you" if p.side is you else g.sides[p.side].name
        played, best = (
            (in_numbering(state, p.side, p.played, you), in_numbering(state, p.side, p.best, you))
            if state is not None
            else (p.played, p.best)
        )
        lines.append(
            f"    {p.mark:<2} turn {p.turn} {who} {p.dice[0]}-{p.dice[1]}: {played} "
            f"(best {best}) -{p.loss:.3f}"
        )
    return lines


def text(games: list[GameAnalysis], marked: bool) -> str:
    """Plain text: each game's plays (only the marked ones with ``marked``), its summary."""
    from engines.analysis import players

    out = []
    for g in games:
        shown = [p for p in g.plays if p.mark or not marked]
        w = max([24, *(len(p.played) for p in shown), *(len(p.best) for p in shown)])
        out.append(summary_lines(g)[0])
        out.append(f"  {'turn':>4}  {'side':<5}  dice  {'played':<{w}}  {'best':<{w}}  {'loss':>6}")
        for p in shown:
            out.append(
                f"  {p.turn:>4}  {p.side.name.lower():<5}  {p.dice[0]}-{p.dice[1]}   "
                f"{p.played:<{w}}  {p.best:<{w}}  {p.loss:6.3f}  {p.mark}".rstrip()
            )
        out += summary_lines(g)[1:]
        out.append(f"  ({g.skipped} forced plays and passes not judged)")
        out.append("")
    if len(games) > 1:
        out.append("All games:")
        out += [f"  {side_line('player', s)}" for s in players(games).values()]
    return "\n".join(out).rstrip() + "\n"


def rich_tables(games: list[GameAnalysis], marked: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    from engines.analysis import players

    console = Console(highlight=False)
    for g in games:
        names = {c: s.name for c, s in g.sides.items()}
        table = Table(title=summary_lines(g)[0], title_justify="left")
        for col, justify in (("turn", "right"), ("side", "left"), ("dice", "center")):
            table.add_column(col, justify=justify)
        table.add_column("played")
        table.add_column("best")
        table.add_column("loss", justify="right")
        table.add_column("", justify="left")
        for p in g.plays:
            if marked and not p.mark:
                continue
            style = MARK_STYLE.get(p.mark, "")
            table.add_row(
                str(p.turn),
                names[p.side],
                f"{p.dice[0]}-{p.dice[1]}",
                p.played,
                "" if p.best == p.played else p.best,
                f"{p.loss:.3f}" if p.loss else "",
                p.mark,
                style=style,
            )
        console.print(table)
        for line in summary_lines(g)[1:]:
            console.print(line)
        console.print(f"  ({g.skipped} forced plays and passes not judged)", style="grey50")
        console.print()
    if len(games) > 1:
        console.print("All games:")
        for s in players(games).values():
            console.print(f"  {side_line('player', s)}")


def main(args: argparse.Namespace) -> int:
    import grpc

    from engines.analysis import analyse_game, report
    from engines.base import Unavailable
    from engines.registry import make_judge
    from nardy.record import RecordError

    if args.nice:
        os.nice(args.nice)
    try:
        games = read_games(args.source, args.server)
        if args.game is not None:
            games = [g for g in games if g.number == args.game]
            if not games:
                raise RecordError(f"the record has no game {args.game}")
    except (OSError, RecordError, ValueError) as e:
        print(f"nardy analyse: {e}", file=sys.stderr)
        return 2
    except grpc.RpcError as e:
        print(f"nardy analyse: {args.server}: {e.details()}", file=sys.stderr)
        return 1
    judges: dict[str, tuple] = {}
    done: list[GameAnalysis] = []
    progress = _progress if sys.stderr.isatty() and not args.json else None
    try:
        for game in games:
            name = game.rules.name
            if name not in judges:
                judges[name] = make_judge(name)
                for why in judges[name][1]:
                    print(f"nardy analyse: passed over {why}", file=sys.stderr)
            judge = judges[name][0]
            done.append(
                analyse_game(
                    game,
                    judge,
                    args.ply,
                    progress and (lambda n, total, g=game: progress(g.number, n, total)),
                )
            )
    except (RecordError, ValueError) as e:
        print(f"\nnardy analyse: {e}" if progress else f"nardy analyse: {e}", file=sys.stderr)
        return 2
    except (Unavailable, RuntimeError) as e:
        print(f"nardy analyse: {e}", file=sys.stderr)
        return 1
    finally:
        if progress:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)
        for judge, _ in judges.values():
            judge.close()
    if args.json:
        json.dump(report(done), sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif sys.stdout.isatty():
        rich_tables(done, args.marked)
    else:
        sys.stdout.write(text(done, args.marked))
    return 0


def _progress(game: int, n: int, total: int) -> None:
    print(f"\ranalysing game {game}: turn {n} of {total}", end="", file=sys.stderr, flush=True)


def register(sub: argparse._SubParsersAction) -> None:
    """``nardy analyse`` (self-contained: one call in the command registry adds it)."""
    from clients.cliargs import add_server_args, runs

    p = sub.add_parser(
        "analyse",
        aliases=["analyze"],
        help="mark each play of a game with its equity loss against the best play",
        description="Judge every play of a game record (a FILE in the text format or JSON, "
        "'-' for stdin, or a GAME id on --server) against the best play found by the "
        "strongest engine for its variant (long: the network; short: gnubg if installed, "
        "else greedy): the play made, the best play, the equity lost, marks (?! doubtful "
        ">= 0.04, ? bad >= 0.08, ?? very bad >= 0.16 points), each side's error rate "
        "(mean loss per judged play x1000) and the biggest losses. Forced plays and "
        "passes are skipped.",
    )
    p.add_argument("source", metavar="RECORD|GAME", help="a record file, '-', or a game id")
    add_server_args(p)
    p.add_argument(
        "--ply",
        type=int,
        default=0,
        metavar="N",
        help="how deep the judge looks (default 0; 1 is slower and stronger)",
    )
    p.add_argument("--game", type=int, default=None, metavar="N", help="only game N of a match")
    p.add_argument("--json", action="store_true", help="JSON instead of a table")
    p.add_argument("--marked", action="store_true", help="list only the marked plays")
    p.add_argument(
        "--nice", type=int, default=0, metavar="N", help="lower this process's priority by N"
    )
    p.set_defaults(func=runs("clients.analyse"))
