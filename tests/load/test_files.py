"""Bounded input reads: ``anvil compile`` never blocks on a FIFO, never reads a device or a
huge file into memory, and answers deep nesting with a diagnostic; each case is a coded error."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from anvil.cli import main
from anvil.compiler import build
from anvil.load.files import DEFAULT_MAX_FILE_BYTES, FileRefusal, read_bounded
from anvil.load.spec import load_spec

needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")

SPEC_WITH_REF = {
    "openapi": "3.0.3",
    "info": {"title": "T", "version": "1"},
    "paths": {"/x": {"get": {"responses": {"200": {"$ref": "other.json#/ok"}}}}},
}


def codes(result: object) -> list[str]:
    return [d.code for d in result.diagnostics]  # type: ignore[attr-defined]


def test_a_regular_file_is_read_whole_up_to_the_limit(tmp_path: Path) -> None:
    spec = tmp_path / "a.json"
    spec.write_bytes(b"x" * 100)
    assert read_bounded(spec, 100) == b"x" * 100
    refused = read_bounded(spec, 99)
    assert isinstance(refused, FileRefusal) and refused.code == "source/too_large"
    assert DEFAULT_MAX_FILE_BYTES == 64 * 1024 * 1024


@needs_fifo
def test_a_fifo_as_the_spec_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "openapi.yaml"
    os.mkfifo(fifo)
    result = load_spec(fifo)
    assert codes(result) == ["source/not_regular_file"] and result.document is None


@needs_fifo
def test_a_fifo_as_a_ref_target_is_refused_at_the_referring_site(tmp_path: Path) -> None:
    (tmp_path / "openapi.json").write_text(json.dumps(SPEC_WITH_REF))
    os.mkfifo(tmp_path / "other.json")
    result = load_spec(tmp_path / "openapi.json")
    assert "source/not_regular_file" in codes(result)
    found = next(d for d in result.diagnostics if d.code == "source/not_regular_file")
    assert found.file == "openapi.json"


@needs_fifo
def test_a_fifo_as_the_manifest_is_refused(tmp_path: Path) -> None:
    (tmp_path / "openapi.json").write_text(json.dumps(SPEC_WITH_REF))
    (tmp_path / "other.json").write_text('{"ok": {"description": "ok"}}')
    os.mkfifo(tmp_path / "anvil.yaml")
    result = build(tmp_path / "openapi.json", manifest=tmp_path / "anvil.yaml", service_id="t")
    assert "manifest/not_found" in codes(result)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_as_the_spec_or_through_a_symlinked_ref_is_not_read(tmp_path: Path) -> None:
    assert codes(load_spec(Path("/dev/zero"))) == ["source/not_regular_file"]
    (tmp_path / "openapi.json").write_text(json.dumps(SPEC_WITH_REF))
    (tmp_path / "other.json").symlink_to("/dev/zero")
    assert "source/ref_missing" in codes(load_spec(tmp_path / "openapi.json"))  # outside the root: never opened


def test_a_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    spec = tmp_path / "openapi.json"
    with spec.open("wb") as handle:  # sparse: 3 GiB on paper, nothing on disk
        handle.truncate(3 * 1024 * 1024 * 1024)
    assert codes(load_spec(spec)) == ["source/too_large"]
    small = tmp_path / "small.json"
    small.write_text(json.dumps(SPEC_WITH_REF))
    (tmp_path / "other.json").write_text('{"ok": {"description": "' + "d" * 5000 + '"}}')
    assert "source/too_large" in codes(load_spec(small, max_file_bytes=4096))


@needs_fifo
def test_anvil_compile_answers_a_fifo_and_a_huge_file_with_exit_1_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    out = tmp_path / "out"
    assert main(["compile", str(fifo), "--service", "t", "--out", str(out), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [d["code"] for d in report["diagnostics"]] == ["source/not_regular_file"] and not out.exists()
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(SPEC_WITH_REF))
    monkeypatch.setenv("ANVIL_MAX_FILE_BYTES", "10")  # the CLI reads the limit from the environment
    assert main(["compile", str(spec), "--service", "t", "--out", str(out), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [d["code"] for d in report["diagnostics"]] == ["source/too_large"] and not out.exists()


@pytest.mark.parametrize("depth", [1_000, 100_000])
@pytest.mark.parametrize("form", ["json", "yaml_flow", "yaml_block"])
def test_deep_nesting_in_a_spec_is_a_diagnostic_never_a_traceback(tmp_path: Path, depth: int, form: str) -> None:
    spec = tmp_path / ("openapi.json" if form == "json" else "openapi.yaml")
    if form == "yaml_block":
        body = "".join("  " * i + "a:\n" for i in range(min(depth, 5_000))) + "  " * min(depth, 5_000) + "x: 1\n"
        spec.write_text("openapi: 3.0.3\ninfo: {title: T, version: '1'}\npaths: {}\nx-deep:\n" + "  " + body)
    else:
        spec.write_text(
            '{"openapi": "3.0.3", "info": {"title": "T", "version": "1"}, "paths": {}, "x": '
            + "[" * depth
            + "]" * depth
            + "}"
        )
    result = build(spec, service_id="t")
    assert all(d.code.startswith(("source/", "schema_cycle")) for d in result.diagnostics if d.severity == "error")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2048))
def test_arbitrary_bytes_as_a_spec_load_to_diagnostics(tmp_path: Path, data: bytes) -> None:
    spec = tmp_path / "fuzz.yaml"
    spec.write_bytes(data)
    result = load_spec(spec)
    assert result.document is None or isinstance(result.document, dict)
    assert all(d.code for d in result.diagnostics)
