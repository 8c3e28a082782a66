"""Game records from the arbiter: `nardy export GAME` and the ladder runner's --records."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import grpc

from nardy.client import channel as sdk_channel
from nardy.record import GameRecord, dumps, to_json
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.wire import record_of

T = TypeVar("T")

PATIENCE_S = 60.0  # how long a call refused for the caller's rate is made again


def patiently(call: Callable[[], T]) -> T:
    """``call()``, made again after a short wait while it is refused for the caller's rate
    (RESOURCE_EXHAUSTED), for a minute: a replay is charged by its events, so calls right
    after a few replays are refused until those are paid for."""
    deadline, wait = time.monotonic() + PATIENCE_S, 0.05
    while True:
        try:
            return call()
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise
            if time.monotonic() + wait > deadline:
                raise
        time.sleep(wait)
        wait = min(2 * wait, 2.0)


def game_events(stub: api_grpc.ArbiterServiceStub, game_id: str) -> list[pb.GameEvent]:
    """Every event recorded so far of a game (a spectator's view); calls refused for the
    caller's rate are made again (:func:`patiently`)."""
    last = patiently(lambda: stub.GetGame(api.GetGameRequest(game_id=game_id))).last_seq
    if not last:
        return []

    def replay() -> list[pb.GameEvent]:
        events: list[pb.GameEvent] = []
        stream = stub.SubscribeGame(
            api.SubscribeGameRequest(game_id=game_id, from_start=True), timeout=30
        )
        try:
            for ev in stream:
                if ev.type != pb.EVENT_TYPE_HEARTBEAT:
                    events.append(ev)
                if ev.seq >= last:
                    break
        finally:
            stream.cancel()
        return events

    return patiently(replay)


def fetch_record(
    stub: api_grpc.ArbiterServiceStub, game_id: str, *, guests: bool = True
) -> GameRecord:
    """A game's record, with its server seed once revealed (a duplicate pair's first game
    reveals it when its partner ends, after its own last event); ``guests``: as
    ``nardy.wire.record_of``. ValueError: no events yet."""
    events = game_events(stub, game_id)
    if not events:
        raise ValueError(f"game {game_id} has no events yet")
    request = api.GetGameRequest(game_id=game_id)
    seed = patiently(lambda: stub.GetGame(request, timeout=10)).state.server_seed
    return record_of(events, seed, guests=guests)


def export_ladder(stub, address: str, ladder: str, out: Path, *, sealed_too: bool = True) -> int:
    """Write a text record of every finished game of ``ladder`` into ``out`` (the number
    of games); a record written already is kept. ``sealed_too=False`` leaves for later a
    game whose server seed is not revealed yet (its pair's other game is still played):
    a record without it cannot be verified."""
    out.mkdir(parents=True, exist_ok=True)
    games, token = [], ""
    while True:
        request = api.ListGamesRequest(
            ladder=ladder, limit=500, status=pb.GAME_STATUS_FINISHED, page_token=token
        )
        r = patiently(lambda request=request: stub.ListGames(request))
        games.extend(r.games)
        token = r.next_page_token
        if not token:
            break
    for g in games:
        path = out / f"{g.game_id}.nrd"
        if not path.exists():
            record = fetch_record(stub, g.game_id)
            if sealed_too or record.headers.get("ServerSeed"):
                path.write_text(dumps([record]))
    return len(games)


def board_svg_of(events: list[pb.GameEvent], ply: int | None = None) -> str:
    """The board after ``ply`` plays (default: the last position), the last play ringed."""
    from nardy.svg import state_svg

    plays = [e for e in events if e.type in (pb.EVENT_TYPE_PLAY_MADE, pb.EVENT_TYPE_TURN_PASSED)]
    if ply is None or ply >= len(plays):
        return state_svg(events[-1].state, last_play=plays[-1].play if plays else None)
    if ply <= 0:
        start = next((e for e in events if e.type == pb.EVENT_TYPE_GAME_STARTED), events[0])
        return state_svg(start.state)
    return state_svg(plays[ply - 1].state, last_play=plays[ply - 1].play)


def main(args: argparse.Namespace) -> int:
    with sdk_channel(args.server) as channel:
        stub = api_grpc.ArbiterServiceStub(channel)
        try:
            if args.svg:
                events = game_events(stub, args.game)
                if not events:
                    raise ValueError(f"game {args.game} has no events yet")
                text = board_svg_of(events, args.ply) + "\n"
            else:
                record = fetch_record(stub, args.game)
                text = to_json([record]) if args.json else dumps([record])
        except grpc.RpcError as e:
            print(f"nardy export: {e.details()}", file=sys.stderr)
            return 1
        except ValueError as e:
            print(f"nardy export: {e}", file=sys.stderr)
            return 1
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0
