"""`nardy watch`, `nardy replay` and `nardy standings` against a real arbiter started here,
with both seats played by bots in a background thread."""

from __future__ import annotations

import subprocess
import sys

import pytest
import trio

from nardy import Color, GameResult, Kind, Position, record
from nardy.client import Client
from nardy.v1 import arbiter_pb2 as api
from nardy.v1 import game_pb2 as pb
from tests.cli.conftest import RACE, ROOT, Bots, bot_match, finish, spawn

RACE_DICE = [2, 1, 6, 5, 6, 5, 6, 5]  # alice white; three turns of 6-5 end the game


def seats(a: str = "alice", b: str = "bob") -> dict:
    return {"first": api.SeatSpec(display_name=a), "second": api.SeatSpec(display_name=b)}


@pytest.fixture
def finished_game(arbiter) -> str:
    r, bots = bot_match(arbiter.address, start_position=RACE, dice=RACE_DICE, **seats())
    bots.start().join()
    return r.game_id


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "clients", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env={"NO_COLOR": "1", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )


def test_watch_follows_a_game_live(arbiter):
    r, bots = bot_match(
        arbiter.address, start_position=RACE, dice=RACE_DICE, delay=0.3, **seats("carol", "dave")
    )
    child = spawn("watch", r.game_id, "--server", arbiter.address)
    child.expect("waiting for players")  # watching before the game has started
    bots.start()
    child.expect(r"Game 1 started: guest carol plays white, guest dave plays black")
    child.expect(r"White \(guest carol\) played 6-5: 6/off 5/off")
    child.expect(r"Black \(guest dave\) played 6-5: 6/off 5/off")
    child.expect(r"White \(guest carol\) played 6-5: 4/off 3/off")
    child.expect(r"White \(guest carol\) wins by oin \(1 point\)")
    assert finish(child) == 0  # the match is over: watch ends by itself
    bots.join()


def test_replay_a_game_from_the_arbiter_step_by_step(arbiter, finished_game):
    child = spawn("replay", finished_game, "--server", arbiter.address)
    child.expect(r"\[1/5\] Start: guest alice white, guest bob black")
    child.send("n")
    child.expect(r"\[2/5\] Turn 1: white \(guest alice\) 6-5: 6/off 5/off")
    child.send("\r")
    child.expect(r"\[3/5\] Turn 2: black \(guest bob\) 6-5: 6/off 5/off")
    child.send("p")
    child.expect(r"\[2/5\] Turn 1")
    child.send("G")
    child.expect(r"\[5/5\] End: White \(guest alice\) wins by oin \(1 point\)")
    child.send("n")
    child.expect("End of the record")
    child.send("q")
    assert finish(child) == 0


def test_replay_print_shows_every_position(arbiter, finished_game):
    out = run("replay", finished_game, "--server", arbiter.address, "--print")
    assert out.returncode == 0, out.stderr
    for n in range(1, 6):
        assert f"[{n}/5]" in out.stdout
    assert out.stdout.count("13  14  15  16  17  18") == 5
    assert "Turn 3: white (guest alice) 6-5: 4/off 3/off" in out.stdout
    assert "\x1b[" not in out.stdout  # not a terminal: plain text


@pytest.mark.slow
def test_replay_a_record_file(tmp_path):
    game = record.GameRecord(
        headers={"Game": "1", "White": "erin", "Black": "finn", "Match": "1"},
        start=Position.parse(RACE),
        turns=[
            record.TurnRecord(Color.WHITE, (6, 5), "6/off 5/off"),
            record.TurnRecord(Color.BLACK, (6, 5), "6/off 5/off"),
            record.TurnRecord(Color.WHITE, (6, 5), "4/off 3/off"),
        ],
        result=GameResult(Color.WHITE, Kind.OIN),
    )
    path = tmp_path / "game.txt"
    path.write_text(record.dumps([game]))
    out = run("replay", str(path), "--print")
    assert out.returncode == 0, out.stderr
    assert "[1/5] Start" in out.stdout
    assert "Turn 2: black (finn) 6-5: 6/off 5/off" in out.stdout
    assert "[5/5] End: White (erin) wins by oin (1 point)." in out.stdout

    # stepping through it in a terminal
    child = spawn("replay", str(path))
    child.expect(r"\[1/5\] Start")
    child.send("n")
    child.expect(r"\[2/5\] Turn 1: white \(erin\) 6-5: 6/off 5/off")
    child.send("q")
    assert finish(child) == 0

    # a record that breaks the rules is refused, naming the turn and the reason
    bad = tmp_path / "bad.txt"
    bad.write_text(record.dumps([game]).replace("4/off 3/off", "4/off 3/2"))
    out = run("replay", str(bad), "--print")
    assert out.returncode == 1
    assert "turn 3" in out.stderr


def rated_game(arbiter) -> api.CreateMatchResponse:
    """A game between two registered players seated by the operator: it counts."""

    async def main():
        async with Client(arbiter.address, arbiter.admin_token) as op:
            tokens = [
                (await op.call("RegisterPlayer", api.RegisterPlayerRequest(name=n))).token
                for n in ("ann", "ben")
            ]
            r = await op.create_match(
                options=pb.GameOptions(turn_time_ms=20_000, auto_play_forced=True),
                first=api.SeatSpec(player_name="ann"),
                second=api.SeatSpec(player_name="ben"),
            )
        # the bots play with the players' own tokens
        return api.CreateMatchResponse(
            game_id=r.game_id, first_seat_token=tokens[0], second_seat_token=tokens[1]
        )

    return trio.run(main)


@pytest.mark.slow
def test_standings_table(arbiter, finished_game):
    r = rated_game(arbiter)
    Bots(arbiter.address, r).start().join(60)
    out = run("standings", "--server", arbiter.address)
    assert out.returncode == 0, out.stderr
    rows = {}
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.replace("|", "│").split("│") if c.strip()]
        if len(cells) == 10 and cells[0].isdigit():
            rows[cells[1]] = cells  # rank, player, games, won, lost, win %, +, -, diff, mars
    # only the rated game counts: casual games set up with chosen dice never do
    assert set(rows) == {"ann", "ben"}, out.stdout
    won, lost = sorted(rows.values(), key=lambda cells: cells[0])
    assert won[2:5] == ["1", "1", "0"] and lost[2:5] == ["1", "0", "1"]


def test_unknown_game_is_reported(arbiter):
    out = run("replay", "no-such-game", "--server", arbiter.address, "--print")
    assert out.returncode == 1
    assert "neither a file nor a game" in out.stderr


def test_watch_tells_every_game_of_a_match_to_its_end(arbiter):
    """A match's next game is followed from its start: a fast game could be over before
    watch followed it, and watch showed its last board only, ending without its result or
    the match's."""
    r, bots = bot_match(arbiter.address, start_position=RACE, target_points=3, **seats())
    bots.start().join()  # the whole match is over before anyone watches
    out = run("watch", r.game_id, "--server", arbiter.address, "--plain")
    assert out.returncode == 0, out.stderr
    assert "wins the match" in out.stdout, out.stdout[-2000:]


def test_records_asked_for_in_a_row_wait_for_the_callers_rate(tmp_path):
    """A replay is charged by its events, and one asked for while the last is not paid for
    is refused (RESOURCE_EXHAUSTED): `nardy ladder --records` stopped with a traceback after
    a few dozen games. Each is asked again after a short wait."""
    import grpc

    from clients.export import fetch_record
    from nardy.v1 import arbiter_pb2_grpc as api_grpc
    from server.app import EmbeddedServer

    with EmbeddedServer(db=str(tmp_path / "r.db"), rate_per_s=100, rate_burst=20) as srv:
        r, bots = bot_match(srv.address, start_position=RACE, dice=RACE_DICE, **seats())
        bots.start().join()
        with grpc.insecure_channel(srv.address) as channel:
            stub = api_grpc.ArbiterServiceStub(channel)
            records = [fetch_record(stub, r.game_id) for _ in range(12)]
    assert all(rec.result == records[0].result is not None for rec in records)
    assert {len(rec.turns) for rec in records} == {3}


def test_standings_count_every_win_worth_more_than_a_point():
    """The mars column counts short nardy's gammons and backgammons as well as long
    nardy's mars and koks (RULES.md §6, §8): it counted mars and koks only."""
    from clients.ladder_runner import standings_table
    from clients.standings import big_wins, table_rows
    from nardy.v1 import ladder_pb2 as lpb

    def won(kind: int, points: int) -> api.GameSummary:
        return api.GameSummary(
            status=pb.GAME_STATUS_FINISHED,
            rated=True,
            white=pb.Player(name="ann"),
            black=pb.Player(name="ben"),
            result=pb.GameResult(winner=pb.COLOR_WHITE, kind=kind, points=points),
        )

    kinds = [
        (pb.RESULT_KIND_GAMMON, 2),
        (pb.RESULT_KIND_BACKGAMMON, 3),
        (pb.RESULT_KIND_MARS, 2),
        (pb.RESULT_KIND_KOKS, 3),
        (pb.RESULT_KIND_OIN, 1),
    ]
    [ann, ben] = table_rows([won(k, p) for k, p in kinds])
    assert (ann.name, ann.won, ann.mars, ann.points_for) == ("ann", 5, 4, 11)
    assert (ben.lost, ben.mars) == (5, 0)
    # the column is named as the games' variants name those wins (a gammon is no mars)
    games = [won(k, p) for k, p in kinds]
    assert big_wins(games) == "mars/gammons"
    assert big_wins(games[:2]) == "gammons" and big_wins(games[2:]) == "mars"
    table = standings_table(lpb.GetStandingsResponse(), variant="short")
    header = [c.header for c in table.columns]
    assert "gammons W/L" in header and "mars W/L" not in header


def test_a_koks_game_exported_is_read_back_by_its_own_rules(arbiter, tmp_path):
    """§5 koks (a house rule): the record names the rules it was played with, so that
    `nardy import`, `nardy replay FILE` and the analysis read it without being told; the
    export of a koks game failed all three ("koks 3 normal does not match the final
    position")."""
    board = [0] * 24
    board[23] = board[22] = 1  # white's points 1 and 2: off with the first roll
    board[9], board[17] = -14, -1  # black none off, one in its starting quarter (its 19)
    r, bots = bot_match(
        arbiter.address,
        start_position="w/" + ",".join(map(str, board)),
        dice=[2, 1, 6, 5],  # the opening throw makes alice white, then 6-5
        options=pb.GameOptions(turn_time_ms=20_000, koks=True),
        **seats(),
    )
    bots.start().join()
    path = tmp_path / "koks.nrd"
    out = run("export", r.game_id, "--server", arbiter.address, "--output", str(path))
    assert out.returncode == 0, out.stderr
    text = path.read_text()
    assert "\nRules: koks\n" in text and "Result: white koks 3 normal" in text
    for command in (("import", str(path)), ("replay", str(path), "--print")):
        out = run(*command)
        assert out.returncode == 0, (command, out.stderr)
