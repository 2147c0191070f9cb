"""The elements of an operation's MCP tool (original-core §5.2–§5.5), one pure function each.

The tool name, the description sentence, the published input schema (the assembled schema plus the
two reserved optional arguments of original-core §5.4, ``anvil_dry_run`` and ``anvil_projection``),
the annotations and the ``anvil/*`` ``_meta`` keys. A document's tools are assembled from them by
:class:`anvil.air.surface.ToolSurface` (which also keeps each ``outputSchema`` within the tool
budget); :mod:`anvil.air.tools` is the public face of both.

The reserved arguments never travel upstream: the gateway peels them off before execution. The
projection's description is the original's, word for word, so the tool ``anvil serve`` lists and the
surface ``disclosureCost`` measures (:mod:`anvil.air.disclosure_surface`) say the same thing.
"""

from __future__ import annotations

from typing import Any

from anvil._types import JSONObject
from anvil.air.inputs import assemble_input_schema, safety_keys
from anvil.air.model import Operation

__all__ = [
    "DRY_RUN_ARGUMENT",
    "MAX_PROJECTION_CHARS",
    "PROJECTION_ARGUMENT",
    "PROJECTION_DESCRIPTION",
    "RESERVED_ARGUMENTS",
    "operation_input_schema",
    "pagination_sentence",
    "published_input_schema",
    "tool_annotations",
    "tool_description",
    "tool_meta",
]

#: The reserved argument asking for a plan instead of a call; it never travels upstream.
DRY_RUN_ARGUMENT = "anvil_dry_run"
#: The reserved argument naming a JMESPath view of a successful answer; it never travels upstream.
PROJECTION_ARGUMENT = "anvil_projection"
#: Every reserved argument name the gateway peels off before execution.
RESERVED_ARGUMENTS: tuple[str, ...] = (DRY_RUN_ARGUMENT, PROJECTION_ARGUMENT)
#: The longest ``anvil_projection`` expression accepted (original-core §5.4).
MAX_PROJECTION_CHARS = 1000
#: The original's description of ``anvil_projection`` (also measured by ``disclosureCost``).
PROJECTION_DESCRIPTION = (
    "JMESPath expression (as in `aws --query`) applied to a successful response before it is measured "
    "against the context budget, e.g. `items[].{id: id, name: name}`. Selecting fewer fields lowers the "
    "cost per item, which raises the number of items that fit in one page. It may only narrow the "
    "response, never expand it; an invalid expression fails the call rather than returning the "
    "unprojected payload."
)

_DRY_RUN_SCHEMA: JSONObject = {
    "type": "boolean",
    "description": "Preview only: return the request plan without calling the upstream.",
}
_PROJECTION_SCHEMA: JSONObject = {
    "type": "string",
    "maxLength": MAX_PROJECTION_CHARS,
    "description": PROJECTION_DESCRIPTION,
}


def operation_input_schema(op: Operation) -> JSONObject:
    """The assembled input schema of ``op`` (original-core §1.6): the one AIR stores, else assembled.

    The compiler attaches the assembled schema to every operation, so reading it back is the fast path;
    assembling is the fallback for hand-built operations.
    """
    if op.input.schema is not None:
        return op.input.schema
    return assemble_input_schema(op)


def published_input_schema(op: Operation) -> JSONObject:
    """The tool's ``inputSchema``: the assembled schema plus the optional reserved arguments.

    ``anvil_dry_run`` (a boolean) and ``anvil_projection`` (a JMESPath expression of at most
    :data:`MAX_PROJECTION_CHARS` characters). The ``required`` list is the assembled schema's. A
    business input that already owns a reserved name keeps it (the gateway then does not offer that
    reserved argument on this tool: the business input travels upstream as declared).
    """
    base = operation_input_schema(op)
    properties: dict[str, Any] = dict(base.get("properties") or {})
    if DRY_RUN_ARGUMENT not in properties:
        properties[DRY_RUN_ARGUMENT] = dict(_DRY_RUN_SCHEMA)
    if PROJECTION_ARGUMENT not in properties:
        properties[PROJECTION_ARGUMENT] = dict(_PROJECTION_SCHEMA)
    published: JSONObject = {}
    for key, value in base.items():
        published[key] = properties if key == "properties" else value
    if "properties" not in published:
        published["properties"] = properties
    published.setdefault("type", "object")
    return published


def _confirm_argument(op: Operation) -> str:
    return safety_keys(op).confirm or "confirm"


def tool_description(op: Operation) -> str:
    """The tool description of original-core §5.3: the op's own text, then its safety posture.

    The mutation sentence keeps the original's literal article ("This is a irreversible financial
    mutation.") because clients and golden files match on it.
    """
    parts = [op.description or op.display_name]
    if op.effect.kind == "mutation":
        irreversible = "" if op.effect.reversible else "irreversible "
        parts.append(f"This is a {irreversible}{op.effect.risk} mutation.")
        if op.idempotency.mode == "required":
            parts.append("Requires an idempotency key.")
        if op.confirmation.required:
            parts.append(f"Requires {_confirm_argument(op)}=true.")
        parts.append("Retry-safe." if op.retries.mode == "safe" else "Not retry-safe.")
    else:
        parts.append("Read-only.")
    paging = pagination_sentence(op)
    if paging:
        parts.append(paging)
    if op.long_running:
        parts.append("Long-running: returns before completion; poll for status.")
    if op.archetype == "search":
        parts.append("Narrow with filters before paging.")
    return " ".join(part for part in parts if part)


def pagination_sentence(op: Operation) -> str:
    """How to page (original-core §5.3): ``Paginated (<style>): pass '<cursor>'[; items at '<items>'].``

    Empty for an operation without pagination.
    """
    paging = op.pagination
    if paging is None:
        return ""
    if not paging.cursor_param:
        return f"Paginated ({paging.style})."
    sentence = f"Paginated ({paging.style}): pass '{paging.cursor_param}'"
    if paging.items_field:
        sentence += f"; items at '{paging.items_field}'"
    return sentence + "."


def tool_annotations(op: Operation) -> JSONObject:
    """MCP tool annotations (original-core §5.5)."""
    mutation = op.effect.kind == "mutation"
    return {
        "title": op.display_name,
        "readOnlyHint": not mutation,
        "destructiveHint": mutation and not op.effect.reversible,
        "idempotentHint": op.idempotency.mode != "none",
        "openWorldHint": False,
    }


def tool_meta(op: Operation) -> JSONObject:
    """The ``anvil/*`` ``_meta`` keys of original-core §5.5 (effect contracts add theirs after these)."""
    return {
        "anvil/effect": op.effect.kind,
        "anvil/action": op.effect.action,
        "anvil/risk": op.effect.risk,
        "anvil/retry_safe": op.retries.mode == "safe",
        "anvil/retry_basis": op.retries.basis,
        "anvil/idempotency": op.idempotency.mode,
        "anvil/principal": op.auth.principal,
        "anvil/operation_id": op.id,
    }
