"""Proof-lane records: written atomically at the bundle root, outside the hash they carry."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.bundle.hash import bundle_hash
from anvil.errors import BundleError
from anvil.proof.record import read_record, record_fresh, utc_now, write_record


def test_a_record_is_written_beside_the_bundle_without_changing_its_hash_and_goes_stale_with_it(
    github: Path, tmp_path: Path
) -> None:
    before = bundle_hash(github)
    path = write_record(github, "certification.json", {"bundleHash": before, "status": "passed"})
    assert path == github / "certification.json"
    assert bundle_hash(github) == before
    record = read_record(github, "certification.json")
    assert record == {"bundleHash": before, "status": "passed"}
    assert record_fresh(github, record)
    assert not record_fresh(github, {"bundleHash": "0" * 64})
    path.unlink()


def test_only_the_known_record_files_can_be_written_and_a_missing_record_reads_as_none(github: Path) -> None:
    with pytest.raises(BundleError) as refused:
        write_record(github, "air.json", {})
    assert refused.value.code == "bundle/invalid"
    assert read_record(github, "simulation.report.json") is None


def test_timestamps_are_iso_utc_with_milliseconds() -> None:
    stamp = utc_now()
    assert stamp.endswith("Z") and stamp[10] == "T" and len(stamp) == len("2026-01-01T00:00:00.000Z")
