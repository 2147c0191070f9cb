"""``anvil init`` never approves what ``anvil compile`` then refuses, and proposes the idempotency key a
spec carries in its JSON body (Plaid's ``idempotency_key``), so such writes are not said never enabled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from anvil.cli import main

_ITEM = {"type": "object", "properties": {"id": {"type": "string"}}}
_OK = {"200": {"description": "ok", "content": {"application/json": {"schema": _ITEM}}}}
_JQL = {"name": "jql", "in": "query", "description": "A JQL expression.", "schema": {"type": "string"}}
_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Tracker", "version": "1"},
    "servers": [{"url": "https://tracker.example.com"}],
    "paths": {
        "/search": {"get": {"operationId": "searchIssues", "parameters": [_JQL], "responses": _OK}},
        "/issues": {"get": {"operationId": "listIssues", "responses": _OK}},
        "/issues/{id}": {
            "get": {"operationId": "getIssue", "parameters": [_ID], "responses": _OK},
            "delete": {"operationId": "deleteIssues", "parameters": [_ID, _JQL], "responses": _OK},
        },
    },
}


def _anvil(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _entry(text: str, op_id: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(f"  {op_id}:")
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


@pytest.mark.parametrize("approve", ["reads", "all"])
def test_a_query_language_passthrough_is_left_unapproved_saying_why_and_the_compile_then_succeeds(
    approve: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, manifest, bundle = tmp_path / "openapi.json", tmp_path / "anvil.yaml", tmp_path / "bundle"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    argv = ["init", str(spec), "--service", "trk", "--out", str(manifest), "--approve", approve, "--propose-effects"]
    code, out, err = _anvil(capsys, *argv)
    assert code == 0, err
    text = manifest.read_text(encoding="utf-8")
    states = {key: entry["state"] for key, entry in yaml.safe_load(text)["operations"].items()}
    assert states["trk.search.list"] == "review_required"
    assert states["trk.issues.list"] == "approved"
    entry = "\n".join(_entry(text, "trk.search.list"))
    assert f"not approved by --approve {approve}: input jql passes a query language through" in entry
    assert "no manifest key accepts it (query_policy is not supported)" in entry
    assert "(left unapproved): trk.issues.delete, trk.search.list" in out

    code, _, err = _anvil(capsys, "compile", str(spec), "--manifest", str(manifest), "--out", str(bundle))
    assert code == 0, err
    assert "query_language_passthrough" in err and "errors (" not in err
    code, out, _ = _anvil(capsys, "inspect", str(bundle), "--json")
    rows = {row["operationId"]: row for row in json.loads(out)["operations"]}
    assert rows["trk.search.list"]["state"] == "blocked"


def test_a_query_language_passthrough_a_reviewer_approves_still_fails_the_compile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec, manifest, bundle = tmp_path / "openapi.json", tmp_path / "anvil.yaml", tmp_path / "bundle"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    assert _anvil(capsys, "init", str(spec), "--service", "trk", "--out", str(manifest))[0] == 0
    assert _anvil(capsys, "approve", str(manifest), "trk.search.list")[0] == 0
    code, _, err = _anvil(capsys, "compile", str(spec), "--manifest", str(manifest), "--out", str(bundle))
    assert code == 1
    assert "errors (1)\n  trk.search.list\n    query_language_passthrough" in err


#: Plaid's writes whose JSON body names an idempotency key (a twelfth, the transfer create's, is deprecated).
_PLAID_KEYED = {
    "plaid.create.create.authorization": "key_supported",
    "plaid.create.create.bank_transfer_direct": "required_request_key",
    "plaid.create.create.processor_bank_transfer": "required_request_key",
    "plaid.create.create.recurring": "required_request_key",
    "plaid.create.create.refund": "required_request_key",
    "plaid.deposit.create": "required_request_key",
    "plaid.distribute.create": "required_request_key",
    "plaid.payment.execute": "required_request_key",
    "plaid.reverse.create": "required_request_key",
    "plaid.transaction.execute": "required_request_key",
    "plaid.withdraw.create": "required_request_key",
}


@pytest.mark.corpus
def test_init_proposes_plaids_body_idempotency_key_and_the_compiled_writes_carry_it(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from anvil.air.write_gate import never_enabled
    from anvil.compiler import build

    spec, manifest = corpus / "plaid.yml", tmp_path / "anvil.yaml"
    argv = ["init", str(spec), "--service", "plaid", "--out", str(manifest), "--approve", "reads", "--propose-effects"]
    code, out, err = _anvil(capsys, *argv)
    assert code == 0, err
    entries = yaml.safe_load(manifest.read_text(encoding="utf-8"))["operations"]
    keyed = {key: entry["idempotency"] for key, entry in entries.items() if "idempotency" in entry}
    assert {key: block["strategy"] for key, block in keyed.items()} == _PLAID_KEYED
    assert {(block["key_location"], block["field"]) for block in keyed.values()} == {("body", "idempotency_key")}
    assert f"Proposed the idempotency key (a header or body field) of {len(_PLAID_KEYED)} writes" in out
    ops = {op.id: op for op in build(spec, manifest=manifest, service_id="plaid").document.operations}
    for op_id in _PLAID_KEYED:
        carrier = ops[op_id].idempotency
        assert (carrier.mechanism, carrier.key) == ("body", "idempotency_key"), op_id
        assert never_enabled(ops[op_id]) is None, op_id
