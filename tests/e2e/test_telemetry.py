"""A traced ``anvil serve``: every call's span tree reaches an OTLP/HTTP receiver on loopback, one trace id joins
the envelope, the audit line and the ledger row, and nothing secret reaches a span or a log line.

The gateway is a child process serving a fleet: the payments example (OAuth2 client credentials against its
mock's token endpoint, ``service.propagate_trace: true`` in its manifest) and github-mini (no propagation),
with a SQLite ledger, static bearer principals, JSON logs and ``--metrics-auth on``. The receiver
(:mod:`tests.telemetry.receiver`) decodes each export with ``opentelemetry-proto``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from anvil.bundle.read import read_bundle
from anvil.cli.compile import compile_bundle
from anvil.serve.auth.principals import hash_token
from tests.e2e.oauth_support import SECRET, client_variables
from tests.e2e.support import EXAMPLES, GatewayProcess, ThreadedMock, load_mock, rest_call, token_variable
from tests.telemetry.receiver import Received, Receiver, black_hole, closed_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BEARER = "bearer-planted-5d1c9e"
PRINCIPAL = "local:planted-ada"
GITHUB_TOKEN = "gh-planted-token-93ab"
READ = "payments__payments_get_customer"
REFUND = "payments__payments_create_refund"
ISSUES = "github__github_list_issue"
REFUND_ARGS = {"payment_id": "pay_123", "amount": 100, "currency": "EUR", "confirm": True}
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
KEYS = ("idem-planted-k1-77e1", "idem-planted-k2-3c90")
SERVER, CLIENT, INTERNAL = 2, 3, 1


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("traced") / "ws"
    manifest = yaml.safe_load((EXAMPLES / "payments" / "anvil.yaml").read_text(encoding="utf-8"))
    manifest.setdefault("service", {})["propagate_trace"] = True
    propagating = root.parent / "payments.anvil.yaml"
    propagating.write_text(yaml.safe_dump(manifest), encoding="utf-8")
    for example, service, spec_manifest in (
        ("payments", "payments", propagating),
        ("github-mini", "github", EXAMPLES / "github-mini" / "anvil.yaml"),
    ):
        folder = EXAMPLES / example
        outcome = compile_bundle(
            folder / "openapi.yaml", out=root / service, manifest=spec_manifest, service_id=service, root=REPO
        )
        assert outcome.ok, [d.code for d in outcome.diagnostics]
    assert read_bundle(root / "payments").service.propagate_trace is True
    assert read_bundle(root / "github").service.propagate_trace is None
    return root


@pytest.fixture(scope="module")
def github_mock() -> Iterator[tuple[str, Any]]:
    module = load_mock("github-mini")
    app, state = module.create_app(token=GITHUB_TOKEN)
    mock = ThreadedMock(app, "github").start()
    try:
        yield mock.url, state
    finally:
        mock.stop()


def gateway_env(
    workspace: Path, folder: Path, payments: str, github: str, endpoint: str, **extra: str
) -> dict[str, str]:
    principals = folder / "principals.json"
    entry = {"id": PRINCIPAL, "token_sha256": hash_token(BEARER), "scopes": ["*"]}
    principals.write_text(json.dumps({"principals": [entry]}), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANVIL_", "OTEL_"))}
    auth = read_bundle(workspace / "payments").operations[0].auth
    env.update(
        {
            "ANVIL_ENV": "dev",
            "ANVIL_BASE_URL_PAYMENTS": payments,
            "ANVIL_BASE_URL_GITHUB": github,
            "ANVIL_LEDGER": f"sqlite:///{folder / 'ledger.db'}",
            "ANVIL_AUDIT_FILE": str(folder / "audit.jsonl"),
            "ANVIL_UPSTREAM_TIMEOUT_MS": "1000",
            "ANVIL_INBOUND_AUTH_MODE": "static",
            "ANVIL_PRINCIPALS_FILE": str(principals),
            "ANVIL_LOG_FORMAT": "json",
            "ANVIL_OTEL_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_METRIC_EXPORT_INTERVAL": "500",
            token_variable(workspace / "github"): GITHUB_TOKEN,
            **client_variables(auth, f"{payments}/oauth/token"),
            **extra,
        }
    )
    return env


@pytest.fixture
def gateway(
    workspace: Path, token_mock: tuple[str, Any], github_mock: tuple[str, Any], receiver: Receiver, tmp_path: Path
) -> Iterator[GatewayProcess]:
    env = gateway_env(workspace, tmp_path, token_mock[0], github_mock[0], receiver.url)
    process = GatewayProcess(
        [str(workspace), "--http", "127.0.0.1:0", "--metrics-auth", "on"], env=env, log=tmp_path / "gateway.log"
    )
    process.start()
    try:
        yield process
    finally:
        process.stop()


@asynccontextmanager
async def session(url: str) -> AsyncIterator[ClientSession]:
    client = create_mcp_http_client(headers={"authorization": f"Bearer {BEARER}"})
    async with client, streamable_http_client(url, http_client=client) as (read, write):
        async with ClientSession(read, write) as opened:
            await opened.initialize()
            yield opened


async def call(
    opened: ClientSession,
    tool: str,
    arguments: dict[str, Any],
    *,
    key: str | None = None,
    traceparent: str | None = None,
) -> tuple[Any, dict[str, Any] | None]:
    """The result's structured content or error envelope, and its ``_meta.effect``."""
    meta: dict[str, Any] = {}
    if key is not None:
        meta["idempotency_key"] = key
    if traceparent is not None:
        meta["traceparent"] = traceparent
    result = await opened.call_tool(tool, arguments, meta=meta or None)
    effect = (result.meta or {}).get("effect")
    if result.is_error:
        return json.loads(result.content[0].text)["error"], effect  # type: ignore[union-attr]
    return result.structured_content, effect


def tree(spans: list[Received]) -> tuple[Received, list[Received]]:
    """The trace's server span and its children, in start order (every child's parent is the server span)."""
    [root] = [span for span in spans if span.kind == SERVER]
    children = sorted((span for span in spans if span is not root), key=lambda span: span.start)
    assert all(child.parent == root.span for child in children), [(c.name, c.parent, root.span) for c in children]
    return root, children


def names(children: list[Received]) -> list[str]:
    return [child.name for child in children]


def audit_lines(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "audit.jsonl").read_text(encoding="utf-8").splitlines()]


def ledger_rows(folder: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(folder / "ledger.db") as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = []
        for table in tables:
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            if "trace_id" in columns:
                cursor = db.execute(f"SELECT status, trace_id, operation_id FROM {table}")
                rows += [dict(zip(("status", "trace_id", "operation_id"), row, strict=True)) for row in cursor]
        return rows


async def test_every_call_leaves_its_span_tree_and_one_trace_id_joins_envelope_audit_and_ledger(
    gateway: GatewayProcess,
    receiver: Receiver,
    token_mock: tuple[str, Any],
    github_mock: tuple[str, Any],
    tmp_path: Path,
) -> None:
    _, payments = token_mock
    _, github = github_mock
    async with session(gateway.url) as opened:
        # 1. a read continues the caller's trace (its _meta.traceparent); the first token is exchanged
        caller = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
        data, _ = await call(opened, READ, {"customer_id": "cus_123"}, traceparent=caller)
        assert data["id"] == "cus_123"
        root, children = tree(receiver.wait_trace(CALLER_TRACE, 4))
        assert (root.name, root.parent, root.flags & 0x300) == (f"tools/call {READ}", CALLER_SPAN, 0x300)
        assert names(children) == ["anvil.gates", "anvil.oauth.token", "GET"]
        assert root.attributes["mcp.method.name"] == "tools/call" and root.attributes["gen_ai.tool.name"] == READ
        assert root.attributes["anvil.outcome"] == "ok" and root.attributes["anvil.effect_class"] == "read"
        assert root.attributes["anvil.connector"] == "payments" and "error.type" not in root.attributes
        token, attempt = children[1], children[2]
        assert token.attributes["anvil.oauth.cache_hit"] is False
        assert attempt.kind == CLIENT and attempt.attributes["http.response.status_code"] == 200
        assert attempt.attributes["url.template"] == "/customers/{customer_id}"
        assert attempt.attributes["server.address"] == "127.0.0.1" and attempt.attributes["anvil.upstream.attempt"] == 1
        assert attempt.attributes["http.response.body.size"] > 0
        # propagation is on for payments: the upstream got the attempt's span as its parent
        [sent] = [r for r in payments.requests if r["path"] == "/customers/cus_123"]
        assert sent["traceparent"] == f"00-{CALLER_TRACE}-{attempt.span}-01"

        # 2. the next read's token comes from the cache
        await call(opened, READ, {"customer_id": "cus_123"})
        receiver.wait(lambda: sum(1 for s in receiver.spans if s.name == "anvil.oauth.token") >= 2)
        tokens = [s for s in receiver.spans if s.name == "anvil.oauth.token"]
        assert [t.attributes["anvil.oauth.cache_hit"] for t in tokens] == [False, True]

        # 3. a keyed write: reserve, one attempt, complete; the ledger row and the audit line carry its trace
        data, effect = await call(opened, REFUND, REFUND_ARGS, key=KEYS[0])
        assert data["status"] == "succeeded" and effect is not None
        write = next(line for line in audit_lines(tmp_path) if line["ledger"] == "reserved")
        root, children = tree(receiver.wait_trace(write["trace_id"], 6))
        assert names(children) == [
            "anvil.gates",
            "anvil.oauth.token",
            "anvil.ledger.reserve",
            "POST",
            "anvil.ledger.complete",
        ]
        assert children[1].attributes["anvil.oauth.cache_hit"] is False  # the write scope's own token
        reserve = children[2]
        assert reserve.attributes["anvil.ledger.backend"] == "sqlite"
        assert reserve.attributes["anvil.idempotency.outcome"] == "reserved"
        assert reserve.attributes["anvil.ledger.reference"].startswith("sqlite/")
        assert root.attributes["anvil.idempotency.outcome"] == "reserved"
        assert root.attributes["anvil.effect_class"] == "irreversible"  # the refund declares no undo
        assert children[3].attributes["http.response.status_code"] == 201
        [row] = [r for r in ledger_rows(tmp_path) if r["status"] == "completed"]
        assert row["trace_id"] == write["trace_id"] == root.trace_id

        # 4. its replay: the reservation answers from the ledger, nothing goes upstream
        await call(opened, REFUND, REFUND_ARGS, key=KEYS[0])
        replay = next(line for line in audit_lines(tmp_path) if line["ledger"] == "replay")
        root, children = tree(receiver.wait_trace(replay["trace_id"], 4))
        assert names(children) == ["anvil.gates", "anvil.oauth.token", "anvil.ledger.replay"]
        assert children[-1].attributes["anvil.idempotency.outcome"] == "replayed"

        # 5. the same key for another request: a conflict, and the envelope names the trace
        envelope, _ = await call(opened, REFUND, {**REFUND_ARGS, "amount": 7}, key=KEYS[0])
        assert envelope["code"] == "conflict"
        root, children = tree(receiver.wait_trace(envelope["trace_id"], 4))
        assert children[-1].name == "anvil.ledger.reserve"
        assert children[-1].attributes["anvil.idempotency.outcome"] == "conflict"
        assert root.attributes["error.type"] == "conflict" and root.status == 2

        # 6. an unconfirmed write is refused by the gates: nothing is reserved or sent
        envelope, _ = await call(opened, REFUND, {k: v for k, v in REFUND_ARGS.items() if k != "confirm"}, key="k-x")
        assert envelope["code"] == "confirmation_required"
        root, children = tree(receiver.wait_trace(envelope["trace_id"], 2))
        assert names(children) == ["anvil.gates"]
        assert children[0].attributes["error.type"] == "confirmation_required"

        # 7. the upstream answers too late: the attempt times out, the row stays in progress, its trace is found
        async with httpx.AsyncClient() as http:
            fault = {"path": "/payments/pay_123/refunds", "delay_ms": 1500, "times": 10}  # every attempt
            assert (await http.post(f"{token_mock[0]}/__fault", json=fault)).status_code == 200
        envelope, _ = await call(opened, REFUND, {**REFUND_ARGS, "amount": 5}, key=KEYS[1])
        assert (
            envelope["code"] == "upstream_timeout" and envelope["details"]["upstream_outcome"] == "possibly_committed"
        )
        [held] = [r for r in ledger_rows(tmp_path) if r["status"] == "in_progress"]
        assert held["trace_id"] == envelope["trace_id"]
        attempts = envelope_attempts = [line for line in audit_lines(tmp_path) if line["trace_id"] == held["trace_id"]]
        [line] = envelope_attempts
        root, children = tree(receiver.wait_trace(held["trace_id"], 4 + line["attempts"]))
        attempts = [child for child in children if child.name == "POST"]
        assert [a.attributes["anvil.upstream.attempt"] for a in attempts] == list(range(1, line["attempts"] + 1))
        assert {a.attributes["error.type"] for a in attempts} == {"timeout"} and line["attempts"] > 1
        assert attempts[1].attributes["http.request.resend_count"] == 1
        assert names(children)[-1] == "POST"  # kept in progress: neither completed nor released
        assert root.attributes["anvil.idempotency.outcome"] == "in_progress"
        assert root.attributes["anvil.ledger.reference"] == envelope["details"]["ledger_reference"]

        # 8. a call to the fleet's other bundle: its own connector, and no traceparent upstream (propagation off)
        data, _ = await call(opened, ISSUES, {"owner": "octo", "repo": "hello"})
        receiver.wait(
            lambda: any(s.attributes.get("gen_ai.tool.name") == ISSUES for s in receiver.spans if s.kind == SERVER)
        )
        [issues] = [s for s in receiver.spans if s.kind == SERVER and s.attributes["gen_ai.tool.name"] == ISSUES]
        assert issues.attributes["anvil.connector"] == "github" and issues.attributes["anvil.outcome"] == "ok"
        assert github.requests and all("traceparent" not in r for r in github.requests)

    # 9. REST: the HTTP traceparent header is continued, and the span speaks HTTP
    async with httpx.AsyncClient(timeout=30) as http:
        rest_trace = "0af7651916cd43dd8448eb211c80319c"
        answer = await http.post(
            f"{gateway.base}/call/{READ}",
            json={"arguments": {"customer_id": "cus_123"}},
            headers={"authorization": f"Bearer {BEARER}", "traceparent": f"00-{rest_trace}-b7ad6b7169203331-01"},
        )
        assert answer.status_code == 200
        root, children = tree(receiver.wait_trace(rest_trace, 4))
        assert root.name == "POST /call/{tool}" and root.parent == "b7ad6b7169203331"
        assert root.attributes["http.request.method"] == "POST" and root.attributes["http.route"] == "/call/{tool}"
        assert root.attributes["http.response.status_code"] == 200 and "mcp.method.name" not in root.attributes

        # metrics reach the receiver too, and /metrics wants the bearer
        receiver.wait(lambda: any(name == "anvil.tool.calls" for name, _, _ in receiver.metrics))
        assert (await http.get(f"{gateway.base}/metrics")).status_code == 401
        scraped = await http.get(f"{gateway.base}/metrics", headers={"authorization": f"Bearer {BEARER}"})
        assert scraped.status_code == 200 and "anvil_tool_calls_total" in scraped.text
        assert 'anvil_oauth_token_requests_total{result="exchanged"} 2.0' in scraped.text
        assert "anvil_upstream_attempt_duration_seconds_bucket" in scraped.text

    # no span attribute, resource, metric or log line holds a secret, a key, a token or an argument value
    planted = [SECRET, BEARER, PRINCIPAL, GITHUB_TOKEN, *KEYS, "pay_123", "cus_123", *payments.oauth.issued]
    shown = json.dumps(
        [[s.name, s.attributes, s.resource] for s in receiver.spans] + [list(m) for m in receiver.metrics]
    )
    assert [value for value in planted if value in shown] == []
    lines = gateway.stderr().splitlines()
    assert lines and all(json.loads(line)["severity"] for line in lines)
    assert [value for value in planted if value in gateway.stderr()] == []
    principals = {s.attributes.get("anvil.principal") for s in receiver.spans if s.kind == SERVER}
    assert principals and all(str(p).startswith("sha256:") for p in principals)


@pytest.mark.parametrize("down", ["black-holed", "stopped"])
async def test_an_exporter_that_is_down_slows_no_call_and_its_drops_are_counted(
    workspace: Path, token_mock: tuple[str, Any], github_mock: tuple[str, Any], tmp_path: Path, down: str
) -> None:
    with black_hole() as hole:
        endpoint = hole if down == "black-holed" else closed_port()
        env = gateway_env(
            workspace,
            tmp_path,
            token_mock[0],
            github_mock[0],
            endpoint,
            OTEL_BSP_MAX_QUEUE_SIZE="8",
            OTEL_BSP_MAX_EXPORT_BATCH_SIZE="4",
            OTEL_EXPORTER_OTLP_TIMEOUT="3000",
        )
        process = GatewayProcess([str(workspace), "--http", "127.0.0.1:0"], env=env, log=tmp_path / "gateway.log")
        process.start()
        try:
            async with httpx.AsyncClient(timeout=30) as http:
                took = []
                for _ in range(20):
                    began = time.perf_counter()
                    answer = await rest_call(http, process.base, READ, {"customer_id": "cus_123"}, token=BEARER)
                    took.append(time.perf_counter() - began)
                    assert answer.status == 200
                assert sorted(took)[len(took) // 2] < 0.5, took  # an export waits on its own thread, never a call
                text = ""
                deadline = time.monotonic() + 20
                while time.monotonic() < deadline:
                    text = (await http.get(f"{process.base}/metrics")).text  # dev: /metrics is open by default
                    dropped = [line for line in text.splitlines() if line.startswith("anvil_telemetry_spans_dropped")]
                    if sum(float(line.rsplit(" ", 1)[1]) for line in dropped) > 0:
                        break
                    time.sleep(0.2)
                assert sum(float(line.rsplit(" ", 1)[1]) for line in dropped) > 0, text
        finally:
            process.stop()
