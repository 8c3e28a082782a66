"""A ladder's books as ``nardy.v1`` messages: its options, standings and crosstable."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as ladder_pb
from server.core.ladder import Ladder, LadderOptions

if TYPE_CHECKING:
    from server.core.arbiter import Arbiter


def ladder_options_pb(o: LadderOptions) -> ladder_pb.LadderOptions:
    return ladder_pb.LadderOptions(
        turn_time_ms=o.turn_time_ms,
        time_bank_ms=o.time_bank_ms,
        max_games_per_bot=o.max_games_per_bot,
        illegal_play_limit=o.illegal_play_limit,
        max_games=o.max_games,
        max_concurrent_games=o.max_concurrent_games,
        variant=o.variant,
    )


def standings_pb(arbiter: Arbiter, name: str) -> ladder_pb.GetStandingsResponse:
    """The ladder's rows as a message."""
    ladder = arbiter.ladders.ladder(name)
    members = {m.name: m for m in ladder.members.values()}
    owners = {p.name: p.owner for p in arbiter.roster.players.values()}
    out = ladder_pb.GetStandingsResponse(
        ladder=name,
        finished_games=ladder.finished_games(),
        voided_games=ladder.voided,
        games_in_progress=len(ladder.in_progress),
        options=ladder_options_pb(ladder.options),
    )
    for rank, row in enumerate(ladder.rows(), 1):
        elo = ladder.elo(row)
        member = members.get(row.name)
        out.rows.append(
            ladder_pb.StandingsRow(
                rank=rank,
                player=pb.Player(name=row.name, bot=True, owner=owners.get(row.name, "")),
                elo=ladder_pb.Interval(value=elo.elo, low=elo.low, high=elo.high),
                skill_mu=ladder.skill.mu(row.name),
                skill_sigma=ladder.skill.sigma(row.name),
                skill_conservative=ladder.skill.conservative(row.name),
                games=row.games,
                wins=row.wins,
                losses=row.losses,
                points_for=row.points_for,
                points_against=row.points_against,
                mars_wins=row.mars_wins,
                mars_losses=row.mars_losses,
                timeouts=row.timeouts,
                disconnects=row.disconnects,
                illegal_play_losses=row.illegal_play_losses,
                avg_move_ms=row.avg_move_ms,
                playing=member.playing if member else 0,
                ready=member.ready if member else False,
            )
        )
    return out


# ladder -> (its books' version, its crosstable); read and written in the trio thread only
_CROSSTABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def crosstable_pb(arbiter: Arbiter, name: str) -> ladder_pb.GetCrosstableResponse:
    """Head-to-head records for every two bots that met, built
    once per change of the ladder's books (for 100 bots that met, 9,900 cells: ~0.1 s)."""
    ladder = arbiter.ladders.ladder(name)
    cached = _CROSSTABLES.get(ladder)
    if cached is not None and cached[0] == ladder.books:
        return cached[1]
    table = _CROSSTABLES[ladder] = (ladder.books, _crosstable(ladder))
    return table[1]


def _crosstable(ladder: Ladder) -> ladder_pb.GetCrosstableResponse:
    return ladder_pb.GetCrosstableResponse(
        cells=[
            ladder_pb.CrosstableCell(
                player=me,
                opponent=other,
                wins=c.wins,
                losses=c.losses,
                points_for=c.points_for,
                points_against=c.points_against,
                pairs_lost=c.pairs[0],
                pairs_split=c.pairs[1],
                pairs_won=c.pairs[2],
            )
            for (me, other), c in sorted(ladder.cells.items())
        ]
    )
