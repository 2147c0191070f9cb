"""/metrics: Prometheus text of calls by tool and outcome, latency, ledger outcomes; per-listener registry."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from anvil.air.model import Document
from anvil.runtime.audit import GatewayAuditSink, MemoryAuditSink
from anvil.serve.auth.principals import hash_token, parse_principals
from anvil.serve.auth.tokens import StaticTokenAuthenticator
from anvil.serve.listener import create_listener
from anvil.serve.metrics import FleetMetrics, ObservedAuditSink
from tests.serve.support import OWNER_REPO
from tests.serve.test_fleet import COMMENT, Rig, principal, read_grant

pytestmark = pytest.mark.anyio


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition by (name, sorted labels)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.fixture
async def metered(github: Document, payments: Document) -> AsyncIterator[tuple[Rig, FleetMetrics]]:
    metrics = FleetMetrics()
    rig = Rig(github, payments, audit=ObservedAuditSink(metrics, GatewayAuditSink(MemoryAuditSink())))
    yield rig, metrics
    await rig.aclose()


async def test_metrics_count_calls_by_tool_and_outcome_and_ledger_outcomes(metered: tuple[Rig, FleetMetrics]) -> None:
    rig, metrics = metered
    fleet = rig.fleet(observer=metrics)
    view = fleet.compose(principal("ada"))
    await view.call("github__github_list_issue", OWNER_REPO)
    await view.call("github__github_list_issue", OWNER_REPO)
    await view.call("github__github_create_comment", COMMENT, {"idempotency_key": "m-1"})
    await view.call("github__github_create_comment", COMMENT, {"idempotency_key": "m-1"})
    await fleet.compose(principal("bob", grants=read_grant())).call("github__github_create_comment", COMMENT)
    app = create_listener(fleet, metrics=metrics)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        answer = await client.get("/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    found = samples(answer.text)
    calls = "anvil_tool_calls_total"
    assert found[(calls, (("outcome", "ok"), ("tool", "github__github_list_issue")))] == 2
    assert found[(calls, (("outcome", "ok"), ("tool", "github__github_create_comment")))] == 2
    assert found[(calls, (("outcome", "policy_denied"), ("tool", "github__github_create_comment")))] == 1
    assert found[("anvil_tool_call_duration_seconds_count", (("tool", "github__github_list_issue"),))] == 2
    assert found[("anvil_ledger_outcomes_total", (("outcome", "reserved"),))] == 1
    assert found[("anvil_ledger_outcomes_total", (("outcome", "replay"),))] == 1
    assert found[("anvil_ledger_outcomes_total", (("outcome", "none"),))] == 3  # two reads and the refusal
    assert found[("anvil_ledger_in_progress_refusals_total", ())] == 0


def test_a_refusal_for_a_key_in_progress_is_counted() -> None:
    metrics = FleetMetrics()
    metrics.observe_record({"ledger": "in_progress", "error_code": "conflict"})
    metrics.observe_record({"ledger": "in_progress", "error_code": "upstream_unavailable"})  # a kept reservation
    found = samples(metrics.render().decode())
    assert found[("anvil_ledger_in_progress_refusals_total", ())] == 1
    assert found[("anvil_ledger_outcomes_total", (("outcome", "in_progress"),))] == 2


def test_each_listener_has_its_own_registry() -> None:
    first, second = FleetMetrics(), FleetMetrics()
    first.observe_call("t", "ok", 0.01)
    assert samples(first.render().decode())[("anvil_tool_calls_total", (("outcome", "ok"), ("tool", "t")))] == 1
    assert not any(name == "anvil_tool_calls_total" for name, _ in samples(second.render().decode()))


async def test_metrics_answer_scrapers_without_a_bearer_while_mcp_needs_one(metered: tuple[Rig, FleetMetrics]) -> None:
    rig, metrics = metered
    records = parse_principals({"principals": [{"id": "ops", "token_sha256": hash_token("ops-token")}]})
    app = create_listener(rig.fleet(), authenticator=StaticTokenAuthenticator(records), metrics=metrics)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        scraped = await client.get("/metrics")
        refused = await client.post("/mcp", json={}, headers={"accept": "application/json"})
    assert scraped.status_code == 200
    assert (refused.status_code, refused.json()["error"]["code"]) == (401, "invalid_request")
