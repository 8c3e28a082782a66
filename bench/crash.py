"""Nothing is lost when the arbiter is killed: kill -9 of the core, of the edge, and of both,
in the middle of a burst of plays.

A ``nardy serve`` process (fresh SQLite file) carries games played flat out by instant
bots in this process. Each bot follows its game over SubscribeGame (its own turns) and
plays with SubmitPlay, and survives a dead server as any bot should: it resumes its
stream after the last seq it saw and resends a play that got no answer (plays are
idempotent). Every play the server acknowledged is noted. In the middle of the burst one
of the server's processes is killed with SIGKILL:

- **core**: the edge starts a new core, which resumes every game from the journal;
- **edge**: the core dies with it (the parent-death signal: it commits what it accepted
  and stops); the bench starts ``nardy serve`` again on the same file and port;
- **both**: the core, then at once the edge; started again as above.

Then the burst goes on for a while, the bots stop, and every game is read back from a
fresh server (``SubscribeGame(from_start)``): an acknowledged play missing from its game's
record, or a play recorded twice, is a lost play (target: 0 of each). Also reported: how
long the server took to serve again after the kill.

``python -m bench crash [--quick]``
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time

import grpc

from bench.arbiter import alive, children, free_port, process
from bench.bots import ADMIN_ENV, bearer
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb

ENDED = (pb.EVENT_TYPE_GAME_FINISHED, pb.EVENT_TYPE_GAME_ABORTED)
RETRY = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN)


class Book:
    """Every play acknowledged, by game: turn -> notation."""

    def __init__(self) -> None:
        self.acked: dict[str, dict[int, str]] = {}
        self.resent = 0  # plays sent again after no answer (the server was away)
        self.stop = asyncio.Event()


async def bot(address: str, game_id: str, token: str, book: Book) -> None:
    """An instant bot that outlives the server: resumes by seq, resends unanswered plays."""
    md = bearer(token)
    seq = 0
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)
        while not book.stop.is_set():
            request = api.SubscribeGameRequest(
                game_id=game_id, after_seq=seq, filter=api.EVENT_FILTER_OWN_TURNS
            )
            try:
                async for ev in stub.SubscribeGame(request, metadata=md):
                    seq = max(seq, ev.seq)
                    st = ev.state
                    if ev.type in ENDED:
                        return
                    if not st.legal_plays or st.side_to_move != st.your_color:
                        continue
                    if book.stop.is_set():
                        return
                    await play(stub, game_id, st, md, book)
            except grpc.RpcError as e:
                if e.code() not in RETRY:
                    raise
            await asyncio.sleep(0.05)  # the server is away: try again soon


async def play(stub, game_id: str, st: pb.GameState, md, book: Book) -> None:
    request = api.SubmitPlayRequest(
        game_id=game_id, turn_id=st.turn_id, end_position=st.legal_plays[0].end_position
    )
    while True:
        try:
            answer = await stub.SubmitPlay(request, metadata=md, timeout=10)
        except grpc.RpcError as e:
            if e.code() in RETRY or e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                book.resent += 1
                await asyncio.sleep(0.05)
                continue
            return  # refused (e.g. the game ended): nothing was acknowledged
        book.acked.setdefault(game_id, {})[st.turn_id] = answer.notation
        return


async def burst(address: str, games: int, book: Book) -> None:
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)

        async def slot(i: int) -> None:
            while not book.stop.is_set():
                r = await stub.CreateMatch(
                    api.CreateMatchRequest(options=pb.GameOptions(turn_time_ms=120_000)),
                    metadata=bearer(os.environ[ADMIN_ENV]),
                )
                book.acked.setdefault(r.game_id, {})
                await asyncio.gather(
                    bot(address, r.game_id, r.first_seat_token, book),
                    bot(address, r.game_id, r.second_seat_token, book),
                )

        await asyncio.gather(*(slot(i) for i in range(games)), return_exceptions=True)


async def recorded(address: str, game_ids) -> dict[str, list[tuple[int, str]]]:
    """Every game's plays as its record has them: (turn, notation) of each PLAY_MADE."""
    out = {}
    md = bearer(os.environ[ADMIN_ENV])
    async with grpc.aio.insecure_channel(address) as ch:
        stub = api_grpc.ArbiterServiceStub(ch)
        for game_id in game_ids:
            last = (await stub.GetGame(api.GetGameRequest(game_id=game_id), metadata=md)).last_seq
            plays = []
            if last:
                request = api.SubscribeGameRequest(game_id=game_id, from_start=True)
                call = stub.SubscribeGame(request, metadata=md)
                async for ev in call:
                    if ev.type == pb.EVENT_TYPE_PLAY_MADE and not ev.play.automatic:
                        plays.append((ev.play.turn_id, ev.play.notation))
                    if ev.seq >= last:
                        call.cancel()
                        break
            out[game_id] = plays
    return out


def serve(port: int, db: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*serve_args(port, db), "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def serving(port: int, timeout: float = 60.0) -> float:
    """Seconds until the server at ``port`` answers GetGame (NOT_FOUND counts)."""
    t0 = time.monotonic()
    with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
        stub = api_grpc.ArbiterServiceStub(ch)
        while True:
            try:
                stub.GetGame(api.GetGameRequest(game_id="-"), timeout=1)
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.NOT_FOUND:
                    return time.monotonic() - t0
                if time.monotonic() - t0 > timeout:
                    raise RuntimeError("the server did not come back") from None
                time.sleep(0.01)


def one(kind: str, games: int, seconds: float) -> tuple[int, int, int, int, float]:
    """A burst with a kill of ``kind`` in its middle; (acknowledged plays, missing from
    the records, recorded twice, resent, seconds to serve again)."""
    with tempfile.TemporaryDirectory() as tmp:
        db, port = os.path.join(tmp, "crash.db"), free_port()
        server = serve(port, db)
        serving(port)
        book = Book()
        address = f"127.0.0.1:{port}"

        async def run() -> float:
            task = asyncio.create_task(burst(address, games, book))
            await asyncio.sleep(seconds / 2)
            nonlocal server
            core = children(server.pid)
            t0 = time.monotonic()
            if kind in ("core", "both"):
                for pid in core:
                    os.kill(pid, signal.SIGKILL)
            if kind in ("edge", "both"):
                server.send_signal(signal.SIGKILL)
                server.wait()
                for pid in core:  # (the core stops by itself: wait for it)
                    while alive(pid):
                        await asyncio.sleep(0.01)
                server = serve(port, db)
            await asyncio.to_thread(serving, port)
            back = time.monotonic() - t0
            await asyncio.sleep(seconds / 2)
            book.stop.set()  # (a play already sent is still answered and noted)
            await asyncio.sleep(0.5)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return back

        back = asyncio.run(run())
        server.send_signal(signal.SIGTERM)
        server.wait(30)
        with process(serve_args(port, db), port):
            found = asyncio.run(recorded(address, list(book.acked)))
    acked = sum(len(v) for v in book.acked.values())
    missing = twice = 0
    for game_id, plays in book.acked.items():
        record = found.get(game_id, [])
        turns = [t for t, _ in record]
        twice += len(turns) - len(set(turns))
        have = dict(record)
        missing += sum(1 for t, n in plays.items() if have.get(t) != n)
    return acked, missing, twice, book.resent, back


def serve_args(port: int, db: str) -> list[str]:
    args = [sys.executable, "-m", "clients", "serve", "--port", str(port), "--db", db]
    return [*args, "--streams", "100000", "--rate", "100000"]


def main(quick: bool = False) -> None:
    os.environ.setdefault(ADMIN_ENV, "nardy_" + secrets.token_urlsafe(32))
    games, seconds, rounds = (4, 4.0, 1) if quick else (8, 8.0, 3)
    print(f"kill -9 mid-burst: {games} games flat out, {seconds:.0f} s a round, {rounds} rounds")
    totals = {}
    for r in range(rounds):
        for kind in ("core", "edge", "both"):
            acked, missing, twice, resent, back = one(kind, games, seconds)
            t = totals.setdefault(kind, [0, 0, 0, []])
            t[0] += acked
            t[1] += missing
            t[2] += twice
            t[3].append(back)
            print(
                f"  round {r + 1}, kill -9 {kind:4s}: {acked} plays acknowledged, "
                f"{missing} missing from the records, {twice} recorded twice, {resent} resent "
                f"after no answer; serving again {back:.2f} s after the kill",
                flush=True,
            )
    for kind, (acked, missing, twice, backs) in totals.items():
        ok = missing == 0 and twice == 0
        print(
            f"kill -9 {kind}: {acked} acknowledged, {missing} missing, {twice} twice "
            f"(target 0 lost: {'met' if ok else 'NOT met'}); back in "
            + ", ".join(f"{b:.2f}" for b in backs)
            + " s"
        )


if __name__ == "__main__":
    main("--quick" in sys.argv)
