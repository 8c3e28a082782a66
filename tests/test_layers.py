"""The product's layers, read from its source with ``ast`` (imports inside functions count;
imports under ``if TYPE_CHECKING:`` are type hints only and do not):

- ``nardy/`` (the games and the SDK) imports nothing above it: no server/, clients/,
  engines/ or bench/;
- the arbiter's halves keep to their runtimes: ``server/edge/`` imports neither trio nor
  ``server.core``, ``server/core/`` neither grpc nor ``server.edge``;
- no module of the product imports, even lazily, one that imports it back;
- no code branches on a variant's name outside ``nardy/long/`` and ``nardy/short/``: what
  varies is asked of the variant (:mod:`nardy.variant`).

A separate check runs the halves in fresh interpreters (tests/server/test_imports.py)."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("nardy", "server", "clients", "engines", "bench")
GENERATED = ("nardy/v1", "nardy/link/v1")


def product_files(packages: tuple[str, ...] = PACKAGES) -> list[Path]:
    return sorted(
        p
        for package in packages
        for p in (ROOT / package).rglob("*.py")
        if not any(p.relative_to(ROOT).as_posix().startswith(g + "/") for g in GENERATED)
    )


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, root: Path) -> bool:
    base = root / name.replace(".", "/")
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


@functools.cache
def imported_names(path: Path, root: Path = ROOT) -> frozenset[str]:
    """Every module a file imports at run time, anywhere in its body. ``from PKG import x``
    is ``PKG.x`` where that is a module of the tree under ``root`` (it does not need PKG's
    body to have run), else ``PKG``; relative imports are resolved against the file's
    package."""
    tree = ast.parse(path.read_text(), str(path))
    hints: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hints.update(id(n) for child in node.body for n in ast.walk(child))
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in hints:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:  # a submodule, else a name the package's body defines
                sub = f"{base}.{a.name}"
                found.add(sub if _is_module(sub, root) else base)
    return frozenset(n for n in found if n)


def graph(files: list[Path], root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of the same tree it imports."""
    nodes = {module_name(p, root): p for p in files}
    return {
        name: {n for n in imported_names(path, root) if n in nodes and n != name}
        for name, path in nodes.items()
    }


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import circle, as the path that closes it (``a -> b -> a``), or None."""
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


@functools.cache
def product_graph() -> dict[str, set[str]]:
    return graph(product_files())


def under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def offenders(files: list[Path], *forbidden: str) -> list[str]:
    return [
        f"{p.relative_to(ROOT)} imports {n}"
        for p in files
        for n in sorted(imported_names(p))
        if under(n, *forbidden)
    ]


# -- the checker checks ------------------------------------------------------------------


def test_the_cycle_finder_reports_the_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
    assert find_cycle({"a": {"a"}}) == ["a", "a"]


def test_the_reader_sees_lazy_and_relative_imports_but_not_type_hints(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    for name in ("__init__", "a", "b", "sub/__init__", "sub/c"):
        (tmp_path / "pkg" / f"{name}.py").write_text("")
    f = tmp_path / "pkg" / "sub" / "m.py"
    f.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.b import Thing\n"
        "def f():\n    from pkg import a\n    import trio\n"
        "class K:\n    def g(self):\n        from . import c\n        from ..b import x\n"
    )
    assert imported_names(f, tmp_path) == {"typing", "pkg.a", "trio", "pkg.sub.c", "pkg.b"}
    g = graph(sorted((tmp_path / "pkg").rglob("*.py")), tmp_path)
    assert g["pkg.sub.m"] == {"pkg.a", "pkg.sub.c", "pkg.b"}


def test_the_graph_covers_the_product():
    edges = product_graph()
    assert {"nardy.variant", "server.core.session", "clients.cli", "engines.greedy"} <= set(edges)
    assert "server.core.journal" in edges["server.core.session"]
    assert "clients.subcommands" in edges["clients.cli"]  # imported inside a function


# -- the layers ----------------------------------------------------------------------------


def test_the_library_imports_nothing_above_it():
    bad = offenders(product_files(("nardy",)), "server", "clients", "engines", "bench", "tests")
    assert not bad, "\n".join(bad)


def test_the_edge_never_imports_trio_or_the_core():
    bad = offenders(product_files(("server/edge",)), "trio", "server.core")
    assert not bad, "\n".join(bad)


def test_the_core_never_imports_grpc_or_the_edge():
    bad = offenders(product_files(("server/core",)), "grpc", "server.edge")
    assert not bad, "\n".join(bad)


def test_the_arbiter_and_the_engines_import_no_client():
    bad = offenders(product_files(("server", "engines")), "clients", "bench")
    assert not bad, "\n".join(bad)


def test_no_import_circles_in_the_product():
    cycle = find_cycle(product_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or ())


# -- variants --------------------------------------------------------------------------------

# A comparison with a variant's name, or a default picked by one.
NAME_BRANCH = re.compile(r"""(==|!=) ?['"](long|short)['"]|or ['"](long|short)['"]""")


def name_branches(files: list[Path]) -> list[str]:
    return [
        f"{p}:{n}: {line.strip()}"
        for p in files
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if NAME_BRANCH.search(line)
    ]


def test_the_variant_name_check_sees_a_branch(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('if v.name == "long":\n    pass\nname = x or "short"\nok = "long"\n')
    assert len(name_branches([f])) == 2


def test_nothing_branches_on_a_variants_name_outside_its_rules():
    files = [
        p
        for p in product_files()
        if not p.relative_to(ROOT).as_posix().startswith(("nardy/long/", "nardy/short/"))
    ]
    bad = [b.removeprefix(f"{ROOT}/") for b in name_branches(files)]
    assert not bad, "ask the variant (nardy/variant.py) instead:\n" + "\n".join(bad)
