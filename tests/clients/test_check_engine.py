"""`nardy check-engine` as a user runs it: a real subprocess against fixture engines and a
bundled engine.

An engine on the SDK plays over the Play stream (and falls back to SubscribeGame and
SubmitPlay on the arbiter without Play), `nardy engine random --unary` over those two
only, and both pass every scenario; an engine that knows only Play fails `no-play-stream`
and nothing else. The checks run at the same time (each is mostly waiting on clocks), so
the module takes about as long as the slowest one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from clients import check_engine

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SCENARIOS = [sc.name for sc in check_engine.scenarios()]
JOIN_MS = 8000  # the failing engines' time to join (they start in a second or two)


def command(engine: list[str], turn_ms: int, join_ms: int | None, *more: str) -> list[str]:
    check = [sys.executable, "-m", "clients", "check-engine", "--turn-time-ms", str(turn_ms)]
    if join_ms is not None:
        check += ["--join-ms", str(join_ms)]
    return [*check, *more, "--", *engine]


def fixture(name: str) -> list[str]:
    return [sys.executable, str(FIXTURES / name)]


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NARDY_SERVER", "NARDY_TOKEN")}
    env["NO_COLOR"] = "1"
    return env


@pytest.fixture(scope="module")
def runs():
    """name -> (exit code, stdout, stderr) for the good, broken and stalling engines."""
    # A passing engine answers at once, so its run does not wait on the clock: keep the
    # default 3000 ms. The failing ones wait out every clock: make them short, and so the
    # time they have to join (the default 30 s waited out, the module took 50 s).
    plans = {
        "random": (fixture("random_engine.py"), 3000, None),
        "unary": ([sys.executable, "-m", "clients", "engine", "random", "--unary"], 3000, None),
        "play-only": (fixture("play_only_engine.py"), 3000, JOIN_MS),
        "broken": (fixture("broken_engine.py"), 1000, JOIN_MS),
        "stall": (fixture("stall_engine.py"), 1000, JOIN_MS),
        "failing": (fixture("failing_engine.py"), 3000, None),
        "short": (fixture("random_engine.py"), 3000, None, "--variant", "short"),
    }
    procs = {
        name: subprocess.Popen(
            command(engine, ms, join_ms, *more),
            cwd=ROOT,
            env=environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, (engine, ms, join_ms, *more) in plans.items()
    }
    results = {}
    try:
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=150)
            results[name] = (proc.returncode, out, err)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    yield results
    for _, out, _ in results.values():  # failed runs keep their logs: remove them here
        m = re.search(r"engine logs in (\S+)", out)
        if m and "nardy-check-" in m.group(1):
            shutil.rmtree(m.group(1), ignore_errors=True)


def lines(out: str, tag: str) -> dict[str, str]:
    """scenario name -> the rest of its PASS/FAIL line."""
    found = {}
    for line in out.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) >= 2 and parts[0] == tag:
            found[parts[1]] = parts[2] if len(parts) > 2 else ""
    return found


def test_scenario_setups_hold():
    check_engine.check_setups()


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["random", "unary"])
def test_an_sdk_engine_passes_every_scenario_over_either_transport(runs, engine):
    code, out, err = runs[engine]
    assert code == 0, out + err
    passed = lines(out, "PASS")
    assert sorted(passed) == sorted(SCENARIOS), out
    assert not lines(out, "FAIL")
    assert f"OK: all {len(SCENARIOS)} scenarios passed" in out
    assert "\x1b[" not in out  # no colour when not a TTY
    assert passed["no-legal-play"].startswith("(turn 1 (6-5) passed by the arbiter")
    assert "refused with INVALID_ARGUMENT" in passed["illegal-play-refused"]
    assert "resumed with" in passed["drop-and-resume"]
    assert "over SubscribeGame and SubmitPlay" in passed["no-play-stream"]


def test_an_engine_of_one_variant_is_checked_on_that_variants_scenarios(runs):
    code, out, err = runs["short"]
    assert code == 0, out + err
    short = [sc.name for sc in check_engine.scenarios() if sc.variant == "short"]
    assert short and sorted(lines(out, "PASS")) == sorted(short), out
    assert f"OK: all {len(short)} scenarios passed" in out


def test_an_engine_that_knows_only_play_fails_where_play_is_not_offered(runs):
    code, out, err = runs["play-only"]
    assert code == 1, out + err
    assert sorted(lines(out, "PASS")) == sorted(set(SCENARIOS) - {"no-play-stream"}), out
    reason = lines(out, "FAIL")["no-play-stream"]
    assert reason.startswith("the engine never joined the game"), reason
    assert f"aborted it after {JOIN_MS // 1000} s" in reason
    assert "answers Play with UNIMPLEMENTED" in reason
    assert "[engine log: ...game " in reason and "UNIMPLEMENTED" in reason.split("[engine log")[1]


def test_broken_engine_fails_with_the_refusals_in_the_reason(runs):
    code, out, err = runs["broken"]
    assert code == 1, out + err
    failed = lines(out, "FAIL")
    assert sorted(failed) == sorted(SCENARIOS), out
    for reason in failed.values():
        assert "no play within the clock" in reason
        assert "INVALID_ARGUMENT: illegal play" in reason  # the engine's own log, quoted
    n = len(SCENARIOS)
    m = re.search(rf"FAILED: {n} of {n} scenarios failed .*; engine logs in (\S+)", out)
    assert m, out
    log = Path(m.group(1)) / "01-first-turn-6-6.log"
    assert "refused" in log.read_text()


def test_an_engine_the_sdk_covers_for_fails_all_the_same(runs):
    """An SDK engine whose own choice fails every turn: the SDK plays the first legal play
    for it, so its games are never lost on it (and it passed every scenario). Each
    scenario where it played fails, quoting its log."""
    code, out, err = runs["failing"]
    assert code == 1, out + err
    failed = lines(out, "FAIL")
    assert failed, out
    for reason in failed.values():
        assert "the engine failed on a turn" in reason and "instead" in reason, reason


def test_stalling_engine_fails_on_the_clock(runs):
    code, out, err = runs["stall"]
    assert code == 1, out + err
    failed = lines(out, "FAIL")
    assert sorted(failed) == sorted(SCENARIOS), out
    assert failed["first-turn-6-6"] == "no play within the clock (turn 1, dice 6-6, 1000 ms clock)"
    assert all(r.startswith("no play within the clock") for r in failed.values())


def test_no_engine_process_outlives_the_check(runs):
    proc = Path("/proc")
    if not proc.is_dir():
        pytest.skip("needs /proc")
    left = []
    for entry in proc.iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if str(FIXTURES) in cmdline:
                left.append(cmdline.replace("\0", " "))
    assert not left


def test_no_command_is_a_usage_error():
    r = subprocess.run(
        [sys.executable, "-m", "clients", "check-engine", "--"],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert "usage: nardy check-engine" in r.stderr
