"""Source identity: the hash over a spec's files and the snapshot id derived from it (original-core §1.17)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

__all__ = ["snapshot_id", "source_digest", "source_hash"]


def source_digest(files: Mapping[str, bytes]) -> str:
    """The hex sha256 over ``path \\0 sha256hex(bytes) \\0`` for each file, sorted by path."""
    outer = hashlib.sha256()
    for path in sorted(files):
        outer.update(path.encode("utf-8"))
        outer.update(b"\0")
        outer.update(hashlib.sha256(files[path]).hexdigest().encode("ascii"))
        outer.update(b"\0")
    return outer.hexdigest()


def source_hash(files: Mapping[str, bytes]) -> str:
    """``sha256:<digest>`` of :func:`source_digest`.

    Args:
        files: Each source file's root-relative POSIX path and bytes.
    """
    return "sha256:" + source_digest(files)


def snapshot_id(files: Mapping[str, bytes]) -> str:
    """``src-`` and the first 16 hex digits of :func:`source_digest`.

    Args:
        files: Each source file's root-relative POSIX path and bytes.
    """
    return "src-" + source_digest(files)[:16]
