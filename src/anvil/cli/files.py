"""Writing a user's file (a manifest) all at once: a reader sees the old text or the new, never half."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from anvil.errors import UsageError

__all__ = ["write_text_atomically"]


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` through a temporary sibling renamed over it; keep its mode.

    Raises:
        UsageError: ``cli/usage`` when the folder is missing or cannot be written (nothing changes).
    """
    folder = path.parent if str(path.parent) else Path(".")
    try:
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise UsageError(
            "cli/usage", f"cannot write {path}: {exc.strerror or exc}", hint="Pass a path in a writable folder."
        ) from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
