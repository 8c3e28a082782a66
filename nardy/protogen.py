"""Generate the Python protocol code in ``nardy/v1/`` from ``proto/nardy/v1/*.proto``.

``python -m nardy.protogen`` writes the files (only when their content changes);
``python -m nardy.protogen --check`` exits 1 if the committed files are stale.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "proto"


def generate(out: Path) -> list[Path]:
    import grpc_tools
    from grpc_tools import protoc

    include = Path(grpc_tools.__file__).parent / "_proto"
    sources = sorted(str(p.relative_to(PROTO)) for p in (PROTO / "nardy" / "v1").glob("*.proto"))
    args = [
        "protoc",
        f"-I{PROTO}",
        f"-I{include}",
        f"--python_out={out}",
        f"--pyi_out={out}",
        f"--grpc_python_out={out}",
        *sources,
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed")
    return sorted((out / "nardy" / "v1").glob("*.py*"))


def main(argv: list[str]) -> int:
    target = ROOT / "nardy" / "v1"
    with tempfile.TemporaryDirectory() as tmp:
        fresh = {p.name: p.read_bytes() for p in generate(Path(tmp))}
    fresh["__init__.py"] = b'"""Generated protocol code (make proto); do not edit."""\n'
    current = {p.name: p.read_bytes() for p in target.glob("*.py*")} if target.exists() else {}
    if "--check" in argv:
        if current != fresh:
            changed = {n for n in fresh if current.get(n) != fresh[n]}
            stale = sorted(set(current) ^ set(fresh) | changed)
            print(f"stale generated protocol code: {', '.join(stale)}; run `make proto`")
            return 1
        return 0
    target.mkdir(exist_ok=True)
    for name in set(current) - set(fresh):
        (target / name).unlink()
    for name, data in fresh.items():
        if current.get(name) != data:
            (target / name).write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
