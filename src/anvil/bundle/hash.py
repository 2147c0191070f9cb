"""The bundle hash (original-core §4.4): one sha256 over every file a bundle directory holds.

Each file contributes ``<relative POSIX path> NUL <sha256 hex of its bytes> NUL``, in path order
(UTF-16 code-unit order, as JavaScript sorts). ``node_modules`` is skipped, and so are the derived
record files the proof lanes write at the root (they carry the hash, so they cannot be inside it).
Any other change, including to user files outside compiler-owned roots, changes the hash.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from anvil.errors import BundleError

__all__ = ["DERIVED_RECORD_FILES", "bundle_files", "bundle_hash", "directory_hash", "hash_files"]

#: Root-level proof-lane records, excluded from the hash they bind to.
DERIVED_RECORD_FILES: frozenset[str] = frozenset(
    {
        "certification.json",
        "publication.json",
        "selftest.report.json",
        "conformance.report.json",
        "conformance.live.report.json",
        "simulation.report.json",
        "review.report.json",
        "benchmark.report.json",
    }
)
_SKIPPED_DIRS = frozenset({"node_modules"})


def _js_order(path: str) -> bytes:
    return path.encode("utf-16-be", "surrogatepass")


def bundle_files(directory: Path) -> dict[str, bytes]:
    """Every hashed file of a bundle directory: relative POSIX path -> bytes.

    Raises:
        BundleError: ``bundle/invalid`` when the directory is missing, or holds a symlink (a bundle
            hash cannot bind an external or mutable link target).
    """
    if not directory.is_dir():
        raise BundleError("bundle/invalid", f"{directory} is not a bundle directory", hint="Run `anvil compile` first.")
    files: dict[str, bytes] = {}
    for current, dirnames, filenames in os.walk(directory, followlinks=False):
        base = Path(current)
        rel_base = base.relative_to(directory).as_posix()
        prefix = "" if rel_base == "." else rel_base + "/"
        for name in sorted(dirnames):
            if (base / name).is_symlink():
                raise BundleError(
                    "bundle/invalid",
                    f"unexpected symlink in bundle at {prefix}{name}",
                    hint="Replace the link with a regular directory; a bundle hash cannot bind link targets.",
                )
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
        for name in filenames:
            rel = prefix + name
            path = base / name
            if path.is_symlink():
                raise BundleError(
                    "bundle/invalid",
                    f"unexpected symlink in bundle at {rel}",
                    hint="Replace the link with a regular file; a bundle hash cannot bind link targets.",
                )
            if not prefix and name in DERIVED_RECORD_FILES:
                continue
            files[rel] = path.read_bytes()
    return files


def hash_files(files: Mapping[str, bytes]) -> str:
    """The bundle hash of an in-memory file set (same recipe as :func:`bundle_hash`)."""
    digest = hashlib.sha256()
    for rel in sorted((r for r in files if r not in DERIVED_RECORD_FILES), key=_js_order):
        digest.update(rel.encode("utf-8"))
        digest.update(b"\0")
        digest.update(hashlib.sha256(files[rel]).hexdigest().encode("ascii"))
        digest.update(b"\0")
    return digest.hexdigest()


def directory_hash(files: Mapping[str, bytes]) -> str:
    """What :func:`bundle_hash` answers for a directory holding exactly ``files`` (relative POSIX path -> bytes)
    and nothing else: a file under a ``node_modules`` folder is skipped there, so it is here too."""
    return hash_files({rel: data for rel, data in files.items() if not _SKIPPED_DIRS.intersection(rel.split("/")[:-1])})


def bundle_hash(directory: Path) -> str:
    """sha256 hex over every file of the bundle directory (original-core §4.4).

    Raises:
        BundleError: ``bundle/invalid`` for a missing directory or a symlink inside it.
    """
    return hash_files(bundle_files(directory))
