"""New matches and who may create them: the checks on a match's set-up, consent (a
registered player is seated only by itself, the operator, or a ladder; seating another
player is a challenge it answers), the quota of matches not yet over, and storing a new
match whole before it runs."""

from __future__ import annotations

import itertools
import logging
import unicodedata
from dataclasses import dataclass

import trio

from nardy import Color
from nardy.variant import Variant, variant
from server.core import statements
from server.core.journal import Status
from server.core.match import MatchSession, MatchSpec, Seat
from server.core.notes import Note
from server.core.notices import Notices
from server.core.ownership import Sole
from server.core.policy import MAX_TURN_TIME_MS
from server.core.principals import AS_OPERATOR, Caller, new_id, new_token, token_hash
from server.core.roster import Roster
from server.core.runtime import Runtime
from server.core.store import Write
from server.core.tables import Tables
from server.errors import ArbiterError, Code, clip, quote

log = logging.getLogger("nardy.server")

MAX_TARGET = 99
MAX_SCRIPT = 1000  # scripted dice (stored with the match): more than a game throws
MAX_SEED = 2**63 - 1


def stuck(rules: Variant, position) -> bool:
    """No throw moves either side (e.g. short nardy, both closed out with checkers on the
    bar): from such a start every turn passes, untimed, for ever. It is never reached in
    play: a side on the bar moves nothing else, so it cannot close its board or hit."""
    throws = list(itertools.combinations_with_replacement(range(1, 7), 2))
    return not any(  # (the compiled end positions: a stranger's crowded start cost 15 ms)
        rules.end_boards(p, dice) for p in (position, rules.passed(position)) for dice in throws
    )


def spec_rigged(spec: MatchSpec) -> bool:
    """True when the creator chose something chance or the rules should decide."""
    return bool(
        spec.seed is not None
        or spec.dice_script
        or spec.start_position
        or spec.first_seat_white is not None
    )


@dataclass(frozen=True)
class NewMatch:
    """A checked, built match not yet stored: its seat tokens (open seats) and writes."""

    match: MatchSession
    seat_tokens: list[str]
    writes: list[Write]
    challenged: str | None
    creator: str  # the limits key its seats count as ("": the operator's, their own)


class Seating:
    def __init__(
        self, runtime: Runtime, roster: Roster, tables: Tables, notices: Notices, owner: Sole
    ) -> None:
        self.runtime = runtime
        self.roster = roster
        self.tables = tables
        self.notices = notices
        self.owner = owner
        # caller key -> its matches counted in its quota (match id -> when it was created)
        self.counted: dict[str, dict[str, float]] = {}

    async def create_match(
        self, caller: Caller | None, spec: MatchSpec
    ) -> tuple[MatchSession, str, str]:
        """Check who may create this match, then create it (nothing is written on refusal).

        ``caller`` None is the server itself.

        The operator may seat anyone and set the dice, the seed, the start or the first
        colour. Anyone may open a casual game between two open seats, set up as they like.
        A registered player is seated only by itself: seating another registered player
        makes a challenge that player must accept (see accept_challenge).
        """
        caller = caller or AS_OPERATOR
        new = await self._new_match(caller, spec)
        await self._store_new(caller, [new])
        return self._open(new)

    async def create_pair(self, specs: list[MatchSpec]) -> list[MatchSession]:
        """The server's own matches of a ladder's duplicate pair, stored in one transaction:
        a crash or a refused commit leaves both or neither, never a game waiting for a
        partner that does not exist."""
        news = [await self._new_match(AS_OPERATOR, spec) for spec in specs]
        await self._store_new(AS_OPERATOR, news)
        return [self._open(new)[0] for new in news]

    async def _new_match(self, caller: Caller, spec: MatchSpec) -> NewMatch:
        """Check a match and build it, with what is to be stored; nothing written yet."""
        if self.runtime.closing:
            raise ArbiterError(Code.UNAVAILABLE, "the server is shutting down")
        try:
            variant(spec.options.variant).check(spec.options)
        except ValueError as e:
            raise ArbiterError(Code.INVALID_ARGUMENT, clip(str(e))) from None
        if not 1 <= spec.target <= MAX_TARGET:
            raise ArbiterError(Code.INVALID_ARGUMENT, f"target_points must be 1..{MAX_TARGET}")
        terms = spec.terms
        if not 0 < terms.turn_time_ms <= MAX_TURN_TIME_MS:
            raise ArbiterError(Code.INVALID_ARGUMENT, "turn_time_ms must be 1 ms to 24 h")
        if terms.time_bank_ms > MAX_TURN_TIME_MS:
            raise ArbiterError(Code.INVALID_ARGUMENT, "time_bank_ms must be at most 24 h")
        cap = MAX_TURN_TIME_MS if caller.admin else self.roster.policy.max_start_timeout_ms
        if not 0 < spec.start_timeout_ms <= cap:
            raise ArbiterError(
                Code.INVALID_ARGUMENT, f"start_timeout_ms must be 1..{cap} on this server"
            )
        if spec.seed is not None and not 0 <= spec.seed <= MAX_SEED:
            raise ArbiterError(Code.INVALID_ARGUMENT, "a seed is 0..2^63-1")
        for name in (spec.first[0], spec.second[0]):
            if name and name.casefold() not in self.roster.by_name:  # registered elsewhere?
                await self.owner.learn_players("lower(name) = lower(?)", name)
        seats = [self._seat(index, *names) for index, names in enumerate((spec.first, spec.second))]
        if seats[0].player_id and seats[0].player_id == seats[1].player_id:
            raise ArbiterError(Code.INVALID_ARGUMENT, "a player cannot take both seats")
        challenged = self._consent(spec, seats, caller)
        if not caller.admin:
            self._open_quota(caller.key)
        if challenged is not None:
            self._challenge_quota(challenged, seats)
        start = None
        rules = variant(spec.options.variant)
        try:
            if any(not 1 <= d <= 6 for d in spec.dice_script):
                raise ValueError("scripted dice must be 1..6")
            if len(spec.dice_script) > MAX_SCRIPT:
                raise ValueError(f"at most {MAX_SCRIPT} scripted dice")
            if spec.start_position:
                start = rules.parse(spec.start_position)
                if start.turn is not Color.WHITE:  # white moves first (RULES.md §2)
                    start = rules.passed(start)
                if rules.result(start, spec.options.rules) is not None:
                    raise ValueError("the game would be over before it starts")
                if stuck(rules, start):  # every turn would pass at once, forever
                    raise ValueError("neither side could ever move: the game would never end")
        except ValueError as e:
            raise ArbiterError(Code.INVALID_ARGUMENT, clip(str(e))) from None
        match = MatchSession(
            self.tables,
            new_id(),
            spec.options,
            spec.target,
            (seats[0], seats[1]),
            turn_time_ms=terms.turn_time_ms,
            time_bank_ms=terms.time_bank_ms,
            auto_play_forced=terms.auto_play_forced,
            seed=spec.seed,
            script=spec.dice_script,
            server_seed=spec.server_seed,
            pair=spec.pair,
            start=start,
            start_timeout=spec.start_timeout_ms / 1000,
            new_id=new_id,
            illegal_play_limit=terms.illegal_play_limit,
            ladder=spec.ladder,
            pair_id=spec.pair_id,
            first_seat_white=spec.first_seat_white,
            challenged=challenged,
        )
        seat_tokens = ["", ""]
        creator = "" if caller.admin else caller.key
        writes = [statements.add_match(match)]
        for seat in seats:
            if seat.player_id is None:
                seat_tokens[seat.index] = new_token()
                digest = token_hash(seat_tokens[seat.index])
                writes.append(statements.add_seat_token(match.id, seat.index, digest, creator))
        writes += self.owner.claim(match.id, spec.pair_id or match.id)  # run here
        writes.append(statements.add_game(match.current))
        return NewMatch(match, seat_tokens, writes, challenged, creator)

    async def _store_new(self, caller: Caller, news: list[NewMatch]) -> None:
        """Store new matches in one transaction (refused: nothing of them is kept)."""
        ids = {new.match.id for new in news}
        mine = self.counted.setdefault(caller.key, {}) if not caller.admin else {}
        now = trio.current_time()
        mine.update(dict.fromkeys(ids, now))  # counted while they are being stored
        try:
            with self.owner.creating(ids):
                await self.runtime.writer.commit(*(w for new in news for w in new.writes))
        except ArbiterError:
            for match_id in ids:
                mine.pop(match_id, None)
            raise

    def _open(self, new: NewMatch) -> tuple[MatchSession, str, str]:
        """Run a stored new match: its seat tokens, its listing, its challenge."""
        match, seat_tokens = new.match, new.seat_tokens
        self.owner.opened(match.id)
        issued = []
        for index, token in enumerate(seat_tokens):
            if token:
                issued.append(token_hash(token))
                self.roster.add_seat_token(match.id, index, issued[-1], new.creator)
        if issued:
            self.roster.issue(issued)
        self.tables.run(match)
        if new.challenged is not None:
            self.notices.challenge(match.current)
        log.info(
            "match created id=%s target=%d seats=%s,%s",
            match.id,
            match.match.target,
            match.seats[0].name,
            match.seats[1].name,
        )
        return match, seat_tokens[0], seat_tokens[1]

    def _seat(self, index: int, player_name: str, display: str) -> Seat:
        roster = self.roster
        if player_name:
            player = roster.by_name.get(player_name.casefold())
            if player is None:
                raise ArbiterError(Code.NOT_FOUND, f"no player named {quote(player_name)}")
            return Seat(index, player.name, player.bot, player.id, player.owner)
        name = display or f"player {index + 1}"
        if len(name) > 40 or not name.isprintable() or name != name.strip():
            raise ArbiterError(
                Code.INVALID_ARGUMENT,
                "a display name is at most 40 printable characters, not starting or ending "
                "with a space",
            )
        if unicodedata.normalize("NFKC", name).casefold() in roster.names:
            raise ArbiterError(
                Code.INVALID_ARGUMENT,
                f"{quote(name)} is a registered player's name; an open seat cannot take it",
            )
        return Seat(index, name)

    def _consent(self, spec: MatchSpec, seats: list[Seat], caller: Caller) -> str | None:
        """Refuse what the caller may not set up; return the player to challenge, if any."""
        registered = [s for s in seats if s.player_id]
        if caller.admin or not registered:
            return None
        if spec_rigged(spec):
            raise ArbiterError(
                Code.PERMISSION_DENIED,
                "seed, dice, start_position and first_seat_color are for the operator, or "
                "for games between open seats",
            )
        me = caller.principal.player_id if caller.principal is not None else None
        if me is None or me not in {s.player_id for s in registered}:
            raise ArbiterError(
                Code.PERMISSION_DENIED,
                "a registered player is seated only by itself (with its own token), by a "
                "ladder or by the operator",
            )
        others = [s.player_id for s in registered if s.player_id != me]
        return others[0] if others else None

    def _open_quota(self, key: str) -> None:
        """Refuse a new match to a caller with too many not yet over (waiting for their
        seats or in progress: a game in progress lives on the server until it ends), a
        match counting at least ``Policy.match_counted_s`` from its creation: one called
        off at once (a start timeout of 1 ms, both seats resigning) would free its place
        at once, and matches could be made, stored and listed as fast as calls arrive."""
        mine = self.counted.get(key)
        if not mine:
            return
        policy = self.roster.policy
        young = trio.current_time() - policy.match_counted_s
        for match_id, created in list(mine.items()):
            match = self.tables.matches.get(match_id)
            over = match is None or match.decided  # (or run by another instance)
            if over and created <= young:
                del mine[match_id]
        if not mine:
            del self.counted[key]
        elif len(mine) >= policy.open_matches:
            raise ArbiterError(
                Code.RESOURCE_EXHAUSTED,
                f"you have {len(mine)} matches not yet over or created in the last "
                f"{policy.match_counted_s:g} s; finish them or wait before creating more",
            )

    def _waiting_for(self, player_id: str) -> list[MatchSession]:
        """This instance's challenges waiting for ``player_id``'s answer, oldest first."""
        return [
            m
            for m in self.tables.matches.values()
            if m.challenged == player_id and m.current.status is Status.WAITING
        ]

    def _challenge_quota(self, player_id: str, seats: list[Seat]) -> None:
        """Refuse a challenge to a player with too many waiting already: anyone may
        challenge anyone, and a player's list of challenges is read whole on every look."""
        most = self.roster.policy.waiting_challenges
        waiting = self._waiting_for(player_id)
        name = next(s.name for s in seats if s.player_id == player_id)
        challenger = next(s.player_id for s in seats if s.player_id != player_id)
        mine = sum(any(s.player_id == challenger for s in m.seats) for m in waiting)
        if mine >= self.roster.policy.challenges_from_one:  # (or one would fill the list)
            raise ArbiterError(
                Code.RESOURCE_EXHAUSTED,
                f"you have {mine} challenges waiting for {name}'s answer; wait for one",
            )
        if len(waiting) >= most:
            raise ArbiterError(
                Code.RESOURCE_EXHAUSTED,
                f"{name} has {most} challenges waiting for an answer; try again later",
            )

    # -- challenges ---------------------------------------------------------------------
    async def _challenge(
        self, digest: str | None, match_id: str, *, withdraw: bool = False
    ) -> MatchSession:
        """The match of a challenge pending to the caller (``withdraw``: or by the caller,
        its challenger)."""
        principal = self.roster.authenticate(digest)
        match = self.tables.matches.get(match_id)
        if match is None:
            await self.owner.match_elsewhere(match_id)
            if await self.runtime.reader.match(match_id) is None:
                raise ArbiterError(Code.NOT_FOUND, f"no match {quote(match_id)}")
            raise ArbiterError(
                Code.FAILED_PRECONDITION, "no challenge is pending there: the match is over"
            )
        if principal is None or principal.player_id is None:
            raise ArbiterError(Code.PERMISSION_DENIED, "answering a challenge needs a player token")
        seated = principal.player_id in {s.player_id for s in match.seats}
        if withdraw and match.challenged is not None and seated:
            return match  # the challenged player declines, or the challenger withdraws
        if match.challenged != principal.player_id:
            raise ArbiterError(Code.FAILED_PRECONDITION, "no challenge to you is pending there")
        return match

    async def accept_challenge(self, digest: str | None, match_id: str) -> MatchSession:
        """The challenged player takes its seat: the match goes ahead like any other."""
        match = await self._challenge(digest, match_id)
        challenged, match.challenged = match.challenged, None
        try:
            await self.runtime.writer.commit(
                statements.update_match_options(match), fence=self.owner.fence(match)
            )
        except ArbiterError:
            match.challenged = challenged
            raise
        match.accepted()
        self.notices.notify(match.current, Note.GAME_ASSIGNED)
        log.info("challenge accepted match=%s", match.id)
        return match

    async def decline_challenge(self, digest: str | None, match_id: str) -> None:
        """The challenged player declines, or the challenger withdraws: the match is off."""
        match = await self._challenge(digest, match_id, withdraw=True)
        await match.call_off("the challenge was declined or withdrawn")
        log.info("challenge declined or withdrawn match=%s", match.id)

    async def list_challenges(self, digest: str | None) -> list[MatchSession]:
        """The matches waiting for the calling player to accept its challenge: this
        instance's oldest first, then other instances'."""
        principal = self.roster.authenticate(digest)
        assert principal is not None
        if principal.player_id is None:
            raise ArbiterError(Code.PERMISSION_DENIED, "challenges are made to a player token")
        here = self._waiting_for(principal.player_id)
        return here + await self.owner.challenges_elsewhere(principal)
