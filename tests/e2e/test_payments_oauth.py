"""The payments example served as the original serves it: OAuth2 client credentials exchanged at its mock's
token endpoint, by a real ``anvil serve`` process configured only through the original's variables.

The mock (``examples/payments/mock_upstream.py``, :mod:`tests.e2e.oauth_support`) runs in this process on
loopback with one registered client, so it refuses any token it did not issue (or that expired) with a
401 and counts every token it issues; the gateway is a child process, its stderr, audit file, SQLite
ledger, ``/metrics`` and ``/openapi`` are read back to prove the client secret and the tokens reach none
of them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from anvil.bundle.read import read_bundle
from anvil.cli.compile import compile_bundle
from tests.e2e.oauth_support import SECRET, business, client_variables
from tests.e2e.support import EXAMPLES, GatewayProcess, RestAnswer, rest_call

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
READ_TOOL = "payments_get_customer"
REFUND_TOOL = "payments_create_refund"
REFUND = {"payment_id": "pay_123", "amount": 100, "currency": "EUR", "confirm": True}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("oauth") / "payments"
    folder = EXAMPLES / "payments"
    outcome = compile_bundle(
        folder / "openapi.yaml", out=out, manifest=folder / "anvil.yaml", service_id="payments", root=REPO
    )
    assert outcome.ok, [d.code for d in outcome.diagnostics]
    return out


def original_variables(bundle: Path, token_endpoint: str) -> dict[str, str]:
    """``ANVIL_DEFAULT_OAUTH2_D8AD..._CLIENT_ID``, ``_CLIENT_SECRET`` and ``_TOKEN_ENDPOINT``, as the original's."""
    variables = client_variables(read_bundle(bundle).operations[0].auth, token_endpoint)
    assert "ANVIL_DEFAULT_OAUTH2_D8AD572D2FB1B3F6C47061C8A5B64A62_CLIENT_ID" in variables
    return variables


def gateway_env(bundle: Path, url: str, folder: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
    env.update(
        {
            "ANVIL_ENV": "dev",
            "ANVIL_BASE_URL": url,
            "ANVIL_LEDGER": f"sqlite:///{folder / 'ledger.db'}",
            "ANVIL_AUDIT_FILE": str(folder / "audit.jsonl"),
            "ANVIL_UPSTREAM_TIMEOUT_MS": "1500",
            **original_variables(bundle, f"{url}/oauth/token"),
            **extra,
        }
    )
    return env


@pytest.fixture
def gateway(bundle: Path, token_mock: tuple[str, Any], tmp_path: Path) -> Iterator[GatewayProcess]:
    url, _ = token_mock
    process = GatewayProcess(
        [str(bundle), "--http", "127.0.0.1:0"], env=gateway_env(bundle, url, tmp_path), log=tmp_path / "gateway.log"
    )
    process.start()
    try:
        yield process
    finally:
        process.stop()


def error(answer: RestAnswer) -> dict[str, Any]:
    assert isinstance(answer.body, dict) and "error" in answer.body, answer.body
    found: dict[str, Any] = answer.body["error"]
    return found


async def test_the_payments_example_served_with_the_originals_oauth2_variables_exchanges_its_tokens(
    gateway: GatewayProcess, token_mock: tuple[str, Any], tmp_path: Path
) -> None:
    _, state = token_mock
    answers: list[RestAnswer] = []
    async with httpx.AsyncClient(timeout=30) as http:

        async def read() -> None:
            answers.append(await rest_call(http, gateway.base, READ_TOOL, {"customer_id": "cus_123"}))

        # 50 concurrent calls on a cold cache fetch one token (the original fetches one per call)
        async with anyio.create_task_group() as group:
            for _ in range(50):
                group.start_soon(read)
        assert [a.status for a in answers] == [200] * 50
        assert len(state.oauth.requests) == 1 and len(business(state)) == 50
        read_token = next(iter(state.oauth.issued))
        assert {r["authorization"] for r in business(state)} == {f"Bearer {read_token}"}

        # a keyed refund reaches the upstream with a token of its own scope and the caller's key
        refund = await rest_call(http, gateway.base, REFUND_TOOL, REFUND, key="k-1")
        answers.append(refund)
        assert refund.status == 200 and refund.body["status"] == "succeeded"
        [sent] = business(state, "/refunds")
        write_token = [t for t, entry in state.oauth.issued.items() if entry["scope"] == "payments.write"]
        assert sent["idempotency_key"] == "k-1" and sent["authorization"] == f"Bearer {write_token[0]}"

        # every token is revoked: a 401 gets one new token and one resend (same key), once for all callers
        state.oauth.issued.clear()
        state.oauth.lifetime = 4
        again = await rest_call(http, gateway.base, REFUND_TOOL, {**REFUND, "amount": 50}, key="k-2")
        answers.append(again)
        assert again.status == 200
        assert [r["idempotency_key"] for r in business(state, "/refunds")] == ["k-1", "k-2", "k-2"]
        assert state.oauth.refused == 1 and len(state.oauth.issued) == 1
        assert state.payments["pay_123"]["refunded_amount"] == 150

        # a short-lived token is replaced before it expires, once, by the first calls that need it
        answers.append(await rest_call(http, gateway.base, REFUND_TOOL, {**REFUND, "amount": 1}, key="k-3"))
        issued = len(state.oauth.issued)
        await anyio.sleep(2.5)  # past its 4 s lifetime less the skew (2 s), before the mock's expiry

        async def small_refund(key: str) -> None:
            answers.append(await rest_call(http, gateway.base, REFUND_TOOL, {**REFUND, "amount": 1}, key=key))

        async with anyio.create_task_group() as group:
            for n in range(10):
                group.start_soon(small_refund, f"k-{4 + n}")
        assert len(state.oauth.issued) == issued + 1 and state.oauth.refused == 1
        assert [a.status for a in answers[-10:]] == [200] * 10
        assert state.payments["pay_123"]["refunded_amount"] == 161
        metrics = (await http.get(f"{gateway.base}/metrics")).text
        catalog = await http.get(f"{gateway.base}/openapi")
        assert catalog.status_code == 200 and catalog.json()["operations"][0]["toolName"] == READ_TOOL

    assert [r["client_auth"] for r in state.oauth.requests] == ["client_secret_basic"] * len(state.oauth.requests)
    tokens = {r["authorization"].split()[1] for r in state.requests}
    assert len(tokens) >= 4
    audit = (tmp_path / "audit.jsonl").read_text(encoding="utf-8")
    assert len(audit.splitlines()) >= 53
    shown = {
        "stderr": gateway.stderr(),
        "audit": audit,
        "metrics": metrics,
        "catalog": catalog.text,
        "ledger": (tmp_path / "ledger.db").read_bytes().decode("latin-1"),
        "answers": json.dumps([[a.body, a.raw_effect] for a in answers]),
    }
    for where, text in shown.items():
        for secret in (SECRET, *tokens):
            assert secret not in text, where


async def test_a_served_token_endpoint_that_hangs_or_answers_5_mb_fails_closed_within_its_bound(
    gateway: GatewayProcess, token_mock: tuple[str, Any]
) -> None:
    _, state = token_mock
    async with httpx.AsyncClient(timeout=30) as http:
        state.oauth.mode = "hang"
        began = time.monotonic()
        hung = await rest_call(http, gateway.base, READ_TOOL, {"customer_id": "cus_123"})
        held = await rest_call(http, gateway.base, REFUND_TOOL, REFUND, key="k-hang")
        elapsed = time.monotonic() - began
        state.oauth.mode = "huge"
        huge = await rest_call(http, gateway.base, REFUND_TOOL, REFUND, key="k-hang")
        state.oauth.mode = "normal"
        for answer in (hung, held):
            assert answer.status == 401
            assert error(answer)["code"] == "auth_required"
            assert error(answer)["details"] == {"code": "oauth/token_endpoint_unavailable", "timeout_ms": 1500}
        assert elapsed < 10.0  # two exchanges bounded at 1.5 s each, not the mock's minute
        assert huge.status == 401 and error(huge)["details"] == {
            "code": "oauth/token_answer_invalid",
            "max_bytes": 65536,
        }
        assert business(state) == []  # nothing was sent upstream
        # nothing was reserved under the key: the refund runs once the endpoint answers again
        done = await rest_call(http, gateway.base, REFUND_TOOL, REFUND, key="k-hang")
        assert done.status == 200 and [r["idempotency_key"] for r in business(state)] == ["k-hang"]


def test_a_token_endpoint_outside_the_allowed_hosts_stops_the_gateway_at_start_up(
    bundle: Path, token_mock: tuple[str, Any], tmp_path: Path
) -> None:
    url, state = token_mock
    elsewhere = url.replace("127.0.0.1", "localhost") + "/oauth/token"
    env = gateway_env(bundle, url, tmp_path, **original_variables(bundle, elsewhere))
    process = GatewayProcess([str(bundle), "--http", "127.0.0.1:0"], env=env, log=tmp_path / "refused.log")
    with pytest.raises(RuntimeError):
        process.start()
    stderr = process.stderr()
    assert "config/token_endpoint_refused" in stderr and "localhost" in stderr
    assert SECRET not in stderr
    assert state.oauth.requests == []
