"""Game records: exact round trips over self-play games, and clear errors for bad records."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from nardy import Color, GameResult, Kind, Position, Termination, legal_plays, result
from nardy.record import (
    GameRecord,
    RecordError,
    TurnRecord,
    dumps,
    from_json,
    loads,
    replay,
    to_json,
)


def self_play(seed: int) -> tuple[GameRecord, Position]:
    rng = random.Random(seed)
    pos, turns = Position.start(), []
    while result(pos) is None:
        dice = (rng.randint(1, 6), rng.randint(1, 6))
        plays = legal_plays(pos, dice)
        play = rng.choice(plays) if plays else None
        turns.append(TurnRecord(pos.turn, dice, play.notation() if play else "-"))
        pos = play.end if play else pos.passed()
    headers = {"Game": "1", "White": "a", "Black": "b", "Match": "1"}
    return GameRecord(headers, Position.start(), turns, result(pos)), pos


@pytest.mark.slow
def test_round_trip_over_hundreds_of_games():
    for seed in range(200):
        game, final = self_play(seed)
        text = dumps([game])
        (back,) = loads(text)
        assert back.turns == game.turns and back.result == game.result
        assert back.headers == game.headers
        assert dumps([back]) == text  # byte for byte
        (js,) = from_json(to_json([game]))
        assert js.turns == game.turns and js.result == game.result
        assert replay(back)[-1] == final


def test_a_match_of_several_games_and_a_custom_start():
    g1, _ = self_play(1)
    g2, _ = self_play(2)
    g2.headers["Game"] = "2"
    race = Position.parse("w/0,0,0,0,0,0,-15,0,0,0,0,0,0,0,0,0,0,0,3,3,3,2,2,2")
    g3 = GameRecord({"Game": "3"}, race, [TurnRecord(Color.WHITE, (6, 6), "6/off 6/off 6/off")])
    games = loads(dumps([g1, g2, g3]))
    assert [g.number for g in games] == [1, 2, 3]
    assert games[2].start == race
    with pytest.raises(RecordError, match="game 3 turn 1"):
        replay(games[2])  # three 6s: a 6-6 plays four (§3.6)


GOOD, _ = self_play(7)


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda t: t.replace("; nardy record 1", "hello"), "not a nardy record"),
        (lambda t: t.replace("[Game 1]\n", ""), "expected '\\[Game N\\]'"),
        (lambda t: t.replace("   2 ", "   3 ", 1), "out of order"),
        (lambda t: t.replace(" b ", " x ", 1), "cannot read"),
        (lambda t: t.replace(f"{GOOD.turns[0].dice[0]}-", "7-", 1), "cannot read"),
        (lambda t: t.replace("Result: ", "Result: purple ", 1), "Result|line"),
        (lambda t: t[: t.index("   5 ") + 9], "line"),  # truncated inside a turn line
    ],
)
def test_malformed_records_name_the_line(mangle, message):
    with pytest.raises(RecordError, match=message):
        loads(mangle(dumps([GOOD])))


def test_illegal_turns_are_reported_precisely():
    game, _ = self_play(11)
    bad = GameRecord(dict(game.headers), game.start, list(game.turns), game.result)
    t = bad.turns[4]
    bad.turns[4] = TurnRecord(t.side, t.dice, "24/1")
    with pytest.raises(RecordError, match=r"game 1 turn 5 \(. \d-\d 24/1\)"):
        replay(bad)
    wrong_side = GameRecord({}, Position.start(), [TurnRecord(Color.BLACK, (6, 5), "24/13")])
    with pytest.raises(RecordError, match="it was white's turn"):
        replay(wrong_side)
    needless_pass = GameRecord({}, Position.start(), [TurnRecord(Color.WHITE, (6, 5), "-")])
    with pytest.raises(RecordError, match="passing is not allowed"):
        replay(needless_pass)
    lie = GameRecord(
        dict(game.headers),
        game.start,
        list(game.turns),
        GameResult(game.result.winner.opponent, Kind.OIN, Termination.NORMAL),
    )
    with pytest.raises(RecordError, match="does not match"):
        replay(lie)


def test_bad_json_is_refused():
    with pytest.raises(RecordError, match="JSON"):
        from_json('{"format": "nardy-record", "games": [{"turns": [{"side": "q"}]}]}')
    with pytest.raises(RecordError, match="JSON"):
        from_json('{"format": "something else"}')


def test_nardy_import_command(tmp_path):
    good = tmp_path / "good.nrd"
    good.write_text(dumps([GOOD]))
    out = subprocess.run(
        [sys.executable, "-m", "clients", "import", str(good)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "legal" in out.stdout
    bad = tmp_path / "bad.json"
    game, _ = self_play(3)
    game.turns[2] = TurnRecord(game.turns[2].side, game.turns[2].dice, "1/off")
    bad.write_text(to_json([game]))
    out = subprocess.run(
        [sys.executable, "-m", "clients", "import", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "turn 3" in out.stderr


def test_nardy_import_refuses_a_house_rule_the_variant_does_not_have(tmp_path):
    short = tmp_path / "short.nrd"
    short.write_text(dumps([GameRecord(headers={"Variant": "short"})]))
    run = [sys.executable, "-m", "clients", "import", str(short)]
    out = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "legal" in out.stdout
    out = subprocess.run([*run, "--koks"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "short nardy has no rule option koks" in out.stderr
