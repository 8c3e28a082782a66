"""The server's two halves keep to their runtimes when they run: nothing the core loads
imports gRPC, nothing the edge loads imports trio (each checked in a fresh interpreter). The
static layers and import circles are tests/test_layers.py."""

from __future__ import annotations

import subprocess
import sys

from tests.test_layers import ROOT, module_name


def loaded(modules: list[str]) -> set[str]:
    """Every module a fresh interpreter holds after importing ``modules``."""
    code = f"import sys\nfor m in {modules!r}: __import__(m)\nprint(' '.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


def test_the_core_runs_without_grpc():
    core = [module_name(p) for p in (ROOT / "server" / "core").rglob("*.py")]
    modules = loaded(core)
    assert "server.core.main" in modules and "trio" in modules
    assert not {m for m in modules if m == "grpc" or m.startswith("grpc.")}


def test_the_edge_runs_without_trio():
    edge = [module_name(p) for p in (ROOT / "server" / "edge").rglob("*.py")]
    modules = loaded(edge)
    assert "server.edge.main" in modules and "grpc" in modules
    assert not {m for m in modules if m == "trio" or m.startswith("trio.")}
