"""The one engine-process supervisor: ``nardy play``, ``nardy ladder`` and ``check-engine``.

An :class:`EngineProcess` runs one engine command as a child process:

* **environment**: the caller's, with ``NARDY_SERVER``/``NARDY_TOKEN`` (and whatever else
  is given) set, ``PYTHONUNBUFFERED=1``, and this interpreter's directory first on
  ``PATH``, so that ``python`` and ``nardy`` in a command mean this installation;
* **logs**: stdout and stderr appended to one file, each launch headed by a ``---`` line;
  a log beyond ``MAX_LOG_BYTES`` is cut to its last ``KEEP_LOG_BYTES`` when the engine is
  checked (an engine that writes without end fills no disk);
* **process group**: the engine runs in a session of its own, so that stopping it also
  stops whatever it started (a shell or launcher wrapper); stop is SIGTERM, then SIGKILL;
* **orphan guard**: on Linux it is started through a tiny stub that asks the kernel to
  SIGTERM it when the supervising process dies, even by SIGKILL (``PR_SET_PDEATHSIG``),
  then becomes the engine (``execv``): nothing runs in the forked child of a threaded
  process but the exec. Every engine still running is stopped at exit too;
* **restart** (:meth:`EngineProcess.check`): an engine that exited is started again, after
  a back-off that doubles while it keeps dying young; ``crash_limit`` launches in a row
  that each lived less than ``stable_s`` is a **crash loop**, and it is left down.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

STOP_GRACE_S = 2.0  # SIGTERM, then SIGKILL after this
CRASH_LIMIT = 5
STABLE_S = 10.0  # a launch that lived this long was not a crash loop
MAX_BACKOFF_S = 8.0
MAX_LOG_BYTES = 64 << 20  # an engine's log is cut beyond this ...
KEEP_LOG_BYTES = 1 << 20  # ... to its last this much

# Runs in the child instead of the engine: arm the parent-death signal, make sure the
# parent did not die in between, then become the engine.
_ORPHAN_GUARD = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(0)\n"
    "os.execv(sys.argv[2], sys.argv[2:])\n"
)

_LIVE: set[EngineProcess] = set()


class LaunchError(Exception):
    """The engine command cannot be started (not found, not executable)."""


def engine_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment an engine gets: ours, this interpreter first on PATH, ``extra``."""
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, "PYTHONUNBUFFERED": "1", **extra}


@dataclass(eq=False)
class EngineProcess:
    """One engine command, supervised."""

    name: str
    cmd: list[str]
    log_path: Path
    env: dict[str, str] = field(default_factory=dict)  # NARDY_SERVER, NARDY_TOKEN, ...
    crash_limit: int = CRASH_LIMIT
    stable_s: float = STABLE_S
    proc: subprocess.Popen | None = None
    launches: int = 0
    exits: list[int] = field(default_factory=list)  # exit codes of launches that ended
    expected_exit: bool = False  # stopped by us: not a crash
    _started: float = 0.0
    _young_deaths: int = 0
    _next_start: float = 0.0

    # -- running ------------------------------------------------------------------------
    def start(self) -> None:
        env = engine_env(self.env)
        exe = shutil.which(self.cmd[0], path=env["PATH"])
        if exe is None:
            raise LaunchError(f"cannot run {self.cmd[0]!r}: not found or not executable")
        argv = [exe, *self.cmd[1:]]
        if sys.platform.startswith("linux"):
            argv = [sys.executable, "-c", _ORPHAN_GUARD, str(os.getpid()), *argv]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as out:
            stamp = time.strftime("%H:%M:%S")
            out.write(f"--- {stamp} launch {self.launches + 1}: {shlex.join(self.cmd)}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.launches += 1
        self.expected_exit = False
        self._started = time.monotonic()
        _LIVE.add(self)

    def poll(self) -> int | None:
        """The exit code once the current launch has ended, else None."""
        return None if self.proc is None else self.proc.poll()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def crash_loop(self) -> bool:
        """It died young ``crash_limit`` times in a row: restarting again is pointless."""
        return self._young_deaths >= self.crash_limit

    @property
    def crashes(self) -> int:
        """Launches that ended without being stopped by us."""
        return len(self.exits)

    def check(self, *, restart: bool = True) -> str | None:
        """Notice an exit (and restart, unless in a crash loop); what happened, in words.
        A log grown beyond MAX_LOG_BYTES is cut to its end."""
        if self.proc is None or self.expected_exit:
            return None
        self._cut_log()
        code = self.proc.poll()
        if code is None:
            return None
        now = time.monotonic()
        if self._next_start == 0.0:  # first look at this exit
            self.exits.append(code)
            _LIVE.discard(self)
            lived = now - self._started
            self._young_deaths = self._young_deaths + 1 if lived < self.stable_s else 1
            backoff = min(MAX_BACKOFF_S, 0.5 * 2 ** (self._young_deaths - 1))
            self._next_start = now + backoff
            if self.crash_loop:
                return (
                    f"{self.name} exited with code {code}: {self._young_deaths} launches in "
                    f"a row lived under {self.stable_s:.0f} s, so it is not restarted"
                )
            if not restart:
                return f"{self.name} exited with code {code}"
        if not restart or self.crash_loop or now < self._next_start:
            return None
        self._next_start = 0.0
        self.start()
        return f"{self.name} restarted (launch {self.launches}, exit code was {code})"

    # -- stopping -----------------------------------------------------------------------
    def signal_group(self, sig: int) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)

    def stop(self, grace: float = STOP_GRACE_S) -> int | None:
        """End the engine and its group: SIGTERM, then SIGKILL after ``grace`` seconds."""
        if self.proc is None:
            return None
        self.expected_exit = True
        if self.proc.poll() is None:
            self.signal_group(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=grace)
        self.kill()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL the whole group at once (stragglers too) and reap the process."""
        if self.proc is None:
            return
        self.expected_exit = True
        self.signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        _LIVE.discard(self)

    # -- logs ---------------------------------------------------------------------------
    def _cut_log(self) -> None:
        """Keep the log's last KEEP_LOG_BYTES once it is over MAX_LOG_BYTES (the engine
        appends: its next lines follow them; a line written meanwhile may be lost)."""
        try:
            size = os.path.getsize(self.log_path)
            if size <= MAX_LOG_BYTES:
                return
            with open(self.log_path, "r+b") as f:
                f.seek(size - KEEP_LOG_BYTES)
                kept = f.read(KEEP_LOG_BYTES)
                f.seek(0)
                f.truncate()
                stamp = time.strftime("%H:%M:%S")
                f.write(
                    f"--- {stamp} log cut: its first {size - len(kept)} bytes dropped\n".encode()
                )
                f.write(kept)
        except OSError:
            pass

    def tail(self, n: int = 5) -> list[str]:
        """The last ``n`` lines the engine wrote (launch headers left out)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 16_384))
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            return []
        lines = [ln.rstrip() for ln in lines if ln.strip() and not ln.startswith("--- ")]
        return lines[-n:]


def stop_all() -> None:
    """Stop every engine still running (at exit, on a signal)."""
    for engine in list(_LIVE):
        engine.kill()


atexit.register(stop_all)

__all__ = ["EngineProcess", "LaunchError", "engine_env", "stop_all"]
