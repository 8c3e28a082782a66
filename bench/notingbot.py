"""An engine process that notes what the arbiter told it (bench.soak, bench.failover).

A bundled engine (``nardy engine NAME``'s) played through the SDK as any bot is, over the
Play stream or (``--unary``) SubscribeGame and SubmitPlay, which appends to a notes file,
one JSON object a line, every play acknowledged to it and every game it saw end:

    {"k": "play", "g": GAME, "turn": N, "n": NOTATION, "t": WHEN}
    {"k": "end", "g": GAME, "type": EVENT_TYPE, "winner": COLOR, "kind": KIND,
     "term": TERMINATION, "points": P, "t": WHEN}

(``t``: the wall clock, seconds.) What the benches then look for in the journal: nothing a
bot was told may be missing from it.

``python -m bench.notingbot NAME --notes FILE [--seed N] [--unary]`` with
``NARDY_SERVER`` and ``NARDY_TOKEN`` set, as ``nardy engine`` takes them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import grpc
import trio

from bench.bots import bearer
from clients.supervisor import EngineProcess
from engines.registry import make_engine, sdk_adapter
from nardy.client import END_TYPES, PLAY, UNARY, Client, PlayStream, Reconnect, serve_games
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.v1 import ladder_pb2 as lpb
from nardy.v1 import ladder_pb2_grpc as ladder_grpc

ENGINES = ("random", "greedy")  # a ladder's bots take these in turn


class Notes:
    """The notes file, a line written (and flushed) per acknowledgement or end."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def _write(self, **entry) -> None:
        entry["t"] = time.time()
        self.out.write(json.dumps(entry, separators=(",", ":")) + "\n")
        self.out.flush()

    def played(self, game_id: str, turn_id: int, answer: api.SubmitPlayResponse) -> None:
        self._write(k="play", g=game_id, turn=turn_id, n=answer.notation)

    def ended(self, game_id: str, ev: pb.GameEvent) -> None:
        r = ev.state.result
        self._write(
            k="end",
            g=game_id,
            type=ev.type,
            winner=r.winner,
            kind=r.kind,
            term=r.termination,
            points=r.points,
        )


class NotedPlayStream(PlayStream):
    """A Play stream whose acknowledgements and end are noted as they arrive."""

    def __init__(self, notes: Notes, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.notes = notes

    async def __aiter__(self):
        async for response, play in super().__aiter__():
            kind = response.WhichOneof("kind")
            if kind == "played" and play is not None:
                self.notes.played(self.game_id, play.turn_id, response.played)
            elif kind == "event" and response.event.type in END_TYPES:
                self.notes.ended(self.game_id, response.event)
            yield response, play


class NotingClient(Client):
    """The SDK's client, noting what either transport was told."""

    def __init__(self, notes: Notes, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.notes = notes

    def play_stream(
        self, game_id: str, *, client_seed: str = "", reconnect: Reconnect | None = None
    ) -> PlayStream:
        return NotedPlayStream(
            self.notes, self, game_id, client_seed=client_seed, reconnect=reconnect
        )

    async def submit(self, game_id: str, turn_id: int, **fields) -> api.SubmitPlayResponse:
        answer = await super().submit(game_id, turn_id, **fields)
        self.notes.played(game_id, turn_id, answer)
        return answer

    async def events(self, game_id: str, **options):
        async for ev in super().events(game_id, **options):
            if ev.type in END_TYPES:
                self.notes.ended(game_id, ev)
            yield ev


# -- a ladder of noting bots ----------------------------------------------------------------
def enter_bots(
    address: str, admin: str, ladder: str, options: lpb.LadderOptions, n: int
) -> list[str]:
    """Create ``ladder`` as its operator and register ``n`` bots, ready in it: their tokens."""
    with grpc.insecure_channel(address) as ch:
        arbiter, ladders = api_grpc.ArbiterServiceStub(ch), ladder_grpc.LadderServiceStub(ch)
        ladders.CreateLadder(
            lpb.CreateLadderRequest(name=ladder, options=options), metadata=bearer(admin)
        )
        tokens = []
        for i in range(n):
            name = f"{ENGINES[i % len(ENGINES)]}-{i + 1}"
            request = api.RegisterPlayerRequest(name=name, bot=True)
            token = arbiter.RegisterPlayer(request, metadata=bearer(admin)).token
            ready = lpb.JoinLadderRequest(ladder=ladder, ready=True)
            ladders.JoinLadder(ready, metadata=bearer(token))
            tokens.append(token)
    return tokens


def leave(address: str, ladder: str, tokens: list[str]) -> None:
    """Every bot stops being paired (the games they are in go on)."""
    with grpc.insecure_channel(address) as ch:
        ladders = ladder_grpc.LadderServiceStub(ch)
        for token in tokens:
            request = lpb.JoinLadderRequest(ladder=ladder, ready=False)
            ladders.JoinLadder(request, metadata=bearer(token), timeout=10)


def start_bots(work: Path, tokens: list[str], server: Callable[[int], str]) -> list[EngineProcess]:
    """A noting bot process per token (``server(i)``: the i-th bot's NARDY_SERVER), under
    the ladder runner's supervisor; engines in turn from :data:`ENGINES`, every other pair
    over the unary calls. Notes and logs: ``work/botN.notes``, ``work/botN.log``."""
    bots = []
    for i, token in enumerate(tokens):
        engine = ENGINES[i % len(ENGINES)]
        cmd = [sys.executable, "-m", "bench.notingbot", engine, "--seed", str(i)]
        cmd += ["--notes", str(work / f"bot{i + 1}.notes")]
        if i % 4 >= 2:
            cmd.append("--unary")
        env = {"NARDY_SERVER": server(i), "NARDY_TOKEN": token}
        bot = EngineProcess(f"{engine}-{i + 1}", cmd, work / f"bot{i + 1}.log", env=env)
        bot.start()
        bots.append(bot)
    return bots


def notes_of(work: Path) -> list[Path]:
    return sorted(work.glob("bot*.notes"))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.notingbot", description=__doc__)
    parser.add_argument("name", help="a bundled engine (random, greedy, ...)")
    parser.add_argument("--notes", required=True, help="the notes file (appended to)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--unary", action="store_true", help="SubscribeGame + SubmitPlay")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING,
        format=f"%(asctime)s %(levelname)s [{args.name}] %(name)s %(message)s",
    )
    engine = sdk_adapter(make_engine(args.name, seed=args.seed))
    address, token = os.environ["NARDY_SERVER"], os.environ["NARDY_TOKEN"]

    async def run() -> None:
        with open(args.notes, "a") as out:
            client = NotingClient(
                Notes(out), address, token, transport=UNARY if args.unary else PLAY
            )
            async with client:
                await serve_games(client, engine)

    try:
        trio.run(run)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
