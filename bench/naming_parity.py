"""Naming parity with the original: compile every corpus spec that has a golden and count mismatches.

Usage: ``.venv/bin/python bench/naming_parity.py [--corpus DIR] [--show N]``. Prints one row per spec:
operations in the golden, operations we produce for the same (method, path), and how many ids, tool
names and CLI commands differ. ``--show N`` lists the first N differing rows per spec.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))

from tests.naming_goldens import compare_spec, golden_specs  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", default=os.environ.get("ANVIL_CORPUS", str(REPO.parent / "shared" / "corpus")))
    parser.add_argument("--goldens", default=None)
    parser.add_argument("--show", type=int, default=0)
    args = parser.parse_args()
    corpus = Path(args.corpus)
    goldens = Path(args.goldens) if args.goldens else corpus.parent / "spec" / "golden" / "naming"
    print(f"{'spec':<20} {'golden':>6} {'ours':>6} {'id':>5} {'tool':>5} {'cli':>5} {'any':>5}")
    totals = [0, 0, 0, 0, 0, 0]
    for golden in golden_specs(goldens):
        report = compare_spec(corpus, golden)
        row = [
            report.golden_count,
            report.ours_count,
            report.id_diffs,
            report.tool_diffs,
            report.cli_diffs,
            len(report.rows),
        ]
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        print(f"{golden.service:<20} " + " ".join(f"{v:>{w}}" for v, w in zip(row, (6, 6, 5, 5, 5, 5), strict=True)))
        for diff in report.rows[: args.show]:
            print("    " + diff)
    print(f"{'TOTAL':<20} " + " ".join(f"{v:>{w}}" for v, w in zip(totals, (6, 6, 5, 5, 5, 5), strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
