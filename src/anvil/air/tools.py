"""The MCP tool projection of an operation (original-core §5.2–§5.5).

One pure function per surface element: the tool name, the description sentence, the published input
schema (the assembled schema plus the reserved ``anvil_dry_run`` argument), the annotations and the
``anvil/*`` ``_meta`` keys. The bundle's ``tools.json`` and the gateway's ``tools/list`` both call
:func:`tool_definition`, so the two never drift. It is wire-shaped (``inputSchema``, ``_meta``) and
cheap: the gateway builds its tool table once at start-up.

``anvil_projection`` (the JMESPath narrowing argument of the original) is not published: nothing in
this implementation applies it yet, and advertising an argument that is silently ignored would be a
lie to the caller.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final

from anvil._types import JSONObject, JSONValue
from anvil.air.inputs import assemble_input_schema, safety_keys
from anvil.air.model import Operation
from anvil.air.schema_check import is_well_formed_schema

__all__ = [
    "DRY_RUN_ARGUMENT",
    "DRY_RUN_PLAN_DEF",
    "DRY_RUN_PLAN_SCHEMA",
    "RESERVED_ARGUMENTS",
    "OutputProjection",
    "operation_input_schema",
    "output_projection",
    "pagination_sentence",
    "published_input_schema",
    "tool_annotations",
    "tool_definition",
    "tool_description",
    "tool_meta",
]

#: The reserved argument asking for a plan instead of a call; it never travels upstream.
DRY_RUN_ARGUMENT = "anvil_dry_run"
#: Every reserved argument name the gateway peels off before execution.
RESERVED_ARGUMENTS: tuple[str, ...] = (DRY_RUN_ARGUMENT, "anvil_projection")

#: The ``$defs`` name of the dry-run plan in a published output schema (no component name has a colon).
DRY_RUN_PLAN_DEF = "anvil:dry_run_plan"
#: What a dry run answers (original-core §5.8): the request it would send, credentials redacted.
DRY_RUN_PLAN_SCHEMA: JSONObject = {
    "type": "object",
    "description": "The request plan a dry run (anvil_dry_run: true) returns instead of calling the upstream.",
    "required": ["operation", "method", "url", "headers", "idempotencyKeyPresent", "retryPlan"],
    "properties": {
        "operation": {"type": "string"},
        "method": {"type": "string"},
        "url": {"type": "string"},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "body": {},
        "idempotencyKeyPresent": {"type": "boolean"},
        "retryPlan": {"type": "object"},
        "confirmationRequired": {"type": "boolean"},
    },
}

_DRY_RUN_SCHEMA: JSONObject = {
    "type": "boolean",
    "description": "Preview only: return the request plan without calling the upstream.",
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
    """The tool's ``inputSchema``: the assembled schema plus the optional ``anvil_dry_run`` boolean.

    The ``required`` list is the assembled schema's. A business input that already owns the reserved
    name keeps it (the gateway then cannot offer a dry run for that tool, which is the safe direction).
    """
    base = operation_input_schema(op)
    properties: dict[str, Any] = dict(base.get("properties") or {})
    if DRY_RUN_ARGUMENT not in properties:
        properties[DRY_RUN_ARGUMENT] = dict(_DRY_RUN_SCHEMA)
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


# --- the output schema (MCP ``outputSchema``) ------------------------------------------------------------

_COMPONENT_REF: Final = re.compile(r"^#/components/schemas/([^/]+)$")
#: Keywords a published schema must not carry: OpenAPI-only ones, and identifiers and dynamic references
#: that would resolve against a document the caller does not have.
_DROPPED_KEYWORDS: Final = frozenset(
    {"nullable", "discriminator", "xml", "externalDocs", "$schema", "$id", "$anchor"}
    | {"$recursiveRef", "$recursiveAnchor", "$dynamicRef", "$dynamicAnchor"}
)
#: Keywords whose value maps names to schemas (the names are not keywords).
_NAME_MAPS: Final = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_MAX_OUTPUT_NODES: Final = 20_000


@dataclass(frozen=True, slots=True)
class OutputProjection:
    """An operation's published ``outputSchema`` and how its answer becomes ``structuredContent``.

    Attributes:
        schema: the self-contained JSON Schema (``$defs`` for named components, no outside ``$ref``);
            for a tool that offers ``anvil_dry_run``, the response schema or the dry-run plan (``anyOf``).
        wrap: True when the success response is not an object, so the answer is ``{"result": data}``.
    """

    schema: JSONObject
    wrap: bool


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _def_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


class _Closure:
    """Rewrites ``#/components/schemas/X`` to ``#/$defs/X`` and collects the components reached."""

    def __init__(self, components: JSONObject) -> None:
        self.components = components
        self.defs: dict[str, JSONValue] = {}
        self.nodes = 0
        self.well_formed = True

    def walk(self, node: JSONValue) -> JSONValue:
        """A JSON Schema 2020-12 copy of a source schema node (OpenAPI-only keywords dropped)."""
        self.nodes += 1
        if self.nodes > _MAX_OUTPUT_NODES:
            raise ValueError("output schema too large to publish")
        if isinstance(node, list):
            return [self.walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out: JSONObject = {}
        for key, value in node.items():
            if key in _DROPPED_KEYWORDS:
                continue
            if key == "$ref" and isinstance(value, str):
                out[key] = self.ref(value)
            elif key in _NAME_MAPS and isinstance(value, dict):
                out[key] = {name: self.walk(item) for name, item in value.items()}
            elif key == "items" and isinstance(value, list):
                out["prefixItems"] = [self.walk(item) for item in value]  # the draft-4 tuple form
            else:
                out[key] = self.walk(value)
        if node.get("nullable") is True:  # the OpenAPI 3.0 spelling of "or null"
            kind = out.get("type")
            if isinstance(kind, str):
                out["type"] = [kind, "null"]
            elif isinstance(kind, list) and "null" not in kind:
                out["type"] = [*kind, "null"]
        return out

    def ref(self, ref: str) -> str | None:
        match = _COMPONENT_REF.match(ref)
        if match is None:
            return None
        name = _unescape(match.group(1))
        target = _def_name(name)
        if target not in self.defs and name in self.components:
            self.defs[target] = {}  # placeholder first: a recursive component refers to itself
            raw = self.components[name]
            self.defs[target] = projected = self.walk(raw)
            if not _component_well_formed(raw, _drop_dangling(projected)):
                self.well_formed = False
        return f"#/$defs/{target}" if target in self.defs else None


def _drop_dangling(node: JSONValue) -> JSONValue:
    """Replace a ``$ref`` that names nothing publishable by the empty schema (anything)."""
    if isinstance(node, list):
        return [_drop_dangling(item) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node and node["$ref"] is None:
        rest = {k: _drop_dangling(v) for k, v in node.items() if k != "$ref"}
        return rest
    return {k: _drop_dangling(v) for k, v in node.items()}


def _is_object_schema(schema: JSONValue, defs: dict[str, JSONValue]) -> bool:
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 16:
        schema = defs.get(str(schema["$ref"]).rsplit("/", 1)[-1])
        seen += 1
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "object" or kind == ["object"]:
        return True
    compositors = any(k in schema for k in ("oneOf", "anyOf", "allOf", "not", "enum", "const"))
    return kind is None and not compositors and ("properties" in schema or "additionalProperties" in schema)


_DEF_CACHE_SIZE: Final = 8192
#: id(raw component) -> (the raw component, whether its projection is well formed). Holding the raw
#: object keeps its id from being reused while the entry lives; components are treated as immutable.
_DEF_VALIDITY: OrderedDict[int, tuple[JSONValue, bool]] = OrderedDict()


def _well_formed(schema: JSONValue) -> bool:
    """True when ``schema`` is a well-formed JSON Schema (its ``$defs`` are checked separately)."""
    return is_well_formed_schema(schema)


def _component_well_formed(raw: JSONValue, projected: JSONValue) -> bool:
    entry = _DEF_VALIDITY.get(id(raw))
    if entry is not None and entry[0] is raw:
        _DEF_VALIDITY.move_to_end(id(raw))
        return entry[1]
    ok = _well_formed(projected)
    _DEF_VALIDITY[id(raw)] = (raw, ok)
    while len(_DEF_VALIDITY) > _DEF_CACHE_SIZE:
        _DEF_VALIDITY.popitem(last=False)
    return ok


def output_projection(op: Operation, components: JSONObject | None = None) -> OutputProjection | None:
    """The ``outputSchema`` of ``op``'s success response, or None when it declares no schema.

    Named components (``#/components/schemas/X``, resolved against the document's ``schemas``) become
    ``$defs`` so recursion survives; any other reference is dropped to the empty schema, so the
    published schema never points outside itself. An object response is published as is; anything
    else is wrapped as ``{"result": <schema>}`` (MCP requires ``structuredContent`` to be an object).
    """
    raw = op.output.schema
    if not isinstance(raw, dict) or not raw:
        return None
    closure = _Closure(components or {})
    try:
        body = _drop_dangling(closure.walk(raw))
        defs = {name: _drop_dangling(value) for name, value in closure.defs.items()}
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict):
        return None
    own_defs = body.pop("$defs", None)
    if isinstance(own_defs, dict):  # a schema already self-contained keeps its definitions at the root
        defs = {**own_defs, **defs}
    body.pop("$schema", None)
    wrap = not _is_object_schema(body, defs)
    schema: JSONObject
    if wrap:
        schema = {"type": "object", "properties": {"result": body}, "required": ["result"]}
    elif "$ref" in body:
        schema = {"allOf": [body]}
    else:
        schema = dict(body)
    if defs:
        schema["$defs"] = defs
    if wrap or "type" not in schema:
        schema = {"type": "object", **schema}
    if DRY_RUN_ARGUMENT not in (operation_input_schema(op).get("properties") or {}):
        # ``anvil_dry_run`` answers with the request plan instead of the response: say so, or a stock
        # client would refuse every dry run of a tool that publishes an output schema.
        defs = schema.pop("$defs", {})
        schema = {
            "type": "object",
            "anyOf": [schema, {"$ref": f"#/$defs/{DRY_RUN_PLAN_DEF}"}],
            "$defs": {**defs, DRY_RUN_PLAN_DEF: DRY_RUN_PLAN_SCHEMA},
        }
    if not (closure.well_formed and _well_formed(schema)):
        return None  # a source schema that is not valid JSON Schema: publish none rather than a broken one
    return OutputProjection(schema=schema, wrap=wrap)


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


def tool_definition(op: Operation, components: JSONObject | None = None) -> JSONObject:
    """The ``tools/list`` entry for ``op``: name, title, description, inputSchema, outputSchema, annotations, _meta.

    ``outputSchema`` is present when the success response declares a schema (see
    :func:`output_projection`; ``components`` are the document's ``schemas``). Pure and deterministic;
    approval is the caller's business (only approved operations are tools).
    """
    definition: JSONObject = {
        "name": op.mcp.tool_name,
        "title": op.display_name,
        "description": tool_description(op),
        "inputSchema": published_input_schema(op),
    }
    output = output_projection(op, components)
    if output is not None:
        definition["outputSchema"] = output.schema
    definition["annotations"] = tool_annotations(op)
    definition["_meta"] = tool_meta(op)
    return definition
