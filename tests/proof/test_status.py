"""anvil status and the write gate: every record is bound to the bundle hash and stale the moment it changes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from anvil.bundle.read import read_bundle
from anvil.cli import main
from anvil.proof.certify.lane import CERTIFICATION_FILE, certify
from anvil.proof.record import write_record
from anvil.proof.records import LANES, RECORD_FILES, judge_record, judge_records
from anvil.proof.simulate.lane import SIMULATION_FILE, simulate
from anvil.proof.status import evidence_summary
from tests.proof.conftest import edit_json


def test_the_gate_reads_the_four_lane_records() -> None:
    assert LANES == ("certify", "selftest", "conformance", "simulate")
    assert RECORD_FILES == {
        "certify": "certification.json",
        "selftest": "selftest.report.json",
        "conformance": "conformance.report.json",
        "simulate": "simulation.report.json",
    }


def test_a_fresh_compile_has_no_evidence_and_enables_no_write(payments: Path) -> None:
    summary = evidence_summary(payments)
    assert {lane: v["state"] for lane, v in summary["lanes"].items()} == dict.fromkeys(LANES, "missing")
    assert summary["storeContract"]["state"] == "fresh"
    assert summary["storeContract"]["operationIds"] == ["payments.refunds.create"]
    assert summary["generatedBytes"]["state"] == "fresh"
    assert summary["liveReadiness"]["state"] == "unverified"
    assert summary["deployLedger"] == {
        "ready": True,
        "missing": [],
        "durableStoreRequired": True,
        "detail": "deploy ledger can bind this bundle",
    }
    assert summary["writesEnabled"] == [] and summary["writesReadyForReview"] == []
    refund = next(w for w in summary["writes"] if w["operationId"] == "payments.refunds.create")
    assert refund["state"] == "blocked"
    assert refund["idempotency"]["explicitKeyRequired"] is True and refund["durableStoreRequired"] is True
    assert "certify evidence is missing" in refund["blockers"]
    assert summary["nextAction"].startswith("run `anvil certify ")


def test_records_written_by_the_lanes_are_fresh_until_any_byte_changes(
    github: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(github)
    write_record(bundle, CERTIFICATION_FILE, certify(bundle))
    write_record(bundle, SIMULATION_FILE, simulate(bundle))
    verdicts = judge_records(bundle)
    assert (verdicts["certify"].state, verdicts["simulate"].state) == ("fresh", "fresh")
    reference = bundle / "skill" / "reference" / "operations.md"
    reference.write_bytes(reference.read_bytes().replace(b"Semantics", b"Semantic", 1))
    verdicts = judge_records(bundle)
    assert (verdicts["certify"].state, verdicts["simulate"].state) == ("stale", "stale")
    assert verdicts["certify"].reason.startswith("certify evidence is stale: recorded for ")


def test_a_record_that_did_not_pass_is_failed_and_garbage_is_corrupt(
    payments: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(payments)
    (bundle / "tools.json").write_text('{"tools": []}\n', encoding="utf-8")
    write_record(bundle, CERTIFICATION_FILE, certify(bundle))
    assert judge_record(bundle, "certify").state == "failed"
    (bundle / SIMULATION_FILE).write_text("{not json", encoding="utf-8")
    assert judge_record(bundle, "simulate").state == "corrupt"
    (bundle / SIMULATION_FILE).write_text('{"bundleHash": "short"}', encoding="utf-8")
    assert judge_record(bundle, "simulate").state == "corrupt"


def test_a_tampered_byte_makes_the_store_contract_stale_and_blocks_every_write(
    payments: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(payments)
    main_tf = bundle / "deploy" / "terraform" / "main.tf"
    main_tf.write_bytes(main_tf.read_bytes() + b"# edited\n")
    summary = evidence_summary(bundle)
    assert summary["storeContract"]["state"] == "stale"
    assert "deploy/terraform/main.tf" in summary["storeContract"]["reason"]
    assert summary["generatedBytes"]["state"] == "stale"
    assert all("the store contract is stale" in write["blockers"] for write in summary["writes"])
    assert summary["nextAction"].startswith("recompile the bundle")
    assert summary["deployLedger"]["ready"] is False
    contract = bundle / "deploy" / "idempotency-store.json"
    contract.write_text("{not json", encoding="utf-8")
    assert evidence_summary(bundle)["storeContract"]["state"] == "corrupt"
    contract.unlink()
    assert evidence_summary(bundle)["storeContract"]["state"] == "missing"


def test_a_write_without_an_idempotency_carrier_stays_blocked_even_with_fresh_evidence(
    github: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(github)
    write_record(bundle, CERTIFICATION_FILE, certify(bundle))
    write_record(bundle, SIMULATION_FILE, simulate(bundle))
    writes = {w["operationId"]: w for w in evidence_summary(bundle)["writes"]}
    issue = writes["github.issues.create"]
    assert issue["idempotency"]["mode"] == "none"
    assert any(blocker.startswith("it has no idempotency carrier") for blocker in issue["blockers"])
    comment = writes["github.comments.create"]
    assert comment["carrier"] == "header Idempotency-Key"
    assert comment["idempotency"]["explicitKeyRecommended"] is True
    assert not any(b.startswith("it has no idempotency carrier") for b in comment["blockers"])


def test_status_prints_the_gate_and_its_json_names_the_enabled_writes(
    payments: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", str(payments)]) == 0
    text = capsys.readouterr().out
    assert "Live readiness — UNVERIFIED" in text
    assert "payments.refunds.create: BLOCKED\n    - certify evidence is missing\n" in text
    assert main(["status", str(payments), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["writesEnabled"] == []
    assert data["operations"] == {"operations": 4, "approved": 4, "reads": 2, "writes": 2}


def test_status_of_a_directory_that_is_not_a_bundle_is_a_coded_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["status", str(tmp_path)]) == 3
    assert "error[bundle/invalid]" in capsys.readouterr().err


def test_four_fresh_lanes_leave_the_payments_writes_ready_for_review_not_enabled_until_one_byte_changes(
    evidenced: Path, copy_bundle: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = copy_bundle(evidenced)
    summary = evidence_summary(bundle)
    assert {lane: v["state"] for lane, v in summary["lanes"].items()} == dict.fromkeys(LANES, "fresh")
    assert summary["writesReadyForReview"] == ["payments.refunds.create", "payments.capture.create"]
    assert summary["writesEnabled"] == []  # /readyz and the operator's review remain: nothing is enabled offline
    refund = summary["writes"][0]
    assert (refund["state"], refund["blockers"]) == ("ready_for_review", [])
    assert refund["remaining"][0].startswith("/readyz answers HTTP 200")
    assert refund["remaining"][1].startswith("an operator has reviewed that the upstream honours the key")
    assert summary["nextAction"].startswith("deploy, then require /readyz HTTP 200 and an operator's review")
    assert main(["status", str(bundle)]) == 0
    text = capsys.readouterr().out
    assert "payments.refunds.create: READY FOR REVIEW — enable it only once /readyz answers HTTP 200" in text
    assert "ENABLED" not in text
    skill = bundle / "skill" / "SKILL.md"
    skill.write_bytes(skill.read_bytes() + b"\n")
    stale = evidence_summary(bundle)
    assert {lane: v["state"] for lane, v in stale["lanes"].items()} == dict.fromkeys(LANES, "stale")
    assert stale["writesReadyForReview"] == [] and stale["writesEnabled"] == []


@pytest.mark.parametrize("bundle_name", ["payments", "github"])
def test_status_and_deploy_ledger_print_the_same_key_posture_for_every_write(
    request: pytest.FixtureRequest, bundle_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle: Path = request.getfixturevalue(bundle_name)
    assert main(["deploy", "ledger", str(bundle), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert main(["status", str(bundle), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    ledger = {row["id"]: (row["idempotency"], row["managedStoreRequired"]) for row in report["writes"]}
    for summary in (status, report["evidence"]):
        assert {w["operationId"]: (w["idempotency"], w["durableStoreRequired"]) for w in summary["writes"]} == ledger
    refund = ledger.get("payments.refunds.create")
    if refund is not None:  # required with a client key: required and recommended, as original-ledger §1.15 says
        assert (refund[0]["explicitKeyRequired"], refund[0]["explicitKeyRecommended"]) == (True, True)


def test_a_large_api_over_the_flat_surface_budget_certifies_and_no_longer_blocks_its_writes_on_certify(
    tmp_path: Path,
) -> None:
    # 26 reads whose flat list is over 20,000 tokens, and one write: served searched, it certifies.
    import yaml

    from anvil.bundle.read import read_bundle
    from anvil.cli.compile import compile_bundle
    from anvil.proof.disclosure import served_tools, tokens_of
    from tests.cli.fixtures.upstreams import REPO
    from tests.proof.test_disclosure import _spec

    spec = _spec(26, description="Explains. " * 120)
    body = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    spec["paths"]["/things0"]["post"] = {
        "operationId": "createThing0",
        "summary": "Create a thing",
        "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
        "responses": {"201": {"description": "Created"}},
    }
    source, manifest = tmp_path / "wide.yaml", tmp_path / "wide.anvil.yaml"
    source.write_text(yaml.safe_dump(spec), encoding="utf-8")
    approved = {op["operationId"]: {"state": "approved"} for item in spec["paths"].values() for op in item.values()}
    manifest.write_text(yaml.safe_dump({"service": {"name": "wide"}, "operations": approved}), encoding="utf-8")
    bundle = tmp_path / "wide"
    assert compile_bundle(source, out=bundle, manifest=manifest, service_id="wide", root=REPO).bundle_hash
    assert sum(tokens_of(tool) for tool in served_tools(read_bundle(bundle)).values()) > 20_000
    record = certify(bundle)
    assert record["status"] == "passed", [c["id"] for c in record["checks"] if c["status"] != "passed"]
    write_record(bundle, CERTIFICATION_FILE, record)
    summary = evidence_summary(bundle)
    assert summary["lanes"]["certify"]["state"] == "fresh"
    (write,) = summary["writes"]
    assert write["operationId"] == "wide.things0.create"
    assert not any(blocker.startswith("certify") for blocker in write["blockers"])


def _fail_selftest(bundle: Path, operation_id: str, detail: str) -> None:
    """Turn one passing selftest check on ``operation_id`` into a failure, keeping the record consistent."""

    def change(record: dict[str, Any]) -> None:
        check = next(c for c in record["checks"] if c.get("operationId") == operation_id and c["status"] == "pass")
        check["status"], check["detail"] = "fail", detail
        record["summary"]["pass"] -= 1
        record["summary"]["fail"] += 1
        record["passed"] = False

    edit_json(bundle / "selftest.report.json", change)


def test_a_failing_selftest_check_on_a_read_is_named_with_its_operation_among_each_writes_blockers(
    evidenced: Path, copy_bundle: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = copy_bundle(evidenced)
    read = next(op.id for op in read_bundle(bundle).operations if op.is_approved and op.is_read)
    _fail_selftest(bundle, read, "the answer did not round-trip")
    summary = evidence_summary(bundle)
    assert summary["lanes"]["selftest"]["state"] == "failed"
    refund = next(w for w in summary["writes"] if w["operationId"] == "payments.refunds.create")
    (blocker,) = refund["blockers"]
    assert blocker.startswith("selftest evidence is failed: 1 failure(s) on other operations: ")
    assert f" on {read}" in blocker
    assert main(["status", str(bundle)]) == 0
    text = capsys.readouterr().out
    assert "    - selftest evidence is failed: 1 failure(s) on other operations: " in text
    assert f" on {read}\n" in text


def test_a_writes_own_failing_check_comes_first_with_its_detail_then_the_others_by_count(
    evidenced: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(evidenced)
    read = next(op.id for op in read_bundle(bundle).operations if op.is_approved and op.is_read)
    _fail_selftest(bundle, read, "the answer did not round-trip")
    _fail_selftest(bundle, "payments.refunds.create", "the key was not forwarded")
    writes = {w["operationId"]: w for w in evidence_summary(bundle)["writes"]}
    own, others = writes["payments.refunds.create"]["blockers"]
    assert own.startswith("selftest evidence is failed: ")
    assert " on payments.refunds.create: the key was not forwarded" in own
    assert others.startswith("selftest evidence is failed: 1 failure(s) on other operations: ")
    assert f" on {read}" in others
    (capture,) = writes["payments.capture.create"]["blockers"]
    assert capture.startswith("selftest evidence is failed: 2 failure(s) on other operations: ")
    assert "payments.refunds.create" in capture and read in capture


def test_a_tool_over_the_budget_blocks_its_write_with_the_manifest_key_and_the_value_that_fits(
    evidenced: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(evidenced)

    def over(record: dict[str, Any]) -> None:
        cells = record["coverage"]["cells"]
        cell = next(
            c
            for c in cells
            if c["operationId"] == "payments.refunds.create"
            and (c["dimension"], c["variant"]) == ("disclosure", "tool-surface")
        )
        cell.update(ok=False, actual="2163 tokens, over 1200", figure={**cell["figure"], "tokens": 2163})
        record["coverage"]["summary"]["passed"] -= 1
        record["coverage"]["summary"]["failed"] += 1
        dimension = next(d for d in record["coverage"]["dimensions"] if d["dimension"] == "disclosure")
        dimension["passed"] -= 1
        record["summary"].update(coveragePassed=record["summary"]["coveragePassed"] - 1, ok=False)

    edit_json(bundle / SIMULATION_FILE, over)
    assert judge_record(bundle, "simulate").state == "failed"
    writes = {w["operationId"]: w for w in evidence_summary(bundle)["writes"]}
    own = writes["payments.refunds.create"]["blockers"][0]
    assert own.startswith("simulate evidence is failed: disclosure/tool-surface on payments.refunds.create: ")
    assert "set `disclosure: tool_budget_tokens: 2163` in anvil.yaml" in own
    # Both levers: the budget that fits, or a waiver on the capability of the tool over it.
    waiver = (
        "; or, to accept these tools as they are, waive the budget per capability in anvil.yaml with "
        "`capabilities: {<id>: {state: approved, allow_large: true, note: <why>}}` (over it: payments.refunds)"
    )
    assert own.endswith(waiver)
    (other,) = writes["payments.capture.create"]["blockers"]
    assert other.startswith(
        "simulate evidence is failed: 1 failure(s) on other operations: disclosure/tool-surface on "
        "payments.refunds.create; to publish every tool as it is, set `disclosure: tool_budget_tokens: 2163` in "
        "anvil.yaml"
    )
    assert other.endswith(waiver)
