"""``bench/compare.py``: where its SQLite ledgers live is said, and a memory filesystem is called out."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REPO

SCRIPT = REPO / "bench" / "compare.py"


def _module() -> ModuleType:
    sys.path.insert(0, str(REPO / "bench"))  # compare imports its sibling compare_paths
    try:
        spec = importlib.util.spec_from_file_location("compare", SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules.setdefault("compare", module)  # dataclasses look their module up by name
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO / "bench"))


def test_the_ledger_note_names_the_folder_and_its_filesystem(tmp_path: Path) -> None:
    compare = _module()
    note = compare._ledger_note(tmp_path, {})
    assert str(tmp_path) in note
    assert f"({compare._filesystem(tmp_path)})" in note
    assert "synchronous=FULL" in note
    assert "official-client rounds" not in note


def test_the_ledger_note_gives_the_disks_commit_cost_while_the_official_rows_ran(tmp_path: Path) -> None:
    note = _module()._ledger_note(tmp_path, {"official_full_p50": 0.4321, "official_normal_p50": 0.0123})
    assert "in the official-client rounds: p50 0.432 / 0.012 ms" in note


@pytest.mark.skipif(not Path("/dev/shm").is_dir() or not Path("/proc/mounts").is_file(), reason="no /dev/shm")
def test_a_ledger_folder_on_tmpfs_is_called_out_as_hiding_the_sync() -> None:
    compare = _module()
    if compare._filesystem(Path("/dev/shm")) != "tmpfs":
        pytest.skip("/dev/shm is not tmpfs here")
    assert "--ledger-dir" in compare._ledger_note(Path("/dev/shm"), {})
    assert "--ledger-dir" not in compare._ledger_note(REPO, {}) or compare._filesystem(REPO) in ("tmpfs", "ramfs")
