"""Proof-lane records: where each lane writes, and whether a record still speaks for the bundle.

Every lane writes one root-level JSON record (original-core §8) that carries ``bundleHash``; the
bundle hash skips those files (:data:`anvil.bundle.hash.DERIVED_RECORD_FILES`), so writing a record
does not change the hash it binds to, and any other byte that changes makes every record stale.

:func:`judge_record` reads one record and answers one of ``fresh`` (passed, same hash), ``stale``
(another hash), ``failed`` (same hash, did not pass), ``missing`` or ``corrupt`` (unreadable, not a
JSON object, or no 64-hex ``bundleHash``), with a reason an operator can act on. Records are
written by :func:`anvil.proof.record.write_record`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from anvil.bundle.hash import bundle_hash

__all__ = [
    "LANES",
    "RECORD_FILES",
    "RecordState",
    "RecordVerdict",
    "judge_record",
    "judge_records",
    "render_checks",
    "timestamp",
]

RecordState = Literal["fresh", "stale", "failed", "missing", "corrupt"]

#: lane -> root-level record file (original-core §8). The four lanes the write gate needs.
RECORD_FILES: Final[dict[str, str]] = {
    "certify": "certification.json",
    "selftest": "selftest.report.json",
    "conformance": "conformance.report.json",
    "simulate": "simulation.report.json",
}
#: The lanes, in the order a release needs them.
LANES: Final[tuple[str, ...]] = tuple(RECORD_FILES)
_HEX64: Final = re.compile(r"^[0-9a-f]{64}$")
_MAX_RECORD_BYTES: Final = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordVerdict:
    """What one record says about the bundle as it is now."""

    lane: str
    file: str
    state: RecordState
    reason: str
    recorded_hash: str | None = None
    recorded_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The verdict as a JSON object (keys stable: they appear in ``anvil status --json``)."""
        return {
            "lane": self.lane,
            "file": self.file,
            "state": self.state,
            "reason": self.reason,
            "recordedHash": self.recorded_hash,
            "recordedAt": self.recorded_at,
        }


def _passed(lane: str, record: Mapping[str, Any]) -> bool:
    """The pass rule of each lane (original-core §8), read back from its own record."""
    if lane == "certify":
        return record.get("status") == "passed"
    if lane == "simulate":
        summary = record.get("summary")
        return isinstance(summary, dict) and summary.get("ok") is True
    summary = record.get("summary")
    if not isinstance(summary, dict):
        return False
    passes, fails = summary.get("pass"), summary.get("fail")
    return isinstance(passes, int) and isinstance(fails, int) and fails == 0 and passes >= 1


def _stamp(record: Mapping[str, Any]) -> str | None:
    for key in ("certifiedAt", "startedAt", "simulatedAt"):
        value = record.get(key)
        if isinstance(value, str):
            return value
    return None


def judge_record(directory: Path, lane: str, *, current_hash: str | None = None) -> RecordVerdict:
    """Judge the record ``lane`` wrote in ``directory`` against the bundle's current hash.

    Args:
        directory: The bundle directory.
        lane: One of :data:`LANES`.
        current_hash: The bundle hash now (computed when omitted).

    Raises:
        KeyError: ``lane`` is not a lane.
        BundleError: ``bundle/invalid`` when ``current_hash`` is omitted and the directory cannot be hashed.
    """
    name = RECORD_FILES[lane]
    path = directory / name
    now = current_hash if current_hash is not None else bundle_hash(directory)
    if not path.is_file():
        return RecordVerdict(lane=lane, file=name, state="missing", reason=f"no {name}: run `anvil {lane}`")
    try:
        if path.is_symlink() or path.stat().st_size > _MAX_RECORD_BYTES:
            raise ValueError("not a regular record file")
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return RecordVerdict(lane=lane, file=name, state="corrupt", reason=f"{name} is not readable JSON")
    recorded = record.get("bundleHash") if isinstance(record, dict) else None
    if not isinstance(record, dict) or not isinstance(recorded, str) or not _HEX64.match(recorded):
        return RecordVerdict(lane=lane, file=name, state="corrupt", reason=f"{name} carries no bundleHash")
    at = _stamp(record)
    if recorded != now:
        reason = f"{lane} evidence is stale: recorded for {recorded[:12]}… but the bundle now hashes to {now[:12]}…"
        return RecordVerdict(lane=lane, file=name, state="stale", reason=reason, recorded_hash=recorded, recorded_at=at)
    if not _passed(lane, record):
        reason = f"{lane} ran on this bundle and did not pass"
        return RecordVerdict(
            lane=lane, file=name, state="failed", reason=reason, recorded_hash=recorded, recorded_at=at
        )
    reason = f"{lane} passed for this bundle"
    return RecordVerdict(lane=lane, file=name, state="fresh", reason=reason, recorded_hash=recorded, recorded_at=at)


def judge_records(directory: Path, *, current_hash: str | None = None) -> dict[str, RecordVerdict]:
    """:func:`judge_record` for every lane, keyed by lane.

    Raises:
        BundleError: ``bundle/invalid`` when the directory cannot be hashed.
    """
    now = current_hash if current_hash is not None else bundle_hash(directory)
    return {lane: judge_record(directory, lane, current_hash=now) for lane in LANES}


def timestamp(clock: Callable[[], datetime] | None = None) -> str:
    """An ISO-8601 UTC timestamp with millisecond precision (``2026-01-01T00:00:00.000Z``)."""
    moment = (clock or (lambda: datetime.now(UTC)))()
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def render_checks(title: str, checks: list[dict[str, Any]], *, passed: bool, summary: str) -> str:
    """A lane's human summary: one line per check, then ``PASSED — <summary>`` or ``FAILED — <summary>``.

    A failed check shows its detail and, for conformance, each divergence (path, both sides).
    """
    marks = {"passed": "ok  ", "pass": "ok  ", "failed": "FAIL", "fail": "FAIL", "skipped": "skip"}
    lines = [title]
    for check in checks:
        status = str(check.get("status"))
        where = f" [{check['operationId']}]" if check.get("operationId") else ""
        lines.append(f"  {marks.get(status, status):4} {check.get('id')}{where}: {check.get('detail', '')}")
        for divergence in check.get("divergences") or ():
            left, right = divergence.get("between", ["?", "?"])
            lines.append(
                f"         {divergence.get('path')}: {left}={json.dumps(divergence.get('left'))} "
                f"but {right}={json.dumps(divergence.get('right'))}"
            )
    lines.append(("PASSED — " if passed else "FAILED — ") + summary)
    return "\n".join(lines)
