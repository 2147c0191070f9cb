"""Proof-lane records: root-level JSON files bound to the bundle hash (original-core §8).

A record lives at the bundle's root under one of :data:`anvil.bundle.hash.DERIVED_RECORD_FILES`, so
writing it does not change the hash it carries. It is written atomically (a temporary file renamed
over the old record) as pretty JSON with sorted-free, declaration-ordered keys and a final newline,
so two runs differ only where their content (timestamps) differs.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from anvil._types import JSONObject
from anvil.bundle.hash import DERIVED_RECORD_FILES, bundle_hash
from anvil.errors import BundleError

__all__ = ["read_record", "record_fresh", "utc_now", "write_record"]


def utc_now() -> str:
    """The current time as ISO-8601 UTC with millisecond precision (``2026-01-01T00:00:00.000Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _path(directory: Path, name: str) -> Path:
    if name not in DERIVED_RECORD_FILES:
        raise BundleError("bundle/invalid", f"{name} is not a proof-lane record file")
    return directory / name


def write_record(directory: Path, name: str, record: JSONObject) -> Path:
    """Write ``record`` as ``<directory>/<name>`` atomically and return its path.

    Raises:
        BundleError: ``bundle/invalid`` when ``name`` is not a record file or the directory cannot be
            written.
    """
    target = _path(directory, name)
    text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise BundleError("bundle/invalid", f"cannot write {target}: {exc.strerror or exc}") from exc
    return target


def read_record(directory: Path, name: str) -> JSONObject | None:
    """The record ``<directory>/<name>``, or None when it is missing or not a JSON object.

    Raises:
        BundleError: ``bundle/invalid`` when ``name`` is not a record file.
    """
    try:
        data = json.loads(_path(directory, name).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def record_fresh(directory: Path, record: JSONObject) -> bool:
    """True when ``record`` carries the bundle's current hash (``bundleHash``).

    Raises:
        BundleError: the bundle directory cannot be hashed.
    """
    return record.get("bundleHash") == bundle_hash(directory)
