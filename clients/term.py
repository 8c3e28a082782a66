"""The terminal under the client programs: full-screen redraws with a line editor, or lines.

Two modes:

* **live** (stdin and stdout are terminals, ``TERM`` is not ``dumb``): the screen is drawn
  in place (cursor home, each line cleared to its end), so the clocks can count down once a
  second without disturbing what the person is typing. The keyboard is read in cbreak mode
  by a helper thread that feeds a trio channel; a small line editor (backspace, Ctrl-U,
  Enter) echoes the input line itself. Ctrl-C interrupts as usual.
* **lines** (a pipe, a file, ``TERM=dumb``, or ``--plain``): the board is printed when it
  changes, messages as they come, input is read line by line.

Colour follows rich's rules: none when ``NO_COLOR`` is set or stdout is not a terminal.
"""

from __future__ import annotations

import codecs
import contextlib
import math
import os
import shutil
import sys
import termios
import threading
import tty
from collections import deque
from collections.abc import Iterator

import trio
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from clients.board import COMPACT_WIDTH, FULL_WIDTH

CSI = "\x1b["
MIN_COLS = COMPACT_WIDTH  # narrower than the compact board: say so instead of a mess
MIN_ROWS = 20
KEY_NAMES = {
    "\r": "enter",
    "\n": "enter",
    "\x7f": "backspace",
    "\x08": "backspace",
    "\x04": "eof",
    "\x15": "kill",  # Ctrl-U
    "\x0c": "redraw",  # Ctrl-L
    "\t": "tab",
}
ARROWS = {"A": "up", "B": "down", "C": "right", "D": "left"}


def report_console(**options) -> Console:
    """A console for tables: the terminal's width, or 150 columns when the output is a file
    or a pipe (rich's 80 would cut the columns' names)."""
    console = Console(**options)
    return console if console.is_terminal else Console(width=150, **options)


def decide_live(out=None, inp=None) -> bool:
    out = out or sys.stdout
    inp = inp or sys.stdin
    try:
        return out.isatty() and inp.isatty() and os.environ.get("TERM", "") != "dumb"
    except (AttributeError, ValueError):
        return False


class KeyDecoder:
    """Bytes from a terminal in cbreak mode -> key names and characters."""

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._esc = ""

    def feed(self, data: bytes) -> list[str]:
        keys: list[str] = []
        for ch in self._utf8.decode(data):
            if self._esc:
                self._esc += ch
                # ESC [ params final, or ESC O x; a lone ESC followed by a key is dropped
                if len(self._esc) == 2 and ch not in "[O":
                    self._esc = ""
                elif len(self._esc) > 2 and (ch.isalpha() or ch == "~"):
                    keys.append(ARROWS.get(ch, "esc-seq"))
                    self._esc = ""
                elif len(self._esc) > 12:
                    self._esc = ""
                continue
            if ch == "\x1b":
                self._esc = ch
                continue
            if ch in KEY_NAMES:
                keys.append(KEY_NAMES[ch])
            elif ch.isprintable():
                keys.append(ch)
        return keys


class Screen:
    """What the person sees, and what they type."""

    def __init__(self, *, live: bool | None = None, out=None, inp=None, height: int = 0) -> None:
        self.out = out or sys.stdout
        self.inp = inp or sys.stdin
        self.live = decide_live(self.out, self.inp) if live is None else live
        self.console = Console(file=self.out, highlight=False, soft_wrap=True)
        encoding = (getattr(self.out, "encoding", "") or "").lower().replace("-", "")
        self.unicode = encoding.startswith("utf")
        self.body = Text()
        self.status = Text()
        self.messages: deque[Text] = deque(maxlen=50)
        self.prompt = "> "
        self.buffer = ""
        self.fixed_height = height
        self._first = True
        self._drawn_size = (0, 0)
        self._keys_send, self._keys = trio.open_memory_channel(math.inf)
        self._lines_send, self._lines = trio.open_memory_channel(math.inf)
        self._saved: list | None = None
        self._decoder = KeyDecoder()
        self.line_editing = True  # False: single keys only, nothing echoed (replay)
        self.page_lines: list[str] = []  # shown in the board's place (say_lines)

    # -- set-up -------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def session(self, *, read_input: bool = True):
        """Put the terminal in the mode this screen needs; restore it however we leave."""
        fd = None
        if self.live:
            with contextlib.suppress(termios.error, ValueError, OSError):
                fd = self.inp.fileno()
                self._saved = termios.tcgetattr(fd)
                tty.setcbreak(fd)
        if read_input:
            self._start_reader()
        try:
            yield self
        finally:
            if self.live:
                self._write(f"{CSI}?25h\n")
            if fd is not None and self._saved is not None:
                with contextlib.suppress(termios.error):
                    termios.tcsetattr(fd, termios.TCSADRAIN, self._saved)

    def _start_reader(self) -> None:
        token = trio.lowlevel.current_trio_token()
        try:
            fd = self.inp.fileno()
        except (AttributeError, ValueError, OSError):
            fd = None

        def deliver(item) -> None:
            with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                if self.live:
                    for key in self._decoder.feed(item) if item is not None else ["eof"]:
                        self._on_key(key)
                else:
                    self._lines_send.send_nowait(item)

        def reader() -> None:
            try:
                while True:
                    if self.live and fd is not None:
                        data = os.read(fd, 1024)
                        if not data:
                            token.run_sync_soon(deliver, None)
                            return
                        token.run_sync_soon(deliver, data)
                    else:
                        line = self.inp.readline()
                        if not line:
                            token.run_sync_soon(deliver, None)
                            return
                        token.run_sync_soon(deliver, line.rstrip("\r\n"))
            except (trio.RunFinishedError, OSError, ValueError):
                return

        threading.Thread(target=reader, name="nardy-keys", daemon=True).start()

    # -- input --------------------------------------------------------------------------
    def _on_key(self, key: str) -> None:
        """Live mode: every key goes to the key channel; the line editor builds lines."""
        self._keys_send.send_nowait(key)
        if not self.line_editing:
            return
        if key == "enter":
            line, self.buffer = self.buffer, ""
            if self.page_lines:  # Enter closes the page; a line typed there is read too
                self.page_lines = []
                self.refresh()
                if not line:
                    return
            self._lines_send.send_nowait(line)
            self.draw_prompt()
        elif key == "backspace":
            self.buffer = self.buffer[:-1]
            self.draw_prompt()
        elif key == "kill":
            self.buffer = ""
            self.draw_prompt()
        elif key == "eof":
            if not self.buffer:
                self._lines_send.send_nowait(None)
        elif key == "redraw":
            self._first = True
            self.refresh()
        elif len(key) == 1:
            self.buffer += key
            self.draw_prompt()

    async def read_line(self) -> str | None:
        """The next line typed (None when input has ended)."""
        return await self._lines.receive()

    async def read_key(self) -> str | None:
        """The next key (live mode), or the first word of the next line ("enter" for an
        empty one); None when input has ended."""
        if self.live:
            key = await self._keys.receive()
            return None if key == "eof" else key
        line = await self._lines.receive()
        if line is None:
            return None
        word = line.strip().split()
        return word[0] if word else "enter"

    def clear_input(self) -> None:
        """Drop keys and lines typed ahead (used by programs that read single keys)."""
        for ch in (self._keys, self._lines):
            with contextlib.suppress(trio.WouldBlock):
                while True:
                    ch.receive_nowait()

    # -- output -------------------------------------------------------------------------
    def _write(self, s: str) -> None:
        try:
            self.out.write(s)
            self.out.flush()
        except (OSError, ValueError):  # the terminal is gone (closed window, broken pipe)
            pass

    def ansi_lines(self, text: Text) -> list[str]:
        """``text`` as terminal lines (colour codes when the console has colour)."""
        if not text.plain:
            return []
        with self.console.capture() as cap:
            self.console.print(text, end="", soft_wrap=True, crop=False)
        return cap.get().split("\n")

    def say(self, message: str | Text, style: str = "") -> None:
        """A message: under the board (live), or printed at once (lines)."""
        text = message if isinstance(message, Text) else Text(message, style=style)
        if self.live:
            for part in text.split("\n"):
                self.messages.append(part)
        else:
            self._print(text)

    def show(self, body: Text, status: Text | str | None = None) -> None:
        """Replace the board part of the screen; lines mode prints it (and ``status``)."""
        self.body = body
        if status is not None:
            self.status = status if isinstance(status, Text) else Text(status)
        if not self.live:
            self._print(body)
            if status is not None and self.status.plain:
                self._print(self.status)

    def _print(self, text: Text) -> None:
        self._write("\n".join(self.ansi_lines(text)) + "\n")

    def set_status(self, status: Text | str) -> None:
        self.status = status if isinstance(status, Text) else Text(status)

    def draw_prompt(self) -> None:
        if self.live:
            cols = self.size()[0]
            line = (self.prompt + self.buffer)[-max(10, cols - 1) :]
            self._write(f"\r{line}{CSI}K")

    def size(self) -> tuple[int, int]:
        cols, rows = shutil.get_terminal_size((80, 24))
        if self.fixed_height:
            rows = self.fixed_height
        return cols, rows

    @property
    def compact(self) -> bool:
        """Too narrow for the board with its side panel: use the compact layout."""
        return self.live and self.size()[0] < FULL_WIDTH

    def _needed(self, cols: int) -> tuple[int, int]:
        """Columns and rows the board now shown needs, with its status, a message line and
        the prompt (before there is a board: the compact board's)."""
        if not self.body.plain:
            return MIN_COLS, MIN_ROWS
        lines = self.body.plain.split("\n")
        status = len(self._wrapped([self.status], max(20, cols - 1))) if self.status.plain else 0
        return max(MIN_COLS, 1 + max(cell_len(line) for line in lines)), len(lines) + status + 2

    def too_small(self) -> str | None:
        """Why the terminal cannot show the board at all (live mode), or None."""
        cols, rows = self.size()
        need_cols, need_rows = self._needed(cols)
        if not self.live or (cols >= need_cols and rows >= need_rows):
            return None
        return (
            f"The terminal is {cols}x{rows}: the board needs at least {need_cols}x{need_rows} "
            f"({FULL_WIDTH} columns for the full layout). Make the window larger, or run "
            "with --plain. Typing still works."
        )

    def refresh(self) -> None:
        """Redraw everything in place (live mode only)."""
        if not self.live:
            return
        cols, rows = self.size()
        if (cols, rows) != self._drawn_size:  # resized: clear what the old size left
            self._drawn_size = (cols, rows)
            self._first = True
        width = max(20, cols - 1)
        small = self.too_small()
        if small is not None:
            text = Text(small, style="bold")
            lines = self._wrapped([text], width)[: max(1, rows - 1)]
            prompt = (self.prompt + self.buffer)[-max(10, cols - 1) :]
            self._write(
                f"{CSI}?25l{CSI}2J{CSI}H"
                + "".join(f"{line}{CSI}0m{CSI}K\n" for line in lines)
                + f"{prompt}{CSI}K{CSI}J{CSI}?25h"
            )
            self._first = True
            return
        status = self._wrapped([self.status], width) if self.status.plain else []
        if self.page_lines:
            body = self._paged(width, rows - len(status) - 2)
        else:
            body = self.ansi_lines(self.body)
        room = max(0, rows - len(body) - len(status) - 1)
        messages = self._wrapped(list(self.messages), width)[-room:] if room else []
        lines = body + status + messages
        out = [f"{CSI}?25l"]
        if self._first:
            out.append(f"{CSI}2J")
            self._first = False
        out.append(f"{CSI}H")
        for line in lines:
            out.append(f"{line}{CSI}0m{CSI}K\n")
        prompt = (self.prompt + self.buffer)[-max(10, cols - 1) :]
        out.append(f"{prompt}{CSI}K{CSI}J{CSI}?25h")
        self._write("".join(out))

    def say_lines(self, lines: list[str]) -> None:
        """Messages that belong together (help, hints): under the board when they fit there
        (live), otherwise in the board's place, in columns where that helps, until Enter."""
        if not self.live:
            self._print(Text("\n".join(lines)))
            return
        cols, rows = self.size()
        status = len(self._wrapped([self.status], max(20, cols - 1))) if self.status.plain else 0
        room = rows - len(self.body.plain.split("\n")) - status - 1
        if len(lines) <= room:
            for line in lines:
                self.say(line)
            return
        self.page_lines = list(lines)
        self.refresh()

    def _paged(self, width: int, rows: int) -> list[str]:
        """The page in ``rows`` lines at most: its first line, then the rest in as many
        columns as fit, what is left over counted."""
        head, *items = self.page_lines
        rows = max(3, rows)
        out = [head]
        column = max((cell_len(item) for item in items), default=0) + 3
        if len(items) > rows - 2 and column * 2 <= width:
            per, columns = rows - 2, width // column
            shown = items[: per * columns]
            per = -(-len(shown) // columns)  # as few rows as the columns need
            for r in range(per):
                out.append("".join(f"{item:<{column}}" for item in shown[r::per]).rstrip())
            items = items[len(shown) :]
        else:
            out += items[: rows - 2]
            items = items[rows - 2 :]
        if items:
            out.append(f"... and {len(items)} more (a taller terminal, or --plain, shows them)")
        out.append("(Enter: back to the board)")
        return out

    def _wrapped(self, texts: list[Text], width: int) -> list[str]:
        out: list[str] = []
        for text in texts:
            for line in text.wrap(self.console, width):
                out += self.ansi_lines(line) or [""]
        return out

    def finish(self, lines: Iterator[str] | list[str] = ()) -> None:
        """Leave the final screen in place and print ``lines`` under it."""
        if self.live:
            self.refresh()
            self._write("\n")
        for line in lines:
            self._write(line + "\n")
