"""The payments mock upstream keeps state, honours Idempotency-Key and counts requests."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "examples" / "payments" / "mock_upstream.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("payments_mock_upstream", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def _client() -> httpx.AsyncClient:
    app = _module().create_app()
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://payments.test")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_an_unknown_customer_is_a_404_with_a_domain_code() -> None:
    async with _client() as client:
        response = await client.get("/customers/cus_nope")
        assert response.status_code == 404
        assert response.json() == {"code": "customer_not_found", "message": "No such customer."}
        assert (await client.get("/customers/cus_123")).json()["id"] == "cus_123"


@pytest.mark.anyio
async def test_a_repeated_refund_key_replays_and_a_changed_body_conflicts() -> None:
    async with _client() as client:
        body = {"amount": 100, "currency": "EUR"}
        headers = {"Idempotency-Key": "ref-001"}
        first = await client.post("/payments/pay_123/refunds", json=body, headers=headers)
        again = await client.post("/payments/pay_123/refunds", json=body, headers=headers)
        changed = await client.post("/payments/pay_123/refunds", json={**body, "amount": 999}, headers=headers)
        assert first.status_code == 201 and again.status_code == 201
        assert again.json() == first.json()
        assert changed.status_code == 409
        payment = (await client.get("/payments/pay_123")).json()
        assert payment["refunded_amount"] == 100
        seen = (await client.get("/__requests")).json()
        assert seen["count"] == 4
        assert [r["idempotency_key"] for r in seen["requests"][:3]] == ["ref-001"] * 3


@pytest.mark.anyio
async def test_capture_twice_is_harmless_and_faults_can_be_injected() -> None:
    async with _client() as client:
        await client.post("/__fault", json={"path": "/payments/pay_456/capture", "status": 503, "times": 1})
        assert (await client.post("/payments/pay_456/capture")).status_code == 503
        first = await client.post("/payments/pay_456/capture")
        second = await client.post("/payments/pay_456/capture")
        assert first.json()["status"] == "captured" and second.json() == first.json()
        await client.post("/__reset")
        assert (await client.get("/__requests")).json() == {"count": 0, "requests": []}
        assert (await client.get("/payments/pay_456")).json()["status"] == "authorized"


@pytest.mark.anyio
async def test_a_delayed_fault_answers_normally_but_late_and_the_traceparent_is_recorded() -> None:
    async with _client() as client:
        await client.post("/__fault", json={"path": "/payments/pay_123/refunds", "delay_ms": 300, "times": 1})
        began = time.monotonic()
        headers = {"traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"}
        late = await client.post("/payments/pay_123/refunds", json={"amount": 1, "currency": "EUR"}, headers=headers)
        assert late.status_code == 201 and time.monotonic() - began >= 0.3  # taken, then answered late
        began = time.monotonic()
        assert (await client.get("/customers/cus_123")).status_code == 200 and time.monotonic() - began < 0.3
        seen = (await client.get("/__requests")).json()["requests"]
        assert [r["traceparent"] for r in seen] == [headers["traceparent"], None]


@pytest.mark.anyio
async def test_refunds_are_validated_against_the_payment() -> None:
    async with _client() as client:
        assert (await client.post("/payments/pay_123/refunds", json={"currency": "EUR"})).status_code == 400
        too_much = await client.post("/payments/pay_123/refunds", json={"amount": 10**6, "currency": "EUR"})
        assert too_much.json()["code"] == "amount_too_large"
        missing = await client.post("/payments/pay_nope/refunds", json={"amount": 1, "currency": "EUR"})
        assert missing.status_code == 404


def test_the_script_serves_on_a_free_port_and_prints_its_url() -> None:
    with subprocess.Popen(
        [sys.executable, str(SCRIPT), "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as process:
        try:
            assert process.stdout is not None
            url = json.loads(process.stdout.readline())["url"]
            response = httpx.get(f"{url}/customers/cus_nope", timeout=10)
            assert response.status_code == 404
            assert response.json()["code"] == "customer_not_found"
        finally:
            process.terminate()
            process.wait(timeout=10)
