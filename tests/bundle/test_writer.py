from __future__ import annotations

import os
from pathlib import Path

import pytest

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.hash import bundle_files
from anvil.bundle.writer import _discard_backup, _swap, install_bundle
from anvil.errors import BundleError


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _siblings(parent: Path) -> list[str]:
    return sorted(name for name in os.listdir(parent) if name.startswith("."))


@pytest.fixture
def installed(tmp_path: Path, payments_doc: Document) -> Path:
    out = tmp_path / "bundle"
    install_bundle(out, emit_bundle(payments_doc))
    return out


def test_install_writes_every_generated_file(tmp_path: Path, payments_doc: Document) -> None:
    files = emit_bundle(payments_doc)
    report = install_bundle(tmp_path / "new" / "bundle", files)
    assert _snapshot(tmp_path / "new" / "bundle") == files
    assert report.files == len(files) and report.replaced is False and report.warnings == ()
    assert _siblings(tmp_path / "new") == []


def test_reinstall_keeps_user_files_and_drops_stale_generated_ones(installed: Path, payments_doc: Document) -> None:
    (installed / "NOTES.md").write_text("mine\n")
    (installed / ".anvil" / "sources").mkdir(parents=True)
    (installed / ".anvil" / "sources" / "x.json").write_text("{}\n")
    (installed / "certification.json").write_text("{}\n")
    (installed / "schemas" / "payments.old.get.schema.json").write_text("{}\n")
    files = emit_bundle(payments_doc)
    report = install_bundle(installed, files)
    assert report.replaced is True
    assert report.carried == (".anvil", "NOTES.md", "certification.json")
    assert (installed / "NOTES.md").read_text() == "mine\n"
    assert (installed / ".anvil" / "sources" / "x.json").is_file()
    assert not (installed / "schemas" / "payments.old.get.schema.json").exists()
    assert {k: v for k, v in bundle_files(installed).items() if k in files} == files
    assert _siblings(installed.parent) == []


def test_a_directory_holding_only_dot_anvil_is_accepted(tmp_path: Path, payments_doc: Document) -> None:
    (tmp_path / "ws" / ".anvil").mkdir(parents=True)
    install_bundle(tmp_path / "ws", emit_bundle(payments_doc))
    assert (tmp_path / "ws" / ".anvil").is_dir() and (tmp_path / "ws" / "air.json").is_file()


def test_a_non_empty_directory_that_is_not_a_bundle_is_refused(tmp_path: Path, payments_doc: Document) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("print()\n")
    with pytest.raises(BundleError) as caught:
        install_bundle(tmp_path / "src", emit_bundle(payments_doc))
    assert caught.value.code == "bundle/out_not_bundle"
    assert _snapshot(tmp_path / "src") == {"main.py": b"print()\n"}
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(BundleError) as caught:
        install_bundle(tmp_path / "file.txt", emit_bundle(payments_doc))
    assert caught.value.code == "bundle/out_not_bundle"


def test_dangerous_output_paths_are_refused(
    tmp_path: Path, payments_doc: Document, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = emit_bundle(payments_doc)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for out in (repo, link, work, Path("."), tmp_path, Path("/")):
        with pytest.raises(BundleError) as caught:
            install_bundle(out, files)
        assert caught.value.code == "bundle/out_unsafe", out
    assert not (tmp_path / "elsewhere").exists()


@pytest.mark.parametrize("bad", ["../escape.txt", "/abs.txt", "a\\b.txt", "a//b.txt", "./a.txt", "", "C:x"])
def test_unsafe_generated_paths_are_refused_before_anything_is_written(installed: Path, bad: str) -> None:
    before = _snapshot(installed)
    with pytest.raises(BundleError) as caught:
        install_bundle(installed, {"air.json": b"{}\n", bad: b"x"})
    assert caught.value.code == "bundle/path_unsafe"
    assert _snapshot(installed) == before


def test_a_failure_while_staging_leaves_the_previous_bundle_intact(installed: Path) -> None:
    before = _snapshot(installed)
    with pytest.raises(BundleError) as caught:
        install_bundle(installed, {"air.json": b"{}\n", "skill/a": b"file", "skill/a/b": b"needs a dir"})
    assert caught.value.code == "bundle/path_unsafe"
    assert _snapshot(installed) == before
    assert _siblings(installed.parent) == []


def test_an_unwritable_out_is_a_coded_error_and_the_bundle_next_to_it_is_intact(installed: Path) -> None:
    before = _snapshot(installed)
    with pytest.raises(BundleError) as caught:
        install_bundle(installed / "air.json" / "nested", {"air.json": b"{}\n"})
    assert caught.value.code == "bundle/out_unwritable"
    assert _snapshot(installed) == before


def test_a_failed_swap_restores_the_previous_directory(installed: Path) -> None:
    before = _snapshot(installed)
    with pytest.raises(BundleError) as caught:
        _swap(installed, installed.parent / ".bundle.compile-stage-missing", existed=True)
    assert caught.value.code == "bundle/out_unwritable"
    assert _snapshot(installed) == before
    assert _siblings(installed.parent) == []


def test_a_backup_that_cannot_be_deleted_is_only_a_warning(tmp_path: Path) -> None:
    warnings = _discard_backup(tmp_path / ".bundle.compile-backup-gone")
    assert [w.code for w in warnings] == ["bundle/backup_not_removed"]
    assert warnings[0].severity == "warning"


def test_a_symlink_where_a_generated_root_goes_is_replaced_never_written_through(
    installed: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (installed / "userdir").symlink_to(outside)
    install_bundle(installed, {"air.json": b"{}\n", "generation.json": b"{}\n", "userdir/x.txt": b"x"})
    assert not (installed / "userdir").is_symlink()
    assert (installed / "userdir" / "x.txt").read_bytes() == b"x"
    assert list(outside.iterdir()) == []
