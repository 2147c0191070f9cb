from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.hash import bundle_files
from anvil.bundle.writer import BundleInstall, _discard_backup, _swap, install_bundle
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


def _wait_for_slots(parent: Path, count: int) -> None:
    """Until the stage beside ``parent``'s bundle holds ``count`` empty files made ahead (at most 10 s)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for stage in parent.glob(".*.compile-stage-*"):
            slots = stage / ".compile-slots"
            if slots.is_dir() and len(os.listdir(slots)) >= count:
                return
        time.sleep(0.01)
    raise AssertionError("the writer made no files ahead")


def test_files_added_in_several_batches_are_installed_only_on_commit(tmp_path: Path, payments_doc: Document) -> None:
    files = emit_bundle(payments_doc)
    out = tmp_path / "bundle"
    with BundleInstall(out) as install:
        names = sorted(files)
        install.add({rel: files[rel] for rel in names[:3]})
        install.add({rel: files[rel] for rel in names[3:]})
        assert not out.exists()
        report = install.commit()
    assert _snapshot(out) == files and report.files == len(files)
    assert _siblings(tmp_path) == []


def test_files_made_ahead_fill_the_bundle_and_the_spare_ones_never_reach_it(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    with BundleInstall(out, slots=6) as install:
        _wait_for_slots(tmp_path, 6)
        install.add({"air.json": b"{}\n", "skill/a.md": b"a\n", "skill/b.md": b"b\n"})
        install.commit()
    assert _snapshot(out) == {"air.json": b"{}\n", "skill/a.md": b"a\n", "skill/b.md": b"b\n"}
    assert sorted(os.listdir(out)) == ["air.json", "skill"]
    assert all(os.stat(out / rel).st_nlink == 1 for rel in ("air.json", "skill/a.md", "skill/b.md"))
    assert _siblings(tmp_path) == []


def test_a_file_made_ahead_never_replaces_a_path_already_written(installed: Path) -> None:
    before = _snapshot(installed)
    with BundleInstall(installed, slots=4) as install:
        _wait_for_slots(installed.parent, 4)
        install.add({"skill/a/b": b"makes skill/a a directory", "skill/a": b"then a file where it is"})
        with pytest.raises(BundleError) as caught:
            install.commit()
    assert caught.value.code == "bundle/path_unsafe"  # whichever of the two is written first
    assert _snapshot(installed) == before
    assert _siblings(installed.parent) == []


def test_an_install_left_without_commit_changes_nothing_and_leaves_no_stage(installed: Path) -> None:
    before = _snapshot(installed)
    with BundleInstall(installed, slots=4) as install:
        install.add({"air.json": b"{}\n"})
    assert _snapshot(installed) == before
    assert _siblings(installed.parent) == []


def test_a_path_added_twice_is_refused(tmp_path: Path) -> None:
    with BundleInstall(tmp_path / "bundle") as install:
        install.add({"air.json": b"{}\n"})
        with pytest.raises(BundleError) as caught:
            install.add({"air.json": b"[]\n"})
    assert caught.value.code == "bundle/path_unsafe"
    assert not (tmp_path / "bundle").exists() and _siblings(tmp_path) == []


def test_files_still_queued_at_commit_are_all_written(tmp_path: Path) -> None:
    files = {f"skill/schemas/{index:04}.json": b"%d\n" % index for index in range(300)}
    with BundleInstall(tmp_path / "bundle", slots=10) as install:
        install.add(files)
        install.commit()
    assert _snapshot(tmp_path / "bundle") == files
    assert _siblings(tmp_path) == []


def test_the_thread_switch_interval_is_restored_once_the_writes_are_done(tmp_path: Path) -> None:
    before = sys.getswitchinterval()
    with BundleInstall(tmp_path / "bundle") as install:
        assert sys.getswitchinterval() < before
        install.add({"air.json": b"{}\n"})
        install.commit()
    assert sys.getswitchinterval() == before


def test_files_are_made_ahead_up_to_the_count_expected(tmp_path: Path) -> None:
    with BundleInstall(tmp_path / "bundle", slots=2) as install:
        _wait_for_slots(tmp_path, 2)
        install.expect(5)
        _wait_for_slots(tmp_path, 5)
        time.sleep(0.05)
        (stage,) = tmp_path.glob(".*.compile-stage-*")
        assert len(os.listdir(stage / ".compile-slots")) == 5


_KILLED = """
import os, signal, sys
from pathlib import Path
from anvil.bundle.writer import BundleInstall
install = BundleInstall(Path(sys.argv[1]), slots=3)
install.add({"air.json": b"{}\\n"})
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="stages are locked with flock (POSIX)")
def test_a_stage_a_killed_compile_left_is_deleted_by_the_next_install_and_a_live_one_is_kept(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-c", _KILLED, str(out)], env=env, check=False, timeout=60)
    left = _siblings(tmp_path)
    assert len(left) == 1 and ".compile-stage-" in left[0]  # what a killed compile leaves
    with BundleInstall(out):  # a live install beside it
        live_stage = _siblings(tmp_path)
        install_bundle(out, {"air.json": b"{}\n"})
        assert _siblings(tmp_path) == [name for name in live_stage if name not in left]  # swept; the live kept
    assert _snapshot(out) == {"air.json": b"{}\n"}  # no lock file reached the bundle
    assert _siblings(tmp_path) == []
