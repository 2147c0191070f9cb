"""Crash and multi-process guarantees on one SQLite file, with real subprocesses and a real upstream."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from runtime_support import ContextFactory, UpstreamState, keyed_write

from anvil.ledger.registry import open_ledger
from anvil.runtime.context import CallOptions
from anvil.runtime.executor import execute

pytestmark = pytest.mark.anyio

WORKER = Path(__file__).resolve().parent / "ledger_worker.py"
SQLITE_REFERENCE = re.compile(r"^sqlite/[a-z0-9_]+/[0-9a-f]{64}$")
REFUND = {"payment_id": "pay_1", "amount": 2500}


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    with anyio.fail_after(20):
        while not path.exists():
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            await anyio.sleep(0.01)


async def test_a_process_killed_after_the_upstream_answered_leaves_the_row_in_progress(
    tmp_path: Path, upstream_url: str, upstream: UpstreamState, make_context: ContextFactory
) -> None:
    uri = f"sqlite:///{tmp_path}/crash.db"
    marker = tmp_path / "answered"
    worker = _spawn("crash", uri, upstream_url, "key-crash", str(marker))
    try:
        await _wait_for(marker, worker)
        assert upstream.count == 1
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.communicate(timeout=10)
    assert worker.returncode == -signal.SIGKILL
    ledger = open_ledger(uri)
    try:
        outcome = await execute(
            keyed_write(), REFUND, make_context(ledger=ledger, env="prod"), CallOptions(idempotency_key="key-crash")
        )
    finally:
        await ledger.close()
    assert outcome.code == "conflict" and outcome.record.ledger == "in_progress"
    assert outcome.envelope is not None and outcome.envelope.details is not None
    assert SQLITE_REFERENCE.match(str(outcome.envelope.details["ledger_reference"]))
    assert outcome.envelope.details["operator_action_required"] is True
    assert upstream.count == 1


async def test_32_concurrent_same_key_calls_from_4_processes_reach_the_upstream_once(
    tmp_path: Path, upstream_url: str, upstream: UpstreamState
) -> None:
    uri = f"sqlite:///{tmp_path}/shared.db"
    go = tmp_path / "go"
    workers = [_spawn("race", uri, upstream_url, "key-race", str(go), "8") for _ in range(4)]
    go.write_text("go", encoding="utf-8")
    outcomes = []
    for worker in workers:
        stdout, stderr = worker.communicate(timeout=60)
        assert worker.returncode == 0, stderr
        outcomes.extend(json.loads(line) for line in stdout.splitlines())
    # Each assertion shows every outcome, so a failure under load says which call went wrong and how.
    assert len(outcomes) == 32, outcomes
    assert upstream.count == 1, outcomes
    winners = [o for o in outcomes if o["kind"] == "success" and not o["replayed"]]
    assert len(winners) == 1 and winners[0]["ledger"] == "reserved", outcomes
    for other in outcomes:
        if other is winners[0]:
            continue
        replayed = other["kind"] == "success" and other["replayed"] and other["ledger"] == "replay"
        refused = other["code"] == "conflict" and other["ledger"] == "in_progress"
        assert replayed or refused, other
