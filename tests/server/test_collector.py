"""The server's collection policy (server/collector.py): full collections skip what
survived the last middle or full one, and cyclic garbage left among frozen objects is still
reclaimed.
Each case runs in a fresh interpreter (the policy is process-wide; pytest's own objects
stay out of it)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SETUP = """
import gc, weakref
from server.collector import FrozenGenerations

class Node:
    def __init__(self):
        self.me = self  # a cycle: only the cyclic collector frees it

kept = [Node() for _ in range(100_000)]  # long-lived objects (modules, games)
policy = FrozenGenerations()
policy.install()
freed = []
"""


def run(body: str) -> None:
    code = textwrap.dedent(SETUP) + textwrap.dedent(body)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_a_full_collection_leaves_its_survivors_frozen() -> None:
    run(
        """
        base = gc.get_freeze_count()
        assert base > 100_000  # frozen at install
        assert len(gc.get_objects(2)) < 1000
        live = [Node() for _ in range(20_000)]
        assert len(gc.get_objects(2)) < 1000 + 20_000
        gc.collect()
        assert gc.get_freeze_count() >= base + 20_000  # frozen, not looked at again
        assert len(gc.get_objects(2)) < 1000
        assert policy.passes == [1, 0]
        """
    )


def test_garbage_among_frozen_objects_goes_at_the_next_deep_pass() -> None:
    run(
        """
        doomed = [Node() for _ in range(5_000)]  # with their finalizers: < a quarter
        for node in doomed:
            weakref.finalize(node, freed.append, 1)
        gc.collect()  # frozen
        del doomed, node  # cyclic garbage, frozen: a shallow pass cannot see it
        gc.collect()
        assert not freed and policy.passes == [2, 0]
        base = policy.base
        live = [Node() for _ in range(int(base * 0.3))]  # a quarter more frozen objects
        gc.collect()  # shallow, and sees the growth: the next one is deep
        assert policy.deep and not freed
        gc.collect()
        assert len(freed) == 5_000, len(freed)
        assert policy.passes == [3, 1] and not policy.deep
        assert policy.base >= base + len(live)
        """
    )


def test_survivors_of_middle_collections_are_frozen_and_their_garbage_still_goes() -> None:
    run(
        """
        base = gc.get_freeze_count()
        live = [Node() for _ in range(20_000)]
        doomed = [Node() for _ in range(5_000)]
        for node in doomed:
            weakref.finalize(node, freed.append, 1)
        gc.collect(1)  # a middle collection: its survivors are frozen, not left for gen 2
        assert gc.get_freeze_count() >= base + 25_000
        assert len(gc.get_objects(1)) + len(gc.get_objects(2)) < 1000
        del doomed, node  # cyclic garbage among them: the next deep pass takes it
        more = [Node() for _ in range(int(base * 0.3))]
        gc.collect()  # shallow, sees the growth: the next full pass is deep...
        assert policy.deep and not freed
        gc.collect(1)  # ...and a middle collection meanwhile does not freeze it away
        assert policy.deep
        gc.collect()
        assert len(freed) == 5_000, len(freed)
        assert not policy.deep
        """
    )
