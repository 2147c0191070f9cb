"""The static half of conformance: every surface names the same operations, and the skill tells the truth.

``surface-agreement`` compares, per approved operation, the (command, tool) pair each surface
states: the live MCP ``tools/list`` of the served bundle, ``tools.json``, the runtime manifest, the
CLI catalog (``catalog.json``) and the skill reference. Each surface is compared with the live MCP
surface, and the live surface with AIR, so a divergence always names the two sides that disagree.
``skill-claim`` compares each operation's ``- Semantics:`` flags and ``- Undo:`` line with its AIR
posture.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anvil._types import JSONObject
from anvil.air.model import Document, Operation
from anvil.proof.skill import SkillReference

__all__ = ["Divergence", "divergence", "skill_claim_check", "surface_agreement_check", "surface_views"]

Divergence = JSONObject
#: surface -> AIR id -> {"tool": ..., "cli": ...}; None when the surface cannot be read.
Views = dict[str, dict[str, dict[str, Any]] | None]


def divergence(path: str, left_surface: str, right_surface: str, left: Any, right: Any) -> Divergence:
    """One ``{path, between[2], left, right}`` divergence."""
    return {"path": path, "between": [left_surface, right_surface], "left": left, "right": right}


def _read_json(directory: Path, path: str) -> Any:
    try:
        return json.loads((directory / path).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _entries(data: Any, key: str) -> list[dict[str, Any]]:
    items = data.get(key) if isinstance(data, dict) else None
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def surface_views(
    directory: Path, doc: Document, live_tools: list[JSONObject], reference: SkillReference | None
) -> Views:
    """What each surface says about every operation it lists as callable."""
    by_tool = {op.mcp.tool_name: op for op in doc.operations}

    def from_tools(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for tool in tools:
            found = tool.get("_meta")
            meta: dict[str, Any] = found if isinstance(found, dict) else {}
            name = str(tool.get("name"))
            named = by_tool.get(name)
            op_id = str(meta.get("anvil/operation_id") or (named.id if named else f"?{name}"))
            op = doc.operation(op_id)
            out[op_id] = {"tool": name, "cli": op.cli.command if op is not None else None}
        return out

    views: Views = {"mcp": from_tools(live_tools)}
    tools = _read_json(directory, "tools.json")
    views["tools.json"] = from_tools(_entries(tools, "tools")) if isinstance(tools, dict) else None
    runtime = _read_json(directory, "runtime/operations.manifest.json")
    views["runtime-manifest"] = (
        {str(o.get("id")): {"tool": o.get("toolName"), "cli": o.get("cli")} for o in _entries(runtime, "operations")}
        if isinstance(runtime, dict)
        else None
    )
    catalog = _read_json(directory, "catalog.json")
    views["cli-catalog"] = (
        {
            str(o.get("id")): {"tool": o.get("mcpTool"), "cli": o.get("cli")}
            for o in _entries(catalog, "operations")
            if o.get("state") == "approved"
        }
        if isinstance(catalog, dict)
        else None
    )
    views["skill"] = (
        {claim.operation_id: {"tool": claim.tool, "cli": claim.cli} for claim in reference.approved}
        if reference is not None
        else None
    )
    return views


def _compare(
    name: str, view: dict[str, dict[str, Any]], other: str, expected: dict[str, dict[str, Any]]
) -> list[Divergence]:
    out: list[Divergence] = []
    for op_id in sorted(view.keys() | expected.keys()):
        mine, theirs = view.get(op_id), expected.get(op_id)
        if mine is None or theirs is None:
            out.append(divergence(op_id, name, other, mine is not None, theirs is not None))
            continue
        out += [
            divergence(f"{op_id}.{field}", name, other, mine.get(field), theirs.get(field))
            for field in ("tool", "cli")
            if mine.get(field) != theirs.get(field)
        ]
    return out


def surface_agreement_check(views: Views, doc: Document, reference: SkillReference | None) -> JSONObject:
    """The ``surface-agreement`` check over :func:`surface_views`."""
    air = {op.id: {"tool": op.mcp.tool_name, "cli": op.cli.command} for op in doc.operations if op.is_approved}
    live = views["mcp"] or {}
    divergences = _compare("mcp", live, "air", air)
    for name, view in views.items():
        if name == "mcp":
            continue
        if view is None:
            divergences.append(divergence(name, name, "mcp", None, "readable"))
            continue
        divergences += _compare(name, view, "mcp", live)
    approved_cli = {op.cli.command for op in doc.operations if op.is_approved}
    if reference is not None:
        divergences += [
            divergence(f"pending.{cli}", "skill", "air", "pending", "approved")
            for cli in reference.pending
            if cli in approved_cli
        ]
    surfaces = list(views)
    if divergences:
        return {
            "id": "surface-agreement",
            "surfaces": surfaces,
            "status": "fail",
            "detail": f"{len(divergences)} divergence(s) between the surfaces' operation lists",
            "divergences": divergences,
        }
    return {
        "id": "surface-agreement",
        "surfaces": surfaces,
        "status": "pass",
        "detail": f"{len(air)} operation(s): ids, commands and tool names agree on {', '.join(surfaces)} and AIR",
    }


def _posture(op: Operation) -> dict[str, bool]:
    return {
        "confirm-required": op.confirmation.required,
        "idempotency-key-required": op.idempotency.mode == "required",
        "retry-safe": op.retries.mode == "safe",
        "undo": op.effect.kind == "mutation" and op.effect.declares_contract,
    }


def skill_claim_check(op: Operation, reference: SkillReference | None) -> JSONObject:
    """The ``skill-claim`` check of one operation: the reference's flags equal its AIR posture."""
    claim = reference.claim(op.id) if reference is not None else None
    base: JSONObject = {"id": "skill-claim", "operationId": op.id, "surfaces": ["skill", "air"]}
    if claim is None:
        return {
            **base,
            "status": "fail",
            "detail": "the skill reference does not document this approved operation",
            "divergences": [divergence(f"{op.id}", "skill", "air", None, "approved")],
        }
    said = {
        "confirm-required": claim.confirm_required,
        "idempotency-key-required": claim.key_required,
        "retry-safe": claim.retry_safe,
        "undo": claim.undo is not None,
    }
    truth = _posture(op)
    divergences = [
        divergence(f"{op.id}.{flag}", "skill", "air", said[flag], truth[flag])
        for flag in truth
        if said[flag] != truth[flag]
    ]
    if divergences:
        return {
            **base,
            "status": "fail",
            "detail": "the skill's claims differ from the AIR posture",
            "divergences": divergences,
        }
    flags = [flag for flag, value in truth.items() if value] or ["no safety flags"]
    return {**base, "status": "pass", "detail": "skill claims match the posture: " + ", ".join(flags)}
