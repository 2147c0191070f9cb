"""What a failed lane record says blocks one write: its own failures first, then the rest by count.

The write gate is bundle-level (a lane that did not pass blocks every write), but ``anvil status``
names precisely why: :func:`lane_failures` reads a failed record's own evidence (certify's failing
checks, selftest's and conformance's failing checks with their operation, simulate's failing cells
and surviving mutants) and :func:`write_blockers` orders them for one write: the failures that concern
that operation, then those that concern the whole bundle, then one line counting the failures on
other operations with the first few named. A tool over the disclosure budget carries both levers,
said once per write: the smallest ``disclosure.tool_budget_tokens`` that fits, and the capabilities
whose review could waive it (``allow_large`` with a note). Sizes are bounded (:data:`MAX_OWN`, :data:`MAX_OTHERS`,
:data:`MAX_DETAIL`). Only records :func:`anvil.proof.records.judge_record` judged ``failed`` are
read, so their shape has already been checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from anvil._dataclass import dataclass
from anvil.proof.disclosure import budget_lever
from anvil.proof.records import RECORD_FILES

__all__ = ["BUDGET_CHECK", "MAX_DETAIL", "MAX_OTHERS", "MAX_OWN", "LaneFailure", "lane_failures", "write_blockers"]

#: A write's own failures listed per lane; more are counted ("and N more").
MAX_OWN: Final = 5
#: Failures on other operations named in the count line.
MAX_OTHERS: Final = 3
#: Characters of a check's detail kept in a blocker.
MAX_DETAIL: Final = 160
#: The certify check and the simulate cell that judge a tool against ``disclosure.tool_budget_tokens``.
BUDGET_CHECK: Final = "contract.certification-core.static.tool_surface_within_disclosure_budget"
_BUDGET_CELL: Final = ("disclosure", "tool-surface")
_LEVER: Final = budget_lever(0).split("`", 1)[0]
_OP_ID: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*[A-Za-z0-9_]")


@dataclass(frozen=True, slots=True)
class LaneFailure:
    """One failing check, cell or mutant of a lane record.

    Attributes:
        lane: The lane that recorded it.
        operations: The operations it concerns (empty: the whole bundle).
        text: What failed, readable (``<check> on <operation>: <detail>``).
        label: A short name for the count line (``<check> on <operation>``).
        lever: What the operator can set to clear it (a tool over the budget), said on the count line too.
    """

    lane: str
    operations: frozenset[str]
    text: str
    label: str
    lever: str | None = None


def _short(detail: Any) -> str:
    text = " ".join(str(detail or "").split())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


def _named(detail: str, known: set[str]) -> frozenset[str]:
    return frozenset(token for token in _OP_ID.findall(detail) if token in known)


def _checks(lane: str, record: Mapping[str, Any], failed: str, known: set[str]) -> list[LaneFailure]:
    found = []
    for check in record.get("checks", ()):
        if check.get("status") != failed:
            continue
        op = check.get("operationId")
        detail = str(check.get("detail") or "")
        if lane == "certify":
            # Certify's checks judge the bundle; the operations they concern are named in the detail.
            ops = _named(detail, known)
            shown = detail if check["id"] == BUDGET_CHECK else _short(detail)
            named = sorted(ops)[:MAX_OTHERS]
            label = check["id"] + (f" (on {', '.join(named)}{'…' if len(ops) > len(named) else ''})" if named else "")
            lever = None
            if check["id"] == BUDGET_CHECK and _LEVER in detail:
                # The lever is said once per write (write_blockers), not once per lane.
                shown, lever = detail[: detail.index(_LEVER)].rstrip("; "), detail[detail.index(_LEVER) :]
            found.append(LaneFailure(lane, ops, f"{check['id']}: {shown}", label, lever))
            continue
        ops = frozenset({op}) if isinstance(op, str) else frozenset()
        where = f" on {op}" if isinstance(op, str) else ""
        found.append(LaneFailure(lane, ops, f"{check['id']}{where}: {_short(detail)}", f"{check['id']}{where}"))
    return found


def _simulate(record: Mapping[str, Any], capabilities: Mapping[str, str | None]) -> list[LaneFailure]:
    cells = [cell for cell in record["coverage"]["cells"] if not cell["ok"]]
    over = {
        str(cell.get("operationId")): int(cell["figure"]["tokens"])
        for cell in cells
        if (cell.get("dimension"), cell.get("variant")) == _BUDGET_CELL
        and isinstance(cell.get("figure"), dict)
        and isinstance(cell["figure"].get("tokens"), int)
    }
    # Both levers: the smallest budget that fits the failing tools, and the capabilities to waive it for.
    waive = sorted({capabilities.get(op) or op for op in over})
    found = []
    for cell in cells:
        op = str(cell.get("operationId"))
        name = f"{cell.get('dimension')}/{cell.get('variant')}"
        detail = f"expected {_short(cell.get('expected'))}, got {_short(cell.get('actual'))}"
        budget = (cell.get("dimension"), cell.get("variant")) == _BUDGET_CELL
        lever = budget_lever(max(over.values()), waive) if budget and over else None
        found.append(LaneFailure("simulate", frozenset({op}), f"{name} on {op}: {detail}", f"{name} on {op}", lever))
    for mutant in record["mutation"]["mutants"]:
        if mutant["applicable"] and not mutant["killed"]:
            op = str(mutant.get("operationId"))
            label = f"mutant {mutant.get('name')} on {op}"
            found.append(LaneFailure("simulate", frozenset({op}), f"{label} survived every cell", label))
    return found


def lane_failures(
    directory: Path, lane: str, known: Iterable[str], capabilities: Mapping[str, str | None] | None = None
) -> list[LaneFailure]:
    """The failures a ``failed`` lane record in ``directory`` holds (empty when it cannot be read).

    Args:
        directory: The bundle directory.
        lane: The lane, judged ``failed`` by :func:`anvil.proof.records.judge_record`.
        known: The bundle's operation ids (certify's details are searched for them).
        capabilities: Operation id -> its capability id, so the budget lever names the capabilities a
            per-capability waiver (``allow_large``) would cover (certify's detail names them itself).
    """
    try:
        record = json.loads((directory / RECORD_FILES[lane]).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return []
    if not isinstance(record, dict):
        return []
    if lane == "simulate":
        return _simulate(record, capabilities or {})
    return _checks(lane, record, "failed" if lane == "certify" else "fail", set(known))


def _once(lever: str | None, said: list[str]) -> str:
    """``"; <lever>"`` the first time a write's blockers meet ``lever``, else nothing."""
    if lever is None or lever in said:
        return ""
    said.append(lever)
    return f"; {lever}"


def write_blockers(operation_id: str, failures: Mapping[str, list[LaneFailure]]) -> list[str]:
    """The blockers failed lanes put on one write, its own first (``<lane> evidence is failed: …``).

    Args:
        operation_id: The write.
        failures: Per failed lane, :func:`lane_failures`.
    """
    own: list[str] = []
    bundle: list[str] = []
    others: list[str] = []
    levers: list[str] = []
    # Certify names at most a few tools over the budget; simulate's per-tool cell says whether this one is.
    cell = "/".join(_BUDGET_CELL) + " on "
    over = any(f.label.startswith(cell) and operation_id in f.operations for f in failures.get("simulate", ()))
    for lane, found in failures.items():
        head = f"{lane} evidence is failed: "
        mine = [f for f in found if operation_id in f.operations or (over and f.label.startswith(BUDGET_CHECK))]
        own += [head + f.text + _once(f.lever, levers) for f in mine[:MAX_OWN]]
        if len(mine) > MAX_OWN:
            own.append(f"{head}and {len(mine) - MAX_OWN} more failures on {operation_id}")
        bundle += [head + f.text + _once(f.lever, levers) for f in found if not f.operations]
        rest = [f for f in found if f.operations and f not in mine]
        if rest:
            named = ", ".join(f.label for f in rest[:MAX_OTHERS])
            more = f" and {len(rest) - MAX_OTHERS} more" if len(rest) > MAX_OTHERS else ""
            said = _once(next((f.lever for f in rest if f.lever), None), levers)
            others.append(f"{head}{len(rest)} failure(s) on other operations: {named}{more}{said}")
        if not found:
            others.append(f"{lane} evidence is failed: rerun `anvil {lane}` to see which checks")
    return own + bundle + others
