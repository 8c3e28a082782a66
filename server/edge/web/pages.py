"""The arbiter's read-only web view and ``/metrics`` (``nardy serve --http-port``), and the
application that also serves the play pages and their calls (server.edge.web.play, .api).

An aiohttp application on the edge's asyncio loop: no HTTP is parsed here. The pages ask
the core for messages on the link (:class:`Queries`: the front page's games, a game's
state and events, a ladder's standings and crosstable, the core's metrics), as a
spectator would, and render them as HTML and SVG (:mod:`nardy.svg`).

Pages: ``/`` (games in progress with live boards, ladders, finished games),
``/game/ID`` (a live game; a finished one is a replay: ``?ply=N``, its move list, arrow
keys), ``/ladder/NAME`` (standings and crosstable). Live parts refresh themselves from
``/fragment/...`` once a second (a few lines of script; the pages work without it).
JSON for tools: ``/api/games``, ``/api/game/ID``, ``/api/ladder/NAME``, and an ended
game's analysis ``/api/game/ID/analysis`` (made once in a child process, kept, shown as
marks on the replay: :mod:`server.edge.web.analysis`). Nothing on these can change anything,
and they are rate-limited per address; what a token may do on this port is
server.edge.web.api's (limited as on the gRPC port).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property, partial
from html import escape

from aiohttp import web
from google.protobuf.json_format import MessageToDict
from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE

from nardy import Color, wire
from nardy.stats import elo_text
from nardy.svg import state_svg
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as ladder_pb
from server import link
from server.edge.callers import Networks
from server.edge.calls import Calls
from server.edge.limits import RateLimiter, descriptors
from server.edge.metrics import EdgeMetrics
from server.edge.peers import Peers
from server.edge.web.analysis import COST, Analyses, Busy, Failed, panel, record_text
from server.edge.web.analysis import SCRIPT as ANALYSIS_SCRIPT
from server.edge.web.api import MAX_BODY, PREFIX, HttpApi, client_address
from server.edge.web.connections import REQUEST_WITHIN, Connections, protocol_log
from server.edge.web.play import PlayPages
from server.errors import ArbiterError, Code
from server.link import link_pb

LADDER = "/nardy.v1.LadderService/"

log = logging.getLogger("nardy.web")

STATIC = "/static/"
LIVE_GAMES = 24  # boards on the front page
FINISHED_GAMES = 30
GAMES_KEPT = 128  # games last looked at, kept with their events
PAGES_KEPT = 8  # pages rendered from one answer kept with it
FIRST_LOOK = 100  # requests charged before a whole game is read (its events, after)
ENDED_CHECKED_S = 5.0  # an ended game's state is asked again at most this often
PLAY_EVENTS = (pb.EVENT_TYPE_PLAY_MADE, pb.EVENT_TYPE_TURN_PASSED)
ENDED = (pb.GAME_STATUS_FINISHED, pb.GAME_STATUS_ABORTED)
STATUS = {
    pb.GAME_STATUS_WAITING: "waiting",
    pb.GAME_STATUS_IN_PROGRESS: "in progress",
    pb.GAME_STATUS_FINISHED: "finished",
    pb.GAME_STATUS_ABORTED: "aborted",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


# -- queries to the core ----------------------------------------------------------------
class Queries:
    """What the pages ask the core for, on the link (anonymous, as a spectator)."""

    def __init__(self, core) -> None:
        self.core = core  # server.edge.services.Core: the link to the core as it is now

    async def _ask(self, method: str, request: bytes, answer):
        reply = await self.core.link.call(method, request, link_pb.Caller())
        if reply.code:
            code = Code.NOT_FOUND if reply.code == Code.NOT_FOUND.status else Code.UNAVAILABLE
            raise ArbiterError(code, reply.message)
        return answer.FromString(reply.body)

    async def index(self) -> link_pb.IndexResponse:
        request = link_pb.IndexRequest(live=LIVE_GAMES, finished=FINISHED_GAMES)
        return await self._ask(link.INDEX, request.SerializeToString(), link_pb.IndexResponse)

    async def game(self, game_id: str, after_seq: int = 0) -> link_pb.HistoryResponse:
        """A game's state and its events after ``after_seq``."""
        request = link_pb.HistoryRequest(game_id=game_id, events=True, after_seq=after_seq)
        return await self._ask(link.HISTORY, request.SerializeToString(), link_pb.HistoryResponse)

    async def ladder(self, name: str):
        request = ladder_pb.GetStandingsRequest(ladder=name).SerializeToString()
        standings = await self._ask(
            LADDER + "GetStandings", request, ladder_pb.GetStandingsResponse
        )
        request = ladder_pb.GetCrosstableRequest(ladder=name).SerializeToString()
        cross = await self._ask(LADDER + "GetCrosstable", request, ladder_pb.GetCrosstableResponse)
        return standings, cross

    async def metrics(self) -> bytes:
        return (await self._ask(link.METRICS, b"", link_pb.MetricsResponse)).exposition


class Fresh:
    """One answer shared by every viewer for ``fresh_s`` seconds, and one question in
    flight: a crowd on the front page asks the core once a second."""

    def __init__(self, ask, fresh_s: float = 1.0) -> None:
        self.ask = ask
        self.fresh_s = fresh_s
        self._asked = -fresh_s
        self._answer: asyncio.Future | None = None

    async def get(self):
        now = time.monotonic()
        if self._answer is None or self._asked + self.fresh_s < now:
            self._asked, self._answer = now, asyncio.ensure_future(self.ask())
            self._answer.add_done_callback(self._failed)
        return await asyncio.shield(self._answer)

    def _failed(self, answer: asyncio.Future) -> None:
        if (answer.cancelled() or answer.exception() is not None) and answer is self._answer:
            self._answer = None  # (asked again next time)


class LiveGame:
    """A game as its viewers see it: each request asks the core what changed since the
    last build (nothing, most of the time: the build and its pages are shared).
    One question is in flight at a time; the requests that come meanwhile share the next,
    asked after it, so every viewer sees at least what had happened when it asked."""

    def __init__(self, update: Callable[[Shown | None], Awaitable[Shown]]) -> None:
        self.update = update  # the last build -> the game now (WebView._update)
        self.shown: Shown | None = None
        self._asking: asyncio.Future | None = None
        self._next: asyncio.Future | None = None

    async def get(self) -> Shown:
        if self._next is None:
            self._next = asyncio.ensure_future(self._ask(self._asking))
            self._next.add_done_callback(_seen)
        return await asyncio.shield(self._next)

    async def _ask(self, before: asyncio.Future | None) -> Shown:
        if before is not None:
            await asyncio.wait([before])  # (its outcome is its own requests')
        self._asking, self._next = self._next, None
        self.shown = await self.update(self.shown)
        return self.shown


def _seen(asked: asyncio.Future) -> None:
    """Take a failed question's error as seen: the viewers who asked it may all have gone
    (it would be logged with its traceback, a line per request of a stranger's)."""
    if not asked.cancelled():
        asked.exception()


# -- the application ---------------------------------------------------------------------
@dataclass
class Replay:
    """A game's plays: the position before the first and after each."""

    start: pb.GameState
    plays: list[pb.GameEvent]


class Rendered:
    """An answer of the core's, shared by everyone viewing it, with the last pages rendered
    from it (a crowd costs one answer and one rendering)."""

    pages: OrderedDict

    def page(self, key, render):
        """What ``render()`` makes of this answer, rendered once for ``key``."""
        found = self.pages.get(key)
        if found is None:
            found = self.pages[key] = render()
            while len(self.pages) > PAGES_KEPT:
                self.pages.popitem(last=False)
        else:
            self.pages.move_to_end(key)
        return found


@dataclass
class Front(Rendered):
    """The front page's games and ladders."""

    index: link_pb.IndexResponse
    pages: OrderedDict = field(default_factory=OrderedDict)


@dataclass
class Shown(Rendered):
    """A game as the core built it (``checked``: when the core last said it was so)."""

    state: pb.GameState
    events: list[pb.GameEvent]
    checked: float
    pages: OrderedDict = field(default_factory=OrderedDict)

    @cached_property
    def replay(self) -> Replay:
        start = next((e.state for e in self.events if e.type == pb.EVENT_TYPE_GAME_STARTED), None)
        plays = [e for e in self.events if e.type in PLAY_EVENTS]
        return Replay(self.state if start is None else start, plays)

    @property
    def ended(self) -> bool:
        return self.state.status in ENDED


class WebView:
    """The web view's application; with ``calls``, also the play pages and their calls."""

    def __init__(
        self,
        core,
        metrics: EdgeMetrics,
        rate_per_s: float = 50.0,
        calls: Calls | None = None,
        trusted: Networks = (),
        peers: Peers | None = None,
    ):
        self.queries = Queries(core)
        self.metrics = metrics
        # bursts of a few finished games' events (each is charged: see _game; a long nardy
        # game has 100-300): opening one does not hold up the next pages
        self.limiter = RateLimiter(rate_per_s, 8 * rate_per_s)
        self.trusted = trusted  # reverse proxies whose X-Real-IP names the client
        self.api = (
            None if calls is None else HttpApi(calls, metrics, SECURITY_HEADERS, trusted, peers)
        )
        self._games: OrderedDict[str, LiveGame] = OrderedDict()  # the last looked at
        self.analyses = Analyses()
        self._index = Fresh(self._front)
        self.runner: web.AppRunner | None = None
        self.listener: asyncio.Server | None = None
        self.port = 0

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=MAX_BODY)
        r = app.router
        if self.api is not None:
            self.api.add_routes(r)
            PlayPages().add_routes(r)
        r.add_get("/", self.index)
        r.add_get("/game/{id}", self.game_page)
        r.add_get("/game/{id}/board.svg", self.board)
        r.add_get("/ladder/{name}", self.ladder_page)
        r.add_get("/fragment/index", self.index_fragment)
        r.add_get("/fragment/game/{id}", self.game_fragment)
        r.add_get("/fragment/ladder/{name}", self.ladder_fragment)
        r.add_get("/api/games", self.api_games)
        r.add_get("/api/game/{id}", self.api_game)
        r.add_get("/api/ladder/{name}", self.api_ladder)
        r.add_get("/api/game/{id}/analysis", self.api_analysis)
        r.add_get("/static/analysis.js", self.analysis_script)
        r.add_get("/metrics", self.metrics_page)
        r.add_get("/static/live.js", self.script)
        r.add_get("/static/style.css", self.style)
        return app

    async def start(self, host: str, port: int) -> int:
        # (a browser that goes away ends its handler at once: its streams' places freed; a
        # request's headers must come within REQUEST_WITHIN of the connection or last answer)
        self.runner = web.AppRunner(
            self.app(),
            access_log=None,
            handler_cancellation=True,
            keepalive_timeout=REQUEST_WITHIN,
            logger=protocol_log(),
        )
        await self.runner.setup()
        connections = Connections(max(16, descriptors() // 8), trusted=self.trusted)
        self.listener = await asyncio.get_running_loop().create_server(
            connections.factory(self.runner.server), host, port, reuse_address=True
        )
        self.port = self.listener.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        await self.analyses.close()
        if self.listener is not None:
            self.listener.close()
        if self.runner is not None:
            await self.runner.cleanup()

    @web.middleware
    async def _guard(self, request: web.Request, handler):
        if request.path.startswith(PREFIX):  # (limited on the caller's identity there)
            return await handler(request)
        # A page's own script and style are constant bytes: never refused, not even while
        # its visitor pays for the finished game it just opened (charged in _game).
        who = self._who(request)
        if not request.path.startswith(STATIC) and not self.limiter.allow(who):
            retry = max(1, math.ceil(self.limiter.wait(who)))
            text, headers = "too many requests; slow down\n", {"Retry-After": f"{retry}"}
            return web.Response(status=429, text=text, headers=headers)
        try:
            response = await handler(request)
        except ArbiterError as e:
            status = 404 if e.code is Code.NOT_FOUND else 503
            if request.path.startswith("/api/"):  # (JSON asked, JSON answered)
                body = {"code": e.code.name, "message": e.message}
                response = web.json_response(body, status=status)
            else:
                text = _page("nardy", f"<p>{escape(str(e))}</p>")
                response = web.Response(status=status, text=text, content_type="text/html")
        response.headers.update(SECURITY_HEADERS)
        return response

    def _who(self, request: web.Request) -> str:
        """Whose rate a request counts against: its client (an IPv6 one by its /64)."""
        return client_address(request, self.trusted)

    # -- data ----------------------------------------------------------------------------
    async def _game(self, game_id: str, who: str) -> Shown:
        """The game and its events, shared by its viewers: brought up to date at each look
        with what happened since the last (an ended game's state checked again at most
        every ENDED_CHECKED_S: its seed revealed, or the game voided). A look that reads a
        whole game from the core (the first, or one after it was let go) costs ``who`` a
        request per event: FIRST_LOOK of them before the core is asked."""
        live = self._games.get(game_id)
        first = live is None
        if live is None:
            live = self._games[game_id] = LiveGame(partial(self._update, game_id))
            while len(self._games) > GAMES_KEPT:
                self._games.popitem(last=False)
            self.limiter.charge(who, FIRST_LOOK)
        else:
            self._games.move_to_end(game_id)
            kept = live.shown
            if (
                kept is not None
                and kept.ended
                and time.monotonic() < kept.checked + ENDED_CHECKED_S
            ):
                return kept
        try:
            shown = await live.get()
        except ArbiterError:
            if self._games.get(game_id) is live:
                del self._games[game_id]
            if first:  # (no game read)
                self.limiter.charge(who, -FIRST_LOOK)
            raise
        if first:
            self.limiter.charge(who, max(0, len(shown.events) - FIRST_LOOK))
        return shown

    async def _update(self, game_id: str, before: Shown | None) -> Shown:
        """The game now: ``before`` itself, its clocks read again, when nothing else has
        changed since."""
        seen = before.events[-1].seq if before is not None and before.events else 0
        history = await self.queries.game(game_id, seen)
        now = time.monotonic()
        if (
            before is not None
            and not history.events
            and _but_clocks(history.state) == _but_clocks(before.state)
        ):
            before.state, before.checked = history.state, now
            return before
        self.metrics.game_builds.inc()
        events = [*before.events, *history.events] if before is not None else list(history.events)
        return Shown(history.state, events, now)

    async def _front(self) -> Front:
        return Front(await self.queries.index())

    async def _ladder(self, name: str):
        return await self.queries.ladder(name)

    # -- pages ---------------------------------------------------------------------------
    async def index(self, request: web.Request) -> web.Response:
        body = await self._index_body()
        return _html(_page("nardy arbiter", _live("/fragment/index", body)))

    async def index_fragment(self, request: web.Request) -> web.Response:
        return _html(await self._index_body())

    async def _index_body(self) -> str:
        front = await self._index.get()
        return front.page(("html",), lambda: _index_html(front.index))

    async def game_page(self, request: web.Request) -> web.Response:
        game_id = request.match_info["id"]
        body, title, ended = await self._game_body(game_id, _ply(request), self._who(request))
        if ended:
            return _html(_page(title, body))
        return _html(_page(title, _live(f"/fragment/game/{_q(game_id)}", body)))

    async def game_fragment(self, request: web.Request) -> web.Response:
        body, _, _ = await self._game_body(request.match_info["id"], None, self._who(request))
        return _html(body)

    async def _game_body(self, game_id: str, ply: int | None, who: str) -> tuple[str, str, bool]:
        """A game's part of its page (and its title): an ended one at ``ply`` (the last
        by default), one in progress as it is now."""
        shown = await self._game(game_id, who)
        at, analysed = None, False
        if shown.ended:
            total = len(shown.replay.plays)
            at = total if ply is None else max(0, min(ply, total))
            analysed = self.analyses.kept_for(game_id) is not None
        key = ("body", at, analysed)
        title, head, tail = shown.page(key, lambda: _game_html(game_id, shown, at, analysed))
        body = head + tail if shown.ended else head + _clocks(shown.state) + tail
        return body, title, shown.ended

    async def board(self, request: web.Request) -> web.Response:
        shown = await self._game(request.match_info["id"], self._who(request))
        plays, ply = shown.replay.plays, _ply(request)
        at = ply if ply is not None and 0 <= ply <= len(plays) else None

        def render() -> str:
            state = shown.state if at is None else plays[at - 1].state if at else shown.replay.start
            return _board(state, None)

        return web.Response(text=shown.page(("svg", at), render), content_type="image/svg+xml")

    async def ladder_page(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = await self._ladder_body(name)
        return _html(_page(f"ladder {name}", _live(f"/fragment/ladder/{_q(name)}", body)))

    async def ladder_fragment(self, request: web.Request) -> web.Response:
        return _html(await self._ladder_body(request.match_info["name"]))

    async def _ladder_body(self, name: str) -> str:
        st, cross = await self._ladder(name)
        rows = []
        first = st.rows[0].player.name if st.rows else ""
        for r in st.rows:
            elo = elo_text(r.elo.value, r.elo.low, r.elo.high, bool(r.games))
            rows.append(
                f'<tr data-player="{escape(r.player.name)}"><td>{r.rank}</td>'
                f"<td>{escape(r.player.name)}</td><td>{elo}</td>"
                f"<td>{r.skill_conservative:.2f}</td><td>{r.games}</td>"
                f"<td>{r.wins}-{r.losses}</td><td>{r.points_for}-{r.points_against}</td>"
                f"<td>{r.mars_wins}/{r.mars_losses}</td><td>{r.timeouts + r.disconnects}</td>"
                f"<td>{r.avg_move_ms:.1f}</td></tr>"
            )
        names = [r.player.name for r in st.rows]
        cells = {(c.player, c.opponent): c for c in cross.cells}
        head = "".join(f"<th>{escape(n)}</th>" for n in names)
        cross_rows = []
        for a in names:
            tds = []
            for b in names:
                c = cells.get((a, b))
                text = (
                    ""
                    if a == b
                    else "-"
                    if c is None
                    else (f"{c.wins}-{c.losses} ({c.pairs_won}/{c.pairs_split}/{c.pairs_lost})")
                )
                tds.append(f"<td>{text}</td>")
            cross_rows.append(f"<tr><th>{escape(a)}</th>{''.join(tds)}</tr>")
        return (
            f'<h2>Ladder {escape(name)}</h2><p class="status" id="ladder-summary">'
            f"{st.finished_games} games finished, {st.games_in_progress} in progress"
            + (f", {st.voided_games} voided" if st.voided_games else "")
            + "</p>"
            + '<table id="standings"><tr><th>#</th><th>player</th>'
            "<th>Elo (95%) vs its opponents</th><th>skill μ-3σ</th><th>games</th>"
            "<th>W-L</th><th>points</th><th>mars W/L</th><th>timeouts</th><th>ms/move</th></tr>"
            + "".join(rows)
            + "</table>"
            + (
                '<p class="note">Elo: each player\'s duplicate-pair score against the '
                "opponents it met (0 = an even score), with its 95% interval; ranked by "
                f"skill (OpenSkill μ-3σ); leader {escape(first)}.</p>"
                if first
                else ""
            )
            + '<h3>Crosstable: wins-losses (pairs won/split/lost)</h3><table id="crosstable">'
            f"<tr><th></th>{head}</tr>{''.join(cross_rows)}</table>"
        )

    # -- JSON and metrics ----------------------------------------------------------------
    async def api_games(self, request: web.Request) -> web.Response:
        front = await self._index.get()

        def render() -> str:
            index = front.index
            return json.dumps(
                {
                    "in_progress": [MessageToDict(board.state) for board in index.live],
                    "finished": [MessageToDict(g) for g in index.finished],
                    "ladders": list(index.ladders),
                }
            )

        return web.Response(text=front.page(("json",), render), content_type="application/json")

    async def api_game(self, request: web.Request) -> web.Response:
        shown = await self._game(request.match_info["id"], self._who(request))

        def plays() -> str:
            return json.dumps([MessageToDict(e.play) for e in shown.replay.plays])

        state = json.dumps(MessageToDict(shown.state))  # (its clocks as they are now)
        body = f'{{"state": {state}, "plays": {shown.page(("plays",), plays)}}}'
        return web.Response(text=body, content_type="application/json")

    async def api_ladder(self, request: web.Request) -> web.Response:
        st, cross = await self._ladder(request.match_info["name"])
        return web.json_response(
            {"standings": MessageToDict(st), "crosstable": MessageToDict(cross)}
        )

    async def api_analysis(self, request: web.Request) -> web.Response:
        """An ended game's analysis (server/edge/web/analysis.py): kept, or made in a child
        process (charged to the caller), never for a game in progress."""
        game_id, who = request.match_info["id"], self._who(request)
        found = self.analyses.kept_for(game_id)
        if found is None:
            shown = await self._game(game_id, who)
            if not shown.ended:
                return web.Response(status=409, text="the game is not over: no analysis yet\n")
            if not self.analyses.pending(game_id):
                self.limiter.charge(who, COST)
            replay = shown.replay
            try:
                found = await self.analyses.analysis(
                    game_id, record_text(replay.start, replay.plays)
                )
            except Busy as e:
                return web.Response(status=503, text=f"{e}\n", headers={"Retry-After": "30"})
            except Failed as e:
                return web.Response(status=500, text=f"no analysis: {e}\n")
        return web.Response(body=found, content_type="application/json")

    async def analysis_script(self, request: web.Request) -> web.Response:
        return web.Response(text=ANALYSIS_SCRIPT, content_type="text/javascript")

    async def metrics_page(self, request: web.Request) -> web.Response:
        body = await self.queries.metrics() + self.metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})

    async def script(self, request: web.Request) -> web.Response:
        return web.Response(text=SCRIPT, content_type="text/javascript")

    async def style(self, request: web.Request) -> web.Response:
        return web.Response(text=STYLE, content_type="text/css")


# -- rendering ---------------------------------------------------------------------------
def _q(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _ply(request: web.Request) -> int | None:
    try:
        return int(request.query["ply"])
    except (KeyError, ValueError):
        return None


def _html(text: str) -> web.Response:
    return web.Response(text=text, content_type="text/html")


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)}</title><link rel="stylesheet" href="/static/style.css">'
        '<script src="/static/live.js" defer></script></head><body>'
        '<header><a href="/">nardy arbiter</a> <span>read-only view</span>'
        ' <a href="/play">play</a></header>'
        f"<main>{body}</main></body></html>"
    )


def _live(src: str, body: str) -> str:
    return f'<div id="live" data-fragment="{escape(src)}">{body}</div>'


def _board(state: pb.GameState, last: pb.PlayRecord | None, *, ply: int | None = None) -> str:
    attrs = {
        "game": state.game_id,
        "turn": str(state.turn_id),
        "position": state.position,
        "status": STATUS.get(state.status, ""),
    }
    if ply is not None:
        attrs["ply"] = str(ply)
    return state_svg(state, perspective=Color.WHITE, last_play=last, attrs=attrs)


def _players(state) -> str:
    return escape(" – ".join(wire.names_of(state).values()))


def _score(state: pb.GameState) -> str:
    m = state.match
    if m.target <= 1:
        return ""
    return f" · match to {m.target}: {m.white_points}-{m.black_points}"


def _result(r: pb.GameResult) -> str:
    if not r.winner:
        return ""
    who = wire.color_name(r.winner)
    how = wire.termination_name(r.termination)
    return f"{who} wins by {wire.kind_name(r.kind)} (+{r.points}, {how})"


def _status(state: pb.GameState) -> str:
    if state.status == pb.GAME_STATUS_FINISHED:
        return escape(_result(state.result)) + _unrated(state)
    if state.status == pb.GAME_STATUS_IN_PROGRESS:
        side = "white" if state.side_to_move == pb.COLOR_WHITE else "black"
        dice = "-".join(map(str, state.dice))
        return f"{side} to play" + (f" {dice}" if dice else "")
    return STATUS.get(state.status, "")


def _unrated(game: pb.GameState | api.GameSummary) -> str:
    """What a result that counts nowhere says of itself: open seats take any name, and a
    set-up game any dice, so such a result is nobody's record."""
    if game.rated:
        return ""
    return " · not rated (set up)" if game.seeded else " · not rated (open seats)"


def _clock(ms: int) -> str:
    s = (ms + 999) // 1000
    return f"{s // 60}:{s % 60:02d}"


def _clocks(state: pb.GameState) -> str:
    return (
        f"clocks: white {_clock(state.white_clock.remaining_ms)}, "
        f"black {_clock(state.black_clock.remaining_ms)}"
    )


def _index_html(index: link_pb.IndexResponse) -> str:
    """The front page's games in progress (their boards), ladders and finished games."""
    live = [(board.state, board.last if board.HasField("last") else None) for board in index.live]
    finished, ladders = index.finished, index.ladders
    out = ["<h2>Games in progress</h2>"]
    if not live:
        out.append('<p class="none">No game is being played now.</p>')
    out.append('<div class="boards">')
    for state, last in live:
        out.append(
            f'<a class="game" href="/game/{_q(state.game_id)}">'
            f"{_board(state, last)}<span>{_players(state)} · game {state.game_number}"
            f"{_score(state)}</span></a>"
        )
    out.append("</div><h2>Ladders</h2>")
    if ladders:
        out.append("<ul>")
        out += [f'<li><a href="/ladder/{_q(n)}">{escape(n)}</a></li>' for n in ladders]
        out.append("</ul>")
    else:
        out.append('<p class="none">No ladder on this arbiter.</p>')
    out.append("<h2>Finished games</h2>")
    if finished:
        out.append(
            '<table class="games"><tr><th>game</th><th>white</th><th>black</th><th>result</th></tr>'
        )
        for g in finished:
            out.append(
                f'<tr><td><a href="/game/{_q(g.game_id)}">{escape(g.game_id)}</a></td>'
                f"<td>{escape(wire.player_name(g.white, ''))}</td>"
                f"<td>{escape(wire.player_name(g.black, ''))}</td>"
                f"<td>{_result(g.result)}{_unrated(g)}</td></tr>"
            )
        out.append("</table>")
    else:
        out.append('<p class="none">None yet.</p>')
    return "".join(out)


def _game_html(game_id: str, shown: Shown, at: int | None, analysed: bool) -> tuple[str, ...]:
    """A game's title and its part of its page, before and after its clocks: ended, at
    play ``at`` (a replay: no clocks); in progress (``at`` None), as it is now."""
    state, replay = shown.state, shown.replay
    plays = replay.plays
    players = state.white, state.black
    if not any(p.name for p in players):  # colours not yet known (not started): the seats'
        players = state.first_player, state.second_player
    title = f"{wire.player_name(players[0], 'white')} vs {wire.player_name(players[1], 'black')}"
    head = f"<h2>{escape(title)} · game {state.game_number}{_score(state)}</h2>"
    if at is None:
        last = plays[-1].play if plays else None
        before = f'{head}<p class="status">{_status(state)} · '
        return title, before, f"</p>{_board(state, last)}{_move_list(None, plays, len(plays))}"
    if at == 0:
        board = _board(replay.start, None, ply=0)
    else:
        ev = plays[at - 1]
        board = _board(state if at == len(plays) else ev.state, ev.play, ply=at)
    out = [head, f'<p class="status">{_status(state)}</p>', _nav(game_id, at, len(plays))]
    out += [board, _move_list(game_id, plays, at)]
    if plays:  # (a game that never started has nothing to analyse)
        out.append(panel(game_id, analysed))
    return title, "".join(out), ""


def _but_clocks(state: pb.GameState) -> pb.GameState:
    """``state`` without its clocks (read anew at each look at a game in progress)."""
    other = pb.GameState()
    other.CopyFrom(state)
    other.ClearField("white_clock")
    other.ClearField("black_clock")
    return other


def _nav(game_id: str, shown: int, total: int) -> str:
    base = f"/game/{_q(game_id)}?ply="
    links = [
        ("first", 0),
        ("previous", max(0, shown - 1)),
        ("next", min(total, shown + 1)),
        ("last", total),
    ]
    parts = [f'<a id="nav-{name}" href="{base}{n}">{name}</a>' for name, n in links]
    return (
        f'<nav class="replay" data-ply="{shown}" data-total="{total}">'
        + " ".join(parts)
        + (f" · position after ply {shown} of {total}</nav>")
    )


def _move_list(game_id: str | None, plays: list[pb.GameEvent], shown: int) -> str:
    out = ['<ol class="moves" id="moves">']
    for i, ev in enumerate(plays, 1):
        p = ev.play
        side = "w" if p.side == pb.COLOR_WHITE else "b"
        text = f"{side} {p.dice[0]}-{p.dice[1]} {escape(p.notation)}"
        cls = ' class="current"' if i == shown else ""
        if game_id is not None:
            text = f'<a href="/game/{_q(game_id)}?ply={i}">{text}</a>'
        out.append(f"<li{cls}>{text}</li>")
    out.append("</ol>")
    return "".join(out)


SCRIPT = """\
// Live parts of the page refresh themselves once a second; arrow keys step a replay.
(function () {
  const live = document.getElementById("live");
  if (live) {
    const src = live.dataset.fragment;
    let busy = false, last = null;
    setInterval(async function () {
      if (busy || document.hidden) return;
      busy = true;
      try {
        const r = await fetch(src, {cache: "no-store"});
        if (r.ok) {
          const html = await r.text();
          if (last !== null && html !== last) live.innerHTML = html;
          last = html;
        }
      } catch (e) { /* the arbiter is away: try again */ }
      busy = false;
    }, 1000);
  }
  document.addEventListener("keydown", function (e) {
    const id = {ArrowLeft: "nav-previous", ArrowRight: "nav-next", Home: "nav-first",
                End: "nav-last"}[e.key];
    const a = id && document.getElementById(id);
    if (a) { window.location = a.href; }
  });
})();
"""

STYLE = """\
body { font-family: system-ui, sans-serif; margin: 0; background: #faf7f0; color: #222; }
header { background: #3b2a14; color: #f7f3e8; padding: .6em 1em; }
header a { color: #fff; font-weight: bold; text-decoration: none; }
header span { opacity: .7; margin-left: 1em; font-size: .9em; }
main { padding: 1em; max-width: 1100px; }
.boards { display: flex; flex-wrap: wrap; gap: 1em; }
a.game { display: flex; flex-direction: column; color: inherit; text-decoration: none; }
a.game svg { width: 300px; height: auto; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { border: 1px solid #cbb; padding: .25em .6em; text-align: right; }
td:nth-child(2), th:first-child { text-align: left; }
ol.moves { columns: 3; font-family: ui-monospace, monospace; font-size: .9em; }
ol.moves li { break-inside: avoid; }
ol.moves li.current { background: #d8f5dc; font-weight: bold; }
.none, .note { color: #777; }
nav.replay a { margin-right: .5em; }
#moves .mark { color: #b00; font-weight: bold; }
#analysis-out.summary { white-space: pre-line; margin: .5em 0; }
"""


__all__ = ["WebView"]
