"""anvil conformance: the same input through MCP, REST and anvil run gives the same wire request and answer."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from anvil.bundle.hash import bundle_hash
from anvil.bundle.read import read_bundle
from anvil.cli import main
from anvil.proof.conformance.lane import CHECK_IDS, CONFORMANCE_FILE, conformance
from anvil.proof.conformance.surfaces import KEY_PLACEHOLDER, wire_requests
from tests.proof.conftest import edit_json


def _checks(record: dict[str, Any], check_id: str) -> list[dict[str, Any]]:
    return [check for check in record["checks"] if check["id"] == check_id]


def test_the_check_ids_are_the_public_registry() -> None:
    assert CHECK_IDS == ("surface-agreement", "skill-claim", "wire-agreement", "answer-agreement", "gate-agreement")


def test_the_wire_keeps_only_what_air_names_and_normalizes_the_callers_key(payments: Path) -> None:
    op = read_bundle(payments).operation("payments.refunds.create")
    assert op is not None
    entry = {
        "method": "POST",
        "path": "/payments/pay_1/refunds",
        "query": [["b", "2"], ["a", "1"]],
        "headers": {"idempotency-key": "conformance-mcp-7", "user-agent": "x", "content-type": "application/json"},
        "body": {"amount": 1},
    }
    assert wire_requests([entry], op, "conformance-mcp-7") == [
        {
            "method": "POST",
            "path": "/payments/pay_1/refunds",
            "query": [["a", "1"], ["b", "2"]],
            "headers": {"content-type": "application/json", "idempotency-key": KEY_PLACEHOLDER},
            "body": {"amount": 1},
        }
    ]


def test_conformance_passes_payments_and_its_record_is_deterministic_apart_from_the_timestamp(
    payments: Path, copy_bundle: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = copy_bundle(payments)
    assert main(["conformance", str(bundle)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("PASSED — ")
    first = json.loads((bundle / CONFORMANCE_FILE).read_text(encoding="utf-8"))
    assert first["bundleHash"] == bundle_hash(bundle)
    assert first["summary"]["fail"] == 0 and first["summary"]["pass"] > 0
    assert {check["id"] for check in first["checks"]} == set(CHECK_IDS)
    refund = next(c for c in _checks(first, "wire-agreement") if c["operationId"] == "payments.refunds.create")
    assert refund["detail"].startswith("POST /payments/")
    assert [c["operationId"] for c in _checks(first, "gate-agreement")] == [
        "payments.refunds.create",
        "payments.capture.create",
    ]
    second = conformance(bundle, environ={})
    first.pop("startedAt")
    second.pop("startedAt")
    assert first == second


def test_a_form_body_api_sends_one_identical_form_from_every_surface(
    telephony: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    record = conformance(copy_bundle(telephony), environ=dict(os.environ))
    assert record["summary"]["fail"] == 0, [c for c in record["checks"] if c["status"] == "fail"]
    wired = {c["operationId"]: c["status"] for c in _checks(record, "wire-agreement")}
    assert wired == {
        "telephony.payments.create": "pass",
        "telephony.payments.get": "pass",
        "telephony.recordings.create": "pass",
    }


def test_github_mini_conforms_except_for_a_planted_divergence_which_names_both_sides(
    github: Path, copy_bundle: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = copy_bundle(github)
    reference = bundle / "skill" / "reference" / "operations.md"
    text = reference.read_text(encoding="utf-8")
    text = text.replace("tool: `github_list_pull`", "tool: `github_list_pulls`")
    text = text.replace(
        "- Semantics: mutation, medium, confirm-required, not-retry-safe",
        "- Semantics: mutation, medium, not-retry-safe",
        1,
    )
    reference.write_text(text, encoding="utf-8")

    def rename(manifest: dict[str, Any]) -> None:
        entry = next(o for o in manifest["operations"] if o["id"] == "github.tags.get")
        entry["toolName"] = "github_get_tag"

    edit_json(bundle / "runtime" / "operations.manifest.json", rename)
    assert main(["conformance", str(bundle)]) == 1
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1].startswith("FAILED — ")
    record = json.loads((bundle / CONFORMANCE_FILE).read_text(encoding="utf-8"))
    (surface,) = _checks(record, "surface-agreement")
    assert surface["status"] == "fail"
    assert {
        "path": "github.pulls.list.tool",
        "between": ["skill", "mcp"],
        "left": "github_list_pulls",
        "right": "github_list_pull",
    } in surface["divergences"]
    assert {
        "path": "github.tags.get.tool",
        "between": ["runtime-manifest", "mcp"],
        "left": "github_get_tag",
        "right": "github_get_release",
    } in surface["divergences"]
    claim = next(c for c in _checks(record, "skill-claim") if c["operationId"] == "github.issues.create")
    assert claim["divergences"] == [
        {"path": "github.issues.create.confirm-required", "between": ["skill", "air"], "left": False, "right": True}
    ]
    assert "github.pulls.list.tool: skill=" in out
    # Everything not planted conforms: every operation's wire, answer and gate agree on all surfaces.
    failed = {(c["id"], c.get("operationId")) for c in record["checks"] if c["status"] == "fail"}
    assert failed == {("surface-agreement", None), ("skill-claim", "github.issues.create")}
    assert len(_checks(record, "answer-agreement")) == 12
    assert len(_checks(record, "gate-agreement")) == 6


def test_a_body_key_carrier_with_a_short_max_length_takes_every_surfaces_key_alike(tmp_path: Path) -> None:
    # Plaid's transfer refund: idempotency_key, at most 50 characters, inside the JSON body, on a long name.
    key = {"type": "string", "maxLength": 50}
    body = {"type": "object", "properties": {"amount": {"type": "string"}, "idempotency_key": key}}
    answer = {"type": "object", "properties": {"id": {"type": "string"}}}
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Pay", "version": "1"},
        "servers": [{"url": "https://pay.example.com"}],
        "paths": {
            "/transfer/refund/create": {
                "post": {
                    "operationId": "transferRefundCreateRefundWithALongName",
                    "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
                    "responses": {"200": {"description": "ok", "content": {"application/json": {"schema": answer}}}},
                }
            }
        },
    }
    (tmp_path / "openapi.json").write_text(json.dumps(spec), encoding="utf-8")
    (tmp_path / "anvil.yaml").write_text(
        "service: {name: pay}\noperations:\n  pay.create.create:\n    state: approved\n"
        "    idempotency: {strategy: key_supported, key_location: body, field: idempotency_key}\n",
        encoding="utf-8",
    )
    from anvil.cli.compile import compile_bundle

    bundle = tmp_path / "bundle"
    outcome = compile_bundle(tmp_path / "openapi.json", out=bundle, manifest=tmp_path / "anvil.yaml", service_id="pay")
    assert outcome.bundle_hash is not None, [d.message for d in outcome.diagnostics if d.severity == "error"]
    op = read_bundle(bundle).operation("pay.create.create")
    assert op is not None and op.is_approved and len(op.canonical_name) >= 29
    record = conformance(bundle, environ=dict(os.environ))
    assert [c for c in record["checks"] if c["status"] == "fail"] == []
    wired = _checks(record, "wire-agreement")
    assert [c["operationId"] for c in wired] == ["pay.create.create"]
