"""Which CPU the arbiter's threads run on (``nardy serve --cpu``).

The trio core, the grpc.aio transport, the store's thread and grpc's own threads share one
GIL: only one of them runs Python at a time. Spread over several CPUs, every hand-over
between them (a play to the core, a commit back, a reply to the transport: about four a
turn) wakes a thread on another, often idle, CPU and waits for the GIL to come across,
tens of µs to a tenth of a ms each. On one CPU a hand-over is a context switch. Measured
on a 2-CPU machine (README, "Session 10: one CPU"): 1.3-1.4x the turns per second, a
quarter less server CPU per turn and a quarter off the turn's round trip. Linux only
(``os.sched_setaffinity``); elsewhere nothing is pinned.
"""

from __future__ import annotations

import os

AUTO, ALL = "auto", "all"


class CpuError(ValueError):
    """A CPU this process may not use."""


def _current_cpu() -> int | None:
    """The CPU this thread last ran on (the OS's own choice), from /proc."""
    try:
        with open("/proc/thread-self/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return None


def _set(cpus: set[int]) -> None:
    """Every thread of this process (and those it starts from now on) on ``cpus``."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (ProcessLookupError, PermissionError):  # (a thread just ended)
            continue


def pin(choice: str) -> int | None:
    """Run this process on one CPU: ``auto`` (the one the OS runs it on now, among those
    allowed), a CPU number, or ``all`` (not pinned); the CPU, or None if not pinned.
    Raises CpuError for a CPU this process may not use."""
    if choice == ALL or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    if choice == AUTO:
        if len(allowed) < 2:
            return None
        cpu = _current_cpu()
        if cpu not in allowed:
            cpu = max(allowed)
    else:
        cpu = int(choice)
        if cpu not in allowed:
            raise CpuError(f"CPU {cpu} is not one this process may use ({sorted(allowed)})")
    _set({cpu})
    return cpu


def avoid(cpu: int) -> None:
    """Move this process off ``cpu`` (a front process, started by a core pinned there,
    inherits the pin): onto every other CPU the machine has, or all of them if none."""
    if not hasattr(os, "sched_setaffinity"):
        return
    others = set(range(os.cpu_count() or 1)) - {cpu}
    try:
        _set(others or {cpu})
    except OSError:  # CPUs outside this container's set
        _set(set(range(os.cpu_count() or 1)))
