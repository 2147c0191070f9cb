"""``service.propagate_trace``: each upstream attempt carries a W3C ``traceparent`` only when the manifest says so."""

from __future__ import annotations

from pathlib import Path

from anvil.air.codec import contract_hash, load_document, to_json
from anvil.compiler import build
from anvil.compiler.manifest.parse import parse_manifest

PAYMENTS = Path(__file__).resolve().parents[3] / "examples" / "payments"


def _compile(tmp_path: Path, setting: str | None) -> dict[str, object]:
    text = (PAYMENTS / "anvil.yaml").read_text(encoding="utf-8")
    if setting is not None:
        text = text.replace("service:\n", f"service:\n  propagate_trace: {setting}\n", 1)
    manifest = tmp_path / "anvil.yaml"
    manifest.write_text(text, encoding="utf-8")
    result = build(PAYMENTS / "openapi.yaml", manifest=manifest, service_id="payments", source_uri="openapi.yaml")
    assert [d.code for d in result.diagnostics if d.severity == "error"] == []
    data: dict[str, object] = to_json(result.document)
    return data


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
