"""``service.list_effect_class``: which listed tools carry their effect class (ADR-0030 §4 by default)."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.air.codec import contract_hash, load_document
from anvil.compiler.manifest.parse import parse_manifest
from anvil.errors import AirError
from tests.compiler.manifest.payments import compile_with_service_line


def _compile(tmp_path: Path, setting: str | None) -> dict[str, object]:
    return compile_with_service_line(tmp_path, None if setting is None else f"list_effect_class: {setting}")


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
