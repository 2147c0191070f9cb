"""``service.propagate_trace``: each upstream attempt carries a W3C ``traceparent`` only when the manifest says so."""

from __future__ import annotations

from pathlib import Path

from anvil.air.codec import contract_hash, load_document
from anvil.compiler.manifest.parse import parse_manifest
from tests.compiler.manifest.payments import compile_with_service_line


def _compile(tmp_path: Path, setting: str | None) -> dict[str, object]:
    return compile_with_service_line(tmp_path, None if setting is None else f"propagate_trace: {setting}")


def test_the_manifest_takes_a_boolean_and_refuses_anything_else() -> None:
    for value, expected in (("true", True), ("false", False)):
        manifest, found = parse_manifest(f"service:\n  propagate_trace: {value}\n", "anvil.yaml")
        assert found == [] and manifest is not None and manifest.service.propagate_trace is expected
    _, found = parse_manifest("service:\n  propagate_trace: sometimes\n", "anvil.yaml")
    assert [(d.code, d.line) for d in found] == [("manifest/wrong_type", 2)]


def test_air_records_it_only_when_on_so_existing_bundles_stay_byte_identical(tmp_path: Path) -> None:
    plain = _compile(tmp_path, None)
    off = _compile(tmp_path, "false")
    on = _compile(tmp_path, "true")
    assert "propagateTrace" not in plain["service"]  # type: ignore[operator]
    assert off == plain and contract_hash(off) == contract_hash(plain)
    assert on["service"]["propagateTrace"] is True  # type: ignore[index]
    assert load_document(on).service.propagate_trace is True
    assert load_document(plain).service.propagate_trace is None
