"""``nardy standings``: a ladder's standings, or a table of the arbiter's finished games.

With ``--ladder NAME`` the table comes from the ladder RPCs (Elo with its interval, skill,
points, mars, timeouts, time per move) with the crosstable. Without it, the table is
computed here from ``ListGames`` (finished rated games, newest 500; casual and set-up games
never count): per player the games, wins,
losses, points won and lost, and wins for more than a point (mars or koks; gammon or
backgammon).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import grpc
from rich.table import Table

from clients.term import report_console
from nardy.client import Client, run
from nardy.client import channel as sdk_channel
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb

LIMIT = 500


@dataclass
class Row:
    name: str
    bot: bool = False
    games: int = 0
    won: int = 0
    lost: int = 0
    points_for: int = 0
    points_against: int = 0
    mars: int = 0  # games won for more than a point: mars, koks; gammon, backgammon

    @property
    def diff(self) -> int:
        return self.points_for - self.points_against


def table_rows(games: list[api.GameSummary]) -> list[Row]:
    """Per-player totals over finished rated games (ladder games and games between
    registered players, nothing set up), best first (wins, then point difference)."""
    rows: dict[str, Row] = {}
    for g in games:
        if g.status != pb.GAME_STATUS_FINISHED or not g.result.winner or not g.rated:
            continue
        players = {pb.COLOR_WHITE: g.white, pb.COLOR_BLACK: g.black}
        for color, player in players.items():
            row = rows.setdefault(player.name, Row(player.name, player.bot))
            row.games += 1
            if color == g.result.winner:
                row.won += 1
                row.points_for += g.result.points
                if g.result.points > 1:  # (short nardy's gammons and backgammons too)
                    row.mars += 1
            else:
                row.lost += 1
                row.points_against += g.result.points
    return sorted(rows.values(), key=lambda r: (-r.won, -r.diff, r.lost, r.name))


LONG_KINDS = {pb.RESULT_KIND_OIN, pb.RESULT_KIND_MARS, pb.RESULT_KIND_KOKS}


def big_wins(games: list[api.GameSummary]) -> str:
    """The column of wins for more than a point, named as the games' variants name them."""
    kinds = {g.result.kind for g in games if g.result.kind}
    names = ["mars"] if kinds & LONG_KINDS else []
    names += ["gammons"] if kinds - LONG_KINDS else []
    return "/".join(names) or "mars"


def build_table(rows: list[Row], server: str, big: str = "mars") -> Table:
    table = Table(title=f"Standings on {server} (finished games)", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("player")
    for name in ("games", "won", "lost", "win %", "pts +", "pts -", "diff", big):
        table.add_column(name, justify="right")
    for i, r in enumerate(rows, 1):
        pct = f"{100 * r.won / r.games:.0f}" if r.games else "-"
        table.add_row(
            str(i),
            r.name + (" (bot)" if r.bot else ""),
            str(r.games),
            str(r.won),
            str(r.lost),
            pct,
            str(r.points_for),
            str(r.points_against),
            f"{r.diff:+d}",
            str(r.mars),
        )
    return table


async def _main(args: argparse.Namespace) -> int:
    async with Client(args.server) as client:
        try:
            games = await client.all_games(status=pb.GAME_STATUS_FINISHED, limit=LIMIT)
        except grpc.RpcError as e:
            print(f"nardy standings: cannot reach {args.server}: {e.details()}", file=sys.stderr)
            return 1
    rows = table_rows(games)
    console = report_console(highlight=False)
    if not rows:
        console.print(f"No finished games on {args.server} yet.")
        return 0
    console.print(build_table(rows, args.server, big_wins(games)))
    if len(games) >= LIMIT:
        console.print(f"(from the newest {LIMIT} finished games)")
    return 0


def ladder_standings(args: argparse.Namespace) -> int:
    from clients.ladder_runner import crosstable, standings_table
    from nardy.v1 import ladder_pb2 as lpb
    from nardy.v1 import ladder_pb2_grpc as ladder_grpc

    with sdk_channel(args.server) as channel:
        stub = ladder_grpc.LadderServiceStub(channel)
        try:
            st = stub.GetStandings(lpb.GetStandingsRequest(ladder=args.ladder), timeout=10)
            cross = stub.GetCrosstable(lpb.GetCrosstableRequest(ladder=args.ladder), timeout=10)
        except grpc.RpcError as e:
            print(f"nardy standings: {e.details()}", file=sys.stderr)
            return 1
    console = report_console(highlight=False)
    if not st.rows:
        console.print(f"Ladder {args.ladder}: no bot has joined it yet.")
        return 0
    console.print(standings_table(st))
    console.print(crosstable(cross, [row.player.name for row in st.rows]))
    return 0


def main(args: argparse.Namespace) -> int:
    if getattr(args, "ladder", None):
        return ladder_standings(args)
    try:
        return run(_main, args)
    except KeyboardInterrupt:
        return 130


__all__ = ["Row", "build_table", "table_rows"]
