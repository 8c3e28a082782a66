"""What the person types, read into a command (no game state here)."""

from __future__ import annotations

from dataclasses import dataclass

HELP = """\
Commands (your turn):
  24/18 18/13   a whole play: submitted at once (also 24/13, 24/16(2), 6/off)
  24/18         one step; more steps follow, then 'done' (or Enter) submits
  24            choose the checker on 24: its legal targets are shown; then 18 moves it
  off           bear the chosen checker off        bar   choose a checker on the bar
  bar/22 13/7*  short nardy: enter from the bar; * marks a hit (optional)
  undo  (u)     take back the last step           done (d)   submit the play
  hint  (h)     the engine's best plays, valued   hint all   every legal play
  resign        resign this game (asks)           help       this text
  quit  (q)     leave (asks; says what becomes of the game)
  analyse       once a game is over: each play's equity loss against the best play found"""

WORDS = {
    "": "enter",
    "help": "help",
    "?": "help",
    "quit": "quit",
    "exit": "quit",
    "q": "quit",
    "resign": "resign",
    "hint": "hint",
    "h": "hint",
    "undo": "undo",
    "u": "undo",
    "done": "done",
    "d": "done",
    "off": "off",
    "y": "yes",
    "yes": "yes",
    "n": "next",
    "next": "next",
    "c": "next",
    "continue": "next",
    "analyse": "analyse",
    "analyze": "analyse",
}


@dataclass(frozen=True)
class Command:
    """``kind``: enter, help, quit, resign, hint, hint-all, undo, done, off, yes, next,
    analyse, point (``point`` set) or moves (``text``: notation to read by the rules)."""

    kind: str
    text: str = ""
    point: int = 0


def parse_command(line: str) -> Command:
    text = line.strip()
    word = text.lower()
    if word in ("hint all", "h all", "hint a"):
        return Command("hint-all")
    if word in WORDS:
        return Command(WORDS[word], text)
    if word.isdigit():
        return Command("point", text, int(word))
    if word == "bar":
        return Command("point", text, 25)  # the bar as a step's source (nardy.variant.BAR)
    return Command("moves", text)


__all__ = ["HELP", "Command", "parse_command"]
