"""The pages a person plays on: ``/play`` (sign in with a token; your games, your
challenges to accept or decline, a challenge of your own to make) and ``/play/game/ID``
(the board from your side, live, played by clicking checkers or typing a play; both
clocks; resign).

The pages are static: their script (``static/play.js``) keeps the token in the tab's
sessionStorage and makes every call itself, with it as ``Authorization: Bearer``, through
server.edge.web.api. The rules stay in the core: a turn's legal plays (each with its
steps) come in the game's events, and a play is built by following their steps.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path

from aiohttp import web

from nardy import Color
from nardy.variant import available, variant

STATIC = Path(__file__).with_name("static")
FILES = {"play.js": "text/javascript", "play.css": "text/css"}


def point_maps() -> str:
    """Each variant's absolute index of each side's point 1..24, as JSON: the page moves
    checkers by the steps of legal plays, given in the mover's own points."""
    maps = {}
    for name in available():
        v = variant(name)
        maps[name] = {c.name.lower(): [v.point_index(c, p) for p in range(1, 25)] for c in Color}
    return json.dumps(maps, separators=(",", ":"))


class PlayPages:
    def __init__(self) -> None:
        self._files = {name: (STATIC / name).read_text() for name in FILES}
        self._maps = point_maps()
        self._variants = "".join(
            f'<option value="{escape(name)}">{escape(name)} nardy</option>' for name in available()
        )

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/play", self.home)
        router.add_get("/play/game/{id}", self.game)
        for name in FILES:
            router.add_get(f"/static/{name}", self.static)

    async def home(self, request: web.Request) -> web.Response:
        return _html(
            "play · nardy arbiter",
            '<section id="home">'
            '<form id="signin" hidden><h2>Sign in</h2>'
            "<p>Paste your token: a player token (from <code>nardy admin register</code> or"
            " RegisterPlayer) or a seat token (from the match's creator). It stays in this"
            " tab only, and is sent only to this arbiter.</p>"
            '<input id="token" type="password" autocomplete="off" spellcheck="false"'
            ' size="50" aria-label="token">'
            ' <button id="signin-button" type="submit">Sign in</button>'
            '<p class="error" id="signin-error"></p></form>'
            '<div id="mine" hidden>'
            '<p>Signed in. <button id="signout" type="button">Sign out</button></p>'
            '<h2>Your games</h2><ul id="games"></ul>'
            '<p class="none" id="no-games">No game of yours is being played now.</p>'
            '<section id="challenges-section" hidden><h2>Challenges to you</h2>'
            '<ul id="challenges"></ul>'
            '<p class="none" id="no-challenges">Nobody has challenged you.</p></section>'
            '<section id="challenge-section" hidden><h2>Challenge a player</h2>'
            "<p>A bot answers at once if its operator lets it accept challenges; a person"
            " answers on this page. The game opens when your challenge is accepted.</p>"
            '<form id="challenge">'
            '<label>You <input id="me" required maxlength="40" autocomplete="username"'
            ' spellcheck="false" placeholder="your player name"></label> '
            '<label>Opponent <input id="opponent" required maxlength="40" autocomplete="off"'
            ' spellcheck="false" placeholder="a registered player"></label> '
            '<label>Points <input id="points" type="number" min="1" value="1"></label> '
            f'<label>Game <select id="variant">{self._variants}</select></label> '
            '<label>Seconds per turn <input id="turn-seconds" type="number" min="1"'
            ' value="120"></label> '
            '<button id="challenge-button" type="submit">Challenge</button></form>'
            '<ul id="sent"></ul><p class="error" id="challenge-error"></p></section>'
            '<p class="error" id="home-error"></p></div></section>',
        )

    async def game(self, request: web.Request) -> web.Response:
        game_id = request.match_info["id"]
        return _html(
            "game · nardy arbiter",
            f'<section id="play" data-game="{escape(game_id)}" data-points="{escape(self._maps)}">'
            '<p id="signin-needed" hidden>Sign in first: <a href="/play">play</a>.</p>'
            '<h2 id="title">game</h2>'
            '<p class="status" id="status" role="status" aria-live="polite">connecting…</p>'
            '<div class="table"><div id="board"></div><aside>'
            '<p class="clock" id="clock-black"></p><p class="clock" id="clock-white"></p>'
            '<p id="building"></p>'
            '<p><button id="send" type="button" disabled>Play</button>'
            ' <button id="undo" type="button" disabled>Undo</button></p>'
            '<form id="typed"><input id="notation" autocomplete="off" spellcheck="false"'
            ' placeholder="24/18 18/13" aria-label="play" size="18">'
            ' <button id="send-typed" type="submit">Send</button></form>'
            '<p class="message" id="message" role="status" aria-live="polite"></p>'
            '<p><button id="resign" type="button">Resign</button>'
            ' <a id="next-game" hidden>next game</a></p>'
            '<ol class="moves" id="moves"></ol></aside></div></section>',
        )

    async def static(self, request: web.Request) -> web.Response:
        name = request.path.rsplit("/", 1)[1]
        return web.Response(text=self._files[name], content_type=FILES[name])


def _html(title: str, body: str) -> web.Response:
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<title>{escape(title)}</title><link rel="stylesheet" href="/static/style.css">'
        '<link rel="stylesheet" href="/static/play.css">'
        '<script src="/static/play.js" defer></script></head><body>'
        '<header><a href="/">nardy arbiter</a> <a href="/play">play</a></header>'
        f"<main>{body}</main></body></html>"
    )
    return web.Response(text=page, content_type="text/html", headers={"Cache-Control": "no-store"})


__all__ = ["PlayPages"]
