// Playing on the arbiter from a browser: sign in with a token, follow your games, play.
// The token stays in this tab's sessionStorage and goes only in the Authorization header
// of this page's own calls (/api/nardy.v1.ArbiterService/...). The rules stay on the
// server: a turn's legal plays, with their steps, come in the game's events, and a play is
// built by following those steps.
(function () {
  "use strict";
  const API = "/api/nardy.v1.ArbiterService/";
  const KEY = "nardy-token";
  const NAME = "nardy-name";  // the player name last challenged with, to fill the form
  const SVG = "http://www.w3.org/2000/svg";
  const COLOR = {COLOR_WHITE: "white", COLOR_BLACK: "black"};
  const OTHER = {white: "black", black: "white"};
  const NEXT_GAME_S = 10;  // a match's next game opens this long after the last ended
  const SLOW_SEND_MS = 4000;  // a play unanswered this long: say why it may be
  const LOW_CLOCK_MS = 10000;  // a running clock under this shows in red
  const $ = (id) => document.getElementById(id);
  const token = () => sessionStorage.getItem(KEY);
  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

  // -- calls ------------------------------------------------------------------------------
  function options(body, signal) {
    return {
      method: "POST",
      headers: {"Content-Type": "application/json", "Authorization": "Bearer " + token()},
      body: JSON.stringify(body || {}),
      cache: "no-store",
      signal: signal,
    };
  }

  async function refusal(response) {
    const data = await response.json().catch(() => ({}));
    const error = new Error(data.message || response.statusText || "refused");
    error.status = response.status;
    error.code = data.code || "";
    error.instance = data.instance || "";  // (several instances: the one that runs the game)
    return error;
  }

  async function call(method, body) {
    const response = await fetch(API + method, options(body));
    if (!response.ok) throw await refusal(response);
    return response.json();
  }

  // A streaming method: onOpen() once it is open, then each Server-Sent Event to
  // onEvent(kind, data) until it ends.
  async function stream(method, body, onEvent, onOpen) {
    const response = await fetch(API + method, options(body));
    if (!response.ok) throw await refusal(response);
    if (onOpen) onOpen();
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, {stream: true});
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let kind = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("data:")) data += line.slice(5).trim();
          else if (line.startsWith("event:")) kind = line.slice(6).trim();
        }
        if (data) onEvent(kind, JSON.parse(data));
      }
    }
  }

  function text(element, words, cls) {
    element.textContent = words;
    if (cls !== undefined) element.className = cls;
  }

  // -- /play: sign in, your games, your challenges, a challenge to make -------------------------
  function home() {
    const next = new URLSearchParams(location.search).get("next") || "";
    const safeNext = /^\/play\/game\/[^/]+$/.test(next) ? next : "";
    const form = $("signin");
    form.addEventListener("submit", function (e) {
      e.preventDefault();
      const value = $("token").value.trim();
      if (!value) return;
      sessionStorage.setItem(KEY, value);
      $("token").value = "";
      signedIn(safeNext);
    });
    $("signout").addEventListener("click", function () {
      sessionStorage.removeItem(KEY);
      sessionStorage.removeItem(SENT);
      location.reload();
    });
    $("challenge").addEventListener("submit", function (e) {
      e.preventDefault();
      challenge();
    });
    $("me").value = sessionStorage.getItem(NAME) || "";
    if (token()) signedIn(safeNext);
    else form.hidden = false;
  }

  function signedIn(next) {
    $("signin").hidden = true;
    $("mine").hidden = false;
    sentBefore();
    followPlayer(next);
    challenges();
  }

  function signInAgain(why) {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(SENT);
    $("mine").hidden = true;
    $("signin").hidden = false;
    text($("signin-error"), why);
  }

  async function followPlayer(next) {
    const games = new Map();
    let delay = 500;
    for (;;) {
      try {
        await stream("SubscribePlayer", {}, function (kind, ev) {
          if (kind !== "error") playerEvent(ev, games);
        }, function () {
          delay = 500;
          if (next) location.assign(next);  // (the token works)
          for (const gameId of sent.keys()) answered(gameId);  // (news missed meanwhile)
        });
      } catch (e) {
        if (e.status === 401) { signInAgain("This arbiter does not know that token."); return; }
        if (e.status >= 400 && e.status < 500 && e.status !== 429) {
          text($("home-error"), e.message);
          return;
        }
      }
      await sleep(delay);
      delay = Math.min(2 * delay, 10000);
    }
  }

  function playerEvent(ev, games) {
    const type = ev.type || "";
    if (type.endsWith("CHALLENGE")) { challengesNews(); return; }
    if (type.endsWith("GAME_OVER") && !games.has(ev.gameId) && !sent.has(ev.gameId)) {
      // a challenge to this player has gone (unless declined here: the list is asked then)
      if (!declinedHere.has(ev.matchId)) challengesNews();
      return;
    }
    if (!ev.gameId || !(type.endsWith("GAME_ASSIGNED") || type.endsWith("GAME_OVER"))) return;
    if (sent.has(ev.gameId)) answered(ev.gameId);
    let item = games.get(ev.gameId);
    if (!item) {
      item = document.createElement("li");
      item.dataset.game = ev.gameId;
      const link = document.createElement("a");
      link.href = "/play/game/" + encodeURIComponent(ev.gameId);
      const colour = COLOR[ev.color] ? " (you: " + COLOR[ev.color] + ")" : "";
      link.textContent = "game " + ev.gameId + " against " +
        ((ev.opponent && ev.opponent.name) || "?") + colour;
      item.appendChild(link);
      games.set(ev.gameId, item);
      $("games").prepend(item);
    }
    if (type.endsWith("GAME_OVER")) item.classList.add("over");
    $("no-games").hidden = [...games.values()].some((li) => !li.classList.contains("over"));
  }

  // Challenge news asks the list again: one ask at a time, and one more after it for all
  // the news that came meanwhile (a page opened on many challenges replays one news each).
  let newsAsking = false;
  let newsAgain = false;
  async function challengesNews() {
    if (newsAsking) { newsAgain = true; return; }
    newsAsking = true;
    try {
      do {
        newsAgain = false;
        await challenges();
      } while (newsAgain);
    } finally {
      newsAsking = false;
    }
  }

  // The challenges made to you; only the answer to the newest ask is shown (an older one,
  // arriving late, would bring back a declined one).
  let challengesAsked = 0;
  const declinedHere = new Set();  // match ids
  async function challenges() {
    const asked = ++challengesAsked;
    let got;
    try {
      got = await call("ListChallenges", {});
    } catch (e) {
      // (a seat token has none)
      if (asked === challengesAsked && e.status !== 403) text($("home-error"), e.message);
      return;
    }
    if (asked !== challengesAsked) return;
    $("challenges-section").hidden = false;
    $("challenge-section").hidden = false;  // (a player token: it may challenge too)
    const list = $("challenges");
    list.replaceChildren();
    const all = got.challenges || [];
    $("no-challenges").hidden = all.length > 0;
    for (const c of all) {
      const item = document.createElement("li");
      item.dataset.match = c.matchId;
      item.append("from " + ((c.challenger && c.challenger.name) || "?") + " · " +
                  terms(c.options, c.targetPoints) + " · " + houseTerms(c.options) + " ");
      item.appendChild(button("Accept", "accept", async function () {
        try {
          const r = await call("AcceptChallenge", {matchId: c.matchId});
          location.assign("/play/game/" + encodeURIComponent(r.gameId));
        } catch (e) { text($("home-error"), e.message); }
      }));
      item.appendChild(button("Decline", "decline", async function () {
        try {
          declinedHere.add(c.matchId);
          await call("DeclineChallenge", {matchId: c.matchId});
        } catch (e) { text($("home-error"), e.message); }
        challenges();
      }));
      list.appendChild(item);
    }
  }

  function terms(options, points) {
    const o = options || {};
    const seconds = Number(o.turnTimeMs || 120000) / 1000;
    const n = Number(points || 1);
    return (o.variant || "long") + " nardy · " + n + (n === 1 ? " point · " : " points · ") +
      seconds + " s per turn";
  }

  // What else a challenge sets, every term that can decide a game: shown before accepting.
  function houseTerms(options) {
    const o = options || {};
    const out = [];
    if (Number(o.timeBankMs || 0)) out.push("time bank " + Number(o.timeBankMs) / 1000 + " s");
    const limit = Number(o.illegalPlayLimit || 0);
    out.push(limit ? "lost after " + limit + " refused plays (a typo counts)" :
             "refused plays never lose");
    if (o.koks) out.push("koks counts 3");
    if (String(o.opening || "").endsWith("USE_OPENING_DICE")) out.push("opening dice are white's first roll");
    else if (String(o.opening || "").endsWith("FRESH_ROLL")) out.push("white's first roll is fresh");
    if (String(o.colours || "").endsWith("THROW_EACH_GAME")) out.push("colours thrown each game");
    if (o.autoPlayForced) out.push("forced plays made for you");
    return out.join(" · ");
  }

  // Challenge a registered player (yourself named, as the arbiter checks against your
  // token), then wait on the game for the answer: it starts once accepted, or is called off.
  async function challenge() {
    const me = $("me").value.trim(), opponent = $("opponent").value.trim();
    const points = Number($("points").value || 1);
    const options = {
      variant: $("variant").value,
      turnTimeMs: Math.round(1000 * Number($("turn-seconds").value || 120)),
    };
    text($("challenge-error"), "");
    $("challenge-button").disabled = true;
    let made;
    try {
      made = await call("CreateMatch", {
        first: {playerName: me}, second: {playerName: opponent}, targetPoints: points,
        options: options,
      });
    } catch (e) {
      text($("challenge-error"), e.message);
      return;
    } finally {
      $("challenge-button").disabled = false;
    }
    sessionStorage.setItem(NAME, me);
    waitFor(made.gameId, "to " + opponent + " · " + terms(options, points));
    answered(made.gameId);  // (its news may have come before this answer)
  }

  // The challenges this tab sent that wait for an answer: game id -> its words on the list
  // (kept in the tab's sessionStorage under SENT, with their labels, for a reload). No
  // stream is held per challenge (a browser opens few connections to one server): the
  // player stream's news about the game (GAME_ASSIGNED again once it is accepted,
  // GAME_OVER once declined or unanswered) has the page ask GetGame which it was.
  const SENT = "nardy-sent";
  const sent = new Map();

  function waitFor(gameId, label) {
    const item = document.createElement("li");
    item.dataset.game = gameId;
    item.dataset.label = label;
    const words = document.createElement("span");
    const withdraw = button("withdraw", "withdraw", async function () {
      withdraw.disabled = true;
      try {  // (the challenger may call its challenge off while it waits)
        const state = (await call("GetGame", {gameId: gameId})).state || {};
        await call("DeclineChallenge", {matchId: state.matchId});
        item.dataset.withdrawn = "1";
        answered(gameId);
      } catch (e) {
        text(words, e.message, "error");
        withdraw.disabled = false;
      }
    });
    item.append(label + ": ", words, " ", withdraw);
    $("sent").prepend(item);
    text(words, "waiting for an answer…", "pending");
    sent.set(gameId, words);
    keepSent();
  }

  function keepSent() {
    const kept = [...sent.values()].map((w) => w.parentNode.dataset)
      .map((item) => [item.game, item.label]);
    sessionStorage.setItem(SENT, JSON.stringify(kept));  // (oldest first, as sent)
  }

  function sentBefore() {  // (those a reload found; asked about when the player stream opens)
    let kept = [];
    try { kept = JSON.parse(sessionStorage.getItem(SENT) || "[]"); } catch (e) { kept = []; }
    for (const [gameId, label] of kept) {
      if (typeof gameId === "string" && typeof label === "string") waitFor(gameId, label);
    }
  }

  function told(gameId, words, kind, cls) {
    sent.delete(gameId);
    keepSent();
    text(words, kind, cls);
    const withdraw = words.parentNode.querySelector("button.withdraw");
    if (withdraw) withdraw.remove();
  }

  async function answered(gameId) {
    let state;
    try {
      state = (await call("GetGame", {gameId: gameId})).state || {};
    } catch (e) {
      const words = sent.get(gameId);
      if (!words) return;
      if (e.status >= 400 && e.status < 500 && e.status !== 429) {
        told(gameId, words, e.message, "error");
      } else {  // (a server busy or away: ask again)
        setTimeout(function () { answered(gameId); }, 2000);
      }
      return;
    }
    const words = sent.get(gameId);
    if (!words) return;  // (told meanwhile)
    const status = state.status || "";
    if (status.endsWith("ABORTED")) {
      const withdrawn = words.parentNode.dataset.withdrawn;
      told(gameId, words, withdrawn ? "withdrawn" : "declined, or not answered in time", "declined");
    } else if (!state.challengePending) {
      told(gameId, words, "accepted", "accepted");
      location.assign("/play/game/" + encodeURIComponent(gameId));
    }
  }

  function button(label, cls, onClick) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = cls;
    b.textContent = label;
    b.addEventListener("click", onClick);
    return b;
  }

  // -- /play/game/ID: the board, the clocks, building a play ----------------------------------
  const W = 40, R = 17, BAR_W = 34, EDGE = 12, TRAY = 46, NUM_H = 22, STACK = 5;
  const HALF_H = 2 * R * STACK + 8, GAP = 44;
  const BOARD_W = EDGE + 6 * W + BAR_W + 6 * W + EDGE, WIDTH = BOARD_W + TRAY;
  const HEIGHT = NUM_H + EDGE + HALF_H + GAP + HALF_H + EDGE + NUM_H;
  const TOP_Y = NUM_H + EDGE, BOTTOM_Y = TOP_Y + HALF_H + GAP + HALF_H;
  const FILL = {white: "#f7f3e8", black: "#2b2b2b"}, INK = {white: "#2b2b2b", black: "#f7f3e8"};

  const game = {
    id: "", maps: {}, state: null, me: null, lastSeq: 0, seen: new Set(),
    turn: null, made: [], selected: null, clockAt: 0, over: false,
    skew: 0,  // the browser's clock minus the server's (ms)
    advancing: false,  // the next game of the match opens soon
    typedFor: 0,  // the turn the notation box was last cleared for
  };

  function play() {
    const root = $("play");
    game.id = root.dataset.game;
    game.maps = JSON.parse(root.dataset.points);
    if (!token()) {
      $("signin-needed").hidden = false;
      $("signin-needed").querySelector("a").href =
        "/play?next=" + encodeURIComponent(location.pathname);
      text($("status"), "");
      return;
    }
    $("board").addEventListener("click", onBoardClick);
    $("undo").addEventListener("click", function () {
      if (game.made.length) game.made.pop();
      game.selected = null;
      render();
    });
    $("send").addEventListener("click", sendBuilt);
    $("typed").addEventListener("submit", function (e) {
      e.preventDefault();
      const notation = $("notation").value.trim();
      if (notation && !PLAY_TEXT.test(notation)) {  // (never sent: a refusal may count)
        say("Not a play: write its moves, e.g. 24/18 18/13, 24/13, 24/18(2), 6/off, bar/22*",
            "refused");
      } else if (notation) {
        send({notation: notation}, true);
      }
    });
    document.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && e.target === document.body) sendBuilt();
      if (e.key === "Escape") { game.selected = null; render(); }
    });
    let armed = null;
    $("resign").addEventListener("click", async function () {
      if (!armed) {
        text($("resign"), "Really resign?");
        armed = setTimeout(function () { armed = null; text($("resign"), "Resign"); }, 4000);
        return;
      }
      clearTimeout(armed);
      armed = null;
      text($("resign"), "Resign");
      try {
        await call("Resign", {gameId: game.id});
      } catch (e) { say(e.message, "refused"); }
    });
    setInterval(showClocks, 200);
    followGame();
  }

  // a seat's contribution to the dice (provably fair dice), the same on every resume
  function clientSeed(gameId) {
    const key = "nardy-seed-" + gameId;
    let seed = sessionStorage.getItem(key);
    if (!seed) {
      const bytes = crypto.getRandomValues(new Uint8Array(16));
      seed = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
      sessionStorage.setItem(key, seed);
    }
    return seed;
  }

  async function followGame() {
    let delay = 500;
    while (!game.over) {
      const request = {gameId: game.id, clientSeed: clientSeed(game.id)};
      if (game.lastSeq) request.afterSeq = String(game.lastSeq);
      else request.fromStart = true;
      try {
        await stream("SubscribeGame", request, function (kind, data) {
          if (kind === "error") { say(data.message, "refused"); return; }
          delay = 500;
          onGameEvent(data);
        });
      } catch (e) {
        if (e.status === 401) { say("This arbiter does not know your token: sign in again.", "refused"); return; }
        if (e.status >= 400 && e.status < 500 && e.status !== 429) {
          text($("status"), e.message);
          return;
        }
        if (e.instance) {  // (asked again: it may come to this instance)
          text($("status"), "Another instance of this arbiter runs this game (" + e.instance +
               "): play it on that instance's web view.");
        }
      }
      if (game.over) return;
      await sleep(delay);
      delay = Math.min(2 * delay, 10000);
    }
  }

  function onGameEvent(ev) {
    const seq = Number(ev.seq || 0);
    const type = ev.type || "";
    if (ev.play && (type.endsWith("PLAY_MADE") || type.endsWith("TURN_PASSED")) &&
        !game.seen.has(seq)) {
      game.seen.add(seq);
      addMove(ev.play);
    }
    game.lastSeq = Math.max(game.lastSeq, seq);
    if (ev.state) showState(ev.state, eventAge(ev));
  }

  // How long ago the server read an event's clocks (ms): a recorded event replayed (a page
  // opened mid-turn replays the game from its start) is as old as its time says, on the
  // server's clock; the browser's offset from it is learnt from the events made as they
  // are sent (SNAPSHOT, HEARTBEAT), whose age is the network's alone.
  function eventAge(ev) {
    const made = Date.parse(ev.time || "");
    if (isNaN(made)) return 0;
    const type = ev.type || "";
    if (type.endsWith("SNAPSHOT") || type.endsWith("HEARTBEAT") || type.endsWith("SHUTDOWN")) {
      game.skew = Date.now() - made;
      return 0;
    }
    return Math.max(0, Date.now() - made - game.skew);
  }

  function addMove(p) {
    const item = document.createElement("li");
    const side = COLOR[p.side];
    const notation = inMyPoints(p.notation || "-", side);
    item.textContent = (side === "white" ? "w" : "b") + " " + (p.dice || []).join("-") + " " + notation;
    $("moves").appendChild(item);
    const mine = side === game.me;
    const passed = !p.notation || p.notation === "-";
    if (!mine && game.me) say(passed ? "They could not move" : "They played " + notation);
    if (mine && passed) say("Your roll " + (p.dice || []).join("-") + " could not be played: the turn passes");
  }

  // a play of `side` written as the person at this page numbers the points (each side
  // numbers them from its own start; the board is drawn in the person's numbers)
  function inMyPoints(notation, side) {
    const me = game.me;
    if (!me || side === me || notation === "-") return notation;
    const theirs = map()[side], mine = map()[me];
    const point = (p) => String(mine.indexOf(theirs[p - 1]) + 1);
    return notation.split(" ").map(function (move) {
      const repeat = (move.match(/\(\d+\)$/) || [""])[0];
      return move.slice(0, move.length - repeat.length).split("/").map(function (part) {
        const hit = part.endsWith("*") ? "*" : "";
        const name = hit ? part.slice(0, -1) : part;
        return (/^\d+$/.test(name) ? point(Number(name)) : name) + hit;
      }).join("/") + repeat;
    }).join(" ");
  }

  function showState(state, age) {
    game.state = state;
    game.me = COLOR[state.yourColor] || null;
    game.clockAt = performance.now() - (age || 0);
    const status = state.status || "";
    game.over = status.endsWith("FINISHED") || status.endsWith("ABORTED");
    const turnId = Number(state.turnId || 0);
    const plays = state.legalPlays || [];
    const mine = status.endsWith("IN_PROGRESS") && game.me &&
      state.sideToMove === state.yourColor && plays.length > 0;
    if (!mine) {
      game.turn = null;
    } else if (!game.turn || game.turn.id !== turnId) {
      game.turn = {
        id: turnId,
        color: game.me,
        dice: state.dice || [],
        base: boardOf(state),
        plays: plays.map((p) => ({
          notation: p.notation || "-",
          end: p.endPosition,
          steps: (p.steps || []).map((s) => ({from: s.from || 0, to: s.to || 0, die: s.die || 0})),
        })),
        sent: false,
      };
      game.turn.orders = orders(game.turn);
      game.made = [];
      game.selected = null;
      if (game.typedFor !== turnId) {  // (a refused play's text is not the next turn's;
        $("notation").value = "";       // the same turn offered again keeps what is typed)
        game.typedFor = turnId;
      }
    }
    const white = (state.white && state.white.name) || "white";
    const black = (state.black && state.black.name) || "black";
    const m = state.match || {};
    let title = white + " (white) vs " + black + " (black) · game " + (state.gameNumber || 1);
    if (Number(m.target || 1) > 1) {  // (the colours change from game to game: by player)
      const points = {white: m.whitePoints || 0, black: m.blackPoints || 0};
      title += " · match to " + m.target + ": " + (game.me
        ? "you " + points[game.me] + ", " + (OTHER[game.me] === "white" ? white : black) + " " +
          points[OTHER[game.me]]
        : white + " " + points.white + ", " + black + " " + points.black);
    }
    text($("title"), title);
    text($("status"), statusLine(state, white, black));
    if (state.nextGameId) {
      const next = $("next-game");
      next.href = "/play/game/" + encodeURIComponent(state.nextGameId);
      next.hidden = false;
      // a game of yours that has just ended: the next one opens by itself (it is called
      // off if you do not come within its start timeout)
      if (game.me && game.over && (age || 0) < 30000 && !game.advancing) {
        game.advancing = true;
        let left = NEXT_GAME_S;
        (function tick() {
          if (left <= 0) { location.href = next.href; return; }
          text(next, "next game (opens in " + left + " s)");
          left -= 1;
          setTimeout(tick, 1000);
        })();
      }
    }
    $("resign").disabled = game.over || !game.me;
    render();
  }

  function statusLine(state, white, black) {
    const status = state.status || "";
    const names = {white: white, black: black};
    if (status.endsWith("WAITING")) {
      if (state.challengePending) return "A challenge, not yet accepted.";
      return "Waiting for both seats to come.";
    }
    if (status.endsWith("ABORTED")) return "The game was called off.";
    if (status.endsWith("FINISHED")) {
      const r = state.result || {};
      const winner = COLOR[r.winner];
      const kind = (r.kind || "").replace("RESULT_KIND_", "").toLowerCase();
      const how = (r.termination || "").replace("TERMINATION_", "").toLowerCase();
      const who = winner === game.me ? "You win" : (names[winner] || "?") + " wins";
      return who + ": " + kind + ", " + (r.points || 0) + " point" +
        (r.points === 1 ? "" : "s") + " (" + how.replace("_", " ") + ")";
    }
    const side = COLOR[state.sideToMove];
    const dice = (state.dice || []).join("-");
    if (!side) return "";
    if (side === game.me) return game.turn ? "Your turn: " + dice : "Your turn" + (dice ? ": " + dice : "");
    return (game.me ? "They are" : names[side] + " is") + " to play" + (dice ? " " + dice : "");
  }

  function boardOf(state) {
    const b = state.board || {};
    return {
      points: (b.points || []).map(Number).concat(Array(24).fill(0)).slice(0, 24),
      off: {white: b.whiteOff || 0, black: b.blackOff || 0},
      bar: {white: b.whiteBar || 0, black: b.blackBar || 0},
    };
  }

  function map() {
    const variant = (game.state && game.state.options && game.state.options.variant) || "long";
    return game.maps[variant] || game.maps.long;
  }

  // the board after the steps made so far: checkers moved, a lone opposing one hit
  function boardNow() {
    const turn = game.turn;
    if (!turn) return game.state ? boardOf(game.state) : null;
    const board = JSON.parse(JSON.stringify(turn.base));
    const index = map()[turn.color];
    const sign = turn.color === "white" ? 1 : -1;
    for (const s of game.made) {
      if (s.from === 25) board.bar[turn.color] -= 1;
      else board.points[index[s.from - 1]] -= sign;
      if (s.to === 0) { board.off[turn.color] += 1; continue; }
      const i = index[s.to - 1];
      if (board.points[i] === -sign) { board.points[i] = 0; board.bar[OTHER[turn.color]] += 1; }
      board.points[i] += sign;
    }
    return board;
  }

  // -- the legal plays, followed step by step --------------------------------------------------
  const same = (a, b) => a.from === b.from && a.to === b.to && a.die === b.die;

  // What a written play looks like (docs/PLAYING.md, "Notation"): moves of one checker
  // each, a point (or bar) then points passed (a * for a hit) to a point or off, (n) times.
  const MOVE = String.raw`(?:bar|\d{1,2})(?:/(?:\d{1,2}|off)\*?)+(?:\(\d\))?`;
  const PLAY_TEXT = new RegExp(String.raw`^${MOVE}(?:[\s,]+${MOVE})*$`, "i");

  // Each legal play's steps in the order the arbiter lists them, and, where one checker
  // moves twice with two different dice, in the other order too (24/20 20/14 for 24/18
  // 18/14) when the points between are free of the opponent's checkers and the new one
  // makes no six in a row of the mover's (the six-point rule's check, made safe): the
  // same end position.
  function orders(turn) {
    const index = map()[turn.color];
    const sign = turn.color === "white" ? 1 : -1;
    const at = (point) => turn.base.points[index[point - 1]] * sign;  // >0 mine, <0 theirs
    const out = [];
    for (const p of turn.plays) {
      out.push({play: p, steps: p.steps});
      p.steps.forEach(function (a, i) {
        const b = p.steps[i + 1];
        if (!b || a.to !== b.from || a.die === b.die || b.to === 0) return;
        const via = a.from - b.die;  // (the bar is 25)
        // both points between free of the opponent: neither order hits (short nardy), and
        // both end where the listed play does
        if (via < 1 || via > 24 || at(via) < 0 || at(a.to) < 0) return;
        if (sixInARow(at, p.steps, via)) return;
        const swapped = p.steps.slice();
        swapped.splice(i, 2, {from: a.from, to: via, die: b.die}, {from: via, to: b.to, die: a.die});
        out.push({play: p, steps: swapped});
      });
    }
    return out;
  }

  function sixInARow(at, steps, via) {
    const held = (q) => q === via || at(q) > 0 || steps.some((s) => s.to === q);
    let run = 0;
    for (let q = Math.max(1, via - 5); q <= Math.min(24, via + 5); q++) {
      run = held(q) ? run + 1 : 0;
      if (run >= 6) return true;
    }
    return false;
  }

  // the legal plays the steps made so far belong to, each with its steps still to make
  function candidates() {
    const out = [];
    for (const {play: p, steps} of game.turn.orders) {
      const rest = steps.slice();
      let fits = true;
      for (const m of game.made) {
        const i = rest.findIndex((s) => same(s, m));
        if (i < 0) { fits = false; break; }
        rest.splice(i, 1);
      }
      if (fits) out.push({play: p, rest: rest});
    }
    return out;
  }

  // the points a step can start from now: where a legal play goes on and one of the
  // mover's checkers stands (not a point a later step of it would reach first)
  function sources() {
    const board = boardNow();
    const color = game.turn.color;
    const index = map()[color];
    const sign = color === "white" ? 1 : -1;
    const mine = (from) => from === 25 ? board.bar[color] > 0 : board.points[index[from - 1]] * sign > 0;
    const out = new Set();
    for (const c of candidates()) for (const s of c.rest) if (mine(s.from)) out.add(s.from);
    return out;
  }

  // where a checker on `from` can go: each point with the fewest steps that reach it
  function targets(from) {
    const out = new Map();
    function walk(at, rest, chain) {
      rest.forEach(function (s, i) {
        if (s.from !== at) return;
        const next = chain.concat([s]);
        const known = out.get(s.to);
        if (!known || known.length > next.length) out.set(s.to, next);
        if (s.to !== 0) walk(s.to, rest.slice(0, i).concat(rest.slice(i + 1)), next);
      });
    }
    for (const c of candidates()) walk(from, c.rest, []);
    return out;
  }

  function completed() {
    const whole = candidates().find((c) => c.rest.length === 0);
    return whole ? whole.play : null;
  }

  function onBoardClick(e) {
    const turn = game.turn;
    const hit = e.target.closest("[data-point]");
    if (!turn || turn.sent || !hit) return;
    const point = Number(hit.dataset.point);
    if (game.selected !== null) {
      const chain = targets(game.selected).get(point);
      if (chain) {
        game.made.push(...chain);
        game.selected = null;
        render();
        return;
      }
    }
    game.selected = game.selected !== point && sources().has(point) ? point : null;
    render();
  }

  function sendBuilt() {
    const whole = game.turn && completed();
    if (whole) send({endPosition: whole.end}, false);
  }

  // A play is sent for its own turn: an answer still on its way for an earlier turn (the
  // stream can bring the next turn first) never holds up this one.
  async function send(play, typed) {
    const turn = game.turn;
    if (!turn) { say("It is not your turn.", "refused"); return; }
    if (turn.sent || turn.busy) return;  // (sent, or on its way: its answer will say)
    turn.busy = true;
    render();
    const slow = setTimeout(function () {  // (no answer yet: most often the browser's limit)
      if (turn.busy) {
        say("Your play has not reached the arbiter yet. Too many pages of this site may be " +
            "open: a browser opens six connections to one site, each game page holds two. " +
            "Close some tabs.", "refused");
      }
    }, SLOW_SEND_MS);
    try {
      const body = Object.assign({gameId: game.id, turnId: String(turn.id)}, play);
      const r = await call("SubmitPlay", body);
      turn.sent = true;
      if (typed && game.turn === turn) $("notation").value = "";
      if (game.turn === turn || !game.turn) say("You played " + (r.notation || "-"));
    } catch (e) {
      say("Refused: " + e.message, "refused");
    } finally {
      clearTimeout(slow);
      turn.busy = false;
      render();
    }
  }

  function say(words, cls) {
    text($("message"), words, "message" + (cls ? " " + cls : ""));
  }

  // -- drawing -------------------------------------------------------------------------------
  function el(name, attrs, parent) {
    const node = document.createElementNS(SVG, name);
    for (const k in attrs) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }

  function pointX(p) {
    const col = p >= 13 ? p - 13 : 12 - p;
    return EDGE + col * W + (col >= 6 ? BAR_W : 0);
  }

  // the centre of the n-th checker (0 = nearest the edge) on point p, or on the bar/tray
  function spot(p, n) {
    const top = p >= 13;
    const k = Math.min(n, STACK - 1);
    const y = top ? TOP_Y + R + 2 * R * k : BOTTOM_Y - R - 2 * R * k;
    return [pointX(p) + W / 2, y];
  }

  function render() {
    const state = game.state;
    const holder = $("board");
    if (!state) return;
    const board = boardNow();
    const me = game.me || "white";
    const index = map()[me];
    const turn = game.turn;
    const svg = el("svg", {
      xmlns: SVG, class: "nardy-board play", viewBox: "0 0 " + WIDTH + " " + HEIGHT,
      width: WIDTH, height: HEIGHT, role: "img", "aria-label": "the board",
    });
    svg.dataset.turn = turn ? String(turn.id) : "";
    svg.dataset.position = state.position || "";
    el("rect", {x: 0, y: NUM_H, width: BOARD_W, height: HEIGHT - 2 * NUM_H, fill: "#5a3a1c", rx: 6}, svg);
    el("rect", {x: EDGE, y: TOP_Y, width: BOARD_W - 2 * EDGE, height: BOTTOM_Y - TOP_Y, fill: "#e8d3a9"}, svg);
    const barX = EDGE + 6 * W;
    el("rect", {x: barX, y: NUM_H, width: BAR_W, height: HEIGHT - 2 * NUM_H, fill: "#5a3a1c"}, svg);
    const movable = turn && !turn.sent ? sources() : new Set();
    const reach = turn && game.selected !== null ? targets(game.selected) : new Map();
    for (let p = 1; p <= 24; p++) {
      const x = pointX(p), top = p >= 13;
      const base = top ? TOP_Y : BOTTOM_Y, tip = top ? TOP_Y + HALF_H : BOTTOM_Y - HALF_H;
      el("polygon", {
        class: "point", "data-point": p, fill: p % 2 ? "#7c4a22" : "#b5793f",
        points: x + "," + base + " " + (x + W) + "," + base + " " + (x + W / 2) + "," + tip,
      }, svg);
      el("text", {x: x + W / 2, y: top ? NUM_H - 6 : HEIGHT - 6, "text-anchor": "middle",
                  "font-size": 13, fill: "#444"}, svg).textContent = String(p);
      const count = board.points[index[p - 1]] || 0;
      const owner = count > 0 ? "white" : "black";
      const n = Math.abs(count), shown = Math.min(n, STACK);
      for (let i = 0; i < shown; i++) {
        const [cx, cy] = spot(p, i);
        const last = i === shown - 1;
        const cls = "checker " + owner + (last && movable.has(p) ? " movable" : "") +
          (last && game.selected === p ? " selected" : "");
        el("circle", {class: cls, cx: cx, cy: cy, r: R - 1, fill: FILL[owner]}, svg);
        if (last && n > STACK) {
          el("text", {x: cx, y: cy + 5, "text-anchor": "middle", "font-size": 14,
                      "font-weight": "bold", fill: INK[owner]}, svg).textContent = String(n);
        }
      }
      if (reach.has(p)) {
        const [cx, cy] = spot(p, n && owner === me ? n : 0);
        el("circle", {class: "target", "data-point": p, cx: cx, cy: cy, r: R - 3}, svg);
      }
    }
    for (const color of ["white", "black"]) {  // the bar (short nardy)
      const n = board.bar[color];
      if (!n) continue;
      const cy = color === me ? TOP_Y + HALF_H / 2 : BOTTOM_Y - HALF_H / 2;
      const cls = "checker " + color + (color === me && movable.has(25) ? " movable" : "") +
        (color === me && game.selected === 25 ? " selected" : "");
      el("circle", {class: cls, cx: barX + BAR_W / 2, cy: cy, r: R - 1, fill: FILL[color]}, svg);
      if (n > 1) {
        el("text", {x: barX + BAR_W / 2, y: cy + 5, "text-anchor": "middle", "font-size": 14,
                    fill: INK[color]}, svg).textContent = String(n);
      }
    }
    const trayX = BOARD_W + 6;
    for (const color of ["white", "black"]) {  // borne off
      const y = color === me ? BOTTOM_Y - 30 : TOP_Y + 6;
      el("rect", {x: trayX, y: y, width: TRAY - 10, height: 24, rx: 4, fill: FILL[color],
                  stroke: "#6b5b3e"}, svg);
      el("text", {class: "off " + color, x: trayX + (TRAY - 10) / 2, y: y + 17,
                  "text-anchor": "middle", "font-size": 13, fill: INK[color]},
         svg).textContent = String(board.off[color]);
    }
    if (reach.has(0)) {
      el("rect", {class: "target", "data-point": 0, x: trayX - 2, y: BOTTOM_Y - 70,
                  width: TRAY - 6, height: 66, rx: 6}, svg);
    }
    drawDice(svg, state, me, barX);
    // what a click picks: a point's half, the bar, the tray (drawn last, invisible)
    for (let p = 1; p <= 24; p++) {
      const top = p >= 13;
      el("rect", {class: "hit", "data-point": p, x: pointX(p), y: top ? TOP_Y : BOTTOM_Y - HALF_H,
                  width: W, height: HALF_H}, svg);
    }
    el("rect", {class: "hit", "data-point": 25, x: barX, y: TOP_Y, width: BAR_W, height: HALF_H}, svg);
    el("rect", {class: "hit", "data-point": 0, x: trayX - 4, y: BOTTOM_Y - HALF_H,
                width: TRAY - 2, height: HALF_H}, svg);
    holder.replaceChildren(svg);
    showBuilding();
  }

  function drawDice(svg, state, me, barX) {
    const dice = state.dice || [];
    if (!dice.length) return;
    const used = game.turn ? game.made.map((s) => s.die) : [];
    const right = COLOR[state.sideToMove] === me;
    const x0 = right ? barX + BAR_W + 3 * W - 36 : EDGE + 3 * W - 36;
    const midY = TOP_Y + HALF_H + GAP / 2;
    const all = dice.length === 2 && dice[0] === dice[1] ? [dice[0], dice[0], dice[0], dice[0]] : dice;
    all.forEach(function (d, i) {
      const u = used.indexOf(d);
      if (u >= 0) used.splice(u, 1);
      const x = x0 + i * 40 - (all.length > 2 ? 40 : 0);
      el("rect", {class: "die" + (u >= 0 ? " used" : ""), x: x, y: midY - 16, width: 32,
                  height: 32, rx: 6}, svg);
      el("text", {x: x + 16, y: midY + 7, "text-anchor": "middle", "font-size": 20,
                  "font-weight": "bold"}, svg).textContent = String(d);
    });
  }

  function showBuilding() {
    const turn = game.turn;
    const whole = turn && !turn.sent ? completed() : null;
    $("send").disabled = !whole || turn.busy;
    $("undo").disabled = !turn || turn.sent || !game.made.length;
    $("send-typed").disabled = !turn || turn.sent || turn.busy;
    let words = "";
    if (turn && !turn.sent) {
      const made = game.made.map((s) => (s.from === 25 ? "bar" : s.from) + "/" + (s.to || "off"));
      if (whole) words = "Play " + whole.notation + "? (Play, or Enter)";
      else if (made.length) words = "So far: " + made.join(" ");
      else words = "Pick a checker, then where it goes; or type the play.";
    }
    text($("building"), words);
  }

  function clock(ms) {
    const s = Math.max(0, Math.ceil(ms / 1000));
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  function showClocks() {
    const state = game.state;
    if (!state) return;
    const running = (state.status || "").endsWith("IN_PROGRESS") && (state.dice || []).length
      ? COLOR[state.sideToMove] : null;
    const passed = performance.now() - game.clockAt;
    for (const color of ["white", "black"]) {
      const c = state[color + "Clock"] || {};
      const left = Number(c.remainingMs || 0) - (color === running ? passed : 0);
      const name = (state[color] && state[color].name) || color;
      const you = color === game.me ? " (you)" : "";
      const low = color === running && left < LOW_CLOCK_MS ? " low" : "";
      text($("clock-" + color), name + you + " · " + clock(left),
           "clock" + (color === running ? " running" : "") + low);
    }
  }

  if ($("home")) home();
  if ($("play")) play();
})();
