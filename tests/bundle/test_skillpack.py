"""Reading a bundle's skill package back for serving: which files, and what is left out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.skillpack import MAX_SKILL_FILE_BYTES, read_skill_package
from anvil.bundle.writer import install_bundle


def _bundle(doc: Document, folder: Path) -> Path:
    install_bundle(folder, emit_bundle(doc))
    return folder


def test_the_skill_file_and_each_reference_page_are_read_in_order(payments_doc: Document, tmp_path: Path) -> None:
    bundle = _bundle(payments_doc, tmp_path / "payments")
    files = read_skill_package(bundle)
    assert [path for path, _ in files] == ["SKILL.md", "reference/idempotency.md", "reference/operations.md"]
    assert files[0][1] == (bundle / "skill" / "SKILL.md").read_text(encoding="utf-8")


def test_schemas_examples_and_other_files_are_not_served(payments_doc: Document, tmp_path: Path) -> None:
    bundle = _bundle(payments_doc, tmp_path / "payments")
    (bundle / "skill" / "reference" / "notes.txt").write_text("not markdown", encoding="utf-8")
    paths = [path for path, _ in read_skill_package(bundle)]
    assert all(path == "SKILL.md" or (path.startswith("reference/") and path.endswith(".md")) for path in paths)
    assert (bundle / "skill" / "schemas").is_dir()


def test_a_link_an_oversized_file_and_invalid_text_are_left_out(payments_doc: Document, tmp_path: Path) -> None:
    bundle = _bundle(payments_doc, tmp_path / "payments")
    secret = tmp_path / "secret.md"
    secret.write_text("outside the bundle", encoding="utf-8")
    reference = bundle / "skill" / "reference"
    os.symlink(secret, reference / "linked.md")
    (reference / "huge.md").write_bytes(b"x" * (MAX_SKILL_FILE_BYTES + 1))
    (reference / "binary.md").write_bytes(b"\xff\xfe")
    paths = [path for path, _ in read_skill_package(bundle)]
    assert paths == ["SKILL.md", "reference/idempotency.md", "reference/operations.md"]


@pytest.mark.parametrize("layout", ["no skill folder", "skill is a link"])
def test_a_bundle_without_a_skill_folder_serves_nothing(layout: str, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    if layout == "skill is a link":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "SKILL.md").write_text("outside", encoding="utf-8")
        os.symlink(elsewhere, bundle / "skill")
    assert read_skill_package(bundle) == ()
