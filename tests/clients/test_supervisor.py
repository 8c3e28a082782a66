"""The engine supervisor (clients/supervisor.py) with a real child process: an engine that
writes without end does not fill the disk with its log."""

from __future__ import annotations

import sys

from clients import supervisor
from clients.supervisor import EngineProcess


def test_a_log_that_grows_without_end_is_cut_to_its_last_part(tmp_path, monkeypatch):
    monkeypatch.setattr(supervisor, "MAX_LOG_BYTES", 200_000)
    monkeypatch.setattr(supervisor, "KEEP_LOG_BYTES", 10_000)
    flood = "import sys\nwhile True:\n    sys.stdout.write('chatter ' * 100 + '\\n')"
    engine = EngineProcess("flood", [sys.executable, "-c", flood], tmp_path / "flood.log")
    engine.start()
    try:
        cuts = 0
        while cuts < 3:  # (the engine writes on while it is checked)
            before = engine.log_path.stat().st_size
            assert engine.check() is None  # still running, nothing to say
            after = engine.log_path.stat().st_size
            cuts += before > 200_000 and after < before
    finally:
        engine.stop()
    # (the engine wrote on after the last cut, until it was stopped)
    first = engine.log_path.read_bytes().split(b"\n", 1)[0]
    assert first.startswith(b"--- ") and first.endswith(b" bytes dropped") and b" cut: " in first
