"""Ask GNU Backgammon for the legal plays of short-nardy cases (RULES.md §8-9).

Runs inside gnubg's embedded Python, not the project's::

    ORACLE_IN=cases.txt ORACLE_OUT=answers.jsonl gnubg -t -q -r -p tools/gnubg_driver.py

``cases.txt`` holds one ``POSITION DICE`` per line (§9 position text, dice ``a-b``). For
each, one JSON line goes to ``answers.jsonl``: ``{"moves": [...], "ends": [...]}``, gnubg's
move strings (its ``hint`` list, every move at 0 ply) and the end position each leads to, as
§9 text with the opponent to move. No legal move gives two empty lists.

Only the standard library and gnubg's module are used (nothing of ``nardy``), so the
conversions below are written again from §9 on purpose: an oracle that shares the
project's code could share its mistakes. gnubg's boards are ``(opponent, on roll)``, each
25 counts: index ``i`` is that side's own point ``i + 1``, index 24 its bar; the mover's
point ``p`` is the opponent's point ``25 - p``. gnubg lists each distinct end position once.
"""

import json
import os

import gnubg

EVERY_MOVE = 100000  # more than any roll has (gnubg's own limit is 3060)


def to_gnubg(text):
    """§9 position text -> (side letter, gnubg board (opponent, mover))."""
    side, counts, bars = text.strip().split("/")
    board = [int(c) for c in counts.split(",")]
    white_bar, black_bar = (int(c) for c in bars.split(","))
    # §9: white's point p is at a = 24 - p, black's point q at a = q - 1.
    white = [max(board[24 - p], 0) for p in range(1, 25)] + [white_bar]
    black = [max(-board[q - 1], 0) for q in range(1, 25)] + [black_bar]
    return side, ((black, white) if side == "w" else (white, black))


def to_text(side, opponent, mover):
    """The §9 text of a gnubg board after ``side`` moved: the opponent is to move."""
    white, black = (mover, opponent) if side == "w" else (opponent, mover)
    board = [0] * 24
    for p in range(1, 25):
        board[24 - p] += white[p - 1]
        board[p - 1] -= black[p - 1]
    nxt = "b" if side == "w" else "w"
    return f"{nxt}/{','.join(map(str, board))}/{white[24]},{black[24]}"


def apply(board, move):
    """The board after gnubg's move string ``move`` (steps read by ``gnubg.parsemove``:
    ``(from, to)`` in the mover's points, 25 the bar, 0 off). A step lands only where gnubg
    writes a point; a lone opposing checker there is hit (§8)."""
    opponent, mover = (list(side) for side in board)
    for src, dst in gnubg.parsemove(move):
        if mover[src - 1] <= 0:
            raise ValueError(f"{move}: no checker on {src}")
        mover[src - 1] -= 1
        if dst > 0:
            theirs = 24 - dst  # the mover's point dst is the opponent's point 25 - dst
            if opponent[theirs] >= 2:
                raise ValueError(f"{move}: {dst} is closed")
            if opponent[theirs] == 1:
                opponent[theirs] = 0
                opponent[24] += 1
            mover[dst - 1] += 1
    return opponent, mover


def answer(text, dice):
    side, board = to_gnubg(text)
    gnubg.command("set board " + gnubg.positionid(board))
    a, b = dice.split("-")
    gnubg.command(f"set dice {a} {b}")
    hint = gnubg.hint(EVERY_MOVE)
    moves = [h["move"] for h in hint["hint"]]
    ends = [to_text(side, *apply(board, m)) for m in moves]
    if len(set(ends)) != len(ends):
        raise ValueError(f"{text} {dice}: gnubg listed an end position twice: {moves}")
    return {"moves": moves, "ends": ends}


def main():
    for command in (
        "set player 0 human",
        "set player 1 human",
        "set automatic move off",
        "set display off",
        "set evaluation chequerplay evaluation plies 0",
        "new game",
    ):
        gnubg.command(command)
    with open(os.environ["ORACLE_IN"]) as cases, open(os.environ["ORACLE_OUT"], "w") as out:
        for line in cases:
            text, dice = line.split()
            out.write(json.dumps(answer(text, dice)) + "\n")


main()
