"""How the arbiter judges the plays of a game.

A play comes as notation or as its end position and is found among the legal plays of the
turn awaiting it (a play given as the server wrote it is found without parsing). A play
that is none of them is refused and counted against the side to move; past the game's
limit that side loses (a ladder rule). A play sent again for a turn already played gets
the same answer, marked duplicate, in an ended game too: its answers are read back from
the end of its journal.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from nardy import Color
from nardy.game import IllegalPlay
from nardy.variant import GamePlay as Play
from nardy.variant import Variant
from server.core.journal import Event, EventType
from server.errors import ArbiterError, Code

# A resend to an ended game is answered from its journal's last events (read back from the
# store, for anyone holding a seat token): the last play's TURN_STARTED and PLAY_MADE and
# what ended the game after it. An earlier turn of an ended game is just over.
RESEND_TAIL = 4

History = Callable[[int], Awaitable[list[Event]]]  # the game's told events (tail, or all: 0)


@dataclass(frozen=True)
class Accepted:
    """The answer to an accepted play, kept for idempotent re-sends."""

    notation: str
    end_position: str
    used_ms: int
    duplicate: bool = False


class Judge:
    """The plays of one game as judged: the answers to those made, the refusals per side."""

    def __init__(self, rules: Variant, limit: int) -> None:
        self.rules = rules
        self.limit = limit  # refused plays that lose the game (0: none do)
        self.accepted: dict[int, Accepted] = {}  # turn_id -> the answer to its play
        self.refused = {Color.WHITE: 0, Color.BLACK: 0}  # plays refused as illegal, per side

    def read(
        self, position: Any, dice: tuple[int, ...], legal: tuple[Play, ...], notation, end
    ) -> Play:
        """The play of ``legal`` (the awaited turn's, thrown ``dice`` at ``position``) that
        ``notation`` or ``end`` (its end position) names; one that names none is refused
        (INVALID_ARGUMENT) and counted against the side to move."""
        play = _written(legal, notation or "") if end is None else _ending(legal, end)
        if play is not None:
            return play
        try:
            if end is None:  # recorded as the legal play it matches: its canonical notation
                written = self.rules.match_play(position, dice, notation or "")
                return next((play for play in legal if play.end == written.end), written)
            target = self.rules.parse(end)
            for play in legal:
                if play.end == target:
                    return play
            raise IllegalPlay("end_position is not the end of any legal play this turn")
        except (IllegalPlay, ValueError) as e:
            self.refused[position.turn] += 1
            raise ArbiterError(Code.INVALID_ARGUMENT, f"illegal play: {e}") from None

    def over_limit(self, side: Color) -> bool:
        """Whether ``side`` has had as many plays refused as lose the game."""
        return bool(self.limit) and self.refused[side] >= self.limit

    async def resent(
        self, turn_id: int, notation: str | None, end: str | None, history: History, ended: bool
    ) -> Accepted | None:
        """If turn ``turn_id`` was played already: the answer to the same play again, marked
        duplicate, or FAILED_PRECONDITION for another play; None if it was not. ``ended``:
        the game is over and ``turn_id`` one of its turns (an ended game keeps no answers
        in memory, see Game.release: they are read back from the end of its ``history``)."""
        answer = self.accepted.get(turn_id)
        if answer is None and ended:
            answer = await self._journaled_answer(turn_id, history)
        if answer is None:
            return None
        requested = await self._requested_end(turn_id, notation, end, history)
        if requested is not None and requested.text() == answer.end_position:
            return Accepted(answer.notation, answer.end_position, answer.used_ms, True)
        raise ArbiterError(
            Code.FAILED_PRECONDITION,
            f"turn {turn_id} was already played ({answer.notation})",
        )

    async def _requested_end(
        self, turn_id: int, notation: str | None, end: str | None, history: History
    ):
        if end is not None:
            try:
                return self.rules.parse(end)
            except ValueError:
                return None
        return await self._replay_end(turn_id, notation, history)

    async def _journaled_answer(self, turn_id: int, history: History) -> Accepted | None:
        """The answer to ``turn_id``'s play read back from the end of the journal; None for
        a turn before the last play's (see RESEND_TAIL)."""
        for event in reversed(await history(RESEND_TAIL)):
            play = event.play
            if event.type is EventType.PLAY_MADE and play is not None and play.turn_id == turn_id:
                return Accepted(play.notation, event.snapshot.position.text(), play.used_ms)
        return None

    async def _replay_end(self, turn_id: int, notation: str | None, history: History) -> Any:
        """The end position ``notation`` would have given on an already played turn."""
        for event in reversed(await history(RESEND_TAIL)):
            if event.type is EventType.TURN_STARTED and event.snapshot.turn_id == turn_id:
                snap = event.snapshot
                try:
                    return self.rules.match_play(snap.position, snap.dice, notation or "").end
                except ValueError:
                    return None
        return None

    def release(self) -> None:
        """The game ended: its answers are read back from the journal (see resent)."""
        self.accepted = {}


# A turn's plays are searched in order: a turn is played once, so an index of its 20-odd
# plays would be built for one look-up (bots often send the first).
def _written(legal: tuple[Play, ...], notation: str) -> Play | None:
    """The play of ``legal`` whose notation, as the server writes it, is ``notation``."""
    for play in legal:
        if play.notation() == notation:
            return play
    return None


def _ending(legal: tuple[Play, ...], end: str) -> Play | None:
    """The play of ``legal`` whose end position, as the server writes it, is ``end``."""
    for play in legal:
        if play.end.text() == end:
            return play
    return None
