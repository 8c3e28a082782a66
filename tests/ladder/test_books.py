"""A ladder's books are running totals: they must say exactly
what a recount of every stored game record says — rows, crosstable cells with duplicate
pairs, and the ratings — also after an operator voids a game (rebuilt from the store's
records plus those counted while they were read)."""

from __future__ import annotations

import random
from collections import defaultdict

from server.core.ladder import Ladder, LadderGame, LadderOptions

NAMES = ("a", "b", "c", "d")


def records(rng: random.Random, pairs: int) -> list[LadderGame]:
    out = []
    for p in range(pairs):
        x, y = rng.sample(NAMES, 2)
        for white, black in ((x, y), (y, x)):
            voided = rng.random() < 0.1
            winner = "" if voided else rng.choice((white, black))
            points = 0 if voided else rng.choice((1, 1, 2))
            out.append(
                LadderGame(
                    pair_id=f"p{p}",
                    game_id=f"g{len(out)}",
                    white=white,
                    black=black,
                    winner=winner,
                    points=points,
                    kind="" if voided else ("mars" if points == 2 else "oin"),
                    termination=""
                    if voided
                    else rng.choice(("normal", "timeout", "abandonment", "illegal-plays")),
                    voided=voided,
                    used_ms=(rng.randrange(1000), rng.randrange(1000)),
                    plays=(rng.randrange(1, 40), rng.randrange(1, 40)),
                )
            )
    rng.shuffle(out)  # the games of a pair end in either order, pairs interleave
    return out


def recount(games: list[LadderGame]) -> tuple[dict, dict]:
    """The books from scratch: per bot [games, wins, losses, points for, points against,
    mars wins, mars losses, timeouts, disconnects, illegal-play losses, used ms, plays,
    pairs won 0/1/2] and per cell [wins, losses, points for, points against, pairs]."""
    rows: dict[str, list] = defaultdict(lambda: [0] * 12 + [[0, 0, 0]])
    cells: dict[tuple[str, str], list] = defaultdict(lambda: [0, 0, 0, 0, [0, 0, 0]])
    losses = {"timeout": 7, "abandonment": 8, "illegal-plays": 9}
    by_pair = defaultdict(list)
    for r in games:
        by_pair[r.pair_id].append(r)
        if r.voided:
            continue
        loser = r.black if r.winner == r.white else r.white
        for name, i in ((r.white, 0), (r.black, 1)):
            rows[name][0] += 1
            rows[name][10] += r.used_ms[i]
            rows[name][11] += r.plays[i]
        rows[r.winner][1] += 1
        rows[loser][2] += 1
        rows[r.winner][3] += r.points
        rows[loser][4] += r.points
        if r.points > 1:
            rows[r.winner][5] += 1
            rows[loser][6] += 1
        if r.termination in losses:
            rows[loser][losses[r.termination]] += 1
        cells[r.winner, loser][0] += 1
        cells[loser, r.winner][1] += 1
        cells[r.winner, loser][2] += r.points
        cells[loser, r.winner][3] += r.points
    for pair in by_pair.values():
        if len(pair) == 2 and not any(g.voided for g in pair):
            a, b = sorted((pair[0].white, pair[0].black))
            wins_a = sum(1 for g in pair if g.winner == a)
            for me, other, won in ((a, b, wins_a), (b, a, 2 - wins_a)):
                rows[me][12][won] += 1
                cells[me, other][4][won] += 1
    return dict(rows), dict(cells)


def books(ladder: Ladder) -> tuple[dict, dict]:
    rows = {
        r.name: [
            r.games,
            r.wins,
            r.losses,
            r.points_for,
            r.points_against,
            r.mars_wins,
            r.mars_losses,
            r.timeouts,
            r.disconnects,
            r.illegal_play_losses,
            r.used_ms,
            r.plays,
            r.pairs,
        ]
        for r in ladder.rows()
        if r.games or any(r.pairs)
    }
    cells = {
        k: [c.wins, c.losses, c.points_for, c.points_against, c.pairs]
        for k, c in ladder.cells.items()
    }
    return rows, cells


def test_running_totals_match_a_recount_and_survive_a_void():
    rng = random.Random(13)
    games = records(rng, 60)
    ladder = Ladder(None, None, "l", LadderOptions())
    for r in games:
        ladder.restore(r)
    assert books(ladder) == recount(games)
    assert ladder.finished == sum(not r.voided for r in games)
    assert ladder.voided == sum(r.voided for r in games)

    # void a counted game: the store gives all but the last 5 records (still being read)
    target = next(r for r in games if not r.voided)
    voided = ladder.void(target.game_id, games[:-5])
    assert voided is not None and voided.voided and voided.game_id == target.game_id
    after = [voided if r.game_id == target.game_id else r for r in games]
    assert books(ladder) == recount(after)
    fresh = Ladder(None, None, "l", LadderOptions())
    for r in after:
        fresh.restore(r)
    for name in NAMES:  # the ratings replayed in the same order
        assert ladder.skill.mu(name) == fresh.skill.mu(name)
    assert ladder.void(target.game_id, after) is None  # voided already
