"""Post-game analysis, in the spirit of GNU Backgammon's: each play of a game record
against the best play a judge finds, its equity loss and a mark.

Pure computation over a record (:mod:`nardy.record`) and a *judge*, with no I/O: an engine
with a ``judge`` method (the network for long nardy, gnubg for short nardy where it is
installed: ``JUDGES`` in engines/registry.py says, per variant, who judges). ``nardy
analyse`` (clients/analyse.py), the terminal client after a game and the web view's
replay marks all use it.

* Only turns with a choice are judged: a forced play (one legal play) and a pass (none)
  are skipped.
* The judge values the plays, for the side to move, in points of money play (cubeless;
  the match score is not considered). At 0 ply every play is valued; deeper, the judge's
  best candidates and the play made. The **loss** of a play is the best value found
  minus the played one's (0 when the play made is the best found).
* **Marks**, by loss in points (gnubg's default thresholds): at least
  :data:`DOUBTFUL` (0.04) doubtful ``?!``, :data:`BAD` (0.08) bad ``?``, :data:`VERY_BAD`
  (0.16) very bad ``??`` (a blunder).
* Each side's **error rate**: its mean loss per judged play, times 1000 (millipoints per
  play, as gnubg's money-play error rate), and its total loss.

A judge whose values are not equities (greedy's short-nardy score: ``judge_in_points``
False) still ranks the plays, but its losses are in its own units and no play is marked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from nardy.game import Color
from nardy.record import GameRecord, replay

DOUBTFUL = 0.04
BAD = 0.08
VERY_BAD = 0.16
#: The marks, worst first: (least loss in points, mark, name).
MARKS = ((VERY_BAD, "??", "very bad"), (BAD, "?", "bad"), (DOUBTFUL, "?!", "doubtful"))
BLUNDERS = 5  # the biggest losses listed per game


class Judge(Protocol):
    """What analysis asks of an engine (engines/registry.py's ``JUDGES``)."""

    name: str
    judge_plies: tuple[int, ...]  # the depths it searches
    judge_in_points: bool  # its values are equities in points

    def judge(
        self, position: Any, dice: tuple[int, int], plays: list, played: int, ply: int
    ) -> dict[int, float]:
        """Values, for the side to move, of some of ``plays`` by index: always
        ``plays[played]`` and the best the judge finds, all searched ``ply`` deep."""
        ...


def mark(loss: float) -> str:
    """The mark of a loss in points: ``??``, ``?``, ``?!`` or ``""``."""
    return next((m for least, m, _ in MARKS if loss >= least - 1e-9), "")


@dataclass(frozen=True)
class PlayAnalysis:
    """One judged play."""

    turn: int  # the record's turn number (1 = the first play or pass)
    side: Color
    dice: tuple[int, int]
    played: str  # the play made, in the variant's notation
    best: str  # the best play found (the play made when it is as good)
    equity: float  # the play made's value, for its side
    best_equity: float
    loss: float  # best_equity - equity, never below 0
    mark: str
    choices: int  # legal plays

    def to_dict(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "side": self.side.letter,
            "dice": list(self.dice),
            "played": self.played,
            "best": self.best,
            "equity": round(self.equity, 4),
            "best_equity": round(self.best_equity, 4),
            "loss": round(self.loss, 4),
            "mark": self.mark,
            "choices": self.choices,
        }


@dataclass
class SideSummary:
    """A side's figures over one game (or a player's over several)."""

    name: str
    plays: int = 0  # judged plays (forced plays and passes are not)
    loss: float = 0.0  # total loss
    marks: dict[str, int] = field(default_factory=lambda: {m: 0 for _, m, _ in MARKS})

    @property
    def error_rate(self) -> float:
        """Mean loss per judged play, times 1000."""
        return 1000 * self.loss / self.plays if self.plays else 0.0

    def add(self, p: PlayAnalysis) -> None:
        self.plays += 1
        self.loss += p.loss
        if p.mark:
            self.marks[p.mark] += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "plays": self.plays,
            "loss": round(self.loss, 4),
            "error_rate": round(self.error_rate, 1),
            "doubtful": self.marks["?!"],
            "bad": self.marks["?"],
            "very_bad": self.marks["??"],
        }


@dataclass
class GameAnalysis:
    """One game's analysis: its judged plays and each side's summary."""

    number: int
    variant: str
    judge: str
    ply: int
    in_points: bool
    turns: int  # turns in the record (plays and passes)
    plays: list[PlayAnalysis]
    sides: dict[Color, SideSummary]

    @property
    def skipped(self) -> int:
        """Forced plays and passes: not judged."""
        return self.turns - len(self.plays)

    def blunders(self, n: int = BLUNDERS) -> list[PlayAnalysis]:
        """The ``n`` biggest losses (above 0), biggest first."""
        lost = [p for p in self.plays if p.loss > 0]
        return sorted(lost, key=lambda p: (-p.loss, p.turn))[:n]

    def to_dict(self) -> dict[str, Any]:
        return {
            "game": self.number,
            "variant": self.variant,
            "turns": self.turns,
            "skipped": self.skipped,
            "plays": [p.to_dict() for p in self.plays],
            "sides": {c.name.lower(): s.to_dict() for c, s in self.sides.items()},
            "blunders": [p.turn for p in self.blunders()],
        }


def analyse_game(
    game: GameRecord,
    judge: Judge,
    ply: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> GameAnalysis:
    """Judge every play of ``game`` with a choice, ``ply`` deep (one of the judge's
    ``judge_plies``). The record is checked by the rules first
    (:class:`~nardy.record.RecordError` names an illegal turn). ``progress(done, turns)``
    is called after each turn."""
    if ply not in judge.judge_plies:
        raise ValueError(f"{judge.name} judges at {', '.join(map(str, judge.judge_plies))} ply")
    replay(game)
    rules = game.rules
    judge.rules = rules
    names = {c: game.headers.get(c.name.title(), "") or c.name.lower() for c in Color}
    out = GameAnalysis(
        number=game.number,
        variant=rules.name,
        judge=judge.name,
        ply=ply,
        in_points=judge.judge_in_points,
        turns=len(game.turns),
        plays=[],
        sides={c: SideSummary(names[c]) for c in Color},
    )
    position = game.start
    for n, t in enumerate(game.turns, 1):
        if t.play.strip() == "-":
            position = rules.passed(position)
        else:
            made = rules.match_play(position, t.dice, t.play)
            plays = rules.legal_plays(position, t.dice)
            if len(plays) > 1:
                judged = _judge(judge, position, t.dice, plays, made, ply, n)
                out.plays.append(judged)
                out.sides[t.side].add(judged)
            position = made.end
        if progress is not None:
            progress(n, len(game.turns))
    return out


def _judge(judge: Judge, position, dice, plays: list, made, ply: int, turn: int) -> PlayAnalysis:
    ends = [p.end.text() for p in plays]
    played = ends.index(made.end.text())
    values = judge.judge(position, dice, plays, played, ply)
    best = max(values, key=lambda i: (values[i], i == played))  # a tie: the play made
    loss = max(0.0, values[best] - values[played])
    if loss == 0.0:
        best = played
    return PlayAnalysis(
        turn=turn,
        side=position.turn,
        dice=dice,
        played=plays[played].notation(),
        best=plays[best].notation(),
        equity=values[played],
        best_equity=values[best],
        loss=loss,
        mark=mark(loss) if judge.judge_in_points else "",
        choices=len(plays),
    )


def players(games: list[GameAnalysis]) -> dict[str, SideSummary]:
    """Each player's figures over several games (by name: colours change in a match)."""
    out: dict[str, SideSummary] = {}
    for g in games:
        for side in g.sides.values():
            total = out.setdefault(side.name, SideSummary(side.name))
            total.plays += side.plays
            total.loss += side.loss
            for m, count in side.marks.items():
                total.marks[m] += count
    return out


def report(games: list[GameAnalysis]) -> dict[str, Any]:
    """The analysis of a record as one JSON-ready object (``nardy analyse --json``)."""
    first = games[0]
    return {
        "format": "nardy-analysis",
        "version": 1,
        "judge": first.judge,
        "ply": first.ply,
        "units": "points" if first.in_points else "score",
        "thresholds": {"doubtful": DOUBTFUL, "bad": BAD, "very_bad": VERY_BAD},
        "games": [g.to_dict() for g in games],
        "players": {n: s.to_dict() for n, s in players(games).items()},
    }


__all__ = [
    "BAD",
    "DOUBTFUL",
    "MARKS",
    "VERY_BAD",
    "GameAnalysis",
    "Judge",
    "PlayAnalysis",
    "SideSummary",
    "analyse_game",
    "mark",
    "players",
    "report",
]
