"""The suite's test ids are the same on every collection (pytest-xdist refuses workers that disagree)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _collected_ids() -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": "random"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-n", "0", "tests"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_two_collections_in_different_seconds_give_the_same_test_ids() -> None:
    first = _collected_ids()
    time.sleep(1.1)  # a parameter built from the clock (gzip's mtime, a timestamp) would differ now
    second = _collected_ids()
    assert first, "nothing was collected"
    differing = sorted(set(first) ^ set(second))
    assert not differing, f"{len(differing)} test id(s) differ between two collections: {differing[:10]}"
    assert first == second
