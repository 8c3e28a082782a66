"""The web view's analyses of ended games (``/api/game/ID/analysis`` and the replay page's
marks): each computed once, by ``nardy analyse`` in a child process, and kept.

The analysis (engines/analysis.py, the variant's judge: the network, gnubg) never runs in
the edge's event loop nor in the core: the edge writes the game's record to a child
process's stdin and reads its JSON, at a lower priority (``--nice``) and with a time
limit. It is expensive, so it is bounded for everyone together and charged to who asks:
:data:`RUNNING` analyses at once, :data:`WAITING` more queued (beyond them the request is
told to come back later), :data:`COST` requests' worth charged to the address that starts a
new one; a kept analysis costs one request. Only ended games are analysed: a game in
progress is refused (an analysis would help a player).
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections import OrderedDict
from html import escape

from nardy import Color, wire
from nardy.match import DEFAULT_VARIANT
from nardy.record import GameRecord, TurnRecord, dumps
from nardy.v1 import game_pb2 as pb
from nardy.variant import variant

log = logging.getLogger("nardy.web")

RUNNING = 1  # analyses at once (a child process each)
WAITING = 4  # analyses queued behind them; more are refused until one ends
KEPT = 256  # analyses kept (ended games never change)
COST = 50  # requests' worth charged to the address that starts a new analysis
TIME_LIMIT_S = 300.0
NICE = 10  # the child's priority below the arbiter's


class Busy(Exception):
    """Too many analyses are running or waiting: come back later."""


class Failed(Exception):
    """The analysis could not be made (its child process said why)."""


def record_text(start: pb.GameState, plays: list[pb.GameEvent]) -> str:
    """The nardy record of a game from its first state and its play events."""
    rules = variant(start.options.variant or DEFAULT_VARIANT)
    names = wire.names_of(start)
    game = GameRecord(
        headers={"Variant": rules.name, "White": names[Color.WHITE], "Black": names[Color.BLACK]},
        start=rules.parse(start.position),
        turns=[
            TurnRecord(wire.color_of(e.play.side), wire.dice_of(e.play.dice), e.play.notation)
            for e in plays
        ],
    )
    return dumps([game])


class Analyses:
    """Analyses by game id: kept ones at once, new ones from a child process each."""

    def __init__(
        self,
        *,
        running: int = RUNNING,
        waiting: int = WAITING,
        kept: int = KEPT,
        time_limit_s: float = TIME_LIMIT_S,
    ) -> None:
        self.running = running
        self.waiting = waiting
        self.kept = kept
        self.time_limit_s = time_limit_s
        self._slots = asyncio.Semaphore(running)
        self._pending: dict[str, asyncio.Task[bytes]] = {}
        self._done: OrderedDict[str, bytes] = OrderedDict()

    def kept_for(self, game_id: str) -> bytes | None:
        """The analysis of ``game_id`` if it is kept (the JSON of ``nardy analyse``)."""
        found = self._done.get(game_id)
        if found is not None:
            self._done.move_to_end(game_id)
        return found

    def pending(self, game_id: str) -> bool:
        return game_id in self._pending

    async def analysis(self, game_id: str, record: str) -> bytes:
        """The analysis of ``game_id`` (its record ``record``): kept, being made, or made
        now. :class:`Busy` when too many are under way, :class:`Failed` if it fails. A
        caller that goes away does not stop it: it is kept for the next one."""
        found = self.kept_for(game_id)
        if found is not None:
            return found
        task = self._pending.get(game_id)
        if task is None:
            if len(self._pending) >= self.running + self.waiting:
                raise Busy(f"{len(self._pending)} analyses are under way; try again later")
            task = asyncio.ensure_future(self._make(game_id, record))
            self._pending[game_id] = task
        return await asyncio.shield(task)

    async def close(self) -> None:
        """Stop the analyses under way (their child processes are killed)."""
        for task in list(self._pending.values()):
            task.cancel()
        await asyncio.gather(*self._pending.values(), return_exceptions=True)

    async def _make(self, game_id: str, record: str) -> bytes:
        try:
            async with self._slots:
                out = await self._child(record)
            self._done[game_id] = out
            while len(self._done) > self.kept:
                self._done.popitem(last=False)
            return out
        finally:
            del self._pending[game_id]

    async def _child(self, record: str) -> bytes:
        proc = await asyncio.create_subprocess_exec(
            # -P: the installed clients, never a `clients` of the working directory
            sys.executable, "-P", "-m", "clients", "analyse", "-", "--json", "--nice", str(NICE),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        try:
            out, err = await asyncio.wait_for(proc.communicate(record.encode()), self.time_limit_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise Failed(f"the analysis took more than {self.time_limit_s:.0f} s") from None
        except asyncio.CancelledError:  # the web view stops
            proc.kill()
            raise
        if proc.returncode:
            why = err.decode(errors="replace").strip().splitlines()
            log.warning("analysis failed (%s): %s", proc.returncode, why[-1:] or "")
            raise Failed(why[-1] if why else f"nardy analyse ended with {proc.returncode}")
        return out


def panel(game_id: str, ready: bool) -> str:
    """The replay page's analysis box: a link that the script turns into marks on the move
    list and each side's error rate (at once when the analysis is kept)."""
    from urllib.parse import quote

    src = f"/api/game/{quote(game_id, safe='')}/analysis"
    return (
        f'<section id="analysis" data-src="{escape(src)}" data-ready="{int(ready)}">'
        f'<a id="analyse" href="{escape(src)}">analyse this game</a> '
        '<span class="note">each play against the best play found by the strongest '
        'engine here (marks: ?! doubtful, ? bad, ?? very bad)</span><div id="analysis-out">'
        '</div></section><script src="/static/analysis.js" defer></script>'
    )


SCRIPT = """\
// The replay page's analysis: marks on the move list, each side's error rate.
(function () {
  const box = document.getElementById("analysis");
  if (!box) return;
  const out = document.getElementById("analysis-out");
  const say = function (text) { out.textContent = text; };
  async function show() {
    say("analysing...");
    let r;
    try { r = await fetch(box.dataset.src, {cache: "no-store"}); }
    catch (e) { say("the arbiter cannot be reached"); return; }
    if (!r.ok) { say((await r.text()).trim()); return; }
    const a = await r.json();
    const g = a.games[0];
    const items = document.querySelectorAll("#moves li");
    for (const p of g.plays) {
      const li = items[p.turn - 1];
      if (!li) continue;
      li.dataset.loss = p.loss;
      li.title = p.loss > 0 ? "best " + p.best + ", loss " + p.loss.toFixed(3) : "best play";
      for (const old of li.querySelectorAll(".mark")) old.remove();  // once, however often asked
      if (p.mark) {
        const m = document.createElement("span");
        m.className = "mark";
        m.textContent = " " + p.mark;
        li.appendChild(m);
      }
    }
    const lines = ["judge " + a.judge + " at " + a.ply + " ply (" + a.units + ")"];
    for (const side of ["white", "black"]) {
      const s = g.sides[side];
      lines.push(side + " " + s.name + ": error rate " + s.error_rate.toFixed(1) + " over " +
                 s.plays + " plays; ?? " + s.very_bad + ", ? " + s.bad + ", ?! " + s.doubtful);
    }
    say(lines.join("\\n"));
    out.className = "summary";
  }
  document.getElementById("analyse").addEventListener("click", function (e) {
    e.preventDefault();
    show();
  });
  if (box.dataset.ready === "1") show();
})();
"""
