"""The server's garbage-collection policy (each of ``nardy serve``'s processes): full
collections that do not stall every clock.

CPython's full (generation 2) collection looks at every tracked object while holding the
GIL, so for its length the process stands still: in the core every clock and every game,
in the edge every stamp. A core holding ~900 games has hundreds of thousands of tracked
objects, and a full pass over them took up to 230 ms on this machine under play load
(57 of them in a run of bench.arbiter's load case): timeouts fired that much late.

Objects that survive a middle (generation 1) or full collection are mostly long-lived
(modules, games in progress, their streams), so they are frozen (``gc.freeze``): a full
collection then looks only at what is left in the older generation since, next to
nothing. (Freezing only the survivors of full collections left a shallow full pass over a
few seconds' survivors, 16-47 ms every ~3 s under play load.)
What frozen objects leave behind as cyclic garbage (a finished game evicted from the caches)
is reclaimed by a *deep* pass, which unfreezes everything first, once the frozen objects
have grown by a quarter since the last deep pass: CPython's own rule for full collections
(a quarter more long-lived objects), counted on the objects still alive instead of on all
that ever survived a younger collection. A server whose games come and go at a steady count
makes a deep pass only when that garbage has reached a quarter of what is alive, and one
that grows makes them as often as CPython would.
"""

from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger("nardy.server")

GROWTH = 1.25  # deep pass once the frozen objects are this many times those of the last one


class FrozenGenerations:
    """Installed once per process (the edge and the core of ``nardy serve``): see the module
    docstring."""

    def __init__(self, growth: float = GROWTH) -> None:
        self.growth = growth
        self.base = 0  # frozen objects after the last deep pass
        self.deep = False  # the next full collection looks at everything
        self.passes = [0, 0]  # full collections: shallow, deep
        self._started = 0.0

    def install(self) -> None:
        gc.collect()  # nothing left to collect is frozen with what stays
        gc.freeze()
        self.base = gc.get_freeze_count()
        gc.callbacks.append(self._callback)

    def uninstall(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)
        gc.unfreeze()

    def _callback(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            if info["generation"] == 1 and phase == "stop" and not self.deep:
                gc.freeze()  # (not while a deep pass is due: it would freeze it away)
            return
        if phase == "start":
            self._started = time.perf_counter()
            return
        deep, self.deep = self.deep, False
        self.passes[deep] += 1
        # A full collection leaves the younger generations empty: only survivors are frozen.
        gc.freeze()
        frozen = gc.get_freeze_count()
        if deep:
            self.base = frozen
        elif frozen > self.base * self.growth:
            gc.unfreeze()  # the next full collection is deep
            self.deep = True
        log.debug(
            "full collection (%s) in %.1f ms: %d collected, %d frozen",
            "deep" if deep else "shallow",
            (time.perf_counter() - self._started) * 1e3,
            info["collected"],
            frozen,
        )
