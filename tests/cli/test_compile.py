from __future__ import annotations

import gc
import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from anvil.bundle.hash import bundle_hash
from anvil.cli import main
from anvil.cli.compile import Progress, compile_bundle, render_diagnostics, source_uri
from anvil.diagnostics import diagnostic

REPO = Path(__file__).resolve().parents[2]
SPEC = "examples/payments/openapi.yaml"
MANIFEST = "examples/payments/anvil.yaml"


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _compile(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, object], str]:
    code = main(["compile", *args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else {}, captured.err


def _payments(out: Path, root: Path | None = None) -> list[str]:
    args = [SPEC, "--manifest", MANIFEST, "--service", "payments", "--out", str(out)]
    return [*args, "--root", str(root)] if root is not None else args


def test_compiling_payments_exits_zero_and_reports_the_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, err = _compile(capsys, *_payments(tmp_path / "payments", tmp_path))
    assert code == 0, report
    assert report["ok"] is True
    assert report["operations"] == 4 and report["approved"] == 4
    assert report["bundleHash"] == bundle_hash(tmp_path / "payments")
    assert report["files"] == len(_snapshot(tmp_path / "payments"))
    assert not [d for d in report["diagnostics"] if d["severity"] == "error"]  # type: ignore[union-attr, index]
    assert "Traceback" not in err


def test_two_compiles_into_two_roots_give_byte_identical_trees_and_hashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "w1", tmp_path / "deeper" / "w2"
    second.mkdir(parents=True)
    first.mkdir()
    assert _compile(capsys, *_payments(first / "payments", first))[0] == 0
    assert _compile(capsys, *_payments(second / "payments", second))[0] == 0
    assert _snapshot(first / "payments") == _snapshot(second / "payments")
    assert bundle_hash(first / "payments") == bundle_hash(second / "payments")
    air = json.loads((first / "payments" / "air.json").read_text())
    assert air["service"]["source"]["uri"] == SPEC


def test_recompiling_in_place_is_byte_identical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "payments"
    _compile(capsys, *_payments(out))
    before = _snapshot(out)
    _compile(capsys, *_payments(out))
    assert _snapshot(out) == before


def test_the_text_summary_names_counts_files_and_the_hash_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "payments"
    assert main(["compile", *_payments(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"Compiled 4 operations (4 approved) from {SPEC} -> {out} (")
    assert f"bundle {bundle_hash(out)[:12]}" in captured.out
    assert "\x1b[" not in captured.err  # not a TTY: never coloured


# --- bad input: a registered code, exit 1, no traceback, the previous bundle intact ----------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _spec_with(tmp_path: Path, old: str, new: str) -> list[str]:
    text = (REPO / SPEC).read_text(encoding="utf-8")
    assert old in text
    return [str(_write(tmp_path / "openapi.yaml", text.replace(old, new, 1))), "--service", "payments"]


def _manifest(tmp_path: Path, text: str) -> list[str]:
    return [SPEC, "--manifest", str(_write(tmp_path / "anvil.yaml", text)), "--service", "payments"]


BAD_INPUTS: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "missing spec file": (lambda t: [str(t / "missing.yaml")], "source/not_found"),
    "unparseable yaml": (lambda t: [str(_write(t / "bad.yaml", "openapi: [3.0.3\ninfo: {"))], "source/parse_error"),
    "unparseable json": (lambda t: [str(_write(t / "bad.json", '{"openapi": "3.0.3",'))], "source/parse_error"),
    "not openapi": (lambda t: [str(_write(t / "other.yaml", "hello: world\n"))], "source/not_openapi"),
    "dangling ref": (
        lambda t: _spec_with(t, '$ref: "#/components/schemas/Customer"', '$ref: "#/components/schemas/Nobody"'),
        "source/ref_missing",
    ),
    "remote ref": (
        lambda t: _spec_with(
            t, '$ref: "#/components/schemas/Customer"', '$ref: "https://example.com/schemas.yaml#/Customer"'
        ),
        "source/external_ref",
    ),
    "manifest unknown key": (
        lambda t: _manifest(t, "service:\n  name: payments\nsurprise: true\n"),
        "manifest/unknown_key",
    ),
    "manifest wrong type": (
        lambda t: _manifest(t, "operations:\n  createRefund:\n    state: 3\n"),
        "manifest/wrong_type",
    ),
    "manifest key naming no operation": (
        lambda t: _manifest(t, "operations:\n  refundEverything:\n    state: approved\n"),
        "manifest/unknown_operation",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_gives_a_code_a_nonzero_exit_and_leaves_the_previous_bundle(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "payments"
    assert _compile(capsys, *_payments(out))[0] == 0
    before = _snapshot(out)
    make_args, expected = BAD_INPUTS[case]
    code, report, err = _compile(capsys, *make_args(tmp_path), "--out", str(out))
    assert code == 1
    assert expected in [d["code"] for d in report["diagnostics"]]  # type: ignore[union-attr, index]
    assert report["ok"] is False and report["bundleHash"] is None
    assert "Traceback" not in err
    assert _snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no stage left beside it


def test_the_reported_hash_binds_user_files_carried_over_from_the_previous_bundle(tmp_path: Path) -> None:
    out = tmp_path / "payments"
    first = compile_bundle(Path(SPEC), out=out, manifest=Path(MANIFEST), service_id="payments")
    (out / "NOTES.md").write_text("mine\n", encoding="utf-8")
    again = compile_bundle(Path(SPEC), out=out, manifest=Path(MANIFEST), service_id="payments")
    assert again.bundle_hash == bundle_hash(out) != first.bundle_hash


def test_a_compile_leaves_no_stage_beside_the_bundle_and_no_spare_file_in_it(tmp_path: Path) -> None:
    out = tmp_path / "payments"
    outcome = compile_bundle(Path(SPEC), out=out, manifest=Path(MANIFEST), service_id="payments")
    assert outcome.bundle_hash == bundle_hash(out)
    assert [p.name for p in tmp_path.iterdir()] == ["payments"]
    assert not any(".compile-slots" in p.parts for p in out.rglob("*"))


def test_an_unwritable_out_is_coded_and_the_previous_bundle_is_intact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "payments"
    assert _compile(capsys, *_payments(out))[0] == 0
    before = _snapshot(out)
    code, report, err = _compile(capsys, *_payments(out / "air.json" / "nested"))
    assert code == 1
    assert [d["code"] for d in report["diagnostics"] if d["severity"] == "error"] == ["bundle/out_unwritable"]  # type: ignore[union-attr, index]
    assert "Traceback" not in err
    assert _snapshot(out) == before


def test_an_out_that_is_not_a_bundle_is_refused_in_text_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# mine\n")
    assert main(["compile", *_payments(tmp_path / "docs")]) == 1
    err = capsys.readouterr().err
    assert "bundle/out_not_bundle" in err and "Traceback" not in err
    assert (tmp_path / "docs" / "index.md").read_text() == "# mine\n"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["compile", SPEC, "--service", "Not A Slug", "--out", "x"], "cli/invalid_service_id"),
        (["compile", SPEC], "cli/usage"),
        (["compile", SPEC, "--out", "x", "--root", "no/such/root"], "cli/usage"),
    ],
)
def test_usage_errors_exit_two_with_a_code(args: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(args) == 2
    assert f"error[{expected}]" in capsys.readouterr().err


def test_the_recorded_source_uri_is_relative_to_the_root_or_as_given(tmp_path: Path) -> None:
    spec = tmp_path / "specs" / "api.yaml"
    assert source_uri(spec, tmp_path) == "specs/api.yaml"
    assert source_uri(Path("examples/./payments/openapi.yaml"), tmp_path) == "examples/payments/openapi.yaml"
    assert source_uri(Path("/elsewhere/api.yaml"), tmp_path) == "api.yaml"


def test_diagnostics_render_grouped_by_severity_then_operation() -> None:
    items = [
        diagnostic("weak_operation_name", "weak", operation="svc.b.get"),
        diagnostic("unsafe_retry", "unsafe", operation="svc.a.create", hint="turn retries off"),
        diagnostic("manifest/unknown_key", "unknown", file="anvil.yaml", line=3, column=1),
        diagnostic("unproven_idempotency", "unproven", operation="svc.a.create"),
    ]
    text = render_diagnostics(items)
    lines = text.splitlines()
    assert lines[0] == "errors (2)"
    assert lines[1] == "  (service)"
    assert lines[2] == "    manifest/unknown_key  unknown  [anvil.yaml:3:1]"
    assert lines[3] == "  svc.a.create"
    assert lines.index("warnings (1)") < lines.index("infos (1)")
    assert "      hint: turn retries off" in lines
    assert "\x1b[" not in text and "\x1b[31m" in render_diagnostics(items, colour=True)


def test_progress_shows_elapsed_time_only_when_enabled_and_clears_its_line() -> None:
    stream = io.StringIO()
    with Progress(stream, "big.yaml", enabled=True, delay=0.0) as progress:
        progress.stage("writing")
        time.sleep(0.3)
    text = stream.getvalue()
    assert "big.yaml" in text and text.endswith("\r\x1b[K")
    quiet = io.StringIO()
    with Progress(quiet, "big.yaml", enabled=False, delay=0.0):
        time.sleep(0.05)
    assert quiet.getvalue() == ""


# --- the deployment namespace ---------------------------------------------------------------------------


def _generation(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "generation.json").read_text())["resourceOptions"]
    return data


def _store(out: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((out / "deploy/idempotency-store.json").read_text())["firestore"]
    return data


def test_a_deployment_namespace_is_persisted_and_kept_on_recompile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "payments"
    assert _compile(capsys, *_payments(out), "--deployment-namespace", "payments-prod-eu")[0] == 0
    assert _generation(out)["deploymentNamespace"] == "payments-prod-eu"
    assert _store(out)["namespace"] == "payments-prod-eu"
    air = json.loads((out / "air.json").read_text())
    assert air["service"]["id"] == "payments"
    before = _snapshot(out)
    assert _compile(capsys, *_payments(out))[0] == 0  # no flag: the persisted namespace is kept
    assert _snapshot(out) == before


def test_the_manifest_service_block_may_carry_the_namespace_and_the_flag_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "anvil.yaml"
    text = (REPO / MANIFEST).read_text(encoding="utf-8")
    manifest.write_text(
        text.replace("  environment: prod\n", "  environment: prod\n  deployment_namespace: pay-blue\n")
    )
    args = [SPEC, "--manifest", str(manifest), "--service", "payments"]
    assert _compile(capsys, *args, "--out", str(tmp_path / "blue"))[0] == 0
    assert _generation(tmp_path / "blue")["deploymentNamespace"] == "pay-blue"
    assert _compile(capsys, *args, "--out", str(tmp_path / "green"), "--deployment-namespace", "pay-green")[0] == 0
    assert _generation(tmp_path / "green")["deploymentNamespace"] == "pay-green"
    blue, green = _store(tmp_path / "blue"), _store(tmp_path / "green")
    assert blue["collectionGroup"] != green["collectionGroup"]
    assert (tmp_path / "blue/deploy/terraform/main.tf").read_bytes() != (
        tmp_path / "green/deploy/terraform/main.tf"
    ).read_bytes()
    assert b'name     = "pay-blue-tools"' in (tmp_path / "blue/deploy/terraform/main.tf").read_bytes()


def test_without_a_namespace_generation_records_null_and_the_service_id_is_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "payments"
    assert _compile(capsys, *_payments(out))[0] == 0
    assert _generation(out)["deploymentNamespace"] is None
    assert _store(out)["namespace"] == "payments"


@pytest.mark.parametrize("namespace", ["unsafe/namespace", "Upper", "9starts-with-digit", "a" * 129, "ok\n"])
def test_an_unsafe_deployment_namespace_is_a_coded_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], namespace: str
) -> None:
    code = main(["compile", *_payments(tmp_path / "payments"), "--deployment-namespace", namespace])
    assert code == 2
    assert "error[{}]".format("cli/invalid_deployment_namespace") in capsys.readouterr().err
    assert not (tmp_path / "payments").exists()


def test_an_unsafe_manifest_namespace_is_a_manifest_diagnostic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "anvil.yaml"
    text = (REPO / MANIFEST).read_text(encoding="utf-8")
    manifest.write_text(
        text.replace("  environment: prod\n", "  environment: prod\n  deployment_namespace: Not/Safe\n")
    )
    code, report, _ = _compile(
        capsys, SPEC, "--manifest", str(manifest), "--service", "payments", "--out", str(tmp_path / "x")
    )
    assert code == 1
    assert "manifest/wrong_type" in {d["code"] for d in report["diagnostics"]}  # type: ignore[union-attr, index]


def test_the_manifest_namespace_comes_from_the_manifest_the_compile_parsed_without_reading_it_again(
    tmp_path: Path,
) -> None:
    from anvil.cli.compile import deployment_namespace_for
    from anvil.compiler.manifest.parse import load_manifest

    manifest = tmp_path / "anvil.yaml"
    text = (REPO / MANIFEST).read_text(encoding="utf-8")
    manifest.write_text(text.replace("  environment: prod\n", "  environment: prod\n  deployment_namespace: team-a\n"))
    parsed, found = load_manifest(manifest)
    assert parsed is not None and not found
    manifest.unlink()  # read again, a missing file would give no namespace
    out = tmp_path / "bundle"
    assert deployment_namespace_for(out, flag=None, manifest=manifest, parsed=parsed) == "team-a"
    assert deployment_namespace_for(out, flag="flagged", manifest=manifest, parsed=parsed) == "flagged"
    assert deployment_namespace_for(out, flag=None, manifest=manifest) is None


def _narrowed(tmp_path: Path, budget: int, capsys: pytest.CaptureFixture[str]) -> tuple[list[str], str]:
    """Payments compiled with ``budget`` as its tool budget: the budget warnings, and certify's tool-budget detail."""
    manifest = tmp_path / f"anvil-{budget}.yaml"
    narrow = f"disclosure:\n  tool_budget_tokens: {budget}\n"
    manifest.write_text((REPO / MANIFEST).read_text(encoding="utf-8") + narrow, encoding="utf-8")
    bundle = tmp_path / f"payments-{budget}"
    code, report, _ = _compile(capsys, SPEC, "--manifest", str(manifest), "--service", "payments", "--out", str(bundle))
    assert code == 0
    diagnostics: Any = report["diagnostics"]
    warnings = [d["message"] for d in diagnostics if d["code"] == "disclosure/input_over_budget"]
    main(["certify", str(bundle), "--json"])
    checks = json.loads(capsys.readouterr().out)["checks"]
    [check] = [c for c in checks if c["id"].endswith(".tool_surface_within_disclosure_budget")]
    return warnings, check["detail"]


def test_compile_reports_a_tool_over_budget_at_the_size_certify_reports_in_one_measure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [warning], detail = _narrowed(tmp_path, 500, capsys)
    assert detail.startswith("over the 500-token tool budget (o200k_base): payments.refunds.create (")
    tokens = int(detail.split("payments.refunds.create (", 1)[1].split(" ")[0])
    assert f"set `disclosure: tool_budget_tokens: {tokens}` in anvil.yaml" in detail
    assert f"is listed at {tokens:,} tokens (o200k_base) without any output schema" in warning
    assert "chars/4" not in warning
    # The listing's cut estimates chars/4, which puts the refund over a budget of exactly its o200k size; by
    # the one measure reported it is within, so compile warns of nothing and certify passes it.
    warnings, detail = _narrowed(tmp_path, tokens, capsys)
    tools = json.loads((tmp_path / f"payments-{tokens}" / "tools.json").read_text(encoding="utf-8"))["tools"]
    [refund] = [tool for tool in tools if tool["name"] == "payments_create_refund"]
    assert refund["_meta"]["anvil/output_schema"] == "omitted"  # the estimate put it over: the cut happened
    assert (warnings, detail.startswith("over the")) == ([], False)


def test_a_compile_runs_without_a_garbage_collection_and_leaves_the_collector_as_it_found_it(tmp_path: Path) -> None:
    collections: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    was_enabled = gc.isenabled()
    gc.callbacks.append(record)
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            spec, out, manifest = REPO / SPEC, tmp_path / str(enabled), REPO / MANIFEST
            gc.collect()  # the counts start from zero: what the compile allocates decides
            collections.clear()
            outcome = compile_bundle(spec, out=out, manifest=manifest, service_id="payments")
            during = list(collections)
            # A compile allocates far past the youngest generation's threshold: at most one collection of
            # it, as the collector resumes (the compile's objects are gone by then), none while paused.
            assert during == ([0] if enabled else []) or during == [], during
            assert outcome.bundle_hash is not None
            assert gc.isenabled() is enabled
    finally:
        gc.callbacks.remove(record)
        (gc.enable if was_enabled else gc.disable)()
