"""Short nardy's legal plays against GNU Backgammon, an independent program (RULES.md §8).

``python -m tools.short_oracle corpus`` makes seeded cases of every kind, asks gnubg for
each case's legal plays (``tools/gnubg_driver.py``, run inside gnubg) and writes them to
``tests/short/gnubg_corpus.txt.gz``, which ``tests/short/test_gnubg_oracle.py`` compares
with :func:`nardy.short.legal_plays`. ``python -m tools.short_oracle live [--cases N]
[--seed S]`` compares fresh cases with gnubg directly and prints every disagreement.
gnubg comes from Debian (``make gnubg`` installs it).

Cases: positions met in random self-play from the start, and random valid positions of
every kind of ``tests/short/naive.py`` (scattered, on the bar against closed points,
bear-off, nearly home, contact), with random dice; each tagged with what its legal plays
show (:data:`TAGS`), and chosen so that every tag has its quota.

The corpus stores each legal play's end position as the slots it changes from the case's
position (``a:count`` for board index ``a``, ``24:``/``25:`` for the white/black bar; the
side to move always flips), so a few thousand cases stay small.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from engines.gnubg import gnubg_path
from nardy.game import Color
from nardy.short.movegen import Play, Turn, legal_plays
from nardy.short.position import BAR, CHECKERS, OFF, Position, absolute
from tests.short.naive import KINDS, random_dice, random_position
from tests.short.test_cross_check import CHECK

ROOT = Path(__file__).resolve().parent.parent
DRIVER = ROOT / "tools" / "gnubg_driver.py"
CORPUS = ROOT / "tests" / "short" / "gnubg_corpus.txt.gz"
SEED = 1
SELF_PLAY = 1000  # cases from self-play games
PER_TAG = 250  # random cases wanted for each tag
POOL = 100000  # random cases drawn at most to fill the quotas
Case = tuple[Position, tuple[int, int]]

# What a case's legal plays show (by our generator: tags choose cases, gnubg judges them).
TAGS = (
    "doubles",  # the dice are a double: up to four steps (§3.1)
    "bar",  # the mover has a checker on the bar: it enters first (§8)
    "blocked",  # no legal play at all: the turn passes (§3.6, §8)
    "one-die",  # not a double and only one die can be played (§3.6)
    "larger-die",  # ... though either die could be played alone: the larger (§3.6)
    "partial-double",  # a double of which only one to three steps can be played (§3.6)
    "hit",  # some play hits a blot (§8)
    "bear-off",  # all home at the start: bearing off (§4)
    "mid-turn-bear-off",  # not all home at the start, but some play bears off (§4.1)
    "inside-home",  # all home, and a play moves inside home while another bears off (§4.5)
    "game-end",  # some play bears off the 15th checker (§4.6)
    "hit-on-the-way-off",  # ... and hits on the way (§3.6 with §4.6)
)


def gnubg_version(gnubg: str) -> str:
    out = subprocess.run([gnubg, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()[0].strip()


def ask_gnubg(cases: list[Case], gnubg: str) -> list[dict[str, list[str]]]:
    """gnubg's answer for each case: its move strings and their end positions (§9 text)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp, "cases.txt"), Path(tmp, "answers.jsonl")
        src.write_text("".join(f"{p.text()} {d[0]}-{d[1]}\n" for p, d in cases))
        env = {**os.environ, "ORACLE_IN": str(src), "ORACLE_OUT": str(dst), "HOME": tmp}
        run = subprocess.run(
            [gnubg, "-t", "-q", "-r", "-p", str(DRIVER)],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        answers = [json.loads(line) for line in dst.read_text().splitlines()]
        if run.returncode or len(answers) != len(cases):
            raise RuntimeError(f"gnubg failed ({run.returncode}):\n{run.stderr[-2000:]}")
    return answers


def ours(position: Position, dice: tuple[int, int]) -> set[str]:
    """Our legal plays' end positions (§3.7); empty when no die can be played."""
    return {play.end.text() for play in legal_plays(position, dice)}


# -- the corpus's compact end positions ------------------------------------------------------


def slots(text: str) -> list[int]:
    """The 24 board counts and the two bars of a §9 position text."""
    _, board, bars = text.split("/")
    return [int(c) for c in board.split(",")] + [int(c) for c in bars.split(",")]


def encode(position: Position, end: str) -> str:
    """``end`` as the slots it changes from ``position``: ``a:count,...``."""
    start = [*position.board, *position.bar]
    return ",".join(
        f"{i}:{c}" for i, (s, c) in enumerate(zip(start, slots(end), strict=True)) if s != c
    )


def decode(position: Position, code: str) -> str:
    """The §9 text (opponent to move) of an end position written by :func:`encode`."""
    s = [*position.board, *position.bar]
    for field in filter(None, code.split(",")):
        i, c = field.split(":")
        s[int(i)] = int(c)
    side = position.turn.opponent.letter
    return f"{side}/{','.join(map(str, s[:24]))}/{s[24]},{s[25]}"


# -- cases -----------------------------------------------------------------------------------


def tags(position: Position, dice: tuple[int, int], plays: list[Play]) -> list[str]:
    """Which of :data:`TAGS` the case shows, read from its legal plays."""
    me = position.turn
    out = []
    double = dice[0] == dice[1]
    steps = max((len(p.steps) for p in plays), default=0)
    over = any(p.end.borne_off(me) == CHECKERS for p in plays)
    home = not any(position.count(me, q) for q in range(7, BAR + 1))
    bears = any(s.dst == OFF for p in plays for s in p.steps)
    if double:
        out.append("doubles")
    if position.on_bar(me):
        out.append("bar")
    if not plays:
        out.append("blocked")
    if not double and steps == 1 and not over:
        out.append("one-die")
        turn = Turn(position, dice)
        if all(turn.steps_from(turn.start, 0, d) for d in dice):
            out.append("larger-die")
    if double and 0 < steps < 4 and not over:
        out.append("partial-double")
    if any(s.hit for p in plays for s in p.steps):
        out.append("hit")
    if home:
        out.append("bear-off")
        if bears and any(s.dst != OFF for p in plays for s in p.steps):
            out.append("inside-home")
    elif bears:
        out.append("mid-turn-bear-off")
    if over:
        out.append("game-end")
        if any(p.end.borne_off(me) == CHECKERS and any(s.hit for s in p.steps) for p in plays):
            out.append("hit-on-the-way-off")
    return out


def _made(rng: random.Random, mine: dict[int, int], blots: int, closed: int) -> Position:
    """A position of a random side to move with ``mine`` (own point -> count, 25 the bar;
    the rest borne off) against ``closed`` points of 2-3 and ``blots`` lone checkers of the
    opponent on the mover's free points 1..24 (the rest of them on the bar or off)."""
    me = rng.choice(list(Color))
    board = [0] * 24
    for p, n in mine.items():
        if p != BAR:
            board[absolute(me, p)] = me.sign * n
    free = [p for p in range(1, 25) if p not in mine]
    left = CHECKERS
    for i, p in enumerate(rng.sample(free, min(len(free), blots + closed))):
        n = min(left, 1 if i < blots else rng.randint(2, 3))
        board[absolute(me, p)] -= me.sign * n
        left -= n
    bar = [0, 0]
    bar[me] = mine.get(BAR, 0)
    bar[me.opponent] = rng.randint(0, min(2, left))
    return Position.from_board(me, board, bar)


def stuck_position(rng: random.Random) -> Position:
    """One or two runners (maybe on the bar) against a wall of closed points, the rest of
    the mover's checkers on its 1 point (they cannot move) or off: one die often plays
    and the other not, or either alone but not both (§3.6)."""
    runners = rng.sample([*range(7, 25), BAR], rng.randint(1, 2))
    mine = {p: 1 for p in runners} | {1: rng.randint(0, CHECKERS - len(runners))}
    return _made(rng, {p: n for p, n in mine.items() if n}, rng.randint(0, 2), rng.randint(4, 7))


def last_checkers_position(rng: random.Random) -> Position:
    """One to three checkers left at home, the opponent's blots and points scattered: a
    last checker can hit on its way off (§3.6 with §4.6)."""
    mine: Counter[int] = Counter(rng.choice(range(1, 7)) for _ in range(rng.randint(1, 3)))
    return _made(rng, dict(mine), rng.randint(1, 4), rng.randint(0, 4))


# Random positions by kind: those of tests/short/naive.py and two of this module's own.
MAKERS = {
    **{kind: lambda rng, kind=kind: random_position(rng, kind) for kind in KINDS},
    "stuck": stuck_position,
    "last-checkers": last_checkers_position,
}


def cases(seed: int, self_play: int, per_tag: int, pool: int) -> list[tuple[Case, list[str]]]:
    """``self_play`` self-play cases, then random cases until each tag has ``per_tag`` (as
    far as ``pool`` random cases allow), each with its tags."""
    rng = random.Random(seed)
    chosen = [
        ((p, d), ["self-play", *tags(p, d, legal_plays(p, d))])
        for p, d in CHECK.self_play_cases(rng, self_play)
    ]
    have: Counter[str] = Counter()
    makers = list(MAKERS.items())
    for i in range(pool):
        if all(have[t] >= per_tag for t in TAGS):
            break
        kind, make = makers[i % len(makers)]
        position = make(rng)
        dice = random_dice(rng)
        if position.on_bar(position.turn) and rng.random() < 0.5:
            dice = (dice[0], dice[0])  # doubles on the bar: partial entries (§8)
        found = tags(position, dice, legal_plays(position, dice))
        if any(have[t] < per_tag for t in found):
            have.update(found)
            chosen.append(((position, dice), [f"random-{kind}", *found]))
    return chosen


def disagreements(
    chosen: Iterable[tuple[Case, list[str]]], answers: Iterable[dict[str, list[str]]]
) -> list[str]:
    """One paragraph per case where gnubg's end positions differ from ours."""
    out = []
    for ((position, dice), found), answer in zip(chosen, answers, strict=True):
        theirs = dict(zip(answer["ends"], answer["moves"], strict=True))
        mine = ours(position, dice)
        if mine != set(theirs):
            out.append(
                f"{position.text()} {dice[0]}-{dice[1]} ({', '.join(found)}):\n"
                f"  only gnubg: {sorted(f'{theirs[e]} -> {e}' for e in set(theirs) - mine)}\n"
                f"  only ours:  {sorted(mine - set(theirs))}"
            )
    return out


def write_corpus(path: Path, seed: int, gnubg: str) -> Counter[str]:
    chosen = cases(seed, SELF_PLAY, PER_TAG, POOL)
    answers = ask_gnubg([c for c, _ in chosen], gnubg)
    count: Counter[str] = Counter()
    lines = [
        f"# legal plays by {gnubg_version(gnubg)} (python -m tools.short_oracle corpus "
        f"--seed {seed}); one case a line: position dice tags end-positions, each end as the "
        "slots it changes (a:count; 24/25 the white/black bar), '-' for no legal play\n"
    ]
    for ((position, dice), found), answer in zip(chosen, answers, strict=True):
        count.update(found)
        count["plays"] += len(answer["ends"])
        ends = " ".join(sorted(encode(position, e) for e in answer["ends"])) or "-"
        lines.append(f"{position.text()} {dice[0]}-{dice[1]} {','.join(found)} {ends}\n")
    with gzip.open(path, "wt", compresslevel=9) as f:
        f.write("".join(lines))
    count["cases"] = len(chosen)
    return count


def read_corpus(path: Path = CORPUS) -> list[tuple[Case, list[str], set[str]]]:
    """The corpus's cases: (position, dice), tags, gnubg's end positions as §9 texts."""
    out = []
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith("#"):
                continue
            text, dice, found, *ends = line.split(" ")
            position = Position.parse(text)
            a, b = dice.split("-")
            codes = [e.strip() for e in ends if e.strip() != "-"]
            out.append(
                (
                    (position, (int(a), int(b))),
                    found.split(","),
                    {decode(position, e) for e in codes},
                )
            )
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.short_oracle", description=__doc__)
    parser.add_argument("mode", choices=("corpus", "live"))
    parser.add_argument("--seed", type=int, default=None, help=f"corpus: {SEED}; live: random")
    parser.add_argument("--cases", type=int, default=300, help="live: random cases per tag")
    args = parser.parse_args(argv)
    gnubg = gnubg_path()
    if gnubg is None:
        print("gnubg is not installed (make gnubg)", file=sys.stderr)
        return 2
    if args.mode == "corpus":
        count = write_corpus(CORPUS, SEED if args.seed is None else args.seed, gnubg)
        print(f"wrote {CORPUS.relative_to(ROOT)}: {dict(sorted(count.items()))}")
        return 0
    seed = random.randrange(1 << 32) if args.seed is None else args.seed
    chosen = cases(seed, args.cases, args.cases, 40 * args.cases)
    bad = disagreements(chosen, ask_gnubg([c for c, _ in chosen], gnubg))
    count = Counter(t for _, found in chosen for t in found)
    print(f"seed {seed}: {len(chosen)} cases {dict(sorted(count.items()))}")
    print(f"{len(bad)} disagree with gnubg")
    print("\n".join(bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
