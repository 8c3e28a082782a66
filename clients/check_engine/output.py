"""What check-engine prints: one PASS/FAIL line per scenario, in colour on a terminal."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Output:
    colour: bool

    def line(self, ok: bool, name: str, text: str, width: int) -> None:
        tag = "PASS" if ok else "FAIL"
        if self.colour:
            tag = f"\x1b[{32 if ok else 31}m{tag}\x1b[0m"
        body = f"({text})" if ok else text
        print(f"{tag} {name.ljust(width)}  {body}", flush=True)
