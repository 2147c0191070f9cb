"""Reading one input file with bounds: regular files only, at most a size limit, never a blocking open.

A FIFO as the spec (or a ``$ref`` target) would block ``open()`` forever, and ``/dev/zero`` or a
multi-GiB file would be read until memory runs out. :func:`read_bounded` opens without blocking,
checks the opened descriptor (so a symbolic link to a device is judged by what it points at), and
reads at most the limit plus one byte.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

from anvil._dataclass import dataclass

__all__ = ["DEFAULT_MAX_FILE_BYTES", "FileRefusal", "read_bounded"]

#: The per-file limit unless configured (``ANVIL_MAX_FILE_BYTES``): 64 MiB, far above real specs (1-4 MB).
DEFAULT_MAX_FILE_BYTES: Final = 64 * 1024 * 1024
_CHUNK: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileRefusal:
    """Why a file was not read: ``source/not_regular_file``, ``source/too_large`` or ``unreadable``."""

    code: str
    reason: str


def read_bounded(path: Path, limit: int = DEFAULT_MAX_FILE_BYTES) -> bytes | FileRefusal:
    """The bytes of the regular file at ``path``, or why they were not read.

    Args:
        path: The file.
        limit: The largest size accepted, in bytes.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return FileRefusal("unreadable", exc.strerror or type(exc).__name__)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return FileRefusal("source/not_regular_file", "it is not a regular file (a FIFO, device or folder)")
        if info.st_size > limit:
            return FileRefusal("source/too_large", f"it is larger than the {limit}-byte limit")
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = os.read(fd, min(_CHUNK, limit + 1 - size))
            except BlockingIOError:  # pragma: no cover - regular files never block
                continue
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # the file grew while it was read
                return FileRefusal("source/too_large", f"it is larger than the {limit}-byte limit")
        return b"".join(chunks)
    except OSError as exc:
        return FileRefusal("unreadable", exc.strerror or type(exc).__name__)
    finally:
        os.close(fd)
