"""``anvil run --mcp``: the same call through a spawned or remote MCP gateway, and ``_meta.effect`` on stderr."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anvil.bundle.read import read_bundle
from tests.cli.fixtures.upstreams import (
    HttpGateway,
    LoopbackServer,
    Seen,
    anvil_run,
    credential_env,
    echo_app,
    example_module,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REFUND = ("refunds", "create", "--payment-id", "pay_123", "--amount", "100", "--currency", "EUR")


@pytest.fixture
def github_upstream() -> Iterator[tuple[str, Any]]:
    app, state = example_module("github-mini").create_app(token="gh-token")
    server = LoopbackServer(app).start()
    yield server.url, state
    server.stop()


@pytest.fixture(scope="module")
def echo() -> Iterator[tuple[str, list[Seen]]]:
    seen: list[Seen] = []
    server = LoopbackServer(echo_app(seen)).start()
    yield server.url, seen
    server.stop()


def _dev(bundle: Path, operation_id: str, token: str) -> dict[str, str]:
    return {"ANVIL_ENV": "dev", **credential_env(bundle, operation_id, token)}


def _tool(bundle: Path, operation_id: str) -> str:
    op = read_bundle(bundle).operation(operation_id)
    assert op is not None
    return op.mcp.tool_name


def _wire(seen: Seen) -> tuple[str, str, str, dict[str, str], Any]:
    hop = ("host", "user-agent", "connection")  # transport details of each client, not the request
    headers = {k: v for k, v in seen.headers.items() if k not in hop}
    return seen.method, seen.path, seen.query, headers, json.loads(seen.body) if seen.body else None


def test_direct_and_mcp_stdio_put_the_same_request_on_the_wire(notes: Path, echo: tuple[str, list[Seen]]) -> None:
    url, seen = echo
    calls = [
        ("notes", "create", "--body", '{"title": "t", "tags": ["a", "b"], "meta": {"pinned": true}}', "--confirm"),
        ("notes", "get", "--note-id", "n 1", "--limit", "3", "--verbose", "--labels", "1,2", "--schema", "v2"),
    ]
    env = {"ANVIL_ENV": "dev"}
    for call in calls:
        seen.clear()
        direct = anvil_run(notes, *call, "--base-url", url, "--json", env=env)
        through = anvil_run(notes, *call, "--base-url", url, "--json", "--mcp", "stdio", env=env)
        assert direct.code == through.code == 0, direct.err + through.err
        assert direct.json() == through.json()
        assert len(seen) == 2
        assert _wire(seen[0]) == _wire(seen[1])


def test_a_keyed_refund_hits_the_wire_identically_direct_and_through_mcp(payments: Path, mock: tuple[str, Any]) -> None:
    url, state = mock
    env = _dev(payments, "payments.refunds.create", "tok-1")
    direct = anvil_run(payments, *REFUND, "--confirm", "--idempotency-key", "k-1", "--base-url", url, env=env)
    state.reset()
    through = anvil_run(payments, *REFUND, "--confirm", "--idempotency-key", "k-1", "--base-url", url, "--mcp",
                        env=env)  # fmt: skip
    assert direct.code == through.code == 0, direct.err + through.err
    assert direct.out == through.out
    assert [(r["method"], r["path"], r["idempotency_key"], r["authorization"], r["body"]) for r in state.requests] == [
        ("POST", "/payments/pay_123/refunds", "k-1", "Bearer tok-1", {"amount": 100, "currency": "EUR"})
    ]
    effect = through.effect()
    assert effect is not None
    assert effect["class"] == "irreversible" and effect["idempotency_key"] == "k-1" and effect["undo"] is None
    assert direct.effect() == effect  # direct mode prints the same report the gateway attaches


def test_without_confirm_nothing_executes_through_mcp_and_the_exit_is_3(payments: Path, mock: tuple[str, Any]) -> None:
    url, state = mock
    env = _dev(payments, "payments.refunds.create", "tok-1")
    ran = anvil_run(payments, *REFUND, "--idempotency-key", "k-1", "--base-url", url, "--mcp", "stdio", env=env)
    assert ran.code == 3
    assert ran.envelope()["code"] == "confirmation_required"
    assert state.requests == []


def test_a_dry_run_through_mcp_prints_the_plan_calls_nothing_and_reports_no_effect(
    payments: Path, mock: tuple[str, Any]
) -> None:
    url, state = mock
    env = _dev(payments, "payments.refunds.create", "tok-1")
    ran = anvil_run(payments, *REFUND, "--confirm", "--idempotency-key", "k-1", "--dry-run", "--base-url", url,
                    "--mcp", env=env)  # fmt: skip
    assert ran.code == 0, ran.err
    plan = ran.json()
    assert plan["headers"]["Idempotency-Key"] == "k-1"
    assert plan["url"] == f"{url}/payments/pay_123/refunds"
    assert ran.effect() is None
    assert state.requests == []


def test_staging_through_mcp_creates_the_draft_and_reports_how_to_promote_it(
    github: Path, github_upstream: tuple[str, Any]
) -> None:
    url, state = github_upstream
    env = _dev(github, "github.releases.create", "gh-token")
    release = ("releases", "create", "--owner", "octo", "--repo", "hello", "--tag-name", "v1", "--confirm")
    ran = anvil_run(github, *release, "--stage", "--base-url", url, "--mcp", "stdio", "--json", env=env)
    assert ran.code == 0, ran.err
    assert ran.json()["draft"] is True
    assert [r["method"] for r in state.requests] == ["POST"]
    effect = ran.effect()
    assert effect is not None
    assert effect["staged"]["draft_operation"] == "github.releases.create"
    assert effect["staged"]["promote"]["tool"] == _tool(github, "github.releases.update")


def test_a_reversible_write_reports_its_undo_and_a_null_answer_prints_ok(
    github: Path, github_upstream: tuple[str, Any]
) -> None:
    url, _ = github_upstream
    env = _dev(github, "github.comments.create", "gh-token")
    gateway = HttpGateway(github, {**env, "ANVIL_BASE_URL": url})
    try:
        create = anvil_run(github, "comments", "create", "--owner", "octo", "--repo", "hello", "--issue-number", "1",
                           "--body", "hi", "--idempotency-key", "c-1", "--json", "--mcp", gateway.url)  # fmt: skip
        assert create.code == 0, create.err
        effect = create.effect()
        assert effect is not None and effect["class"] == "reversible"
        undo = effect["undo"]
        assert undo["kind"] == "inverse" and undo["tool"] == _tool(github, "github.comments.delete")
        assert undo["arguments"] == {"owner": "octo", "repo": "hello", "comment_id": create.json()["id"]}
        delete = anvil_run(github, "comments", "delete", "--owner", "octo", "--repo", "hello", "--comment-id",
                           str(undo["arguments"]["comment_id"]), "--confirm", "--mcp", gateway.url)  # fmt: skip
        assert delete.code == 0, delete.err
        assert delete.out == "OK\n"
    finally:
        gateway.stop()


def test_staging_an_operation_without_a_draft_form_is_refused_over_http(
    github: Path, github_upstream: tuple[str, Any]
) -> None:
    url, state = github_upstream
    gateway = HttpGateway(github, {**_dev(github, "github.issues.create", "gh-token"), "ANVIL_BASE_URL": url})
    try:
        ran = anvil_run(github, "issues", "create", "--owner", "o", "--repo", "r", "--title", "t", "--confirm",
                        "--stage", "--mcp", gateway.url)  # fmt: skip
    finally:
        gateway.stop()
    assert ran.code == 5
    assert ran.envelope()["code"] == "unsupported_operation"
    assert ran.envelope()["details"]["code"] == "effect/no_draft_form"
    assert state.requests == []


def test_direct_only_flags_are_refused_through_mcp_before_connecting(payments: Path) -> None:
    ran = anvil_run(payments, "customers", "get", "--customer-id", "c", "--timeout", "1000", "--mcp",
                    "http://127.0.0.1:9/mcp")  # fmt: skip
    assert ran.code == 2
    assert ran.envelope()["details"]["field"] == "--timeout"
