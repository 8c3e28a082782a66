#!/usr/bin/env python3
"""A nardy bot written by a stranger from the public contract alone.

It was written from `proto/nardy/v1/*.proto`, `docs/PROTOCOL.md`, `docs/RULES.md` and the
README's bot sections, without the project's SDK, server or engines, and it needs only
`grpcio`, `grpcio-tools` and `protobuf`: the stubs are generated from the .proto files into
a temporary directory each time it starts (nothing generated is kept).

Besides playing, it checks the contract as it goes: it computes every turn's legal plays
itself from the position text and the dice (RULES.md) and compares them with the server's
`legal_plays`, submits some plays in its own notation, recomputes every die from the
revealed server seed (provably fair dice), and tries the refusals, the resume after a
dropped stream and the spectator's view. Any difference is a gap in the contract (or a
server bug) and makes it exit with status 1.

Two ways to run it:

  engine   NARDY_SERVER=host:port NARDY_TOKEN=... stranger_bot.py
           An engine as launchers start it (`nardy ladder`, `nardy check-engine`): follows
           the player stream and plays every game it is seated in, for ever.
  match    stranger_bot.py match --server host:port [--variant short] [--points 3]
           Creates a match (two open seats, or with --registered a challenge between two
           newly registered players), plays both seats and watches as a spectator, then
           prints what it checked. Exit status 0 when every check held.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import importlib
import os
import queue
import random
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc

HERE = Path(__file__).resolve().parent
DEFAULT_PROTO_DIR = HERE.parent / "proto"
TRANSIENT = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
}

pb: Any = SimpleNamespace()  # filled by load_stubs: game, arbiter, arbiter_grpc


def load_stubs(proto_dir: Path) -> None:
    """Generate the Python stubs from the .proto files into a temporary directory and import
    them (package `nardy.v1`, placed first on sys.path)."""
    from grpc_tools import protoc

    out = Path(tempfile.mkdtemp(prefix="stranger-stubs-"))
    protos = sorted(
        str(p.relative_to(proto_dir)) for p in (proto_dir / "nardy" / "v1").glob("*.proto")
    )
    include = str(Path(protoc.__file__).parent / "_proto")  # google/protobuf/timestamp.proto
    args = [
        "protoc",
        f"-I{proto_dir}",
        f"-I{include}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
    ]
    if protoc.main(args + protos) != 0:
        sys.exit(f"protoc failed on {proto_dir}")
    # Regular packages, so that another `nardy` package installed elsewhere cannot shadow them.
    (out / "nardy" / "__init__.py").touch()
    (out / "nardy" / "v1" / "__init__.py").touch()
    sys.path.insert(0, str(out))
    pb.game = importlib.import_module("nardy.v1.game_pb2")
    pb.arbiter = importlib.import_module("nardy.v1.arbiter_pb2")
    pb.arbiter_grpc = importlib.import_module("nardy.v1.arbiter_pb2_grpc")
    shutil.rmtree(out, ignore_errors=True)  # imported: the files are no longer needed


# ---------------------------------------------------------------------------------------
# The rules, as RULES.md states them, in the mover's own points 24..1 (0 = off, 25 = bar).


@dataclass(frozen=True)
class Side:
    """One side's checkers seen by the mover: counts on the mover's points 1..24 (index 0
    unused), plus the bar (short nardy)."""

    pts: tuple[int, ...]
    bar: int = 0

    def off(self) -> int:
        return 15 - sum(self.pts) - self.bar


def abs_index(variant: str, white: bool, p: int) -> int:
    """The absolute index a (0..23) of a side's own point p (RULES.md §1, §9)."""
    if white:
        return 24 - p
    return (36 - p) % 24 if variant == "long" else p - 1


def parse_position(text: str, variant: str) -> tuple[str, list[int], tuple[int, int]]:
    """`<side>/<c0>,...,<c23>[/<white bar>,<black bar>]` -> side, counts, bars."""
    parts = text.split("/")
    side, counts = parts[0], [int(x) for x in parts[1].split(",")]
    assert side in ("w", "b") and len(counts) == 24, text
    bars = (0, 0)
    if variant == "short":
        assert len(parts) == 3, f"short position text without the bar: {text}"
        w, b = parts[2].split(",")
        bars = (int(w), int(b))
    else:
        assert len(parts) == 2, f"long position text with a third part: {text}"
    return side, counts, bars


def mover_view(text: str, variant: str) -> tuple[bool, Side, Side]:
    """The mover's and the opponent's checkers, both on the mover's points."""
    side, counts, bars = parse_position(text, variant)
    white = side == "w"
    mine, opp = [0] * 25, [0] * 25
    for p in range(1, 25):
        c = counts[abs_index(variant, white, p)]
        if white:
            mine[p], opp[p] = max(c, 0), max(-c, 0)
        else:
            mine[p], opp[p] = max(-c, 0), max(c, 0)
    my_bar, opp_bar = (bars[0], bars[1]) if white else (bars[1], bars[0])
    return white, Side(tuple(mine), my_bar), Side(tuple(opp), opp_bar)


def position_text(variant: str, white_moved: bool, mine: Side, opp: Side) -> str:
    """The position after the mover's play, the opponent to move."""
    counts = [0] * 24
    for p in range(1, 25):
        a = abs_index(variant, white_moved, p)
        sign = 1 if white_moved else -1
        counts[a] += sign * mine.pts[p] - sign * opp.pts[p]
    text = ("b/" if white_moved else "w/") + ",".join(str(c) for c in counts)
    if variant == "short":
        wbar, bbar = (mine.bar, opp.bar) if white_moved else (opp.bar, mine.bar)
        text += f"/{wbar},{bbar}"
    return text


# Along the opponent's path, in the mover's points: its head (the mover's 12) down to the
# mover's 1, then the mover's 24 down to 13 (RULES.md §3.5: no run across that seam).
OPPONENT_PATH = list(range(12, 0, -1)) + list(range(24, 12, -1))


def six_point_ok(mine: Side, opp: Side) -> bool:
    """RULES.md §3.5: no six consecutive points of the mover (along the opponent's path)
    without an opposing checker ahead of the run (a borne-off one counts)."""
    if opp.off() > 0:
        return True
    held = [mine.pts[p] > 0 for p in OPPONENT_PATH]
    opp_at = [opp.pts[p] > 0 for p in OPPONENT_PATH]
    runs = (i for i in range(24 - 5) if all(held[i : i + 6]))
    return all(any(opp_at[i + 6 :]) for i in runs)


def step(variant: str, mine: Side, opp: Side, p: int, d: int) -> tuple[Side, Side, str] | None:
    """Move one checker of the mover from p (25: the bar) by d; None if illegal.
    Returns the new sides and the step's notation."""
    pts, bar = list(mine.pts), mine.bar
    if p == 25:
        if bar == 0:
            return None
        bar -= 1
    else:
        if bar > 0 or pts[p] == 0:  # short nardy: the bar first
            return None
        pts[p] -= 1
    t = p - d
    opts, obar, hit = list(opp.pts), opp.bar, False
    if t >= 1:
        if variant == "long" and opts[t] > 0:
            return None
        if variant == "short" and opts[t] >= 2:
            return None
        if opts[t] == 1:  # short nardy: a blot is hit
            opts[t], obar, hit = 0, obar + 1, True
        pts[t] += 1
    else:  # bearing off (RULES.md §4)
        if bar > 0 or any(pts[q] for q in range(7, 25)) or mine.pts[p] == 0:
            return None
        if p != d and any(pts[q] for q in range(p + 1, 7)):
            return None
    src = "bar" if p == 25 else str(p)
    dst = "off" if t < 1 else str(t)
    return Side(tuple(pts), bar), Side(tuple(opts), obar), f"{src}/{dst}{'*' if hit else ''}"


@dataclass
class MyPlay:
    notation: str
    dice_used: tuple[int, ...]


def legal_plays(text: str, dice: list[int], variant: str) -> dict[str, MyPlay]:
    """Every legal end position (text, opponent to move) of the turn, with one notation."""
    white, mine0, opp0 = mover_view(text, variant)
    d1, d2 = dice
    double = d1 == d2
    orders = [(d1,) * 4] if double else [(d1, d2), (d2, d1)]
    total = len(orders[0])
    head_limit = 1
    if variant == "long" and double and d1 in (3, 4, 6) and mine0.pts[24] == 15:
        head_limit = 2  # RULES.md §3.4: the first-turn exception
    leaves: dict[str, tuple[int, MyPlay]] = {}
    seen: set[Any] = set()

    def dfs(
        mine: Side,
        opp: Side,
        rest: tuple[int, ...],
        used: tuple[int, ...],
        heads: int,
        steps: list[str],
    ) -> None:
        key = (mine, opp, rest, heads)
        if key in seen:
            return
        seen.add(key)
        n = total if mine.off() == 15 else len(used)  # ending the game uses every die
        end = position_text(variant, white, mine, opp)
        if end not in leaves or leaves[end][0] < n:
            leaves[end] = (n, MyPlay(" ".join(steps) or "-", used))
        if not rest or mine.off() == 15:
            return
        d = rest[0]
        for p in range(25, 0, -1):
            if variant == "long" and p == 24 and heads >= head_limit:
                continue
            moved = step(variant, mine, opp, p, d)
            if moved is None:
                continue
            m2, o2, note = moved
            if (
                variant == "long" and p - d >= 1 and not six_point_ok(m2, o2)
            ):  # bearing off never makes a run
                continue
            dfs(
                m2,
                o2,
                rest[1:],
                used + (d,),
                heads + (p == 24 and variant == "long"),
                steps + [note],
            )

    for order in orders:
        dfs(mine0, opp0, order, (), 0, [])
    most = max(n for n, _ in leaves.values())
    plays = {end: play for end, (n, play) in leaves.items() if n == most}
    if most == 1 and not double:  # RULES.md §3.6: one die only: the larger if it can be
        larger = {end: pl for end, pl in plays.items() if pl.dice_used == (max(dice),)}
        plays = larger or plays
    return plays


# ---------------------------------------------------------------------------------------
# Provably fair dice (game.proto, GameState.dice_commitment).


def fair_dice(server_seed_hex: str, client_seeds: list[str]) -> Iterator[int]:
    key = bytes.fromhex(server_seed_hex)
    prefix = b"nardy-dice-v1"
    for s in client_seeds:
        raw = s.encode()
        prefix += len(raw).to_bytes(2, "big") + raw
    k = 0
    while True:
        j = 0
        while True:
            d = hmac.new(
                key, prefix + k.to_bytes(8, "big") + j.to_bytes(4, "big"), hashlib.sha256
            ).digest()
            good = [b for b in d if b < 252]
            if good:
                yield 1 + good[0] % 6
                break
            j += 1
        k += 1


def seeded_server_seed(seed: int, game_number: int) -> str:
    """CreateMatchRequest.seed: the server seed of game n is derived from the public seed."""
    return hashlib.sha256(
        b"nardy-seed" + seed.to_bytes(8, "big") + game_number.to_bytes(4, "big")
    ).hexdigest()


# ---------------------------------------------------------------------------------------
# Checks: everything the stranger expects from the contract.


class ContractError(AssertionError):
    pass


@dataclass
class Report:
    checks: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    verbose: bool = False
    strict: bool = True  # an engine (not strict) logs a broken expectation and plays on

    def ok(self, what: str, cond: bool, detail: str = "") -> None:
        if not cond:
            if self.strict:
                raise ContractError(f"{what}: {detail}")
            print(f"contract surprise: {what}: {detail}", file=sys.stderr, flush=True)
            return
        with self.lock:
            self.checks[what] = self.checks.get(what, 0) + 1

    def refused(self, what: str, expected: grpc.StatusCode, call: Callable[[], Any]) -> None:
        """`call` is refused with the status code `expected`."""
        code = code_of(call)
        self.ok(what, code == expected, str(code))

    def log(self, msg: str) -> None:
        if self.verbose:
            print(msg, file=sys.stderr, flush=True)


def code_of(call: Callable[[], Any]) -> grpc.StatusCode | None:
    try:
        call()
    except grpc.RpcError as e:
        return e.code()
    return None


def with_retry(call: Callable[[], Any], until: float | None = None) -> Any:
    """Retry the transient codes with backoff, as PROTOCOL.md says (plays are idempotent),
    until the monotonic time `until` (default: 10 s from now); then raise the last error."""
    until = time.monotonic() + 10 if until is None else until
    delay = 0.1
    while True:
        try:
            return call()
        except grpc.RpcError as e:
            retry = e.code() in TRANSIENT | {grpc.StatusCode.RESOURCE_EXHAUSTED}
            if not retry or time.monotonic() + delay > until:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 2.0)


# ---------------------------------------------------------------------------------------
# A seat: follows its player stream, plays every game it is given.


@dataclass
class Tricks:
    """What a seat tries on purpose, to check the contract (all off for a plain engine)."""

    refusals: bool = False  # an illegal play, a wrong turn_id, a resend, a different play
    drop: bool = False  # drop the stream on a waiting turn, resume with after_seq
    resign_from_game: int = 0  # resign game n >= this on its first own turn (0: never)
    timeout_from_game: int = 0  # let the clock run out in game n >= this (0: never)
    by_notation: bool = True  # every other play submitted in its own notation
    think_ms: int = 0  # "think" this long on every turn
    own_turns: bool = True  # EVENT_FILTER_OWN_TURNS (else every event, as a spectator gets)


class Seat:
    def __init__(self, server: str, token: str, name: str, report: Report, tricks: Tricks) -> None:
        self.channel = grpc.insecure_channel(server)
        self.stub = pb.arbiter_grpc.ArbiterServiceStub(self.channel)
        self.md = (("authorization", f"Bearer {token}"),)
        self.name = name
        self.report = report
        self.tricks = tricks
        self.games: queue.Queue[str] = queue.Queue()
        self.challenges: queue.Queue[Any] = queue.Queue()
        self.started: set[str] = set()
        self.client_seed = secrets.token_hex(16)
        self.turns = 0
        self.stop = threading.Event()

    # The player stream: GAME_ASSIGNED -> a game to play (once per game id).
    def follow_player_stream(self) -> None:
        while not self.stop.is_set():
            try:
                for ev in self.stub.SubscribePlayer(
                    pb.arbiter.SubscribePlayerRequest(), metadata=self.md
                ):
                    if ev.type == pb.arbiter.PLAYER_EVENT_TYPE_GAME_ASSIGNED:
                        self.games.put(ev.game_id)
                    elif ev.type == pb.arbiter.PLAYER_EVENT_TYPE_CHALLENGE:
                        self.challenges.put(ev)
                    elif ev.type == pb.arbiter.PLAYER_EVENT_TYPE_SERVER_SHUTDOWN:
                        break
            except grpc.RpcError as e:
                if e.code() not in TRANSIENT:
                    raise
            if not self.stop.wait(0.3):
                self.report.log(f"{self.name}: player stream ended, subscribing again")

    def play_assigned(self, until_match_over: bool) -> list[Any]:
        """Play the games announced on the player stream; with until_match_over, return the
        final states of one match once it is over."""
        finals: list[Any] = []
        while True:
            gid = self.games.get()
            if gid in self.started:
                continue
            self.started.add(gid)
            final = self.play_game(gid)
            finals.append(final)
            if until_match_over and (
                final.match.over or final.status == pb.game.GAME_STATUS_ABORTED
            ):
                return finals

    def play_game(self, game_id: str) -> Any:
        """One game, from the seat's arrival to GAME_FINISHED / GAME_ABORTED."""
        r = self.report
        last_seq, answered, dropped = 0, set(), False
        tried: set[int] = set()  # turns a play was sent for (answered: acknowledged)
        let_run: dict[int, str] = {}  # turns left to run out: a play to send too late
        waiting_turn: int | None = None  # a turn we dropped the stream on
        while True:
            req = pb.arbiter.SubscribeGameRequest(
                game_id=game_id,
                after_seq=last_seq,
                client_seed=self.client_seed,
                filter=pb.arbiter.EVENT_FILTER_OWN_TURNS
                if self.tricks.own_turns
                else pb.arbiter.EVENT_FILTER_UNSPECIFIED,
            )
            call = self.stub.SubscribeGame(req, metadata=self.md)
            resumed_at = last_seq
            try:
                for ev in call:
                    arrived = time.monotonic()
                    st = ev.state
                    recorded = ev.type not in (
                        pb.game.EVENT_TYPE_SNAPSHOT,
                        pb.game.EVENT_TYPE_HEARTBEAT,
                        pb.game.EVENT_TYPE_SERVER_SHUTDOWN,
                    )
                    if recorded and self.tricks.own_turns:
                        r.ok(
                            "recorded seqs increase",
                            ev.seq > last_seq,
                            f"{ev.seq} after {last_seq}",
                        )
                    elif recorded:
                        r.ok(
                            "an unfiltered seat stream has no gaps",
                            ev.seq == last_seq + 1,
                            f"{ev.seq} after {last_seq}",
                        )
                    else:
                        r.ok(
                            "unrecorded events repeat a seen seq",
                            ev.seq >= resumed_at,
                            f"{ev.seq} < {resumed_at}",
                        )
                    last_seq = max(last_seq, ev.seq)
                    if waiting_turn is not None:
                        r.ok(
                            "resume on a waiting turn announces it again",
                            bool(st.legal_plays) and st.turn_id == waiting_turn,
                            f"{pb.game.EventType.Name(ev.type)} turn {st.turn_id}",
                        )
                        r.ok(
                            "the re-announcement is a SNAPSHOT with the same seq",
                            ev.type == pb.game.EVENT_TYPE_SNAPSHOT and ev.seq == resumed_at,
                            f"{pb.game.EventType.Name(ev.type)} seq {ev.seq}",
                        )
                        waiting_turn = None
                    if ev.type == pb.game.EVENT_TYPE_SERVER_SHUTDOWN:
                        break
                    if self.tricks.own_turns:
                        r.ok(
                            "own-turns stream sends no PLAY_MADE / TURN_PASSED",
                            ev.type
                            not in (pb.game.EVENT_TYPE_PLAY_MADE, pb.game.EVENT_TYPE_TURN_PASSED),
                        )
                        if ev.type == pb.game.EVENT_TYPE_TURN_STARTED:
                            r.ok(
                                "own-turns stream sends only my TURN_STARTED",
                                st.side_to_move == st.your_color,
                            )
                    elif ev.type == pb.game.EVENT_TYPE_TURN_STARTED:
                        r.ok(
                            "legal plays only on my own turns",
                            not st.legal_plays or st.side_to_move == st.your_color,
                        )
                        # A replayed TURN_STARTED (a resume's backlog) of a turn that is
                        # over carries none: one I answered before the drop.
                        r.ok(
                            "my own turn comes without legal plays only once answered",
                            bool(st.legal_plays)
                            or st.side_to_move != st.your_color
                            or st.turn_id in tried,
                            f"seq {ev.seq} turn {st.turn_id} resumed after {resumed_at}",
                        )
                    if ev.type in (
                        pb.game.EVENT_TYPE_GAME_FINISHED,
                        pb.game.EVENT_TYPE_GAME_ABORTED,
                    ):
                        self.check_end(ev)
                        for turn, end in let_run.items():
                            self.check_timeout(game_id, st, turn, end)
                        return st
                    if st.legal_plays and st.turn_id not in answered:
                        if self.tricks.drop and not dropped and self.turns >= 3:
                            dropped, waiting_turn = True, st.turn_id
                            r.log(f"{self.name}: dropping the stream on turn {st.turn_id}")
                            break
                        if (
                            self.tricks.resign_from_game
                            and st.game_number >= self.tricks.resign_from_game
                        ):
                            self.resign(game_id, st)
                            continue
                        if (
                            self.tricks.timeout_from_game
                            and st.game_number >= self.tricks.timeout_from_game
                        ):
                            let_run.setdefault(st.turn_id, st.legal_plays[0].end_position)
                            continue
                        tried.add(st.turn_id)
                        if self.play_turn(game_id, ev, arrived):
                            answered.add(st.turn_id)
            except grpc.RpcError as e:
                if e.code() not in TRANSIENT:
                    raise
                r.log(f"{self.name}: game stream {e.code().name}, resuming after seq {last_seq}")
                time.sleep(0.2)
            finally:
                call.cancel()
            if waiting_turn is None:
                time.sleep(0.2)  # a server going down: resubscribe after a pause

    def resign(self, game_id: str, st: Any) -> None:
        res = with_retry(
            lambda: self.stub.Resign(pb.arbiter.ResignRequest(game_id=game_id), metadata=self.md)
        )
        self.report.ok(
            "Resign answers a resignation result",
            res.result.termination == pb.game.TERMINATION_RESIGNATION
            and res.result.winner != st.your_color,
            str(res),
        )

    def check_timeout(self, game_id: str, st: Any, turn: int, end: str) -> None:
        """The turn we let run out: lost on time, the bank shown spent, a late play refused."""
        r = self.report
        r.ok(
            "a clock run out loses on time",
            st.result.termination == pb.game.TERMINATION_TIMEOUT
            and st.result.winner != st.your_color,
            str(st.result),
        )
        mine = st.white_clock if st.your_color == pb.game.COLOR_WHITE else st.black_clock
        r.ok("the loser on time has no bank left", mine.bank_ms == 0, str(mine))
        r.refused(
            "a play after the clock ran out is FAILED_PRECONDITION",
            grpc.StatusCode.FAILED_PRECONDITION,
            lambda: self.stub.SubmitPlay(
                pb.arbiter.SubmitPlayRequest(game_id=game_id, turn_id=turn, end_position=end),
                metadata=self.md,
            ),
        )

    def play_turn(self, game_id: str, ev: Any, arrived: float) -> bool:
        """Choose and submit a play; False if the server could not be reached before the
        deadline (the turn is then announced again once it is back)."""
        r, st = self.report, ev.state
        variant = st.options.variant  # the options in force: never empty
        self.turns += 1
        # The clock: remaining_ms was measured when the event was made.
        mine = st.white_clock if st.your_color == pb.game.COLOR_WHITE else st.black_clock
        budget = (st.options.turn_time_ms or 120000) + st.options.time_bank_ms
        r.ok(
            "my clock is at most turn time plus bank",
            0 < mine.remaining_ms <= budget,
            f"{mine.remaining_ms} > {budget}",
        )
        # (A replayed TURN_STARTED keeps its first reading: count from the event's time.)
        received_wall = time.time() - (time.monotonic() - arrived)
        age = (
            max(0.0, received_wall - ev.time.ToMilliseconds() / 1000)
            if ev.HasField("time")
            else 0.0
        )
        deadline = arrived - age + mine.remaining_ms / 1000
        # My own reading of the rules against the server's list.
        theirs = {lp.end_position: lp for lp in st.legal_plays}
        ours = legal_plays(st.position, list(st.dice), variant)
        r.ok(
            f"my legal plays = the server's ({variant})",
            set(ours) == set(theirs),
            f"{st.position} dice {list(st.dice)}: only mine {sorted(set(ours) - set(theirs))},"
            f" only the server's {[theirs[e].notation for e in set(theirs) - set(ours)]}",
        )
        for lp in st.legal_plays:
            self.check_steps(st, lp)
        end = random.choice(sorted(theirs))
        time.sleep(self.tricks.think_ms / 1000)
        if self.tricks.refusals and self.turns == 2:
            self.try_refusals(game_id, st, end)
        if self.tricks.by_notation and self.turns % 2 == 0:
            sent = pb.arbiter.SubmitPlayRequest(
                game_id=game_id, turn_id=st.turn_id, notation=ours[end].notation
            )
        else:
            sent = pb.arbiter.SubmitPlayRequest(
                game_id=game_id, turn_id=st.turn_id, end_position=end
            )
        try:
            resp = with_retry(lambda: self.stub.SubmitPlay(sent, metadata=self.md), deadline)
        except grpc.RpcError as e:
            if e.code() not in TRANSIENT | {grpc.StatusCode.RESOURCE_EXHAUSTED}:
                raise
            r.log(f"{self.name}: no answer for turn {st.turn_id} in time ({e.code().name})")
            return False
        r.ok(
            "SubmitPlay records the play sent", resp.end_position == end, f"sent {sent}, got {resp}"
        )
        r.ok(
            "SubmitPlay answers the canonical notation",
            resp.notation == theirs[end].notation,
            f"sent {sent.notation or sent.end_position!r}, got {resp.notation!r},"
            f" legal play {theirs[end].notation!r}",
        )
        r.ok("used_ms within the turn's budget", resp.used_ms <= budget)
        if self.tricks.refusals and self.turns == 2:
            again = self.stub.SubmitPlay(sent, metadata=self.md)
            r.ok("a resent play is a duplicate", again.duplicate and again.end_position == end)
            other = [e for e in theirs if e != end]
            if other:
                r.refused(
                    "a different play for a played turn is FAILED_PRECONDITION",
                    grpc.StatusCode.FAILED_PRECONDITION,
                    lambda: self.stub.SubmitPlay(
                        pb.arbiter.SubmitPlayRequest(
                            game_id=game_id, turn_id=st.turn_id, end_position=other[0]
                        ),
                        metadata=self.md,
                    ),
                )
        return True

    def check_steps(self, st: Any, lp: Any) -> None:
        """LegalPlay.steps and notation say the same thing (Step: from/to in the mover's
        points, 0 = off, 25 = bar)."""
        words = []
        for s in lp.steps:
            src = "bar" if getattr(s, "from") == 25 else str(getattr(s, "from"))
            dst = "off" if s.to == 0 else str(s.to)
            words.append((src, dst))
            if s.to:
                self.report.ok(
                    "a step moves by its die", getattr(s, "from") - s.to == s.die, str(s)
                )
            self.report.ok("a step uses one of the dice", s.die in st.dice, str(s))
        notes = (
            [w.rstrip("*").split("/") for w in lp.notation.split()] if lp.notation != "-" else []
        )
        self.report.ok(
            "LegalPlay.steps match its notation",
            [tuple(n) for n in notes] == words,
            f"{lp.notation} vs {words}",
        )

    def try_refusals(self, game_id: str, st: Any, end: str) -> None:
        r = self.report
        md = self.md

        def refused_count() -> int:
            g = self.stub.GetGame(pb.arbiter.GetGameRequest(game_id=game_id), metadata=md).state
            return g.white_refused if st.your_color == pb.game.COLOR_WHITE else g.black_refused

        before = refused_count()
        r.refused(
            "a wrong turn_id is FAILED_PRECONDITION",
            grpc.StatusCode.FAILED_PRECONDITION,
            lambda: self.stub.SubmitPlay(
                pb.arbiter.SubmitPlayRequest(
                    game_id=game_id, turn_id=st.turn_id + 1, end_position=end
                ),
                metadata=md,
            ),
        )
        r.refused(
            "no play at all is INVALID_ARGUMENT",
            grpc.StatusCode.INVALID_ARGUMENT,
            lambda: self.stub.SubmitPlay(
                pb.arbiter.SubmitPlayRequest(game_id=game_id, turn_id=st.turn_id), metadata=md
            ),
        )
        r.ok("those two are not counted as illegal plays", refused_count() == before)
        # A step from a point where I have no checker.
        _, mine, _ = mover_view(st.position, st.options.variant)
        d = st.dice[0]
        empty = next(p for p in range(24, d, -1) if mine.pts[p] == 0)
        bad = f"{empty}/{empty - d}"
        try:
            self.stub.SubmitPlay(
                pb.arbiter.SubmitPlayRequest(game_id=game_id, turn_id=st.turn_id, notation=bad),
                metadata=md,
            )
            raise ContractError("an illegal play was accepted")
        except grpc.RpcError as e:
            r.ok(
                "an illegal play is INVALID_ARGUMENT",
                e.code() == grpc.StatusCode.INVALID_ARGUMENT,
                str(e.code()),
            )
            r.ok("the refusal names the step", bad in (e.details() or ""), e.details() or "")
        r.ok("an illegal play is counted", refused_count() == before + 1)
        # GetGame with the seat's token shows the waiting turn (the unary way).
        g = self.stub.GetGame(pb.arbiter.GetGameRequest(game_id=game_id), metadata=md)
        r.ok(
            "GetGame with my token shows my waiting turn",
            g.state.turn_id == st.turn_id and len(g.state.legal_plays) == len(st.legal_plays),
        )

    def check_end(self, ev: Any) -> None:
        st, r = ev.state, self.report
        if ev.type == pb.game.EVENT_TYPE_GAME_ABORTED:
            r.ok("an aborted game has no result", not st.HasField("result"))
            return
        res = st.result
        r.ok(
            "GAME_FINISHED carries a result",
            st.status == pb.game.GAME_STATUS_FINISHED and st.HasField("result"),
        )
        r.ok("the result's points follow its kind", res.points == KIND_POINTS[res.kind], str(res))
        long_kinds = {pb.game.RESULT_KIND_OIN, pb.game.RESULT_KIND_MARS, pb.game.RESULT_KIND_KOKS}
        r.ok(
            "the result kind is of the variant",
            (res.kind in long_kinds) == (st.options.variant == "long"),
            str(res),
        )
        r.ok(
            "the server seed is revealed at the end",
            bool(st.server_seed)
            and hashlib.sha256(bytes.fromhex(st.server_seed)).hexdigest() == st.dice_commitment,
        )
        r.ok(
            "the match goes on in next_game_id, or is over", st.match.over != bool(st.next_game_id)
        )
        if st.next_game_id:
            self.games.put(st.next_game_id)


KIND_POINTS: dict[int, int] = {}


# ---------------------------------------------------------------------------------------
# A spectator: no token, every event; checks seqs, the absence of legal plays, the dice.


def watch(server: str, game_id: str, report: Report, public_seed: int | None = None) -> Any:
    stub = pb.arbiter_grpc.ArbiterServiceStub(grpc.insecure_channel(server))
    report.refused(
        "a spectator cannot ask for own turns",
        grpc.StatusCode.INVALID_ARGUMENT,
        lambda: next(
            iter(
                stub.SubscribeGame(
                    pb.arbiter.SubscribeGameRequest(
                        game_id=game_id, filter=pb.arbiter.EVENT_FILTER_OWN_TURNS
                    )
                )
            )
        ),
    )
    last, dice_by_turn, opening, st = 0, {}, [], None
    while st is None or st.status not in (
        pb.game.GAME_STATUS_FINISHED,
        pb.game.GAME_STATUS_ABORTED,
    ):
        # From the start the first time, then resumed after the last seq seen.
        req = pb.arbiter.SubscribeGameRequest(game_id=game_id, after_seq=last, from_start=last == 0)
        try:
            for ev in stub.SubscribeGame(req):
                st = ev.state
                report.ok(
                    "a spectator sees no legal plays and no colour",
                    not st.legal_plays and st.your_color == pb.game.COLOR_UNSPECIFIED,
                )
                if ev.type == pb.game.EVENT_TYPE_SERVER_SHUTDOWN:
                    report.ok(
                        "SERVER_SHUTDOWN repeats the latest seq",
                        ev.seq == last,
                        f"{ev.seq} vs {last}",
                    )
                    break
                if ev.type in (pb.game.EVENT_TYPE_SNAPSHOT, pb.game.EVENT_TYPE_HEARTBEAT):
                    report.ok(
                        "an unrecorded event repeats the latest seq",
                        ev.seq == last,
                        f"{ev.seq} vs {last}",
                    )
                    continue
                report.ok(
                    "a spectator's seqs have no gaps", ev.seq == last + 1, f"{ev.seq} after {last}"
                )
                last = ev.seq
                if ev.type == pb.game.EVENT_TYPE_GAME_STARTED:
                    opening = [(t.first_player_die, t.second_player_die) for t in ev.opening_throws]
                    report.ok(
                        "colours are known at GAME_STARTED",
                        st.HasField("white") and st.HasField("black"),
                    )
                if ev.type == pb.game.EVENT_TYPE_TURN_STARTED:
                    seen = dice_by_turn.setdefault(st.turn_id, list(st.dice))
                    report.ok(
                        "a turn announced again has the same dice",
                        seen == list(st.dice),
                        f"turn {st.turn_id}",
                    )
                if ev.type in (pb.game.EVENT_TYPE_PLAY_MADE, pb.game.EVENT_TYPE_TURN_PASSED):
                    seen = dice_by_turn.setdefault(ev.play.turn_id, list(ev.play.dice))
                    report.ok(
                        "a play's dice are the turn's",
                        seen == list(ev.play.dice),
                        f"turn {ev.play.turn_id}",
                    )
                    if ev.type == pb.game.EVENT_TYPE_TURN_PASSED:
                        report.ok(
                            "a passed turn is '-' and automatic",
                            ev.play.notation == "-" and ev.play.automatic and ev.play.used_ms == 0,
                        )
                if ev.type == pb.game.EVENT_TYPE_PLAY_MADE:
                    report.ok(
                        "the last play before the end has no result", not st.HasField("result")
                    )
        except grpc.RpcError as e:
            if e.code() not in TRANSIENT:
                raise
        if st is None or st.status not in (
            pb.game.GAME_STATUS_FINISHED,
            pb.game.GAME_STATUS_ABORTED,
        ):
            report.log(f"spectator: stream ended, resuming after seq {last}")
            time.sleep(0.3)
    assert st is not None
    report.ok(
        "the spectator stream ends with the game",
        st.status in (pb.game.GAME_STATUS_FINISHED, pb.game.GAME_STATUS_ABORTED),
    )
    if st.status == pb.game.GAME_STATUS_FINISHED:
        check_dice(st, opening, dice_by_turn, report, public_seed)
    # A replay from the start is the same history.
    replay = list(
        stub.SubscribeGame(pb.arbiter.SubscribeGameRequest(game_id=game_id, from_start=True))
    )
    report.ok(
        "a replay from the start has every event",
        [e.seq for e in replay] == list(range(1, last + 1)),
    )
    return st


def check_dice(
    st: Any,
    opening: list[tuple[int, int]],
    dice_by_turn: dict[int, list[int]],
    report: Report,
    public_seed: int | None,
) -> None:
    """Recompute every die from the revealed server seed (game.proto, dice_commitment)."""
    if public_seed is not None:
        report.ok(
            "a seeded game's server seed is derived from the public seed",
            st.server_seed == seeded_server_seed(public_seed, st.game_number),
        )
    seeds = [] if st.public_seed else list(st.client_seeds)
    gen = fair_dice(st.server_seed, seeds)
    thrown = [d for t in opening for d in t]
    expect = [next(gen) for _ in thrown]
    report.ok(
        "the opening throws follow the fair-dice generator",
        thrown == expect,
        f"{thrown} vs {expect}",
    )
    use_opening = st.options.opening == pb.game.OPENING_RULE_USE_OPENING_DICE
    for turn in sorted(dice_by_turn):
        if turn == 1 and use_opening and opening:
            w = opening[-1]
            report.ok(
                "white's first roll is the opening dice, white's first",
                dice_by_turn[1] == sorted(w, reverse=True),
                f"{dice_by_turn[1]} vs {w}",
            )
            continue
        pair = [next(gen), next(gen)]
        report.ok(
            "every turn's dice follow the fair-dice generator",
            dice_by_turn[turn] == pair,
            f"turn {turn}: {dice_by_turn[turn]} vs {pair}",
        )


# ---------------------------------------------------------------------------------------
# The two ways to run.


def run_engine(server: str, token: str, report: Report) -> None:
    seat = Seat(server, token, "engine", report, Tricks(by_notation=True))
    threading.Thread(target=seat.follow_player_stream, daemon=True).start()
    while True:
        gid = seat.games.get()
        if gid not in seat.started:
            seat.started.add(gid)
            threading.Thread(target=seat.play_game, args=(gid,), daemon=True).start()


def check_abort(stub: Any, options: Any, report: Report) -> None:
    """A seat that never arrives aborts the game; a token must come as `Bearer <token>`."""
    created = stub.CreateMatch(pb.arbiter.CreateMatchRequest(options=options, start_timeout_ms=300))
    seat = (("authorization", f"Bearer {created.first_seat_token}"),)
    bare = (("authorization", created.first_seat_token),)
    report.refused(
        "a token without 'Bearer ' is UNAUTHENTICATED",
        grpc.StatusCode.UNAUTHENTICATED,
        lambda: stub.GetGame(pb.arbiter.GetGameRequest(game_id=created.game_id), metadata=bare),
    )
    seen = [
        (ev.seq, ev.type, ev.state)
        for ev in stub.SubscribeGame(
            pb.arbiter.SubscribeGameRequest(
                game_id=created.game_id, filter=pb.arbiter.EVENT_FILTER_OWN_TURNS
            ),
            metadata=seat,
        )
    ]
    report.ok(
        "a game waits for its seats, then aborts",
        [(s, t) for s, t, _ in seen]
        == [(0, pb.game.EVENT_TYPE_SNAPSHOT), (1, pb.game.EVENT_TYPE_GAME_ABORTED)],
        str(seen),
    )
    report.ok(
        "an aborted game has no result",
        seen[-1][2].status == pb.game.GAME_STATUS_ABORTED and not seen[-1][2].HasField("result"),
    )
    report.refused(
        "resigning an aborted game is FAILED_PRECONDITION",
        grpc.StatusCode.FAILED_PRECONDITION,
        lambda: stub.Resign(pb.arbiter.ResignRequest(game_id=created.game_id), metadata=seat),
    )


def run_match(args: argparse.Namespace, report: Report) -> int:
    server = args.server
    stub = pb.arbiter_grpc.ArbiterServiceStub(grpc.insecure_channel(server))
    options = pb.game.GameOptions(
        variant=args.variant, turn_time_ms=args.turn_time_ms, illegal_play_limit=5
    )
    req = pb.arbiter.CreateMatchRequest(options=options, target_points=args.points)
    if args.seed is not None:
        req.seed = args.seed
    if args.start_position:
        req.start_position = args.start_position
    check_abort(stub, options, report)
    tokens: list[str]
    if args.registered:
        names = [f"stranger-{secrets.token_hex(4)}" for _ in range(2)]
        tokens = [
            stub.RegisterPlayer(
                pb.arbiter.RegisterPlayerRequest(name=n, bot=True, owner="a stranger")
            ).token
            for n in names
        ]
        req.first.player_name, req.second.player_name = names
    seats = [
        Seat(
            server,
            tok,
            f"seat{i + 1}",
            report,
            Tricks(
                refusals=i == 0,
                drop=i == 1,
                own_turns=i == 0,
                think_ms=args.think_ms,
                resign_from_game=args.resign_from_game if i == 0 else 0,
                timeout_from_game=args.timeout_from_game if i == 0 else 0,
            ),
        )
        for i, tok in enumerate(tokens if args.registered else ["", ""])
    ]
    if args.registered:
        for s in seats:
            threading.Thread(target=s.follow_player_stream, daemon=True).start()
        created = stub.CreateMatch(req, metadata=seats[0].md)  # a challenge to the second
        report.ok("a match with another registered player is a challenge", created.challenge)
        ch = seats[1].challenges.get(timeout=10)
        report.ok(
            "the challenge is announced on the player stream", ch.match_id == created.match_id
        )
        listed = (
            seats[1]
            .stub.ListChallenges(pb.arbiter.ListChallengesRequest(), metadata=seats[1].md)
            .challenges
        )
        report.ok("ListChallenges lists it", [c.match_id for c in listed] == [created.match_id])
        acc = seats[1].stub.AcceptChallenge(
            pb.arbiter.AcceptChallengeRequest(match_id=created.match_id), metadata=seats[1].md
        )
        report.ok("AcceptChallenge names the first game", acc.game_id == created.game_id)
    else:
        created = stub.CreateMatch(req)
        report.ok(
            "open seats get seat tokens",
            bool(created.first_seat_token and created.second_seat_token),
        )
        for s, tok in zip(
            seats, (created.first_seat_token, created.second_seat_token), strict=True
        ):
            s.md = (("authorization", f"Bearer {tok}"),)
            threading.Thread(target=s.follow_player_stream, daemon=True).start()
    print(f"match {created.match_id}, first game {created.game_id}", flush=True)

    results: dict[str, Any] = {}
    errors: list[BaseException] = []

    def guard(name: str, fn: Callable[[], Any]) -> None:
        try:
            results[name] = fn()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    def spectate() -> list[Any]:
        finals, gid = [], created.game_id
        while gid:
            st = watch(server, gid, report, args.seed)
            finals.append(st)
            gid = st.next_game_id
        return finals

    threads = [
        threading.Thread(
            target=guard, args=(f"seat{i}", lambda s=s: s.play_assigned(True)), daemon=True
        )
        for i, s in enumerate(seats)
    ]
    threads.append(threading.Thread(target=guard, args=("spectator", spectate), daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join(args.timeout)
    if errors:
        for e in errors:
            print(f"FAILED: {e}", file=sys.stderr)
        return 1
    if any(t.is_alive() for t in threads):
        print(f"FAILED: the match did not end within {args.timeout} s", file=sys.stderr)
        return 1
    finals = results["spectator"]
    report.ok(
        "both seats and the spectator saw the same games",
        [f.game_id for f in finals]
        == [f.game_id for f in results["seat0"]]
        == [f.game_id for f in results["seat1"]],
    )
    report.ok("the match is over at the end", finals[-1].match.over)
    report.ok(
        "the first game's dice commitment is the one CreateMatch gave",
        finals[0].dice_commitment == created.dice_commitment,
    )
    set_up = args.seed is not None or bool(args.start_position)
    report.ok(
        "a game is rated when two registered players agreed and nothing was set up",
        all(f.rated == (args.registered and not set_up) and f.seeded == set_up for f in finals),
        str([(f.rated, f.seeded) for f in finals]),
    )
    report.ok(
        "the options in force are shown with the defaults filled in",
        all(
            f.options.variant == args.variant
            and f.options.opening != pb.game.OPENING_RULE_UNSPECIFIED
            and f.options.colours != pb.game.COLOUR_RULE_UNSPECIFIED
            for f in finals
        ),
    )
    colours = [f.your_color for f in results["seat0"]]
    report.ok(
        "the seats alternate colours game by game",
        all(a != b for a, b in zip(colours, colours[1:], strict=False)),
    )
    for f in finals:
        res, score = f.result, f.match
        print(
            f"game {f.game_number} ({f.options.variant}): {pb.game.Color.Name(res.winner)} wins"
            f" {pb.game.ResultKind.Name(res.kind)} by {pb.game.Termination.Name(res.termination)},"
            f" {res.points} point(s); match {score.white_points}-{score.black_points}"
            f" of {score.target}"
        )
    for what, n in sorted(report.checks.items()):
        print(f"  ok {n:5d}  {what}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("mode", nargs="?", default="engine", choices=["engine", "match"])
    ap.add_argument("--server", default=os.environ.get("NARDY_SERVER", "127.0.0.1:50051"))
    ap.add_argument(
        "--proto",
        type=Path,
        default=DEFAULT_PROTO_DIR,
        help="the directory holding nardy/v1/*.proto",
    )
    ap.add_argument("--variant", default="long", choices=["long", "short"])
    ap.add_argument("--points", type=int, default=1, help="match length")
    ap.add_argument(
        "--resign-from-game", type=int, default=0, help="the first seat resigns game N and later"
    )
    ap.add_argument(
        "--timeout-from-game",
        type=int,
        default=0,
        help="the first seat lets its clock run out in game N and later",
    )
    ap.add_argument(
        "--start-position", help="the first game's start position (position text; open seats only)"
    )
    ap.add_argument(
        "--registered",
        action="store_true",
        help="two registered players (a challenge), not open seats",
    )
    ap.add_argument("--seed", type=int, help="public dice seed")
    ap.add_argument("--turn-time-ms", type=int, default=10000)
    ap.add_argument("--think-ms", type=int, default=0, help="think this long on every turn")
    ap.add_argument(
        "--timeout", type=float, default=120, help="give up the match after this many seconds"
    )
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    load_stubs(args.proto)
    g = pb.game
    KIND_POINTS.update(
        {
            g.RESULT_KIND_OIN: 1,
            g.RESULT_KIND_MARS: 2,
            g.RESULT_KIND_KOKS: 3,
            g.RESULT_KIND_SINGLE: 1,
            g.RESULT_KIND_GAMMON: 2,
            g.RESULT_KIND_BACKGAMMON: 3,
        }
    )
    report = Report(verbose=args.verbose, strict=args.mode == "match")
    if args.mode == "engine":
        token = os.environ.get("NARDY_TOKEN")
        if not token:
            sys.exit("NARDY_TOKEN is not set")
        run_engine(args.server, token, report)
        return 0
    return run_match(args, report)


if __name__ == "__main__":
    sys.exit(main())
