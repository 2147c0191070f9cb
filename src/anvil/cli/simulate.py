"""``anvil simulate BUNDLE [--seed N] [--json] [--operations GLOB...] [--time-cap S] [--quiet]``: the contract ×
dimension matrix and mutation battery (§8.4).

Drives every approved operation through the real gateway and executor against a seeded, in-process
simulated upstream (nothing leaves the process), then weakens one control at a time and proves the
surface signature catches each. Writes ``simulation.report.json`` at the bundle root (excluded from
the bundle hash, bound to it by ``bundleHash``). Prints each failing cell and mutant and ``PASSED — …``
or ``FAILED — …``; with ``--json``, the record itself. A progress line per operation goes to stderr;
``--operations``, ``--time-cap`` and SIGINT/SIGTERM give a partial record marked ``incomplete``
(:mod:`anvil.cli.lane_scope`), which ``anvil status`` never counts as fresh.

Exit status: 0 when every cell passed and every applicable mutant was killed (and there was at
least one cell), or when there was nothing to prove (the bundle approves no operation: ``SKIPPED — ...``
says how to approve one), 1 otherwise, 2 for a bad ``--seed``, 3 when the bundle cannot be read.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from anvil.cli.lane_scope import add_scope_arguments, scope_from, stopping_on_signals
from anvil.errors import UsageError

__all__ = ["register", "run"]

_MAX_SEED = 2**63 - 1


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``simulate`` arguments to its subparser."""
    parser.add_argument("bundle", metavar="BUNDLE", help="the compiled bundle directory")
    parser.add_argument("--seed", metavar="N", default="1", help="the seed of the simulated data (default 1)")
    parser.add_argument("--json", action="store_true", help="print the simulation record as JSON")
    add_scope_arguments(parser, startup=False)


def _seed(text: str) -> int:
    if not text.isdigit() or int(text) > _MAX_SEED:
        raise UsageError("cli/usage", f"--seed expects a whole number from 0 to {_MAX_SEED}, got {text!r}")
    return int(text)


def _text(record: dict[str, Any], directory: Path) -> str:
    summary = record["summary"]
    lines = [f"simulate {directory} (seed {record['coverage']['seed']})"]
    lines += [
        f"  {d['dimension']:12} {d['passed']}/{d['cells']} cells over {d['operations']} operation(s)"
        for d in record["coverage"]["dimensions"]
    ]
    lines += [
        f"  FAIL {c['operationId']} {c['dimension']}/{c['variant']}: expected {c['expected']!r}, got {c['actual']!r}"
        for c in record["coverage"]["cells"]
        if not c["ok"]
    ]
    lines += [f"  SKIPPED {s['operationId']}: {s['reason']}" for s in record["coverage"].get("skipped") or ()]
    for mutant in record["mutation"]["mutants"]:
        if not mutant["applicable"]:
            state = "inapplicable"
        elif mutant["killed"]:
            state = f"killed on {mutant['operationId']} by {', '.join(mutant['detectedBy'])}"
        else:
            state = f"SURVIVED on {mutant['operationId']}"
        lines.append(f"  mutant {mutant['name']}: {state}")
    head = (
        f"{summary['coveragePassed']}/{summary['coverageCells']} cells, "
        f"{summary['mutantsKilled']}/{summary['mutantsApplicable']} applicable mutants killed "
        f"for bundle {record['bundleHash'][:12]}"
    )
    if not summary["coverageCells"]:
        head = "no operation simulated; " + head
    incomplete = record.get("incomplete")
    if isinstance(incomplete, dict):
        lines.append(f"INCOMPLETE — {incomplete['reason']} (not evidence for `anvil status`)")
    vacant = record.get("nothingToProve")
    if isinstance(vacant, dict):
        lines.append(f"SKIPPED — simulate {directory}: {vacant['reason']}")
    else:
        lines.append(("PASSED — " if summary["ok"] else "FAILED — ") + head)
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Simulate, write ``simulation.report.json`` and print the summary.

    Raises:
        UsageError: a malformed ``--seed``.
        BundleError: ``bundle/invalid`` when the bundle cannot be read.
    """
    from anvil.proof.record import write_record
    from anvil.proof.simulate.lane import SIMULATION_FILE, simulate

    seed = _seed(str(args.seed))
    scope = scope_from(args)
    directory = Path(args.bundle)
    with stopping_on_signals(scope):
        record = simulate(directory, seed=seed, scope=scope)
    write_record(directory, SIMULATION_FILE, record)
    print(json.dumps(record, indent=2, ensure_ascii=False) if args.json else _text(record, directory))
    return 0 if record["summary"]["ok"] or isinstance(record.get("nothingToProve"), dict) else 1
