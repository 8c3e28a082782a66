"""``nardy serve --cpu`` (server.cpu): the server's threads share one GIL and run on one
CPU, a front process on the others; ``--cpu all`` pins nothing; a CPU the server may not
use is refused before it serves. Real server processes; affinities read from /proc."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.server.test_front import ROOT, _serve

ALLOWED = os.sched_getaffinity(0)
pytestmark = pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two CPUs to tell apart")


def cpus_of_threads(pid: int) -> list[set[int]]:
    """Each thread's allowed CPUs."""
    return [os.sched_getaffinity(int(tid)) for tid in os.listdir(f"/proc/{pid}/task")]


@pytest.mark.parametrize("choice", ["auto", str(max(ALLOWED))])
def test_the_servers_threads_run_on_one_cpu_and_its_front_on_the_others(tmp_path, choice):
    core, front = _serve(tmp_path, "--cpu", choice)
    try:
        threads = cpus_of_threads(core.pid)
        assert len(threads) > 4  # (the trio core, the transport, the store, grpc's own)
        (cpu,) = threads[0]
        if choice != "auto":
            assert cpu == int(choice)
        assert all(t == {cpu} for t in threads), threads
        assert all(cpu not in t for t in cpus_of_threads(front)), cpus_of_threads(front)
    finally:
        core.terminate()
        core.wait(30)


def test_cpu_all_pins_nothing(tmp_path):
    core, front = _serve(tmp_path, "--cpu", "all")
    try:
        assert all(t == ALLOWED for t in cpus_of_threads(core.pid))
        assert all(t == ALLOWED for t in cpus_of_threads(front))
    finally:
        core.terminate()
        core.wait(30)


def test_a_cpu_the_server_may_not_use_is_refused_before_it_serves(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "nardy", "serve", "--port", "0", "--cpu", "4096"]
        + ["--db", str(tmp_path / "s.db")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert "--cpu: CPU 4096 is not one this process may use" in out.stderr
    assert not (tmp_path / "s.db").exists()
