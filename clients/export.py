"""Game records from the arbiter: `nardy export GAME` and the ladder runner's --records."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import grpc

from nardy.client import channel as sdk_channel
from nardy.record import dumps, to_json
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import arbiter_pb2_grpc as api_grpc
from nardy.v1 import game_pb2 as pb
from nardy.wire import record_of


def game_events(stub: api_grpc.ArbiterServiceStub, game_id: str) -> list[pb.GameEvent]:
    """Every event recorded so far of a game (a spectator's view)."""
    last = stub.GetGame(api.GetGameRequest(game_id=game_id)).last_seq
    events: list[pb.GameEvent] = []
    if not last:
        return events
    stream = stub.SubscribeGame(
        api.SubscribeGameRequest(game_id=game_id, from_start=True), timeout=30
    )
    for ev in stream:
        if ev.type == pb.EVENT_TYPE_HEARTBEAT:
            continue
        events.append(ev)
        if ev.seq >= last:
            break
    stream.cancel()
    return events


def export_ladder(stub, address: str, ladder: str, out: Path) -> int:
    """Write a text record of every finished game of ``ladder`` into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    games, token = [], ""
    while True:
        r = stub.ListGames(
            api.ListGamesRequest(
                ladder=ladder, limit=500, status=pb.GAME_STATUS_FINISHED, page_token=token
            )
        )
        games.extend(r.games)
        token = r.next_page_token
        if not token:
            break
    for g in games:
        path = out / f"{g.game_id}.nrd"
        if not path.exists():
            path.write_text(dumps([record_of(game_events(stub, g.game_id))]))
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
            events = game_events(stub, args.game)
            if not events:
                print(f"nardy export: game {args.game} has no events yet", file=sys.stderr)
                return 1
            record = record_of(events)
        except grpc.RpcError as e:
            print(f"nardy export: {e.details()}", file=sys.stderr)
            return 1
    if args.svg:
        text = board_svg_of(events, args.ply) + "\n"
    else:
        text = to_json([record]) if args.json else dumps([record])
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0
