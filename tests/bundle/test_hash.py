from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from anvil.bundle.hash import bundle_hash, directory_hash, hash_files
from anvil.errors import BundleError


def _tree(root: Path, files: dict[str, bytes]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def test_hash_follows_the_path_nul_digest_nul_recipe(tmp_path: Path) -> None:
    _tree(tmp_path, {"b.txt": b"two\n", "a/x.json": b"{}\n"})
    expected = hashlib.sha256()
    for rel, data in (("a/x.json", b"{}\n"), ("b.txt", b"two\n")):
        expected.update(rel.encode() + b"\0" + hashlib.sha256(data).hexdigest().encode() + b"\0")
    assert bundle_hash(tmp_path) == expected.hexdigest()
    assert hash_files({"b.txt": b"two\n", "a/x.json": b"{}\n"}) == expected.hexdigest()


def test_changing_one_byte_changes_the_hash(tmp_path: Path) -> None:
    _tree(tmp_path, {"skill/SKILL.md": b"hello\n"})
    before = bundle_hash(tmp_path)
    (tmp_path / "skill" / "SKILL.md").write_bytes(b"hello!\n")
    assert bundle_hash(tmp_path) != before


def test_adding_a_user_file_changes_the_hash(tmp_path: Path) -> None:
    _tree(tmp_path, {"air.json": b"{}\n"})
    before = bundle_hash(tmp_path)
    _tree(tmp_path, {"NOTES.md": b"mine\n"})
    assert bundle_hash(tmp_path) != before


def test_proof_records_and_node_modules_are_outside_the_hash(tmp_path: Path) -> None:
    _tree(tmp_path, {"air.json": b"{}\n"})
    before = bundle_hash(tmp_path)
    _tree(tmp_path, {"certification.json": b"{}", "selftest.report.json": b"{}", "node_modules/x/y.js": b"1"})
    assert bundle_hash(tmp_path) == before
    _tree(tmp_path, {"skill/certification.json": b"{}"})  # only root-level records are derived
    assert bundle_hash(tmp_path) != before


def test_the_hash_of_files_in_memory_is_the_hash_of_a_directory_holding_just_them(tmp_path: Path) -> None:
    files = {
        "air.json": b"{}\n",
        "certification.json": b"{}",
        "skill/certification.json": b"{}",
        "node_modules/x/y.js": b"1",
        "runtime/node_modules/z.js": b"2",
        "runtime/node_modules.txt": b"3",
    }
    assert directory_hash(files) == bundle_hash(_tree(tmp_path, files))
    assert directory_hash(files) != hash_files(files)  # node_modules is skipped only as a folder


def test_a_symlink_inside_the_bundle_is_refused(tmp_path: Path) -> None:
    _tree(tmp_path, {"air.json": b"{}\n"})
    os.symlink(tmp_path / "air.json", tmp_path / "link.json")
    with pytest.raises(BundleError) as caught:
        bundle_hash(tmp_path)
    assert caught.value.code == "bundle/invalid"


def test_a_missing_directory_is_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(BundleError) as caught:
        bundle_hash(tmp_path / "nope")
    assert caught.value.code == "bundle/invalid"
