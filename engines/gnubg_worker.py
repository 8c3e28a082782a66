"""GNU Backgammon's side of the gnubg engine (engines/gnubg.py): runs inside gnubg's
embedded Python, not the project's, and answers requests until its input closes::

    NARDY_GNUBG_FDS=R,W gnubg -t -q -r -p engines/gnubg_worker.py

Requests come one JSON object a line on file descriptor R, answers go one a line to W
(gnubg's own output stays on its stdout). First it writes ``{"ready": true}``. Boards
are gnubg's: ``[opponent, on roll]``, each 25 counts, index ``i`` that side's own point
``i + 1``, index 24 its bar. Steps are ``[from, to]`` in the mover's points (25 the bar, 0
off), as ``gnubg.findbestmove`` and ``gnubg.parsemove`` give them.

* ``{"op": "best", "board": B, "dice": [a, b], "ply": N}`` -> ``{"steps": [[f, t], ...]}``:
  gnubg's best move (``findbestmove``), ``[]`` when no move is legal.
* ``{"op": "hint", "board": B, "dice": [a, b], "ply": N}`` -> ``{"moves": [{"steps": ...,
  "probs": [win, win gammon, win backgammon, lose gammon, lose backgammon], "ply": n},
  ...]}``: every legal move, best first (``hint``), each with the ply it was judged at
  (gnubg's move filters judge only the closest candidates at the full ply).
* ``{"op": "evaluate", "boards": [B, ...], "ply": N}`` -> ``{"probs": [[5 floats], ...]}``:
  each board judged for its side on roll.

Every evaluation is cubeless money play, deterministic, without noise; anything that fails
answers ``{"error": text}``. Only the standard library and gnubg's module are used.
"""

import json
import os

import gnubg

SETUP = (
    "set threads 1",  # one core, as every engine gets
    "set player 0 human",  # gnubg never moves by itself here
    "set player 1 human",
    "set variation standard",
    "set jacoby off",  # gammons and backgammons count in money play
    "set cube use off",  # short nardy has no cube
    "set evaluation chequerplay evaluation cubeful off",
    "set evaluation chequerplay evaluation deterministic on",
    "set evaluation chequerplay evaluation noise 0",
    "set evaluation chequerplay evaluation prune on",
    "new session",  # a money game
)
EVERY_MOVE = 100000  # more than any roll has (gnubg's own limit is 3060)

_plies = [None]  # the ply hint's settings hold now


def context(ply):
    """Cubeless, ``ply`` plies, deterministic, pruning, no noise."""
    return gnubg.evalcontext(0, ply, 1, 1, 0.0)


def board_of(board):
    return tuple(tuple(int(c) for c in side) for side in board)


def pairs(flat):
    return [[flat[i], flat[i + 1]] for i in range(0, len(flat), 2)]


def best(request, cube):
    board = board_of(request["board"])
    a, b = request["dice"]
    flat = gnubg.findbestmove(board, cube, context(request["ply"]), (a, b))
    return {"steps": pairs(flat)}


def hint(request, cube):
    board = board_of(request["board"])
    ply = request["ply"]
    if _plies[0] != ply:
        gnubg.command(f"set evaluation chequerplay evaluation plies {ply}")
        _plies[0] = ply
    gnubg.command("set board " + gnubg.positionid(board))
    a, b = request["dice"]
    gnubg.command(f"set dice {a} {b}")
    moves = []
    for h in gnubg.hint(EVERY_MOVE)["hint"]:
        moves.append(
            {
                "steps": [list(s) for s in gnubg.parsemove(h["move"])],
                "probs": list(h["details"]["probs"]),
                "ply": h["context"]["plies"],
            }
        )
    return {"moves": moves}


def evaluate(request, cube):
    ec = context(request["ply"])
    return {"probs": [list(gnubg.evaluate(board_of(b), cube, ec)[:5]) for b in request["boards"]]}


OPS = {"best": best, "hint": hint, "evaluate": evaluate}


def main():
    r, w = (int(fd) for fd in os.environ["NARDY_GNUBG_FDS"].split(","))
    requests = os.fdopen(r, "r")
    answers = os.fdopen(w, "w")
    for command in SETUP:
        gnubg.command(command)
    cube = gnubg.cubeinfo()
    answers.write(json.dumps({"ready": True}) + "\n")
    answers.flush()
    for line in requests:
        try:
            request = json.loads(line)
            answer = OPS[request["op"]](request, cube)
        except Exception as e:  # noqa: BLE001 - the engine reads the error and says it
            answer = {"error": f"{type(e).__name__}: {e}"}
        answers.write(json.dumps(answer) + "\n")
        answers.flush()


main()
