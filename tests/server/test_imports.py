"""The server's modules form a layered graph, and so do the benchmarks': no module imports,
even lazily inside a function, one that imports it back (imports under ``if TYPE_CHECKING:``
are type hints only and do not count). And the server's two halves keep to their runtimes:
nothing the core runs imports gRPC, nothing the edge runs imports trio."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imports_of(path: Path, package: str = "server") -> set[str]:
    """The ``package``.* modules a file imports at run time, anywhere in its body."""
    tree = ast.parse(path.read_text())
    hints: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hints.update(id(n) for child in node.body for n in ast.walk(child))
    found = set()
    for node in ast.walk(tree):
        if id(node) in hints:
            continue
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found.update(
            n
            for n in names
            if (ROOT / (n.replace(".", "/") + ".py")).exists()
            or (ROOT / n.replace(".", "/") / "__init__.py").exists()
        )
    return {n for n in found if n.startswith(f"{package}.")}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def graph(package: str = "server") -> dict[str, set[str]]:
    return {module_name(p): imports_of(p, package) for p in (ROOT / package).rglob("*.py")}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_cycle_finder_finds_a_lazy_import_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_graph_sees_lazy_imports(tmp_path):
    f = tmp_path / "m.py"
    f.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from server.core.arbiter import Arbiter\n"
        "def f():\n    from server.core.journal import Event\n    import server.core.store\n"
    )
    assert imports_of(f) == {"server.core.journal", "server.core.store"}


def test_no_import_cycles_in_server():
    edges = graph()
    assert "server.core.journal" in edges["server.core.session"]
    assert find_cycle(edges) is None, " -> ".join(find_cycle(edges) or ())


def test_no_import_cycles_in_bench():
    edges = graph("bench")
    assert "bench.bots" in edges["bench.arbiter"]
    assert find_cycle(edges) is None, " -> ".join(find_cycle(edges) or ())


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
