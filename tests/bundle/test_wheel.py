"""The runtime wheel's files: the package as installed, nothing a run or a checkout added beside it."""

from __future__ import annotations

import os
from pathlib import Path

from anvil.bundle.wheel import package_files


def test_package_files_are_the_regular_files_in_path_order_without_caches_hidden_entries_or_links(
    tmp_path: Path,
) -> None:
    for rel in ("a/b.py", "a-c.py", "a/__pycache__/x.cpython-311.pyc", ".hidden/x.py", "a/.h.py", "z.pyc", "A.py"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel, encoding="utf-8")
    (tmp_path / "a" / "b").mkdir()
    (tmp_path / "a" / "b" / "c.txt").write_text("c", encoding="utf-8")
    os.symlink(tmp_path / "a", tmp_path / "linked")
    os.symlink(tmp_path / "A.py", tmp_path / "link.py")
    os.mkfifo(tmp_path / "pipe")
    files = package_files(tmp_path, "p")
    # Part by part, as paths sort ("a/b/c.txt" before "a/b.py" before "a-c.py"), whatever the strings say.
    assert list(files) == ["p/A.py", "p/a/b/c.txt", "p/a/b.py", "p/a-c.py"]
    assert files["p/a/b.py"] == b"a/b.py"
