"""`anvil mock` as a process: it prints its URL, `anvil serve` works against it, SIGTERM stops it cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from anvil.client import AnvilClient
from anvil.proof.processes import mock_process
from tests.cli.fixtures.upstreams import credential_env

OWNER_REPO = {"owner": "octo", "repo": "hello"}


def _env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}


def test_anvil_mock_prints_one_json_url_line_and_exits_0_on_sigterm(github: Path) -> None:
    command = [sys.executable, "-m", "anvil", "mock", str(github), "--port", "0", "--seed", "3"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env()) as process:
        try:
            assert process.stdout is not None
            url = json.loads(process.stdout.readline())["url"]
            assert url.startswith("http://127.0.0.1:")
            described = httpx.get(url + "/__anvil", timeout=10).json()
            assert (described["service"], described["seed"]) == ("github", 3)
        finally:
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=15)
        assert process.stderr is not None
        err = process.stderr.read()
    assert code == 0
    assert "Traceback" not in err


def test_anvil_mock_refuses_a_malformed_port_with_a_usage_code(github: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "anvil", "mock", str(github), "--port", "http"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert ran.returncode == 2 and "cli/usage" in ran.stderr


@pytest.mark.anyio
async def test_a_reset_after_commit_loses_the_answer_but_keeps_the_effect(github: Path) -> None:
    async with mock_process(github, env=_env()) as mock:
        async with httpx.AsyncClient(base_url=mock.url, timeout=10) as client:
            await client.post("/__anvil/fault", json={"reset": True, "after_commit": True, "method": "POST"})
            with pytest.raises(httpx.RemoteProtocolError):
                await client.post("/repos/o/r/issues", json={"title": "answer lost"})
            listed = (await client.get("/repos/o/r/issues", params={"state": "all"})).json()
            log = (await client.get("/__anvil/requests")).json()["requests"]
    assert [issue["title"] for issue in listed] == ["answer lost"]
    assert log[0]["committed"] is True and log[0]["status"] is None


@pytest.mark.anyio
async def test_anvil_serve_against_the_mock_answers_a_read_and_a_create_for_payments(payments: Path) -> None:
    async with mock_process(payments, env=_env()) as mock:
        env = {"ANVIL_ENV": "dev", "ANVIL_BASE_URL": mock.url}
        env.update(credential_env(payments, "payments.customers.get", "mock-token"))
        async with AnvilClient.stdio(payments, env=env) as gateway:
            customer, _ = await gateway.call("payments_get_customer", {"customer_id": "cus_123"})
            refund, effect = await gateway.call(
                "payments_create_refund",
                {"payment_id": "pay_123", "amount": 250, "currency": "EUR", "confirm": True},
                idempotency_key="refund-key-1",
            )
        async with httpx.AsyncClient(base_url=mock.url, timeout=10) as client:
            log = (await client.get("/__anvil/requests")).json()["requests"]
    assert isinstance(customer, dict) and customer["id"] == "cus_123"
    assert isinstance(refund, dict) and (refund["amount"], refund["payment_id"]) == (250, "pay_123")
    assert effect is not None and effect["idempotency_key"] == "refund-key-1"
    assert [entry["operation"] for entry in log] == ["payments.customers.get", "payments.refunds.create"]
    assert log[1]["headers"]["idempotency-key"] == "refund-key-1"


@pytest.mark.anyio
async def test_anvil_serve_against_the_mock_answers_a_read_and_a_create_for_github_mini(github: Path) -> None:
    async with mock_process(github, env=_env()) as mock:
        env = {"ANVIL_ENV": "dev", "ANVIL_BASE_URL": mock.url}
        env.update(credential_env(github, "github.issues.list", "mock-token"))
        async with AnvilClient.stdio(github, env=env) as gateway:
            issue, effect = await gateway.call(
                "github_create_issue", {**OWNER_REPO, "title": "From the gateway", "confirm": True}
            )
            listed, _ = await gateway.call("github_list_issue", {**OWNER_REPO, "state": "all"})
    assert isinstance(issue, dict) and issue["title"] == "From the gateway"
    assert listed == [issue]
    assert effect is not None and effect["undo"]["kind"] == "compensate"
    assert effect["undo"]["arguments"] == {**OWNER_REPO, "issue_number": issue["number"], "state": "closed"}
