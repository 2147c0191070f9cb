"""``service.list_effect_class``: which listed tools carry their effect class (ADR-0030 §4 by default)."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.air.codec import contract_hash, load_document, to_json
from anvil.compiler import build
from anvil.compiler.manifest.parse import parse_manifest
from anvil.errors import AirError

PAYMENTS = Path(__file__).resolve().parents[3] / "examples" / "payments"


def _compile(tmp_path: Path, setting: str | None) -> dict[str, object]:
    text = (PAYMENTS / "anvil.yaml").read_text(encoding="utf-8")
    if setting is not None:
        text = text.replace("service:\n", f"service:\n  list_effect_class: {setting}\n", 1)
    manifest = tmp_path / "anvil.yaml"
    manifest.write_text(text, encoding="utf-8")
    result = build(PAYMENTS / "openapi.yaml", manifest=manifest, service_id="payments", source_uri="openapi.yaml")
    assert [d.code for d in result.diagnostics if d.severity == "error"] == []
    data: dict[str, object] = to_json(result.document)
    return data


def test_the_manifest_accepts_declared_and_all_and_refuses_anything_else() -> None:
    for value in ("declared", "all"):
        manifest, found = parse_manifest(f"service:\n  list_effect_class: {value}\n", "anvil.yaml")
        assert found == [] and manifest is not None
        assert manifest.service.list_effect_class == value
    _, found = parse_manifest("service:\n  list_effect_class: every\n", "anvil.yaml")
    assert [(d.code, d.line) for d in found] == [("manifest/wrong_type", 2)]
    assert "declared, all" in found[0].message


def test_air_records_all_and_leaves_the_default_out_so_the_contract_hash_is_unchanged(tmp_path: Path) -> None:
    plain = _compile(tmp_path, None)
    declared = _compile(tmp_path, "declared")
    every = _compile(tmp_path, "all")
    assert "listEffectClass" not in plain["service"]  # type: ignore[operator]
    assert contract_hash(declared) == contract_hash(plain)
    assert every["service"]["listEffectClass"] == "all"  # type: ignore[index]
    assert contract_hash(every) != contract_hash(plain)
    assert load_document(every).service.list_effect_class == "all"


def test_air_refuses_another_listing_value(tmp_path: Path) -> None:
    data = _compile(tmp_path, "all")
    data["service"]["listEffectClass"] = "declared"  # type: ignore[index]
    with pytest.raises(AirError, match="listEffectClass"):
        load_document(data)
