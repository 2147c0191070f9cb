"""The gateway audit file: one line per executed call and per grant refusal, in §1.9 order, mode 0600, no secrets."""

from __future__ import annotations

import json
import logging
import shutil
import stat
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from anvil.air.model import Document
from anvil.runtime.audit import AuditScope, FileAuditSink, GatewayAuditSink, gateway_line, input_digest, redact
from tests.serve.support import OWNER_REPO, TOKEN
from tests.serve.test_fleet import COMMENT, Rig, principal, read_grant

pytestmark = pytest.mark.anyio

FIELDS = [
    "time",
    "sub",
    "by_tenant",
    "by_branch",
    "by_turn",
    "connector",
    "account",
    "operation",
    "decision",
    "grant",
    "upstream_status",
    "latency_ms",
    "input_sha256",
    "error_code",
    "rule",
    "dry_run",
    "trace_id",
    "effect_class",
    "ledger_id",
    "staged_for",
    "outcome",
    "attempts",
    "ledger",
    "idempotency_key_forwarded",
]


@pytest.fixture
async def filed(github: Document, payments: Document, tmp_path: Path) -> AsyncIterator[tuple[Rig, Path]]:
    path = tmp_path / "logs" / "audit.jsonl"
    path.parent.mkdir()
    sink = GatewayAuditSink(FileAuditSink(path))
    made = Rig(github, payments, audit=sink)
    yield made, path
    sink.close()
    await made.aclose()


def read_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_the_audit_file_holds_one_line_per_executed_call_with_mode_0600_and_no_secret(
    filed: tuple[Rig, Path],
) -> None:
    rig, path = filed
    view = rig.fleet().compose(principal("ada", branch="feature-x"))
    await view.call("github__github_list_issue", OWNER_REPO)
    await view.call("github__github_create_comment", COMMENT, {"idempotency_key": "01JSECRETLEDGERKEY0001"})
    await view.call("github__github_list_pull", {**OWNER_REPO, "anvil_dry_run": True})
    await view.call("github__github_create_comment", COMMENT, {"idempotency_key": 7})  # refused before execute
    lines = read_lines(path)
    assert [list(line) for line in lines] == [FIELDS] * 3
    assert [line["operation"] for line in lines] == [
        "github.issues.list",
        "github.comments.create",
        "github.pulls.list",
    ]
    assert [line["dry_run"] for line in lines] == [False, False, True]
    read, write, _ = lines
    assert (read["sub"], read["by_branch"], read["connector"], read["decision"]) == (
        "ada",
        "feature-x",
        "github",
        "allowed",
    )
    assert (read["upstream_status"], read["effect_class"], read["ledger_id"]) == (200, "read", None)
    assert read["input_sha256"] == input_digest(OWNER_REPO)
    assert (write["effect_class"], write["staged_for"], write["idempotency_key_forwarded"]) == (
        "reversible",
        None,
        True,
    )
    assert write["ledger_id"] == "01JSECRETLEDGERKEY0001"  # the caller's key itself (ADR-0030 §5)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text(encoding="utf-8")
    assert TOKEN not in text and "Bearer" not in text


async def test_a_grant_refusal_is_a_line_too_and_names_its_decision_and_rule(filed: tuple[Rig, Path]) -> None:
    rig, path = filed
    view = rig.fleet().compose(principal("ada", grants=read_grant()))
    await view.call("github__github_list_issue", OWNER_REPO)
    await view.call("github__github_create_comment", COMMENT)
    first, second = read_lines(path)
    assert (first["decision"], first["account"], first["error_code"]) == ("allowed", "default", None)
    assert (second["decision"], second["rule"], second["error_code"]) == (
        "denied",
        "policy/grant_denied",
        "policy_denied",
    )
    assert (second["upstream_status"], second["attempts"], second["effect_class"]) == (None, 0, "reversible")


async def test_a_failing_sink_never_fails_the_call(filed: tuple[Rig, Path], caplog: pytest.LogCaptureFixture) -> None:
    rig, path = filed
    view = rig.fleet().compose(principal("ada"))
    shutil.rmtree(path.parent)
    with caplog.at_level(logging.WARNING, logger="anvil.audit"):
        result = await view.call("github__github_list_issue", OWNER_REPO)
    assert result is not None and result.kind == "success"
    assert [record.getMessage() for record in caplog.records] == ["anvil: audit write failed: FileNotFoundError"]


def test_redaction_hides_credential_looking_keys_at_any_depth_and_the_hash_ignores_them() -> None:
    value = {"title": "x", "api_key": "k", "nested": [{"password": "p", "ok": 1, "Session_Id": "s"}], "passcode": "c"}
    assert redact(value) == {
        "title": "x",
        "api_key": "***",
        "nested": [{"password": "***", "ok": 1, "Session_Id": "***"}],
        "passcode": "***",
    }
    same = {
        "nested": [{"ok": 1, "password": "other", "Session_Id": "t"}],
        "passcode": "d",
        "api_key": "j",
        "title": "x",
    }
    assert input_digest(value) == input_digest(same)
    assert input_digest(value) != input_digest({**value, "title": "y"})
    assert input_digest(None) == input_digest({})


def test_a_line_without_a_bound_caller_names_the_executors_principal_label() -> None:
    record = {"operation": "github.issues.list", "principal": "anonymous", "error_code": "policy_denied"}
    line = gateway_line(record, None, {"a": 1}, time="2025-01-01T00:00:00.000Z")
    assert (line["sub"], line["decision"], line["connector"], line["grant"]) == ("anonymous", "denied", None, None)
    scoped = gateway_line(record, AuditScope(sub="ada", connector="github"), None, time="t")
    assert (scoped["sub"], scoped["connector"]) == ("ada", "github")
