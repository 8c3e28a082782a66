"""The public API in the core: each gRPC method's request, as the edge forwards it on the
link, answered from the arbiter (and the link's own methods for the web view, /metrics and
heartbeats).

The link reads a call and :meth:`Api.admit` parses it at once (a play is stamped then, see
server.core.clock); :meth:`Api.answer` then runs as a task of its own. The caller's token
is checked first, before anything else: a token the core does not know is refused
(UNAUTHENTICATED) on every call, also where none is needed. Every enum of a request must
hold a value its enum defines.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import time
from bisect import bisect_right
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import trio
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import DecodeError, Message
from google.protobuf.timestamp_pb2 import Timestamp

from nardy import wire
from nardy.link.v1 import link_pb2 as link_pb
from nardy.v1 import admin_pb2 as admin_pb
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as ladder_pb
from server import link
from server.core import views
from server.core.arbiter import Arbiter
from server.core.clock import Arrival
from server.core.journal import Event, EventType
from server.core.ladder import LadderOptions
from server.core.ladder_views import crosstable_pb, ladder_options_pb, standings_pb
from server.core.match import MatchSpec
from server.core.notes import Note, PlayerNote
from server.core.principals import Caller
from server.core.session import GameSession
from server.core.taps import Tap, Taps
from server.errors import ArbiterError, Code, Elsewhere, clip

log = logging.getLogger("nardy.server")

ARBITER = "/nardy.v1.ArbiterService/"
LADDER = "/nardy.v1.LadderService/"
ADMIN = "/nardy.v1.AdminService/"
SUBMIT_PLAY = ARBITER + "SubmitPlay"
MAX_NOTATION = 200
DIGEST = re.compile(r"[0-9a-f]{64}")
PLAYER_EVENT = {
    Note.GAME_ASSIGNED: api.PLAYER_EVENT_TYPE_GAME_ASSIGNED,
    Note.GAME_OVER: api.PLAYER_EVENT_TYPE_GAME_OVER,
    Note.HEARTBEAT: api.PLAYER_EVENT_TYPE_HEARTBEAT,
    Note.SERVER_SHUTDOWN: api.PLAYER_EVENT_TYPE_SERVER_SHUTDOWN,
    Note.CHALLENGE: api.PLAYER_EVENT_TYPE_CHALLENGE,
}

Handler = Callable[[Any, Caller, str], Awaitable[Message | bytes]]


@dataclass(slots=True)
class Admitted:
    """A call read from the link, parsed, not yet answered."""

    call: link_pb.Call
    handler: Handler
    request: Message
    arrival: Arrival | None = None  # a play's, on the core's clock


def bad_enum(msg: Message) -> str | None:
    """The first enum field (at any depth) holding a value its enum does not define."""
    if not _has_enums(msg.DESCRIPTOR):
        return None
    for field, value in msg.ListFields():
        if field.type == FieldDescriptor.TYPE_ENUM:
            values = value if field.is_repeated else [value]
            if any(v not in field.enum_type.values_by_number for v in values):
                return field.name
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            if field.is_repeated:
                for item in value:
                    if (name := bad_enum(item)) is not None:
                        return name
            elif (name := bad_enum(value)) is not None:
                return f"{field.name}.{name}"
    return None


@functools.cache
def _has_enums(descriptor, seen: frozenset = frozenset()) -> bool:
    """Whether messages of ``descriptor`` hold an enum field at any depth."""
    for field in descriptor.fields:
        if field.type == FieldDescriptor.TYPE_ENUM:
            return True
        nested = field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type not in seen
        if nested and _has_enums(field.message_type, seen | {descriptor}):
            return True
    return False


def refusal(call_id: int, error: ArbiterError) -> link_pb.Reply:
    where = error.address if isinstance(error, Elsewhere) else ""
    return link_pb.Reply(
        id=call_id, code=error.code.status, message=clip(error.message), instance=where
    )


class Api:
    """The methods the edge may call, by full name."""

    def __init__(self, arbiter: Arbiter, taps: Taps, offset: float = 0.0) -> None:
        self.arbiter = arbiter
        self.taps = taps
        self.offset = offset  # the core's clock minus CLOCK_MONOTONIC (the edge's stamps)
        self.methods: dict[str, tuple[type[Message], Handler]] = {
            ARBITER + "RegisterPlayer": (api.RegisterPlayerRequest, self.register_player),
            ARBITER + "CreateMatch": (api.CreateMatchRequest, self.create_match),
            ARBITER + "AcceptChallenge": (api.AcceptChallengeRequest, self.accept_challenge),
            ARBITER + "DeclineChallenge": (api.DeclineChallengeRequest, self.decline_challenge),
            ARBITER + "ListChallenges": (api.ListChallengesRequest, self.list_challenges),
            ARBITER + "GetGame": (api.GetGameRequest, self.get_game),
            ARBITER + "ListGames": (api.ListGamesRequest, self.list_games),
            ARBITER + "SubscribeGame": (api.SubscribeGameRequest, self.subscribe_game),
            ARBITER + "SubscribePlayer": (api.SubscribePlayerRequest, self.subscribe_player),
            SUBMIT_PLAY: (api.SubmitPlayRequest, self.submit_play),
            ARBITER + "Resign": (api.ResignRequest, self.resign),
            LADDER + "CreateLadder": (ladder_pb.CreateLadderRequest, self.create_ladder),
            LADDER + "JoinLadder": (ladder_pb.JoinLadderRequest, self.join_ladder),
            LADDER + "GetStandings": (ladder_pb.GetStandingsRequest, self.standings),
            LADDER + "GetCrosstable": (ladder_pb.GetCrosstableRequest, self.crosstable),
            ADMIN + "ListPlayers": (admin_pb.ListPlayersRequest, self.list_players),
            ADMIN + "VoidGame": (admin_pb.VoidGameRequest, self.void_game),
            ADMIN + "ArchiveGames": (admin_pb.ArchiveGamesRequest, self.archive_games),
            ADMIN + "SetRetention": (admin_pb.SetRetentionRequest, self.set_retention),
            ADMIN + "GetRetention": (admin_pb.GetRetentionRequest, self.get_retention),
            link.HEARTBEAT: (link_pb.HeartbeatRequest, self.heartbeat),
            link.INDEX: (link_pb.IndexRequest, self.index),
            link.HISTORY: (link_pb.HistoryRequest, self.history),
            link.METRICS: (link_pb.IndexRequest, self.metrics),
            link.PING: (link_pb.IndexRequest, self.ping),
            link.SHUTDOWN: (link_pb.IndexRequest, self.shutdown),
            link.WHO: (link_pb.WhoRequest, self.who),
        }

    # -- the call's way in ----------------------------------------------------------------
    def admit(self, call: link_pb.Call) -> Admitted:
        """Parse a call as it is read (a play is stamped now); ArbiterError if it cannot
        be answered at all."""
        known = self.methods.get(call.method)
        if known is None:
            raise ArbiterError(Code.UNIMPLEMENTED, f"no method {call.method[:100]!r}")
        kind, handler = known
        try:
            request = kind.FromString(call.request)
        except DecodeError:
            raise ArbiterError(
                Code.INVALID_ARGUMENT, "the request is not a valid protobuf message of its type"
            ) from None
        admitted = Admitted(call, handler, request)
        if call.method == SUBMIT_PLAY:
            at = call.arrival + self.offset if math.isfinite(call.arrival or math.nan) else None
            admitted.arrival = arrival = self.arbiter.arrivals.stamp(request.game_id, at)
            if call.sent and math.isfinite(call.sent):  # the clock ran from the send
                sent = call.sent + self.offset
                self.arbiter.actions.turn_sent(request.game_id, request.turn_id, sent)
            admitted.handler = partial(self.submit_play, arrival=arrival)
        return admitted

    async def answer(self, admitted: Admitted) -> link_pb.Reply:
        """The call answered: its response, or why it is refused."""
        call = admitted.call
        reply = link_pb.Reply(id=call.id)
        try:
            store = not isinstance(admitted.request, link_pb.WhoRequest) or admitted.request.store
            who = await self._who(call, reply, store)
            if (name := bad_enum(admitted.request)) is not None:
                raise ArbiterError(Code.INVALID_ARGUMENT, f"{name}: not a value this server knows")
            body = await admitted.handler(admitted.request, who, call.caller.digest)
        except ArbiterError as e:
            refused = refusal(call.id, e)
            if call.identify:
                refused.identity.CopyFrom(reply.identity)
            return refused
        finally:
            if admitted.arrival is not None:
                self._settled(admitted.arrival)
        reply.body = body if isinstance(body, bytes) else body.SerializeToString()
        return reply

    def _settled(self, arrival: Arrival) -> None:
        if self.arbiter.arrivals.settle(arrival):
            self.arbiter.actions.arrival_settled(arrival)

    async def _who(self, call: link_pb.Call, reply: link_pb.Reply, store: bool) -> Caller:
        """The caller, its token checked before anything else (told in ``reply`` when the
        edge asks who it is; ``store``: a token not held in memory is looked up)."""
        digest = call.caller.digest
        roster = self.arbiter.roster
        principal = None
        if digest and DIGEST.fullmatch(digest):  # (the edge sends nothing else)
            principal = roster.principal(digest)
            if principal is None and not store and roster.never_issued(digest):
                store = True  # unknown for good, without the store
            elif principal is None and store:
                principal = await roster.stored_principal(digest)
        who = Caller(principal, call.caller.address[:100])
        if call.identify:
            known = not digest or principal is not None
            reply.identity.CopyFrom(
                link_pb.Identity(known=known, key=who.key, operator=who.admin, final=store)
            )
        if digest and principal is None:
            if not store:
                return who  # (Link/Who in memory only: the identity tells)
            raise ArbiterError(Code.UNAUTHENTICATED, "unknown token")
        return who

    # -- ArbiterService ---------------------------------------------------------------
    async def register_player(self, r, who: Caller, digest: str):
        player_id, token = await self.arbiter.roster.register(who, r.name, r.bot, r.owner)
        return api.RegisterPlayerResponse(player_id=player_id, token=token)

    async def create_match(self, r, who: Caller, digest: str):
        o, color = r.options, r.first_seat_color
        spec = MatchSpec(
            options=wire.options_of(o),
            target=max(1, r.target_points),
            first=(r.first.player_name, r.first.display_name),
            second=(r.second.player_name, r.second.display_name),
            seed=r.seed if r.HasField("seed") else None,
            terms=wire.terms_of(o),
            start_timeout_ms=r.start_timeout_ms or wire.DEFAULT_START_TIMEOUT_MS,
            start_position=r.start_position,
            first_seat_white=None if not color else color == pb.COLOR_WHITE,
            dice_script=tuple(r.dice),
        )
        match, t1, t2 = await self.arbiter.seating.create_match(who, spec)
        return api.CreateMatchResponse(
            match_id=match.id,
            game_id=match.current.id,
            dice_commitment=match.current.roller.commitment,
            first_seat_token=t1,
            second_seat_token=t2,
            challenge=match.challenged is not None,
        )

    async def accept_challenge(self, r, who: Caller, digest: str):
        match = await self.arbiter.seating.accept_challenge(digest, r.match_id)
        return api.AcceptChallengeResponse(game_id=match.current.id)

    async def decline_challenge(self, r, who: Caller, digest: str):
        await self.arbiter.seating.decline_challenge(digest, r.match_id)
        return api.DeclineChallengeResponse()

    async def list_challenges(self, r, who: Caller, digest: str):
        out = api.ListChallengesResponse()
        for match in await self.arbiter.seating.list_challenges(digest):
            card = match.current.card
            challenger = next(s for s in card.seats if s.player_id != match.challenged)
            out.challenges.append(
                api.Challenge(
                    match_id=match.id,
                    game_id=card.game_id,
                    challenger=views.player_pb(challenger),
                    target_points=card.target,
                    options=wire.options_pb(card.options, card.terms),
                    start_timeout_ms=round(match.start_timeout * 1000),
                )
            )
        return out

    async def get_game(self, r, who: Caller, digest: str):
        game, seat = await self.arbiter.actions.viewer(digest, r.game_id, read=True)
        color = None if seat is None else game.color_of(seat)
        return api.GetGameResponse(
            state=views.state_pb(game.card, game.told(), color),
            last_seq=game.audience.last_seq,
        )

    async def list_games(self, r, who: Caller, digest: str):
        """Answered from the catalogue in a worker thread (a big page is not the core's
        work: server.core.catalogue)."""
        catalogue = self.arbiter.catalogue
        if r.ladder:
            self.arbiter.ladders.ladder(r.ladder)  # NOT_FOUND for a ladder that does not exist

        def page() -> bytes:
            games, token = catalogue.page(r.status, r.ladder, r.limit, r.page_token)
            return api.ListGamesResponse(games=games, next_page_token=token).SerializeToString()

        try:
            return await trio.to_thread.run_sync(page)
        except ValueError as e:
            raise ArbiterError(Code.INVALID_ARGUMENT, clip(str(e))) from None

    async def subscribe_game(self, r, who: Caller, digest: str):
        own = r.filter == api.EVENT_FILTER_OWN_TURNS
        game, seat, backlog, live = await self.arbiter.actions.subscribe(
            digest, r.game_id, r.after_seq, r.from_start, self._game_tap, r.client_seed, own
        )
        card = game.card
        opened = link_pb.Opened(
            game_id=game.id,
            backlog=[views.event_wire(card, e, seat)[0] for e in backlog],
            seq=backlog[-1].seq if backlog else r.after_seq,
        )
        if seat is not None and backlog:
            opened.turn = game.reconnect_offer(seat, backlog[-1].snapshot)
        if live:
            tap = self._game_tap(game, seat, own)
            tap.streams += 1
            opened.tap = tap.id
        return opened

    def _game_tap(self, game: GameSession, seat: int | None, own: bool) -> Tap:
        return self.taps.tap(("game", game.id, seat, own), partial(_told_event, game.card, seat))

    async def subscribe_player(self, r, who: Caller, digest: str):
        principal = self.arbiter.roster.authenticate(digest)
        assert principal is not None
        if principal.admin:  # (it would follow nothing, silently)
            raise ArbiterError(
                Code.PERMISSION_DENIED,
                "the operator's token holds no seat: follow a player's or a seat's games",
            )
        key = principal.listener
        tap = self.taps.tap(("player", key), _told_note)
        notes = await self.arbiter.notices.subscribe(
            digest, tap, self.arbiter.tables.games.values()
        )
        tap.streams += 1
        return link_pb.Opened(
            tap=tap.id, backlog=[player_event(n).SerializeToString() for n in notes]
        )

    def stood_still(self, seconds: float) -> None:
        """The edge stood still for ``seconds`` until now (see Tables.stood_still)."""
        self.arbiter.tables.stood_still(seconds)

    def leave(self, tap_id: int) -> None:
        """An edge stream that followed ``tap_id`` has ended."""
        tap = self.taps.by_id.get(tap_id)
        if tap is None:
            return
        tap.streams -= 1
        last = tap.streams <= 0
        if last:
            self.taps.drop(tap)
        if tap.key[0] == "game":
            _, game_id, seat, _ = tap.key
            self.arbiter.actions.unsubscribe(game_id, tap, seat, last=last)
        elif last:
            self.arbiter.notices.unsubscribe(tap.key[1], tap)

    async def submit_play(self, r, who: Caller, digest: str, *, arrival: Arrival | None = None):
        notation, end = play_text(r)
        answer = await self.arbiter.actions.submit_play(
            digest, r.game_id, r.turn_id, notation, end, arrival
        )
        return api.SubmitPlayResponse(
            notation=answer.notation,
            end_position=answer.end_position,
            duplicate=answer.duplicate,
            used_ms=answer.used_ms,
        )

    async def resign(self, r, who: Caller, digest: str):
        result = await self.arbiter.actions.resign(digest, r.game_id)
        return api.ResignResponse(result=wire.result_pb(result))

    # -- LadderService ------------------------------------------------------------------
    async def create_ladder(self, r, who: Caller, digest: str):
        o = r.options
        given = {
            "turn_time_ms": o.turn_time_ms,
            "time_bank_ms": o.time_bank_ms,
            "max_games_per_bot": o.max_games_per_bot,
            "illegal_play_limit": o.illegal_play_limit,
            "max_games": o.max_games,
            "max_concurrent_games": o.max_concurrent_games,
            "variant": o.variant,
        }
        # A field left 0 takes LadderOptions' default (the only place defaults are set).
        options = LadderOptions(**{k: v for k, v in given.items() if v})
        ladder, created = await self.arbiter.ladders.create(digest, r.name, options)
        return ladder_pb.CreateLadderResponse(
            name=ladder.name, created=created, options=ladder_options_pb(ladder.options)
        )

    async def join_ladder(self, r, who: Caller, digest: str):
        await self.arbiter.ladders.join(digest, r.ladder, r.ready)
        return ladder_pb.JoinLadderResponse()

    async def standings(self, r, who: Caller, digest: str):
        await self.arbiter.ladders.fresh_books(r.ladder)
        return standings_pb(self.arbiter, r.ladder)

    async def crosstable(self, r, who: Caller, digest: str):
        await self.arbiter.ladders.fresh_books(r.ladder)
        return crosstable_pb(self.arbiter, r.ladder)

    # -- AdminService -------------------------------------------------------------------
    async def list_players(self, r, who: Caller, digest: str):
        self.arbiter.roster.require_operator(digest)
        await self.arbiter.owner.learn_players("1 = 1")  # (several instances: every one's)
        players = self.arbiter.roster.list_players(digest)
        return admin_pb.ListPlayersResponse(
            players=[
                admin_pb.PlayerInfo(
                    player_id=p.id, player=pb.Player(name=p.name, bot=p.bot, owner=p.owner)
                )
                for p in players
            ]
        )

    async def void_game(self, r, who: Caller, digest: str):
        game = await self.arbiter.actions.void_game(digest, r.game_id)
        return admin_pb.VoidGameResponse(status=int(game.status))

    async def archive_games(self, r, who: Caller, digest: str):
        self.arbiter.roster.require_operator(digest)  # (first: a stranger learns nothing)
        before = seconds_of(r.before, "before") if r.HasField("before") else None
        await self.arbiter.retention.archive(digest, before)
        return admin_pb.ArchiveGamesResponse(retention=await self._retention(digest))

    async def set_retention(self, r, who: Caller, digest: str):
        self.arbiter.roster.require_operator(digest)
        await self.arbiter.retention.set_keep(digest, seconds_of(r.keep, "keep"))
        return admin_pb.SetRetentionResponse(retention=await self._retention(digest))

    async def get_retention(self, r, who: Caller, digest: str):
        return admin_pb.GetRetentionResponse(retention=await self._retention(digest))

    async def _retention(self, digest: str) -> admin_pb.Retention:
        keep_s, run = await self.arbiter.retention.state(digest)
        out = admin_pb.Retention()
        if keep_s:
            out.keep.FromNanoseconds(round(keep_s * 1e9))
        if run is not None:
            out.run.running = run.finished is None
            out.run.archived, out.run.remaining, out.run.error = (
                run.archived,
                run.remaining,
                run.error,
            )
            out.run.before.FromNanoseconds(round(run.before * 1e9))
            out.run.started.FromNanoseconds(round(run.started * 1e9))
            if run.finished is not None:
                out.run.finished.FromNanoseconds(round(run.finished * 1e9))
        return out

    # -- the link's own -----------------------------------------------------------------
    async def heartbeat(self, r, who: Caller, digest: str) -> bytes:
        """A HEARTBEAT for an idle game stream: the game's state as its tap's audience
        sees it, with the latest seq the stream sent."""
        tap = self.taps.by_id.get(r.tap)
        if tap is None or tap.key[0] != "game":
            raise ArbiterError(Code.NOT_FOUND, "no such stream")
        game = await self.arbiter.tables.game(tap.key[1], read=True)
        event = Event(r.seq, EventType.HEARTBEAT, time.time(), game.told())
        return views.event_wire(game.card, event, tap.key[2])[0]

    async def index(self, r, who: Caller, digest: str):
        """The web view's front page: the games in progress here played last (then, with
        room left, the newest other instances run: their journals' last entries, read in
        one go), and the newest finished games of the catalogue."""
        arbiter = self.arbiter
        out = link_pb.IndexResponse(ladders=sorted(arbiter.ladders.by_name))
        games = arbiter.tables.played_last(r.live)
        if len(games) < r.live:
            playing, _ = arbiter.catalogue.page(pb.GAME_STATUS_IN_PROGRESS, "", r.live, "")
            elsewhere = [s for s in playing if s.game_id not in arbiter.tables.games]
            if elsewhere:
                games += await arbiter.tables.glance(elsewhere[: r.live - len(games)])
        for game in games:
            told = game.audience.events
            if told:
                board = out.live.add()
                board.state.CopyFrom(views.event_pb(game.card, told[-1]).state)
                last = next((e for e in reversed(told) if e.play is not None), None)
                if last is not None:
                    board.last.CopyFrom(views.event_pb(game.card, last).play)
        finished, _ = arbiter.catalogue.page(pb.GAME_STATUS_FINISHED, "", r.finished, "")
        out.finished.extend(finished)
        return out

    async def history(self, r, who: Caller, digest: str):
        game = await self.arbiter.tables.game(r.game_id, read=True)
        out = link_pb.HistoryResponse(state=views.state_pb(game.card, game.told(), None))
        if r.events and not 0 < game.audience.last_seq <= r.after_seq:  # (nothing new: no read)
            told = await game.audience.history()
            new = told[bisect_right(told, r.after_seq, key=lambda e: e.seq) :]
            out.events.extend(views.event_pb(game.card, e) for e in new)
        return out

    async def metrics(self, r, who: Caller, digest: str):
        self.arbiter.metrics.set_games(self.arbiter.tables.game_counts())
        return link_pb.MetricsResponse(exposition=self.arbiter.metrics.exposition())

    async def ping(self, r, who: Caller, digest: str):
        """Nothing: the core answers (the edge's probe, server.edge.main)."""
        return b""

    async def who(self, r, who: Caller, digest: str):
        """Nothing but the caller's identity (in the reply, when asked for)."""
        return b""

    async def shutdown(self, r, who: Caller, digest: str):
        """The edge is stopping: every stream ends with SERVER_SHUTDOWN, no new work.
        (Only the edge calls the link's own methods: it forwards none of a client's.)"""
        self.arbiter.shutdown()
        return b""


def seconds_of(value: Timestamp | Duration, name: str) -> float:
    """A Timestamp's (or Duration's) seconds; INVALID_ARGUMENT if it is malformed (nanos
    out of range, or of the other sign than the seconds)."""
    seconds, nanos = value.seconds, value.nanos
    if isinstance(value, Timestamp):
        bad = not 0 <= nanos <= 999_999_999
    else:
        bad = abs(nanos) > 999_999_999 or (seconds and nanos and (seconds > 0) != (nanos > 0))
    if bad:
        raise ArbiterError(Code.INVALID_ARGUMENT, f"{name}: not a valid time")
    return seconds + nanos / 1e9


def play_text(request: api.SubmitPlayRequest) -> tuple[str | None, str | None]:
    """A play's (notation, end position), one of them given; INVALID_ARGUMENT if neither
    is, or if it is too long."""
    which = request.WhichOneof("play")
    text = request.notation if which == "notation" else request.end_position
    if which is None or not text.strip():  # (not counted as an illegal play: none is given)
        raise ArbiterError(Code.INVALID_ARGUMENT, "give the play as notation or end_position")
    if len(text) > MAX_NOTATION:
        raise ArbiterError(
            Code.INVALID_ARGUMENT, f"the play is {len(text)} characters, at most {MAX_NOTATION}"
        )
    return (text, None) if which == "notation" else (None, text)


def _told_event(card, seat: int | None, event: Event) -> tuple[bytes, int, int]:
    data, offers = views.event_wire(card, event, seat)
    return data, event.snapshot.turn_id if offers else 0, event.seq


def _told_note(note: PlayerNote) -> tuple[bytes, int, int]:
    return player_event(note).SerializeToString(), 0, 0


def player_event(note: PlayerNote) -> api.PlayerEvent:
    msg = api.PlayerEvent(type=PLAYER_EVENT[note.type])
    game = note.game
    if game is not None:
        msg.game_id = game.game_id
        msg.match_id = game.match_id
        msg.color = wire.color_pb(note.color)
        msg.opponent.CopyFrom(views.player_pb(game.seats[1 - note.seat]))
    return msg
