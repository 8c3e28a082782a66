"""The variant API is the only door into the rules (nardy/variant.py): server/, clients/
and engines/ never import a variant's package, and server/ and clients/ do not use long
nardy's convenience names from the top-level ``nardy`` package either."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANT_PACKAGES = ("nardy.long", "nardy.short")
# What `nardy` exports from long nardy (for library users); generic code asks the variant.
LONG_NAMES = {
    "CHECKERS",
    "HEAD",
    "Kind",
    "Play",
    "Position",
    "Step",
    "TurnBuilder",
    "forfeit",
    "legal_plays",
    "match_play",
    "parse_moves",
    "result",
}


def offences(path: Path, *, long_names: bool, root: Path = ROOT) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            mods = [node.module]
            if long_names and node.module == "nardy":
                found += [
                    f"{path.relative_to(root)}:{node.lineno}: from nardy import {a.name}"
                    for a in node.names
                    if a.name in LONG_NAMES
                ]
        else:
            continue
        found += [
            f"{path.relative_to(root)}:{node.lineno}: import {m}"
            for m in mods
            if any(m == p or m.startswith(p + ".") for p in VARIANT_PACKAGES)
        ]
    return found


def test_the_checker_sees_both_kinds_of_offence(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from nardy.long.position import Position\nfrom nardy import legal_plays, wire\n")
    got = [o.split(": ", 1)[1] for o in offences(f, long_names=True, root=tmp_path)]
    assert got == ["import nardy.long.position", "from nardy import legal_plays"]
    assert [o.split(": ", 1)[1] for o in offences(f, long_names=False, root=tmp_path)] == [
        "import nardy.long.position"
    ]


def test_server_clients_and_engines_reach_the_rules_only_through_the_variant():
    bad = []
    for top, strict in (("server", True), ("clients", True), ("engines", False)):
        for path in sorted((ROOT / top).rglob("*.py")):
            bad += offences(path, long_names=strict)
    assert not bad, "\n".join(bad)
