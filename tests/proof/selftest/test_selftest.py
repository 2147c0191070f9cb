"""`anvil selftest`: every approved tool driven over real MCP, every declared effect contract proven."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from anvil.bundle.hash import bundle_hash
from anvil.cli import main
from anvil.cli.compile import compile_bundle
from anvil.proof.scope import NOTHING_TO_PROVE
from anvil.proof.selftest.lane import RECORD_FILE, SelftestOptions, SelftestReport, run_selftest
from anvil.proof.status import evidence_summary
from tests.cli.fixtures.upstreams import EXAMPLES, REPO

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
EFFECT_PROOFS = [
    ("effect-compensate", "github.issues.create"),
    ("effect-inverse", "github.comments.create"),
    ("effect-draft", "github.releases.create"),
    ("effect-lookup", "github.releases.create"),
]


def _env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}


def _selftest(bundle: Path, upstream: str | None = None) -> SelftestReport:
    options = SelftestOptions(upstream=upstream, env=_env())
    return anyio.run(lambda: run_selftest(bundle, options))


def _statuses(report: SelftestReport) -> dict[tuple[str, str | None], str]:
    return {(check.id, check.operation): check.status for check in report.checks}


def _without_time(record: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in record.items() if key != "startedAt"}


@pytest.fixture
def example_mock() -> Iterator[object]:
    """Start ``examples/<name>/mock_upstream.py`` on loopback; yields a function name -> URL."""
    started: list[subprocess.Popen[str]] = []

    def start(name: str) -> str:
        process = subprocess.Popen(
            [sys.executable, str(EXAMPLES / name / "mock_upstream.py"), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=_env(),
        )
        started.append(process)
        assert process.stdout is not None
        url: str = json.loads(process.stdout.readline())["url"]
        return url

    yield start
    for process in started:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
        if process.stdout is not None:
            process.stdout.close()


def _compile(manifest: str, out: Path) -> Path:
    outcome = compile_bundle(
        FIXTURES / "notes.yaml", out=out, manifest=FIXTURES / manifest, service_id="notes", root=REPO
    )
    assert outcome.bundle_hash is not None
    return out


def test_github_mini_passes_against_anvil_mock_proving_every_declared_effect_and_the_record_is_deterministic(
    github: Path,
) -> None:
    report = _selftest(github)
    statuses = _statuses(report)
    assert report.passed, [c.to_json() for c in report.checks if c.status == "fail"]
    assert [(c.id, c.operation) for c in report.checks if c.id.startswith("effect-")] == EFFECT_PROOFS
    assert all(statuses[proof] == "pass" for proof in EFFECT_PROOFS)
    for check_id in ("surface", "retry-read", "retry-mutation-guard"):
        assert [s for (i, _), s in statuses.items() if i == check_id] == ["pass"], check_id
    assert statuses[("key-forwarding", "github.comments.create")] == "pass"
    assert statuses[("confirmation-gate", "github.issues.create")] == "pass"
    assert statuses[("error-mapping", "github.tags.get")] == "pass"

    record = json.loads((github / RECORD_FILE).read_text(encoding="utf-8"))
    assert record == report.record
    assert (record["schemaVersion"], record["bundle"], record["upstream"]) == (1, "github", "anvil mock")
    assert record["bundleHash"] == bundle_hash(github)  # writing the record leaves the hash it carries intact
    assert record["summary"] == {"pass": len(report.checks), "fail": 0, "skipped": 0}
    again = _selftest(github)
    assert _without_time(again.record) == _without_time(record)


def test_payments_passes_against_anvil_mock_and_skips_the_guard_it_has_no_write_for(payments: Path) -> None:
    report = _selftest(payments)
    statuses = _statuses(report)
    assert report.passed
    assert statuses[("retry-mutation-guard", None)] == "skipped"
    assert statuses[("retry-read", "payments.customers.get")] == "pass"
    assert statuses[("key-forwarding", "payments.refunds.create")] == "pass"
    assert statuses[("confirmation-gate", "payments.refunds.create")] == "pass"
    assert statuses[("error-mapping", "payments.customers.get")] == "pass"
    assert report.record["summary"]["fail"] == 0


def test_a_form_body_api_passes_with_each_key_forwarded_in_its_form_field(telephony: Path) -> None:
    report = _selftest(telephony)
    assert report.passed, [c.to_json() for c in report.checks if c.status == "fail"]
    forwarded = {c.operation: c.detail for c in report.checks if c.id == "key-forwarding"}
    assert forwarded == {
        "telephony.payments.create": "_meta.idempotency_key forwarded in its carrier on the wire",
        "telephony.recordings.create": "_meta.idempotency_key forwarded in its carrier on the wire",
    }
    statuses = _statuses(report)
    assert statuses[("fidelity", "telephony.payments.create")] == "pass"
    assert statuses[("fidelity", "telephony.recordings.create")] == "pass"


def test_operations_with_their_own_server_are_driven_against_the_mock_too(files: Path) -> None:
    report = _selftest(files)
    assert report.passed, [c.to_json() for c in report.checks if c.status == "fail"]
    fidelity = {c.operation: c.status for c in report.checks if c.id == "fidelity"}
    assert fidelity == {
        "files.files.get": "pass",
        "files.content.create.direct": "pass",
        "files.content.create.by_file_id": "pass",
    }


def test_github_mini_passes_against_its_own_mock_with_every_effect_proven(github: Path, example_mock: object) -> None:
    url = example_mock("github-mini")  # type: ignore[operator]
    report = _selftest(github, upstream=url)
    statuses = _statuses(report)
    assert report.passed, [c.to_json() for c in report.checks if c.status == "fail"]
    assert report.record["upstream"] == "operator sandbox"
    assert all(statuses[proof] == "pass" for proof in EFFECT_PROOFS)
    assert statuses[("retry-read", "github.issues.list")] == "skipped"  # that mock injects no faults
    assert statuses[("confirmation-gate", "github.releases.create")] == "pass"  # counted through its /__requests


def test_payments_passes_against_its_own_mock_through_the_cli(
    payments: Path, example_mock: object, capsys: pytest.CaptureFixture[str]
) -> None:
    url = example_mock("payments")  # type: ignore[operator]
    assert main(["selftest", str(payments), "--upstream", url]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("PASSED — selftest payments:")
    record = json.loads((payments / RECORD_FILE).read_text(encoding="utf-8"))
    assert {c["id"] for c in record["checks"] if c["status"] == "pass"} >= {"retry-read", "error-mapping"}


def test_a_true_inverse_passes_and_an_inverse_that_archives_fails_naming_the_operation_field_and_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    right = _compile("notes.delete.anvil.yaml", tmp_path / "notes-delete")
    wrong = _compile("notes.archive.anvil.yaml", tmp_path / "notes-archive")
    assert _statuses(_selftest(right))[("effect-inverse", "notes.notes.create")] == "pass"

    assert main(["selftest", str(wrong), "--json"]) == 1
    record = json.loads(capsys.readouterr().out)
    failed = [check for check in record["checks"] if check["status"] == "fail"]
    assert [(check["id"], check["operationId"]) for check in failed] == [("effect-inverse", "notes.notes.create")]
    difference = failed[0]["difference"]
    assert difference["operation"] == "notes.notes.create"
    assert difference["field"].startswith("[id=")
    assert difference["before"] == "<absent>"
    assert difference["after"]["archived"] is True
    assert "archived from false to true" in failed[0]["detail"]
    assert record["passed"] is False


def test_a_lookup_that_cannot_find_the_effect_fails_the_selftest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = (EXAMPLES / "github-mini" / "anvil.yaml").read_text(encoding="utf-8")
    assert "tag: request.tag_name" in manifest
    broken = tmp_path / "anvil.yaml"
    broken.write_text(manifest.replace("tag: request.tag_name", "tag: request.name"), encoding="utf-8")
    outcome = compile_bundle(
        EXAMPLES / "github-mini" / "openapi.yaml",
        out=tmp_path / "github",
        manifest=broken,
        service_id="github",
        root=REPO,
    )
    assert outcome.bundle_hash is not None
    assert main(["selftest", str(tmp_path / "github")]) == 1
    captured = capsys.readouterr()
    assert "FAIL    effect-lookup github.releases.create" in captured.out
    assert "FAILED — selftest github:" in captured.err


def test_a_remote_upstream_is_refused_unless_the_operator_allows_a_remote_sandbox(
    github: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = "selftest/remote_upstream"
    assert main(["selftest", str(github), "--upstream", "https://api.github.com"]) == 2
    assert f"error[{code}]" in capsys.readouterr().err
    assert main(["selftest", str(github), "--upstream", "ftp://127.0.0.1/"]) == 2
    assert "error[cli/usage]" in capsys.readouterr().err


def test_a_format_and_pattern_bound_create_round_trips_its_inverse_is_proven_and_an_unmakeable_example_is_one_skip(
    events: Path,
) -> None:
    report = _selftest(events)
    statuses = _statuses(report)
    create = [c for c in report.checks if c.operation == "events.events.create"]
    assert statuses[("fidelity", "events.events.create")] == "pass"
    assert "answer round-trips" in next(c.detail for c in create if c.id == "fidelity")
    assert statuses[("effect-inverse", "events.events.create")] == "pass"
    assert statuses[("retry-mutation-guard", "events.events.create")] == "pass"
    unmakeable = [c for c in report.checks if c.operation == "events.reports.create"]
    assert [(c.id, c.status) for c in unmakeable] == [("fidelity", "skipped")]
    assert unmakeable[0].detail.startswith("no valid example input can be made: create_report: 'body': 'range'")


def test_an_example_the_gateway_refuses_before_the_wire_is_one_skip_and_fails_no_other_check(
    tmp_path: Path,
) -> None:
    # A path value that is a dot segment: the gateway refuses to put it on the wire, and says so before
    # the call; nothing else may then count that one refusal as a failure. A multipart body that is a
    # list of files names no part, so its operation is not served at all (blocked at compile).
    files = {"type": "array", "items": {"type": "string", "format": "binary"}}
    answers = {
        "200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}},
        "403": {"description": "no", "content": {"application/json": {"schema": {"type": "object"}}}},
    }
    dots = {"name": "folder", "in": "path", "required": True, "schema": {"type": "string", "enum": [".."]}}
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "Uploads", "version": "1"},
        "servers": [{"url": "https://uploads.example.com"}],
        "paths": {
            "/uploads": {
                "post": {
                    "operationId": "upload",
                    "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": files}}},
                    "responses": answers,
                }
            },
            "/folders/{folder}": {"post": {"operationId": "touchFolder", "parameters": [dots], "responses": answers}},
        },
    }
    source, manifest, bundle = tmp_path / "uploads.json", tmp_path / "anvil.yaml", tmp_path / "uploads"
    source.write_text(json.dumps(spec), encoding="utf-8")
    assert main(["init", str(source), "--service", "uploads", "--out", str(manifest), "--approve", "all"]) == 0
    assert main(["compile", str(source), "--manifest", str(manifest), "--out", str(bundle)]) == 0
    report = _selftest(bundle)
    assert [c for c in report.checks if c.operation == "uploads.uploads.create"] == []
    touch = {(c.id, c.status) for c in report.checks if c.operation is not None and "folder" in c.operation}
    assert ("fidelity", "skipped") in touch and {status for _, status in touch} <= {"skipped", "pass"}
    assert [c.id for c in report.checks if c.status == "fail"] == []


def test_a_bundle_that_approves_no_operation_has_nothing_to_prove_and_no_lane_or_status_calls_it_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "notes.anvil.yaml"
    manifest.write_text("service:\n  name: notes\noperations:\n  listNotes: { state: review_required }\n")
    bundle = tmp_path / "notes"
    outcome = compile_bundle(FIXTURES / "notes.yaml", out=bundle, manifest=manifest, service_id="notes", root=REPO)
    assert outcome.bundle_hash is not None
    assert main(["selftest", str(bundle)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"SKIPPED — selftest notes: {NOTHING_TO_PROVE}"
    record = json.loads((bundle / RECORD_FILE).read_text(encoding="utf-8"))
    assert record["nothingToProve"] == {"reason": NOTHING_TO_PROVE, "operationsApproved": 0}
    assert (record["checks"], record["passed"]) == ([], False)  # readers without the marker see no pass
    for lane in ("certify", "conformance", "simulate"):
        assert main([lane, str(bundle)]) == 0, lane
    evidence = evidence_summary(bundle)
    states = {lane: verdict["state"] for lane, verdict in evidence["lanes"].items()}
    assert states == {"certify": "fresh", "selftest": "skipped", "conformance": "fresh", "simulate": "skipped"}
    assert evidence["writes"] == [] and evidence["nextAction"] == f"selftest: {NOTHING_TO_PROVE}"
