"""Generate the Python protocol code from ``proto/``: the public contract
(``proto/nardy/v1`` into ``nardy/v1/``, with gRPC stubs) and the link between an arbiter's
edge and core (``proto/nardy/link/v1`` into ``nardy/link/v1/``, messages only).

``python -m nardy.protogen`` writes the files (only when their content changes);
``python -m nardy.protogen --check`` exits 1 if the committed files are stale.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "proto"
# package folder -> whether it has gRPC services (stubs generated)
PACKAGES = {"nardy/v1": True, "nardy/link/v1": False}
INIT = b'"""Generated protocol code (make proto); do not edit."""\n'


def generate(out: Path, package: str, services: bool) -> list[Path]:
    import grpc_tools
    from grpc_tools import protoc

    include = Path(grpc_tools.__file__).parent / "_proto"
    sources = sorted(str(p.relative_to(PROTO)) for p in (PROTO / package).glob("*.proto"))
    args = ["protoc", f"-I{PROTO}", f"-I{include}", f"--python_out={out}", f"--pyi_out={out}"]
    if services:
        args.append(f"--grpc_python_out={out}")
    if protoc.main([*args, *sources]) != 0:
        raise SystemExit("protoc failed")
    return sorted((out / package).glob("*.py*"))


def main(argv: list[str]) -> int:
    stale: list[str] = []
    for package, services in PACKAGES.items():
        target = ROOT / package
        with tempfile.TemporaryDirectory() as tmp:
            fresh = {p.name: p.read_bytes() for p in generate(Path(tmp), package, services)}
        fresh["__init__.py"] = INIT
        current = {p.name: p.read_bytes() for p in target.glob("*.py*")} if target.exists() else {}
        if "--check" in argv:
            changed = {n for n in fresh if current.get(n) != fresh[n]}
            stale += [f"{package}/{n}" for n in sorted(set(current) ^ set(fresh) | changed)]
            continue
        target.mkdir(parents=True, exist_ok=True)
        for name in set(current) - set(fresh):
            (target / name).unlink()
        for name, data in fresh.items():
            if current.get(name) != data:
                (target / name).write_bytes(data)
    if stale:
        print(f"stale generated protocol code: {', '.join(stale)}; run `make proto`")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
