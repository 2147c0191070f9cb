"""Reading a bundle's skill package back for serving: ``skill/SKILL.md`` and ``skill/reference/*.md``.

The MCP front end serves these files as resources (original-core §5.10). They are read once, at start-up,
into a fixed table of (path inside ``skill/``, text); a ``resources/read`` only looks its URI up in that
table, so no caller input is ever joined onto a filesystem path. Only regular files are read (a symbolic
link is skipped, so nothing outside the bundle is reached), each at most :data:`MAX_SKILL_FILE_BYTES`
and valid UTF-8; a file that is missing or fails one of these is left out.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Final

__all__ = ["MAX_SKILL_FILE_BYTES", "SkillFile", "read_skill_package"]

#: The largest skill file served (a compiled reference is a few hundred KiB for the largest corpus spec).
MAX_SKILL_FILE_BYTES: Final = 4 * 1024 * 1024

#: A served skill file: its path inside the bundle's ``skill/`` folder (POSIX) and its text.
SkillFile = tuple[str, str]


def _text(path: Path) -> str | None:
    """The file's text when it is a regular file (not a link) within the size bound, else None."""
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SKILL_FILE_BYTES:
            return None
        with path.open("rb") as handle:
            data = handle.read(MAX_SKILL_FILE_BYTES + 1)
        if len(data) > MAX_SKILL_FILE_BYTES:
            return None
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def read_skill_package(directory: Path) -> tuple[SkillFile, ...]:
    """``SKILL.md`` then each ``reference/*.md`` (by name) of ``<directory>/skill``, as (path, text)."""
    skill = directory / "skill"
    try:
        if not stat.S_ISDIR(skill.lstat().st_mode):
            return ()
    except OSError:
        return ()
    names = ["SKILL.md"]
    reference = skill / "reference"
    try:
        if stat.S_ISDIR(reference.lstat().st_mode):
            names += sorted(f"reference/{entry.name}" for entry in reference.iterdir() if entry.name.endswith(".md"))
    except OSError:
        pass
    found: list[SkillFile] = []
    for name in names:
        text = _text(skill / name)
        if text is not None:
            found.append((name, text))
    return tuple(found)
