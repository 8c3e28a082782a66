"""Provably fair dice: commitment first, client seeds, the reveal, and
``nardy verify`` accepting a real game and rejecting it with one die changed."""

from __future__ import annotations

import collections
import hashlib
import hmac
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from clients.export import game_events
from nardy import record
from nardy.client import Client, play_game
from nardy.dice import Dice, keyed_die
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from nardy.verify import verify
from nardy.wire import record_of
from tests.server.conftest import random_engine

ROOT = Path(__file__).resolve().parents[2]
RACE = "w/0,0,0,0,0,0,-3,-3,-3,-2,-2,-2,0,0,0,0,0,0,3,3,3,2,2,2"


def run(*args: str) -> subprocess.CompletedProcess:
    """``nardy verify ARGS`` as a process."""
    return subprocess.run(
        [sys.executable, "-m", "clients", "verify", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def reference_die(server_seed: bytes, client_seeds: list[str], k: int) -> int:
    """The generator as game.proto documents it, written again from the text."""
    msg = b"nardy-dice-v1"
    for seed in client_seeds:
        msg += len(seed.encode()).to_bytes(2, "big") + seed.encode()
    msg += k.to_bytes(8, "big")
    j = 0
    while True:
        digest = hmac.new(server_seed, msg + j.to_bytes(4, "big"), hashlib.sha256).digest()
        for b in digest:
            if b < 252:
                return b % 6 + 1
        j += 1


def test_the_generator_is_the_documented_one_and_unbiased():
    seed = bytes(range(32))
    for k in range(300):
        assert keyed_die(seed, ["alice", ""], k) == reference_die(seed, ["alice", ""], k)
    # rejection sampling really skips bytes >= 252: find dice whose first byte is rejected
    skipped = 0
    for k in range(3000):
        d = hmac.new(seed, b"nardy-dice-v1" + k.to_bytes(8, "big") + bytes(4), "sha256").digest()
        if d[0] >= 252:
            skipped += 1
            assert keyed_die(seed, [], k) == next(b for b in d if b < 252) % 6 + 1
    assert skipped > 20
    counts = collections.Counter(Dice(seed).at(k) for k in range(12_000))
    assert set(counts) == {1, 2, 3, 4, 5, 6}
    assert all(1800 < c < 2200 for c in counts.values()), counts  # ~6 sigma bounds


async def play(client: Client, **fields) -> api.CreateMatchResponse:
    r = await client.create_match(**fields)
    seats = [client.with_token(t) for t in (r.first_seat_token, r.second_seat_token)]

    async def seat(i: int) -> None:
        # join with a client seed of the seat's own, then play random legal plays
        async for _ in seats[i].events(r.game_id, client_seed=f"seat-{i}-luck"):
            break
        await play_game(seats[i], r.game_id, random_engine(i))

    async with trio.open_nursery() as n:
        n.start_soon(seat, 0)
        n.start_soon(seat, 1)
    return r


async def test_commitment_client_seeds_and_reveal(client):
    r = await play(client, start_position=RACE, options=pb.GameOptions(auto_play_forced=True))
    assert len(r.dice_commitment) == 64
    events = [ev async for ev in client.events(r.game_id, from_start=True)]
    assert all(ev.state.dice_commitment == r.dice_commitment for ev in events)
    started = next(ev for ev in events if ev.type == pb.EVENT_TYPE_GAME_STARTED)
    assert list(started.state.client_seeds) == ["seat-0-luck", "seat-1-luck"]
    assert all(not ev.state.server_seed for ev in events[:-1])  # secret while it plays
    final = events[-1]
    assert final.type == pb.EVENT_TYPE_GAME_FINISHED
    seed = bytes.fromhex(final.state.server_seed)
    assert hashlib.sha256(seed).hexdigest() == r.dice_commitment


@pytest.mark.slow
async def test_verify_accepts_a_real_game_and_rejects_one_changed_die(arbiter, client, tmp_path):
    r = await play(client, options=pb.GameOptions(auto_play_forced=True))
    ch = client.channel
    from nardy.v1 import arbiter_pb2_grpc

    stub = arbiter_pb2_grpc.ArbiterServiceStub(ch)
    events = await trio.to_thread.run_sync(game_events, stub, r.game_id)
    game = record_of(events)
    assert verify(game).fair, verify(game).message
    path = tmp_path / "game.nrd"
    path.write_text(record.dumps([game]))

    lines = path.read_text().splitlines()
    turn = next(i for i, line in enumerate(lines) if line.strip().startswith("9 "))
    n, side, dice, *play_ = lines[turn].split()
    a, b = dice.split("-")
    changed = f"{(int(a) % 6) + 1}-{b}"
    lines[turn] = lines[turn].replace(f" {dice} ", f" {changed} ", 1)
    bad = tmp_path / "changed.nrd"
    bad.write_text("\n".join(lines) + "\n")

    ok = await trio.to_thread.run_sync(run, str(path))
    assert ok.returncode == 0 and ok.stdout.startswith("fair"), ok.stdout + ok.stderr
    online = await trio.to_thread.run_sync(run, r.game_id, "--server", arbiter.address)
    assert online.returncode == 0 and online.stdout.startswith("fair"), online.stdout
    no = await trio.to_thread.run_sync(run, str(bad))
    assert no.returncode == 1, no.stdout + no.stderr
    assert no.stdout.startswith("NOT FAIR") and "turn 9" in no.stdout, no.stdout


@pytest.mark.slow
async def test_verify_says_a_game_with_chosen_dice_is_not_a_fair_dice_game(
    arbiter, client, tmp_path
):
    """Scripted dice or a public seed match what their creator chose: `nardy verify` says
    the game is not a fair-dice game (exit 3), not that its dice do not match (exit 1);
    the dice after a script are still checked."""
    from nardy.v1 import arbiter_pb2_grpc

    stub = arbiter_pb2_grpc.ArbiterServiceStub(client.channel)
    script = [6, 5, 6, 5, 4]  # an odd count: the third throw is half scripted
    options = pb.GameOptions(auto_play_forced=True)
    scripted = await play(client, start_position=RACE, dice=script, options=options)
    public = await play(client, start_position=RACE, seed=12345, options=options)

    game = record_of(await trio.to_thread.run_sync(game_events, stub, scripted.game_id))
    assert game.headers["ScriptedDice"] == "5"
    verdict = verify(game)
    assert verdict.fair and verdict.chosen, verdict.message
    assert "scripted the first 5 dice" in verdict.message
    out = await trio.to_thread.run_sync(run, scripted.game_id, "--server", arbiter.address)
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stdout.startswith("NOT A FAIR-DICE GAME") and "scripted" in out.stdout
    # a die changed after the script is still a mismatch
    path = tmp_path / "scripted.nrd"
    path.write_text(record.dumps([game]))
    lines = path.read_text().splitlines()
    turn = next(i for i, line in enumerate(lines) if line.strip().startswith("5 "))
    dice = lines[turn].split()[2]
    a, b = dice.split("-")
    lines[turn] = lines[turn].replace(f" {dice} ", f" {(int(a) % 6) + 1}-{b} ", 1)
    path.write_text("\n".join(lines) + "\n")
    out = await trio.to_thread.run_sync(run, str(path))
    assert out.returncode == 1 and out.stdout.startswith("NOT FAIR"), out.stdout + out.stderr
    assert "turn 5" in out.stdout

    game = record_of(await trio.to_thread.run_sync(game_events, stub, public.game_id))
    assert game.headers["DiceSeed"] == "public"
    out = await trio.to_thread.run_sync(run, public.game_id, "--server", arbiter.address)
    assert out.returncode == 3, out.stdout + out.stderr
    assert out.stdout.startswith("NOT A FAIR-DICE GAME") and "public seed" in out.stdout
