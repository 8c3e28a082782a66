"""Bot-vs-bot ladders: continuous pairing in duplicate-dice pairs, results and standings.

A ladder is a trio task that pairs its ready bots whenever one becomes free. Each pairing
is two single games with one secret seed and the seats swapped: the same opening throw
then gives white to the other bot, and every turn's dice repeat, so the pair cancels most
of the luck of the dice. Games the server voids (ABORTED, no result) never count.

The books are kept as running totals (a row per bot, a cell per two bots that met, the
ratings), never as a list of every game: a ladder that runs for weeks stays the same size
in memory. Each game's record is in the store (``ladder_games``); an operator's void
rebuilds the books from there.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, replace

import trio

from nardy import Termination
from nardy.match import DEFAULT_VARIANT
from nardy.stats import SkillTable, elo_pairs
from nardy.variant import variant
from nardy.wire import Terms
from server.core.clock import DEFAULT_TURN_TIME_MS
from server.core.journal import Status
from server.core.lockstep import Lockstep
from server.core.match import MatchSession, MatchSpec
from server.core.session import GameSession

log = logging.getLogger("nardy.server")

RECENT = 1000  # the latest counted records, to rebuild the books from a store read
START_TIMEOUT_MS = 30_000  # a pair's seats come within this; one that does not loses
NEWCOMER_START_TIMEOUT_MS = 10_000  # ... with a bot that has not yet come to a game here
# At most this long a pairing waits for a bot that is busy now and met one of the two less
# (Ladder._hold): about a pair of fast games; a busy bot slower than that is not waited on.
HOLD_S = 30.0
# A bot whose seat was not there (it never came to a game, or left one and lost on time)
# is not paired for this long, twice as long each time again, up to BENCH_MAX_S: a bot that
# crashed or hangs while still ready costs its ladder one pair, then less and less.
BENCH_S = 60.0
BENCH_MAX_S = 1800.0
# A bot that has not yet come to a game of the ladder is benched this long (doubling) from
# its first miss, and saying it is ready does not end that bench: players are free to
# register, and ten of them joining and never coming held the ladder's bots in pairs that
# waited for them (the pairing prefers bots that met least).
NEWCOMER_BENCH_S = 600.0


@dataclass(frozen=True)
class LadderOptions:
    turn_time_ms: int = DEFAULT_TURN_TIME_MS
    time_bank_ms: int = 0
    max_games_per_bot: int = 2
    illegal_play_limit: int = 3
    max_games: int = 0  # stop pairing after this many finished games (0: never)
    max_concurrent_games: int = 0  # games in progress at once, all bots together (0: any)
    variant: str = DEFAULT_VARIANT  # the rules of every game


@dataclass(frozen=True)
class LadderGame:
    """One finished ladder game, as the standings count it."""

    pair_id: str
    game_id: str
    white: str
    black: str
    winner: str  # "" when voided
    points: int
    kind: str
    termination: str
    voided: bool
    used_ms: tuple[int, int]  # white's, black's thinking time
    plays: tuple[int, int]

    @property
    def loser(self) -> str:
        return self.black if self.winner == self.white else self.white


def ladder_game(record: dict) -> LadderGame:
    """A LadderGame from its fields as JSON gives them back (lists for its pairs)."""
    return LadderGame(
        **{**record, "used_ms": tuple(record["used_ms"]), "plays": tuple(record["plays"])}
    )


@dataclass
class Member:
    player_id: str
    name: str
    ready: bool = False
    playing: int = 0
    benched_until: float = -math.inf  # not paired before (BENCH_S)
    benched: int = 0  # benched this many times since it last played a pair's games out
    half_played: str = ""  # the pair one of whose games it played out, the other not yet
    missed_pair: str = ""  # the last pair it was benched for
    joins: int = 0  # JoinLadder{ready: true} said in a row (the store counts them too)
    paired_joins: int = 0  # ``joins`` when it was last paired

    @classmethod
    def stored(cls, player_id: str, name: str, ready: int) -> Member:
        """A member as the store has it (``ready``: its joins in a row)."""
        return cls(player_id, name, bool(ready), joins=ready, paired_joins=ready)


@dataclass
class Row:
    """A bot's line in the standings (see StandingsRow in ladder.proto)."""

    name: str
    games: int = 0
    wins: int = 0
    losses: int = 0
    points_for: int = 0
    points_against: int = 0
    mars_wins: int = 0
    mars_losses: int = 0
    timeouts: int = 0
    disconnects: int = 0
    illegal_play_losses: int = 0
    used_ms: int = 0
    plays: int = 0
    pairs: list[int] = field(default_factory=lambda: [0, 0, 0])  # pairs won 0 / 1 / 2 games

    @property
    def avg_move_ms(self) -> float:
        return self.used_ms / self.plays if self.plays else 0.0


@dataclass
class Cell:
    """One bot's head-to-head record against another (see CrosstableCell)."""

    wins: int = 0
    losses: int = 0
    points_for: int = 0
    points_against: int = 0
    pairs: list[int] = field(default_factory=lambda: [0, 0, 0])  # pairs won 0 / 1 / 2 games


# the server's part in pairing: store a duplicate pair's matches (both or neither) and run
# them; then place the pair where it is to run (several instances: the least loaded one)
CreatePair = Callable[[list[MatchSpec]], Awaitable[list[MatchSession]]]
PlacePair = Callable[[str, list[str]], Awaitable[None]]


class Ladder:
    def __init__(
        self, create_pair: CreatePair, place_pair: PlacePair, name: str, options: LadderOptions
    ) -> None:
        self.create_pair = create_pair
        self.place_pair = place_pair
        self.name = name
        self.options = options
        self.members: dict[str, Member] = {}
        self.in_progress: set[str] = set()
        self.met: dict[frozenset, int] = defaultdict(int)  # pairings so far
        self.books = 0  # bumped at every change of the books (what is built from them is kept)
        self._clear_books()
        self._wake = trio.Event()
        self._held_since: float | None = None  # since when a pairing waits (see _hold)
        # Several instances: only the leader pairs, and its books are reloaded from the
        # store (reload) under this lock, never in the middle of a pairing.
        self.active = True
        self.lock = trio.Lock()
        self._seen: set[str] | None = None  # the records of the last reload (their games)

    def _clear_books(self) -> None:
        self.books += 1
        self.finished = 0  # games that count
        self.voided = 0
        self.table: dict[str, Row] = {}  # bot name -> its row
        self.cells: dict[tuple[str, str], Cell] = {}  # (bot, opponent) -> head-to-head
        self.open_pairs: dict[str, list[LadderGame]] = {}  # pairs with one game counted
        self.recent: deque[LadderGame] = deque(maxlen=RECENT)
        self.skill = SkillTable()

    # -- the books as data: stored, so that a restart need not count every result again --
    def books_state(self) -> dict:
        """The books as plain data (JSON): what counting the records so far built."""
        return {
            "finished": self.finished,
            "voided": self.voided,
            "table": [asdict(row) for row in self.table.values()],
            "cells": [[me, other, asdict(cell)] for (me, other), cell in self.cells.items()],
            "open_pairs": [asdict(r) for games in self.open_pairs.values() for r in games],
            "recent": [asdict(r) for r in self.recent],
            "skill": self.skill.to_dict(),
            "met": [[*sorted(names), n] for names, n in self.met.items()],
        }

    def load_books(self, state: dict) -> None:
        """The books of :meth:`books_state` (the records after them are counted next);
        KeyError, TypeError or ValueError if ``state`` is not such books (nothing changed)."""
        table = {row["name"]: Row(**row) for row in state["table"]}
        cells = {(me, other): Cell(**cell) for me, other, cell in state["cells"]}
        open_pairs: dict[str, list[LadderGame]] = {}
        for record in state["open_pairs"]:
            game = ladder_game(record)
            open_pairs.setdefault(game.pair_id, []).append(game)
        recent = [ladder_game(record) for record in state["recent"]]
        skill = SkillTable.from_dict(state["skill"])
        met = defaultdict(int, {frozenset((a, b)): int(n) for a, b, n in state["met"]})
        finished, voided = int(state["finished"]), int(state["voided"])
        self._clear_books()
        self.table, self.cells, self.open_pairs = table, cells, open_pairs
        self.skill, self.met = skill, met
        self.recent.extend(recent)
        self.finished, self.voided = finished, voided

    @property
    def counted(self) -> int:
        """How many records (ladder games, voided ones too) the books count."""
        return self.finished + self.voided

    # -- membership ---------------------------------------------------------------------
    def join(self, player_id: str, name: str, ready: bool) -> None:
        """A bot says it is ready (or not). Ready again after missing one pair, it is back
        from its bench (a restarted engine); after missing two or more in a row it sits its
        bench out (a bot that came back only to miss its seats again would hold every
        opponent it was paired with for a pair's start time)."""
        member = self.members.setdefault(player_id, Member(player_id, name))
        member.ready = ready
        member.joins = member.joins + 1 if ready else 0
        if ready:
            self._back(member)
        self._wake.set()

    def _back(self, member: Member) -> None:
        """``member`` said it is ready again: back from a bench for one missed pair (not a
        newcomer's, see NEWCOMER_BENCH_S)."""
        if member.benched <= 1 and self.came(member.name):
            if member.benched_until > trio.current_time():
                log.info("ladder=%s %s is ready again: paired again", self.name, member.name)
            member.benched_until = -math.inf

    def came(self, name: str) -> bool:
        """Whether the bot ``name`` has come to a game of this ladder (one it did not lose
        by never coming or leaving)."""
        row = self.table.get(name)
        return row is not None and row.games > row.disconnects

    # -- pairing ------------------------------------------------------------------------
    async def run(self) -> None:
        """Pair whenever something changes (a bot joins or leaves, a game ends); an idle
        ladder sleeps and costs nothing."""
        while True:
            if self.active:
                async with self.lock:
                    await self._pair()
            self._wake = trio.Event()
            deadline = math.inf if self._held_since is None else self._held_since + HOLD_S
            now = trio.current_time()
            benches = (m.benched_until for m in self.members.values() if m.benched_until > now)
            with trio.move_on_at(min([deadline, *benches])):
                await self._wake.wait()

    def wake(self) -> None:
        self._wake.set()

    def finished_games(self) -> int:
        return self.finished

    async def _pair(self) -> None:
        cap = self.options.max_games_per_bot
        limit = self.options.max_games
        cap_all = self.options.max_concurrent_games
        while True:
            if limit and self.finished_games() + len(self.in_progress) + 2 > limit:
                return
            if cap_all and len(self.in_progress) + 2 > max(2, cap_all):
                return
            now = trio.current_time()
            free = [
                m
                for m in self.members.values()
                if m.ready and m.playing + 2 <= cap and m.benched_until <= now
            ]
            if len(free) < 2:
                return
            # spread pairings first (the two who met least), then the closest ratings
            rating = self.skill.conservative
            a, b = min(
                ((a, b) for i, a in enumerate(free) for b in free[i + 1 :]),
                key=lambda p: (
                    self.met[frozenset((p[0].name, p[1].name))] + p[0].playing + p[1].playing,
                    abs(rating(p[0].name) - rating(p[1].name)),
                ),
            )
            if self._hold(a, b, free):
                return
            self._held_since = None
            await self._start_pair(a, b)

    def _hold(self, a: Member, b: Member, free: list[Member]) -> bool:
        """Whether to wait before pairing ``a`` and ``b`` again: one of them has met a bot
        that is busy now fewer times, and has waited less than :data:`HOLD_S`. A pair's two
        bots are freed together, often the only ones free: paired at once they met again
        and again (with four bots, only two pairings ever) and the standings compared
        little. Waiting a while lets the busy ones finish and the pairings turn."""
        met = self.met[frozenset((a.name, b.name))]
        now = trio.current_time()
        busy = [
            m
            for m in self.members.values()
            if m.ready and m not in free and m.benched_until <= now  # (benched: not waited on)
        ]
        better = any(self.met[frozenset((x.name, c.name))] < met for x in (a, b) for c in busy)
        if not better:
            return False
        if self._held_since is None:
            self._held_since = now
        return now < self._held_since + HOLD_S

    async def _start_pair(self, a: Member, b: Member) -> None:
        pair_id = secrets.token_hex(4)
        proven = self.came(a.name) and self.came(b.name)  # (a newcomer's opponent waits less)
        wait_ms = START_TIMEOUT_MS if proven else NEWCOMER_START_TIMEOUT_MS
        server_seed = secrets.token_bytes(32)  # one secret seed: the same dice in both games
        lockstep = Lockstep(pair_id, size=2)  # the first game waits for its partner
        specs = [
            MatchSpec(
                options=variant(self.options.variant).options(),
                target=1,
                first=(first.name, ""),
                second=(second.name, ""),
                server_seed=server_seed,
                pair=lockstep,
                terms=Terms(
                    turn_time_ms=self.options.turn_time_ms,
                    time_bank_ms=self.options.time_bank_ms,
                    auto_play_forced=True,
                    illegal_play_limit=self.options.illegal_play_limit,
                ),
                start_timeout_ms=wait_ms,
                ladder=self.name,
                pair_id=pair_id,
            )
            for first, second in ((a, b), (b, a))
        ]
        pair = await self.create_pair(specs)
        games = [match.current.id for match in pair]
        self.in_progress.update(games)
        for m in (a, b):
            m.playing += 2
            m.paired_joins = m.joins
        self.met[frozenset((a.name, b.name))] += 1
        await self.place_pair(pair_id, [match.id for match in pair])
        log.info(
            "ladder=%s pair=%s %s vs %s games=%s",
            self.name,
            pair_id,
            a.name,
            b.name,
            ",".join(games),
        )

    # -- results ------------------------------------------------------------------------
    def game_over(self, game: GameSession, bench: bool = True) -> LadderGame:
        """Count a finished (or voided) game of this ladder; the record is for the store.
        ``bench``: judge its seats here (several instances: the leader does, see reload)."""
        self.in_progress.discard(game.id)
        record = self._record(game)
        self._count(record)
        members = {}
        for seat in game.match.seats:
            member = self.members.get(seat.player_id or "")
            if member is not None:
                member.playing = max(0, member.playing - 1)
                members[seat.name] = member
        if bench:
            self._bench(record, members)
        self._wake.set()
        return record

    def _bench(self, record: LadderGame, members: dict[str, Member]) -> None:
        """A bot whose seat was not there for its game is benched (BENCH_S; one that never
        came, NEWCOMER_BENCH_S), unless it said it was ready again since it was paired (a
        restarted engine) after a clean record; one that played both games of a pair out
        is not any more (coming to one game of each pair only clears nothing)."""
        if record.voided:
            return
        now = trio.current_time()
        for name in (record.white, record.black):
            member = members.get(name)
            if member is None:
                continue
            pair = record.pair_id
            if not (record.termination == Termination.ABANDONMENT and name == record.loser):
                if member.half_played == pair:  # its pair's other game too: a clean record
                    member.benched, member.half_played = 0, ""
                else:
                    member.half_played = pair
                continue
            member.half_played = ""
            if member.missed_pair == pair:
                continue  # (once for both games of its pair)
            member.missed_pair = pair
            member.benched += 1
            came = self.came(name)
            if member.benched == 1 and member.joins > member.paired_joins and came:
                continue  # back already
            base = BENCH_S if came else NEWCOMER_BENCH_S
            rest = min(BENCH_MAX_S, base * 2 ** (member.benched - 1))
            member.benched_until = now + rest
            back = " (or until it says it is ready again)" if member.benched == 1 and came else ""
            log.warning(
                "ladder=%s %s is not paired for %.0f s%s: its seat was not there for game %s",
                self.name, name, rest, back, record.game_id,
            )  # fmt: skip

    def void(self, game_id: str, records: list[LadderGame]) -> LadderGame | None:
        """The operator voided a finished game: it no longer counts. ``records`` are the
        ladder's games as stored; the books are rebuilt from them (and from games counted
        while they were read) with this one voided, and the voided record is returned for
        the store (None: nothing to void)."""
        stored = {r.game_id for r in records}
        records = records + [r for r in self.recent if r.game_id not in stored]
        voided = None
        for i, r in enumerate(records):
            if r.game_id == game_id and not r.voided:
                voided = records[i] = replace(r, winner="", points=0, kind="", voided=True)
        if voided is not None:
            self._clear_books()
            for r in records:
                self._count(r)
        return voided

    def reload(
        self,
        records: list[LadderGame],
        members: list[Member],
        live: dict[str, list[str | None]],
    ) -> None:
        """The books as the store has them (several instances write results there):
        ``live`` maps each game in progress to its seats' player ids. The members keep
        their benches; the records new since the last reload bench them (the instances
        that played the games do not)."""
        self._clear_books()
        self.in_progress = set()
        self.met = defaultdict(int)
        for record in records:
            self.restore(record)
        before, self.members = self.members, {}
        for m in members:
            prev = before.get(m.player_id)
            if prev is not None:
                m = replace(prev, ready=m.ready, joins=m.joins, playing=0)
                if m.ready and m.joins > prev.joins:
                    self._back(m)
            self.members[m.player_id] = m
        seen, self._seen = self._seen, {r.game_id for r in records}
        if seen is not None:
            by_name = {m.name: m for m in self.members.values()}
            for record in records:
                if record.game_id not in seen:
                    self._bench(record, by_name)
        for game_id, player_ids in live.items():
            self.in_progress.add(game_id)
            for player_id in player_ids:
                member = self.members.get(player_id or "")
                if member is not None:
                    member.playing += 1
        self._wake.set()

    def restore(self, record: LadderGame) -> None:
        """Take back a result from the store after a restart."""
        self._count(record)
        if not record.voided:
            self.met[frozenset((record.white, record.black))] += 1

    def _count(self, r: LadderGame) -> None:
        """Add one game's record to the books (and its pair's, once both have counted)."""
        self.books += 1
        self.recent.append(r)
        pair = self.open_pairs.setdefault(r.pair_id, []) if r.pair_id else []
        pair.append(r)
        if r.pair_id and len(pair) == 2:
            del self.open_pairs[r.pair_id]
            if not any(g.voided for g in pair):
                self._count_pair(pair)
        if r.voided:
            self.voided += 1
            return
        self.finished += 1
        self.skill.record(r.winner, r.loser)
        for name, used, plays in (
            (r.white, r.used_ms[0], r.plays[0]),
            (r.black, r.used_ms[1], r.plays[1]),
        ):
            row = self.table.setdefault(name, Row(name))
            row.games += 1
            row.used_ms += used
            row.plays += plays
        win, loss = self.table[r.winner], self.table[r.loser]
        win.wins += 1
        loss.losses += 1
        win.points_for += r.points
        loss.points_against += r.points
        if r.points > 1:  # mars or koks; gammon or backgammon
            win.mars_wins += 1
            loss.mars_losses += 1
        if r.termination == Termination.TIMEOUT:
            loss.timeouts += 1
        elif r.termination == Termination.ABANDONMENT:
            loss.disconnects += 1
        elif r.termination == Termination.ILLEGAL_PLAYS:
            loss.illegal_play_losses += 1
        won, lost = self._cell(r.winner, r.loser), self._cell(r.loser, r.winner)
        won.wins += 1
        lost.losses += 1
        won.points_for += r.points
        lost.points_against += r.points

    def _count_pair(self, games: list[LadderGame]) -> None:
        a, b = sorted((games[0].white, games[0].black))
        wins_a = sum(1 for g in games if g.winner == a)
        for me, other, won in ((a, b, wins_a), (b, a, 2 - wins_a)):
            self.table.setdefault(me, Row(me)).pairs[won] += 1
            self._cell(me, other).pairs[won] += 1

    def _cell(self, me: str, other: str) -> Cell:
        return self.cells.setdefault((me, other), Cell())

    @staticmethod
    def _record(game: GameSession) -> LadderGame:
        from nardy import Color

        r = game.result
        voided = game.status is Status.ABORTED or r is None
        white = (
            game.seat_of(Color.WHITE).name
            if game.white_seat is not None
            else game.match.seats[0].name
        )
        black = (
            game.seat_of(Color.BLACK).name
            if game.white_seat is not None
            else game.match.seats[1].name
        )
        return LadderGame(
            pair_id=game.match.pair_id,
            game_id=game.id,
            white=white,
            black=black,
            winner="" if voided else (white if r.winner is Color.WHITE else black),
            points=0 if voided else r.points,
            kind="" if voided else str(r.kind),
            termination="" if voided else str(r.termination),
            voided=voided,
            used_ms=(game.used_ms[Color.WHITE], game.used_ms[Color.BLACK]),
            plays=(game.plays_made[Color.WHITE], game.plays_made[Color.BLACK]),
        )

    # -- standings ----------------------------------------------------------------------
    def rows(self) -> list[Row]:
        """Every bot's row (members with no game yet too), best rated first."""
        rows = {m.name: Row(m.name) for m in self.members.values()} | self.table
        return sorted(rows.values(), key=lambda row: -self.skill.conservative(row.name))

    def elo(self, row: Row):
        """The bot's Elo against the field, from its duplicate pairs."""
        return elo_pairs(tuple(row.pairs))
