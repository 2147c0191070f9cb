"""``make demo``: compile examples/payments into a temporary folder and print its operations.

It goes through the real command line (``anvil compile``), then reads the bundle it wrote and prints one
row per compiled operation: id, tool name, effect, risk, idempotency and confirmation.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "payments"
COLUMNS = ("id", "tool name", "effect", "risk", "idempotency", "confirmation")


def _rows(bundle: Path) -> list[tuple[str, ...]]:
    from anvil.bundle.read import read_bundle

    rows = []
    for op in read_bundle(bundle).operations:
        idem = op.idempotency
        idempotency = idem.mode + (f" ({idem.mechanism} {idem.key})" if idem.key else "")
        if op.confirmation.human_approval:
            confirmation = "human approval"
        else:
            confirmation = "required" if op.confirmation.required else "no"
        effect = f"{op.effect.kind}/{op.effect.action}" + ("" if op.effect.reversible else ", irreversible")
        state = "" if op.state == "approved" else f" [{op.state}]"
        rows.append((op.id + state, op.mcp.tool_name, effect, op.effect.risk, idempotency, confirmation))
    return rows


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in (COLUMNS, *rows)) for i in range(len(COLUMNS))]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(cell.ljust(w) for cell, w in zip(COLUMNS, widths, strict=True)), line]
    out += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join(out)


def main() -> int:
    """Compile the payments example and print its operations table; return the compile's exit status."""
    from anvil.cli import main as anvil

    with tempfile.TemporaryDirectory(prefix="anvil-demo-") as tmp:
        out = Path(tmp) / "payments"
        argv = [
            "compile",
            str(EXAMPLE / "openapi.yaml"),
            "--manifest",
            str(EXAMPLE / "anvil.yaml"),
            "--service",
            "payments",
            "--out",
            str(out),
            "--root",
            str(REPO),
        ]
        status = anvil(argv)
        if status != 0 or not (out / "air.json").is_file():
            print(f"demo: anvil compile exited {status}", file=sys.stderr)
            return status or 1
        print()
        print(_table(_rows(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
