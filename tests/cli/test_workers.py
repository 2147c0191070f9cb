"""`anvil serve --workers N`: N processes on one port sharing the durable ledger, one /metrics for all."""

from __future__ import annotations

import errno
import json
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from anvil.bundle.read import read_bundle
from anvil.cli import main
from anvil.runtime.credentials import credential_profile, expected_env

CALLS = 24
WRITES = 8
JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _token_env(bundle: Path) -> dict[str, str]:
    for op in read_bundle(bundle).operations:
        names = expected_env(op.auth, credential_profile("default", op.auth))
        if names:
            return {names[0]: "workers-token"}
    return {}


def _call(url: str, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    with httpx.Client(timeout=30) as client:  # a fresh connection each time, so the kernel picks a worker each time
        response = client.post(url, json=body, headers=JSON_HEADERS)
    assert response.status_code == 200
    result: dict[str, Any] = response.json()["result"]
    return result


def _total(metrics: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith(name + "{"))


def _supervisor(payments: Path, upstream: str, tmp_path: Path, *flags: str) -> tuple[subprocess.Popen[str], str]:
    """``anvil serve PAYMENTS --http 127.0.0.1:0 --workers 2 FLAGS`` on a SQLite ledger; the process and its URL."""
    env = {
        **{key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")},
        "ANVIL_ENV": "prod",
        "ANVIL_BASE_URL": upstream,
        "ANVIL_ALLOWED_HOSTS": "127.0.0.1",
        "ANVIL_LEDGER": f"sqlite:///{tmp_path / 'ledger.db'}",
        **_token_env(payments),
    }
    command = [sys.executable, "-m", "anvil", "serve", str(payments), "--http", "127.0.0.1:0", "--workers", "2"]
    process = subprocess.Popen([*command, *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], 90)
    if not ready:
        process.kill()
        process.communicate(timeout=30)
        raise AssertionError("the supervisor did not announce its URL")
    return process, json.loads(process.stdout.readline())["url"]


def test_two_workers_serve_one_port_share_the_ledger_and_report_one_metrics_sum(
    payments: Path, mock: tuple[str, Any], tmp_path: Path
) -> None:
    upstream, state = mock
    process, url = _supervisor(payments, upstream, tmp_path)
    try:
        for _ in range(CALLS):
            read = _call(url, "payments_get_customer", {"customer_id": "cus_123"})
            assert read.get("isError", False) is False
        refund = {"payment_id": "pay_123", "amount": 1, "currency": "EUR", "confirm": True}
        answers = [_call(url, "payments_create_refund", refund, {"idempotency_key": "w-1"}) for _ in range(WRITES)]
        with httpx.Client(timeout=30) as client:
            metrics = client.get(url.removesuffix("/mcp") + "/metrics").text
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors
    assert all(answer.get("isError", False) is False for answer in answers)
    sent = [request for request in state.requests if request.get("path", "").endswith("/refunds")]
    assert len(sent) == 1  # the other workers replayed the first one's ledger row: one durable ledger
    assert _total(metrics, "anvil_tool_calls_total") == CALLS + WRITES  # whichever worker was scraped
    assert "worker 1/2" in errors and "worker 2/2" in errors
    assert ("on uvloop, httptools" if sys.platform == "linux" else " on ") in errors  # names the loop and parser


def test_workers_need_http_and_a_shared_ledger(
    payments: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANVIL_LEDGER", raising=False)
    assert main(["serve", str(payments), "--workers", "2"]) == 2
    assert "cli/usage" in capsys.readouterr().err
    monkeypatch.setenv("ANVIL_ENV", "dev")  # dev without ANVIL_LEDGER is memory:, which one process owns
    assert main(["serve", str(payments), "--http", "127.0.0.1:0", "--workers", "2"]) == 2
    assert "cli/usage" in capsys.readouterr().err
    assert main(["serve", str(payments), "--http", "127.0.0.1:0", "--workers", "0"]) == 2
    assert "cli/usage" in capsys.readouterr().err


def test_a_foreign_process_cannot_bind_the_workers_port_with_so_reuseport_and_flags_reach_the_workers(
    payments: Path, mock: tuple[str, Any], tmp_path: Path
) -> None:
    process, url = _supervisor(payments, mock[0], tmp_path, "--header-timeout", "1")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    try:
        foreign = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        foreign.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        foreign.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        with foreign, pytest.raises(OSError) as refused:
            foreign.bind(("127.0.0.1", port))  # with SO_REUSEPORT on every worker socket this joined the port
        reads = [_call(url, "payments_get_customer", {"customer_id": "cus_123"}) for _ in range(6)]
        with socket.create_connection(("127.0.0.1", port), timeout=10) as idle:
            idle.settimeout(8)
            closed = idle.recv(1) == b""  # the worker that accepted it had the one-second header timeout
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=60)
    assert refused.value.errno == errno.EADDRINUSE
    assert all(read.get("isError", False) is False for read in reads)
    assert closed
    assert process.returncode == 0, errors
