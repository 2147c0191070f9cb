"""Freshness: every compiler-owned byte against a fresh projection, and the store-contract state machine."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from anvil.bundle.hash import bundle_hash
from anvil.deploy.freshness import check_freshness, inspect_store, parse_store_contract

CONTRACT = "deploy/idempotency-store.json"


def _flip_one_byte(path: Path, needle: bytes) -> None:
    data = path.read_bytes()
    at = data.index(needle)
    path.write_bytes(data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :])


def test_an_untouched_bundle_is_fresh_in_every_file(payments_bundle: Path) -> None:
    freshness = check_freshness(payments_bundle)
    assert freshness.state == "fresh" and freshness.problems == ()
    assert {check.state for check in freshness.files} == {"fresh"}
    assert freshness.bundle_hash == bundle_hash(payments_bundle)
    assert inspect_store(payments_bundle).state == "fresh"


def test_the_none_variant_bundle_is_fresh(none_bundle: Path) -> None:
    inspection = inspect_store(none_bundle)
    assert (inspection.state, inspection.backend) == ("fresh", "none")


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        ("deploy/terraform/main.tf", b"firestore://"),
        ("deploy/terraform/variables.tf", b"604800"),
        ("deploy/cloudbuild.yaml", b"plan"),
        ("deploy/Dockerfile", b"anvil serve"),
        ("runtime/operations.manifest.json", b"payments"),
        ("tools.json", b"payments"),
        ("skill/SKILL.md", b"payments"),
        ("skill/reference/operations.md", b"payments"),
        ("deploy/README.md", b"Proof gates"),
    ],
)
def test_one_changed_byte_in_a_compiler_owned_file_is_tampered_and_named(
    payments_bundle: Path, path: str, needle: bytes
) -> None:
    _flip_one_byte(payments_bundle / path, needle)
    freshness = check_freshness(payments_bundle)
    assert freshness.state == "stale"
    assert [(c.path, c.state) for c in freshness.problems] == [(path, "tampered")]
    inspection = inspect_store(freshness)
    assert inspection.state == "stale"
    assert f"{path}: bytes differ from deterministic projection" in inspection.detail


def test_an_edited_air_document_makes_the_files_projected_from_it_disagree(payments_bundle: Path) -> None:
    air = payments_bundle / "air.json"
    doc = json.loads(air.read_bytes())
    doc["service"]["displayName"] = "Payments API (edited)"
    air.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    freshness = check_freshness(payments_bundle)
    assert freshness.state == "stale"
    assert freshness.state_of("air.json") == "fresh"  # canonical AIR re-serializes to itself...
    assert freshness.state_of("skill/SKILL.md") == "tampered"  # ...but what it projects no longer matches
    assert inspect_store(freshness).state == "stale"


@pytest.mark.parametrize("needle", [b'"payments"', b"Idempotency-Key", b"  "])
def test_one_changed_air_byte_is_never_fresh(payments_bundle: Path, needle: bytes) -> None:
    _flip_one_byte(payments_bundle / "air.json", needle)
    assert check_freshness(payments_bundle).state != "fresh"
    assert inspect_store(payments_bundle).state != "fresh"


def test_a_deleted_compiler_owned_file_is_missing(payments_bundle: Path) -> None:
    (payments_bundle / "deploy/terraform/variables.tf").unlink()
    freshness = check_freshness(payments_bundle)
    assert freshness.state_of("deploy/terraform/variables.tf") == "missing"
    assert "deploy/terraform/variables.tf: missing compiler-owned file" in inspect_store(freshness).detail


def test_an_extra_file_inside_a_compiler_owned_directory_is_unexpected_but_a_root_file_is_allowed(
    payments_bundle: Path,
) -> None:
    (payments_bundle / "NOTES.md").write_text("operator notes\n", encoding="utf-8")
    assert check_freshness(payments_bundle).state == "fresh"
    (payments_bundle / "deploy/terraform/override.tf").write_text("# sneaky\n", encoding="utf-8")
    freshness = check_freshness(payments_bundle)
    assert freshness.state_of("deploy/terraform/override.tf") == "unexpected"
    assert freshness.state == "stale"


def test_a_deleted_store_contract_is_missing(payments_bundle: Path) -> None:
    (payments_bundle / CONTRACT).unlink()
    inspection = inspect_store(payments_bundle)
    assert (inspection.state, inspection.contract, inspection.digest) == ("missing", None, None)
    assert inspection.path == payments_bundle.resolve() / CONTRACT


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"{", b'{"hello": "world"}', b"[]"],
)
def test_a_store_contract_that_does_not_parse_strictly_is_corrupt(payments_bundle: Path, content: bytes) -> None:
    (payments_bundle / CONTRACT).write_bytes(content)
    assert inspect_store(payments_bundle).state == "corrupt"


@pytest.mark.parametrize("edit", ["schema_version", "extra_key", "extra_nested_key", "literal", "empty_ids"])
def test_the_strict_parser_rejects_schema_drift(payments_bundle: Path, edit: str) -> None:
    contract = json.loads((payments_bundle / CONTRACT).read_bytes())
    if edit == "schema_version":
        contract["schemaVersion"] = 2
    elif edit == "extra_key":
        contract["extra"] = True
    elif edit == "extra_nested_key":
        contract["firestore"]["iam"]["owner"] = "me"
    elif edit == "literal":
        contract["firestore"]["iam"]["role"] = "roles/owner"
    else:
        contract["requirement"]["operationIds"] = []
    with pytest.raises(ValueError, match="does not match schema version 1"):
        parse_store_contract(json.dumps(contract).encode())


def test_a_forged_namespace_in_a_well_formed_contract_is_stale(payments_bundle: Path) -> None:
    path = payments_bundle / CONTRACT
    contract = json.loads(path.read_bytes())
    contract["firestore"]["runtimeUri"]["resolvedTemplate"] = "firestore://{project_id}/{database_id}/elsewhere"
    path.write_text(json.dumps(contract, indent=2) + "\n", encoding="utf-8")
    inspection = inspect_store(payments_bundle)
    assert inspection.state == "stale"
    assert "does not match canonical AIR" in inspection.detail


def test_a_symlinked_file_is_its_own_state(payments_bundle: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.tf"
    outside.write_text("# elsewhere\n", encoding="utf-8")
    target = payments_bundle / "deploy/terraform/main.tf"
    target.unlink()
    os.symlink(outside, target)
    freshness = check_freshness(payments_bundle)
    assert freshness.state == "symlink"
    assert freshness.state_of("deploy/terraform/main.tf") == "symlink"
    assert freshness.bundle_hash is None


def test_a_corrupt_generation_file_is_malformed_and_the_contract_stale(payments_bundle: Path) -> None:
    (payments_bundle / "generation.json").write_text('{"schemaVersion": 2}\n', encoding="utf-8")
    freshness = check_freshness(payments_bundle)
    assert freshness.state_of("generation.json") == "malformed"
    assert freshness.state == "stale"
    assert inspect_store(freshness).state == "stale"


def test_an_air_file_that_does_not_load_is_malformed(payments_bundle: Path) -> None:
    (payments_bundle / "air.json").write_text("{}", encoding="utf-8")
    freshness = check_freshness(payments_bundle)
    assert (freshness.state, freshness.state_of("air.json"), freshness.document) == ("malformed", "malformed", None)


def test_a_fifo_in_the_bundle_is_reported_without_being_opened(payments_bundle: Path) -> None:
    os.mkfifo(payments_bundle / "deploy" / "pipe")
    freshness = check_freshness(payments_bundle)  # would block forever if it opened the FIFO
    assert freshness.state_of("deploy/pipe") == "malformed"
    assert freshness.state == "stale"


def test_a_missing_directory_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        check_freshness(tmp_path / "nope")
