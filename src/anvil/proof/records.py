"""Proof-lane records: where each lane writes, and whether a record still speaks for the bundle.

Every lane writes one root-level JSON record (original-core §8) that carries ``bundleHash``; the
bundle hash skips those files (:data:`anvil.bundle.hash.DERIVED_RECORD_FILES`), so writing a record
does not change the hash it binds to, and any other byte that changes makes every record stale.

:func:`judge_record` reads one record and answers one of ``fresh`` (passed, same hash), ``stale``
(another hash), ``failed`` (same hash, did not pass), ``incomplete`` (same hash, but the run covered
only part of the bundle: a subset of operations, or stopped by a signal or a time cap; never fresh,
whatever its checks say), ``skipped`` (same hash, and the bundle approves no operation: the record's
``nothingToProve`` marker, :func:`anvil.proof.scope.nothing_to_prove_marker`; nothing passed and
nothing failed, so it is neither fresh nor failed, and its ``passed``/``ok`` stay false for readers
that know no marker), ``missing`` or ``corrupt``, with a reason an operator can act on. The
verdict is recomputed from the record's own evidence (its checks, cells and mutants) with the lane's
pass rule; the record's verdict fields (``status``, ``passed``, the
``summary`` counts) are only compared with that recount. A record is ``corrupt`` when it is
unreadable, not a JSON object, carries no 64-hex ``bundleHash``, or says anything its evidence does
not: a failing record edited to say it passed is corrupt, never fresh. Records are written by
:func:`anvil.proof.record.write_record`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

from anvil._dataclass import dataclass
from anvil.air.canonical import hash_canonical
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

RecordState = Literal["fresh", "stale", "failed", "incomplete", "skipped", "missing", "corrupt"]

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


class _Inconsistent(Exception):
    """The record says something its own evidence does not (the message says what)."""


def _counted(record: Mapping[str, Any], statuses: tuple[str, ...]) -> tuple[list[Mapping[str, Any]], dict[str, int]]:
    """The record's checks and their count per status; every check needs a string id and a known status."""
    checks = record.get("checks")
    if not isinstance(checks, list):
        raise _Inconsistent("it lists no checks")
    for check in checks:
        if not isinstance(check, dict) or not isinstance(check.get("id"), str):
            raise _Inconsistent("a check has no id")
        if check.get("status") not in statuses:
            raise _Inconsistent(f"check {check['id']} has the unknown status {check.get('status')!r}")
    return checks, {status: sum(1 for check in checks if check["status"] == status) for status in statuses}


def _agrees(said: Any, counted: Mapping[str, Any], where: str) -> None:
    """``said`` must be an object holding exactly the recounted values (``True`` is not ``1``)."""
    same = isinstance(said, dict) and set(said) == set(counted)
    if same:
        same = all(type(said[key]) is type(value) and said[key] == value for key, value in counted.items())
    if not same:
        shown = ", ".join(f"{key} {value}" for key, value in counted.items())
        raise _Inconsistent(f"its {where} disagrees with its evidence, which counts {shown}")


def _certify(record: Mapping[str, Any]) -> bool:
    checks, counts = _counted(record, ("passed", "failed"))
    passed = bool(checks) and counts["failed"] == 0
    status = "passed" if passed else "failed"
    if record.get("status") != status:
        raise _Inconsistent(f"its status says {record.get('status')!r} but its checks say {status!r}")
    assurance = record.get("assurance")
    attestation = assurance.get("attestation") if isinstance(assurance, dict) else None
    if not isinstance(assurance, dict) or not isinstance(attestation, dict):
        raise _Inconsistent("it carries no assurance attestation")
    if assurance.get("engineStatus") != ("static_passed" if passed else "failed"):
        raise _Inconsistent(f"its engineStatus {assurance.get('engineStatus')!r} disagrees with its checks")
    # The digest the lane wrote over its verdict and checks, recomputed: a check edited or dropped shows here.
    content = {"bundleHash": record.get("bundleHash"), "status": status, "checks": checks, **attestation}
    if assurance.get("recordDigest") != hash_canonical(content):
        raise _Inconsistent("its recordDigest is not the digest of its content")
    return passed


def _selftest(record: Mapping[str, Any]) -> bool:
    _, counts = _counted(record, ("pass", "fail", "skipped"))
    _agrees(record.get("summary"), counts, "summary")
    passed = counts["fail"] == 0 and counts["pass"] >= 1
    said = record.get("passed")
    if not isinstance(said, bool) or said != passed:
        raise _Inconsistent(f"it says passed {said!r} but its checks say {passed}")
    return passed


def _conformance(record: Mapping[str, Any]) -> bool:
    _, counts = _counted(record, ("pass", "fail", "skipped"))
    _agrees(record.get("summary"), counts, "summary")
    return counts["fail"] == 0 and counts["pass"] >= 1


def _simulate(record: Mapping[str, Any]) -> bool:
    coverage, mutation = record.get("coverage"), record.get("mutation")
    if not isinstance(coverage, dict) or not isinstance(mutation, dict):
        raise _Inconsistent("it carries no coverage or mutation section")
    cells, mutants = coverage.get("cells"), mutation.get("mutants")
    if not isinstance(cells, list) or not all(isinstance(c, dict) and isinstance(c.get("ok"), bool) for c in cells):
        raise _Inconsistent("a coverage cell has no boolean ok")
    if not isinstance(mutants, list) or not all(
        isinstance(m, dict) and isinstance(m.get("applicable"), bool) and isinstance(m.get("killed"), bool)
        for m in mutants
    ):
        raise _Inconsistent("a mutant has no boolean applicable or killed")
    passed = sum(1 for cell in cells if cell["ok"])
    applicable = [mutant for mutant in mutants if mutant["applicable"]]
    killed = sum(1 for mutant in applicable if mutant["killed"])
    operations = len({cell.get("operationId") for cell in cells})
    counted = {"operations": operations, "cells": len(cells), "passed": passed, "failed": len(cells) - passed}
    _agrees(coverage.get("summary"), counted, "coverage summary")
    dimensions = coverage.get("dimensions")
    if not isinstance(dimensions, list) or not all(isinstance(d, dict) for d in dimensions):
        raise _Inconsistent("it carries no coverage dimensions")
    for dimension in dimensions:
        mine = [cell for cell in cells if cell.get("dimension") == dimension.get("dimension")]
        said = {key: dimension.get(key) for key in ("operations", "cells", "passed")}
        recount = {
            "operations": len({cell.get("operationId") for cell in mine}),
            "cells": len(mine),
            "passed": sum(1 for cell in mine if cell["ok"]),
        }
        _agrees(said, recount, f"{dimension.get('dimension')} dimension")
    _agrees(
        {key: mutation.get(key) for key in ("applicable", "killed")},
        {"applicable": len(applicable), "killed": killed},
        "mutation count",
    )
    ok = bool(cells) and passed == len(cells) and killed == len(applicable)
    summary = {
        "coverageCells": len(cells),
        "coveragePassed": passed,
        "mutantsKilled": killed,
        "mutantsApplicable": len(applicable),
        "ok": ok,
    }
    _agrees(record.get("summary"), summary, "summary")
    return ok


#: lane -> its pass rule (original-core §8), recomputed from the record's evidence.
_RULES: Final[dict[str, Callable[[Mapping[str, Any]], bool]]] = {
    "certify": _certify,
    "selftest": _selftest,
    "conformance": _conformance,
    "simulate": _simulate,
}


def _proved_something(record: Mapping[str, Any]) -> bool:
    """True when the record holds evidence either way: a check that passed or failed, a cell, a live mutant."""
    checks = record.get("checks")
    if isinstance(checks, list) and any(
        isinstance(c, dict) and c.get("status") in ("pass", "fail", "passed", "failed") for c in checks
    ):
        return True
    coverage, mutation = record.get("coverage"), record.get("mutation")
    if isinstance(coverage, dict) and coverage.get("cells"):
        return True
    mutants = mutation.get("mutants") if isinstance(mutation, dict) else None
    return isinstance(mutants, list) and any(isinstance(m, dict) and m.get("applicable") for m in mutants)


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
    try:
        passed = _RULES[lane](record)
    except _Inconsistent as exc:
        reason = f"{name} is inconsistent: {exc}; rerun `anvil {lane}`"
        return RecordVerdict(lane=lane, file=name, state="corrupt", reason=reason, recorded_hash=recorded)
    incomplete = record.get("incomplete")
    if incomplete is not None and (not isinstance(incomplete, dict) or not isinstance(incomplete.get("reason"), str)):
        reason = f"{name} is inconsistent: its incomplete marker has no reason; rerun `anvil {lane}`"
        return RecordVerdict(lane=lane, file=name, state="corrupt", reason=reason, recorded_hash=recorded)
    vacant = record.get("nothingToProve")
    if vacant is not None and (
        not isinstance(vacant, dict) or not isinstance(vacant.get("reason"), str) or _proved_something(record)
    ):
        reason = f"{name} is inconsistent: its nothingToProve marker disagrees with its evidence; rerun `anvil {lane}`"
        return RecordVerdict(lane=lane, file=name, state="corrupt", reason=reason, recorded_hash=recorded)
    at = _stamp(record)
    if recorded != now:
        reason = f"{lane} evidence is stale: recorded for {recorded[:12]}… but the bundle now hashes to {now[:12]}…"
        return RecordVerdict(lane=lane, file=name, state="stale", reason=reason, recorded_hash=recorded, recorded_at=at)
    if isinstance(incomplete, dict):
        reason = f"{lane} covered only part of this bundle ({incomplete['reason']}): run `anvil {lane}` on all of it"
        return RecordVerdict(
            lane=lane, file=name, state="incomplete", reason=reason, recorded_hash=recorded, recorded_at=at
        )
    if isinstance(vacant, dict):
        reason = f"{lane}: {vacant['reason']}"
        return RecordVerdict(
            lane=lane, file=name, state="skipped", reason=reason, recorded_hash=recorded, recorded_at=at
        )
    if not passed:
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
