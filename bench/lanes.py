"""Time the proof lanes end to end on an example bundle and print a table.

Usage: ``python bench/lanes.py [EXAMPLE]`` (default ``github-mini``; also ``payments``). The example is
compiled into a temporary directory, then each lane runs as the operator runs it, ``python -m anvil
<lane> BUNDLE --json`` in a fresh process (interpreter start, imports, child processes and all),
loopback only. A lane the installed ``anvil`` does not have is reported as ``absent``. Aim: every
lane together under 60 s on github-mini.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The lanes in the order a release needs them, then the gate that reads their records.
LANES: tuple[str, ...] = ("certify", "selftest", "conformance", "simulate", "status")
_SERVICES = {"github-mini": "github", "payments": "payments"}
_TIMEOUT_S = 300


def _compile(example: str, out: Path) -> None:
    command = [sys.executable, "-m", "anvil", "compile", str(REPO / "examples" / example / "openapi.yaml")]
    command += ["--manifest", str(REPO / "examples" / example / "anvil.yaml"), "--service", _SERVICES[example]]
    command += ["--out", str(out), "--root", str(REPO)]
    subprocess.run(command, check=True, capture_output=True, timeout=_TIMEOUT_S)


def _commands() -> set[str]:
    from anvil.cli import COMMANDS

    return set(COMMANDS)


def _verdict(lane: str, stdout: str) -> str:
    try:
        record = json.loads(stdout)
    except ValueError:
        return "no JSON"
    if lane == "status":
        return f"{len(record.get('writesEnabled', []))} write(s) may be enabled"
    summary = record.get("summary") or {}
    if lane == "certify":
        checks = record.get("checks", [])
        return f"{sum(1 for c in checks if c['status'] == 'passed')}/{len(checks)} checks"
    if lane == "simulate":
        return (
            f"{summary.get('coveragePassed')}/{summary.get('coverageCells')} cells, "
            f"{summary.get('mutantsKilled')}/{summary.get('mutantsApplicable')} mutants"
        )
    return f"{summary.get('pass')} pass, {summary.get('fail')} fail, {summary.get('skipped')} skipped"


def main(argv: list[str]) -> int:
    """Compile the example, run every lane once, print ``lane | exit | seconds | verdict``."""
    example = argv[0] if argv else "github-mini"
    if example not in _SERVICES:
        print(f"unknown example {example!r}; choose one of {', '.join(_SERVICES)}", file=sys.stderr)
        return 2
    available = _commands()
    rows: list[tuple[str, str, str, str]] = []
    total = 0.0
    with tempfile.TemporaryDirectory(prefix="anvil-bench-lanes-") as folder:
        bundle = Path(folder) / _SERVICES[example]
        _compile(example, bundle)
        for lane in LANES:
            if lane not in available:
                rows.append((lane, "-", "-", "absent"))
                continue
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "anvil", lane, str(bundle), "--json"],
                capture_output=True,
                text=True,
                timeout=_TIMEOUT_S,
                check=False,
            )
            seconds = time.perf_counter() - start
            total += seconds
            rows.append((lane, str(done.returncode), f"{seconds:.2f}", _verdict(lane, done.stdout)))
    print(f"proof lanes on {example} (fresh process per lane)")
    print(f"{'lane':12} {'exit':>4} {'seconds':>8}  verdict")
    for lane, code, seconds, verdict in rows:
        print(f"{lane:12} {code:>4} {seconds:>8}  {verdict}")
    print(f"{'total':12} {'':>4} {total:>8.2f}  (aim: under 60 s on github-mini)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
