"""``make demo`` as a smoke test: the scripted session runs clean, prints its plan, and leaves nothing behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.support import EXAMPLES

DEMO_BUDGET_S = 60


@pytest.mark.slow
def test_the_demo_plays_its_session_undoes_what_it_can_and_exits_zero(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
    env["TMPDIR"] = str(tmp_path)  # the demo's temporary folder lands here, so we can see it was removed
    completed = subprocess.run(
        [sys.executable, str(EXAMPLES / "demo.py")],
        capture_output=True,
        text=True,
        timeout=DEMO_BUDGET_S,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    out = completed.stdout
    for heading in ("Undo plan", "cannot be undone", "compensate", "discard the draft", "after the undo plan"):
        assert heading in out
    assert "\033[" not in out  # no colour when stdout is not a terminal
    # The audit's ledger id is the caller's key as sent (runtime/audit.py), and the demo says so.
    assert "The ledger id is the caller's idempotency key, recorded as sent" in out
    assert "sha256 digests" not in out
    audit = out[out.index("What the gateway's audit file recorded") :]
    assert re.search(r"github\.comments\.create +allowed +reversible +201 +demo-ledger-0001 ", audit)
    assert re.search(r"payments\.refunds\.create +allowed +irreversible +201 +demo-ledger-0002 ", audit)
    assert list(tmp_path.iterdir()) == []
