"""Public inputs of an operation: safety keys, wire bindings and the assembled input schema (§1.6).

Shared by the compiler (schema assembly), the runtime (request building) and the gateway (tool
schemas). The assembled schema is self-contained JSON Schema 2020-12: any ``$ref`` in it points at
``#/$defs/<Name>`` of the schema's own root, so it can be published and validated as it stands.

The idempotency carrier (a header/query/path param or a body field holding the key) is never a
business input: the caller supplies the key through the idempotency safety input, and the executor
writes it to the carrier coordinate (:func:`anvil.air.carrier.resolve_carrier`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any, Final, Literal

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.carrier import CarrierBinding, resolve_carrier
from anvil.air.enums import KEYED_MODES
from anvil.air.model import Operation
from anvil.air.naming import kebab, prop_key

__all__ = [
    "BODY_PROPERTY",
    "CLI_CONTROL_FLAGS",
    "JSON_SCHEMA_DIALECT",
    "PORTABLE_KEY_SCHEMA",
    "InputBinding",
    "SafetyKeys",
    "assemble_input_schema",
    "cli_flags",
    "idempotency_key_required",
    "idempotency_key_schema",
    "input_bindings",
    "key_posture",
    "safety_keys",
]

JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
#: The property that carries a whole (unprojected) request body.
BODY_PROPERTY: Final = "body"
#: The portable idempotency key contract: 1-255 visible ASCII characters, no spaces.
PORTABLE_KEY_SCHEMA: Final[JSONObject] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "pattern": r"^[\u0021-\u007E]+$",
}
_NON_MATERIAL: Final = frozenset(
    {"type", "title", "description", "default", "example", "examples", "deprecated", "readOnly", "writeOnly"}
    | {"$comment", "nullable"}
)
#: The words ``anvil run`` reads as its own flags: a business input named like one is ``--input-<name>``.
#: (The read-only views, ``--schema`` and the like, stay business flags when given a value.)
CLI_CONTROL_FLAGS: Final = frozenset(
    {"confirm", "idempotency-key", "dry-run", "json", "trace", "no-retries", "stage", "validate-input"}
    | {"auth-profile", "base-url", "timeout", "mcp", "mcp-token-env", "input", "projection"}
)
_WHOLE_BODY_SENTENCE: Final = (
    "The request body. Provide the full object; its structure is preserved from the source schema."
)
_CONFIRM_SENTENCE: Final = "Set to true to confirm this operation."
_KEY_REQUIRED: Final = (
    "Idempotency key (required): 1-255 visible ASCII characters, no spaces. "
    "Reuse the same key only to retry the same request."
)
_KEY_OPTIONAL: Final = (
    "Idempotency key (optional; a fingerprint key is derived when omitted): 1-255 visible ASCII "
    "characters, no spaces. Reuse the same key only to retry the same request."
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SafetyKeys:
    """Names of the caller-owned safety inputs: ``idempotency`` (``idempotency_key`` or its
    ``anvil_idempotency_key[_n]`` variant) when mode is required/key_supported, ``confirm`` (or
    ``anvil_confirm[_n]``) when confirmation is required; None when the op has no such input."""

    idempotency: str | None = None
    confirm: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InputBinding:
    """One business input: public property name -> wire coordinate.

    ``location`` is ``path|query|header|cookie`` for params, ``body_field`` for a projected body field
    or a legacy ``in: body`` param (``wire_name`` is the top-level body key), ``body`` for the whole
    body (``property`` is ``body``). ``schema`` is the wire schema (for the whole body: with the
    idempotency carrier field removed); ``$ref`` in it points at the ``$defs`` of that schema.
    """

    property: str
    location: Literal["path", "query", "header", "cookie", "body_field", "body"]
    wire_name: str
    required: bool
    schema: JSONObject


@dataclass(frozen=True, slots=True)
class _Source:
    """One business input plus the presentation facts the schema needs."""

    binding: InputBinding
    description: str | None
    aliases: tuple[str, ...] | None
    example: Any
    has_example: bool


def _carrier(op: Operation) -> CarrierBinding | None:
    return resolve_carrier(op).binding if op.idempotency.mode in KEYED_MODES else None


def _sources(op: Operation, carrier: CarrierBinding | None) -> Iterator[_Source]:
    for param in op.input.params:
        if carrier is not None and _is_carrier_param(param.in_, param.name, carrier):
            continue
        location: Any = "body_field" if param.in_ == "body" else param.in_
        binding = InputBinding(
            property=prop_key(param.agent_name or param.name),
            location=location,
            wire_name=param.name,
            required=param.required or param.in_ == "path",
            schema=param.schema,
        )
        yield _Source(binding, param.description, param.aliases, param.example, param.example is not None)
    body = op.input.body
    if body is None:
        return
    if body.projection == "fields":
        for item in body.fields:
            if carrier is not None and carrier.mechanism == "body" and carrier.pointer == (item.name,):
                continue
            binding = InputBinding(
                property=prop_key(item.agent_name or item.name),
                location="body_field",
                wire_name=item.name,
                required=item.required,
                schema=item.schema,
            )
            yield _Source(binding, item.description, item.aliases, None, False)
        return
    schema = body.schema
    if carrier is not None and carrier.mechanism == "body" and carrier.pointer:
        schema = _without_field(schema, carrier.pointer)
    binding = InputBinding(
        property=BODY_PROPERTY, location="body", wire_name=BODY_PROPERTY, required=body.required, schema=schema
    )
    yield _Source(binding, None, None, None, False)


def _is_carrier_param(location: str, name: str, carrier: CarrierBinding) -> bool:
    if carrier.mechanism == "header":
        return location == "header" and name.lower() == carrier.key.lower()
    if carrier.mechanism in ("query", "path"):
        return location == carrier.mechanism and name == carrier.key
    return location == "body" and carrier.pointer == (name,)


#: The bindings worked out per operation object (operations are immutable): a compile asks for the same
#: operation's about a dozen times (its schema, safety keys, catalog, reference). Kept with the operation,
#: so an id is never taken for another's; cleared when full (a bound for a long-lived server).
_BINDINGS: dict[int, tuple[Operation, tuple[InputBinding, ...]]] = {}
_BINDINGS_KEPT: Final = 4096


def input_bindings(op: Operation) -> tuple[InputBinding, ...]:
    """Business inputs of ``op`` in schema order (params, then body fields or ``body``).

    The idempotency carrier param/field is not a business input and is left out. When two wire inputs
    map to one public property every binding is still listed (validation blocks such an operation).
    """
    known = _BINDINGS.get(id(op))
    if known is not None and known[0] is op:
        return known[1]
    bindings = tuple(source.binding for source in _sources(op, _carrier(op)))
    if len(_BINDINGS) >= _BINDINGS_KEPT:
        _BINDINGS.clear()
    _BINDINGS[id(op)] = (op, bindings)
    return bindings


def _free_name(preferred: str, fallback: str, taken: set[str]) -> str:
    if preferred not in taken:
        return preferred
    if fallback not in taken:
        return fallback
    index = 2
    while f"{fallback}_{index}" in taken:
        index += 1
    return f"{fallback}_{index}"


def safety_keys(op: Operation) -> SafetyKeys:
    """The safety input names of ``op`` (deterministic; avoids business input names)."""
    taken = {binding.property for binding in input_bindings(op)}
    idempotency = None
    if op.idempotency.mode in KEYED_MODES:
        idempotency = _free_name("idempotency_key", "anvil_idempotency_key", taken)
        taken.add(idempotency)
    confirm = _free_name("confirm", "anvil_confirm", taken) if op.confirmation.required else None
    return SafetyKeys(idempotency=idempotency, confirm=confirm)


def idempotency_key_required(op: Operation) -> bool:
    """True when the caller must supply the key (mode required, derivation not request_fingerprint)."""
    idem = op.idempotency
    return idem.mode == "required" and idem.key_derivation != "request_fingerprint"


def key_posture(op: Operation) -> JSONObject:
    """The operation's idempotency posture (original-ledger §1.15), one answer for every report.

    ``anvil deploy ledger`` prints it as each write's ``idempotency`` and ``anvil status`` as each
    write's ``idempotency``, so the two never disagree on whether a caller must (``explicitKeyRequired``)
    or should (``explicitKeyRecommended``) send a key.
    """
    idem = op.idempotency
    return {
        "mode": idem.mode,
        "mechanism": idem.mechanism,
        "key": idem.key,
        "keyDerivation": idem.key_derivation,
        "explicitKeyRequired": idempotency_key_required(op),
        "explicitKeyRecommended": idem.mode in ("required", "key_supported"),
    }


def idempotency_key_schema(op: Operation, carrier: CarrierBinding | None = None) -> JSONObject:
    """The key property's schema: the portable contract, joined with a constraining carrier schema."""
    if carrier is None:
        carrier = _carrier(op)
    portable = dict(PORTABLE_KEY_SCHEMA)
    schema: JSONObject
    carrier_schema = carrier.schema if carrier is not None else None
    if carrier_schema and any(k not in _NON_MATERIAL and not k.startswith("x-") for k in carrier_schema):
        material = {k: v for k, v in carrier_schema.items() if k != "$defs"}
        schema = {"allOf": [material, portable]}
    else:
        schema = portable
    schema["description"] = _KEY_REQUIRED if idempotency_key_required(op) else _KEY_OPTIONAL
    return schema


def assemble_input_schema(op: Operation, *, later_wins: bool = False) -> JSONObject:
    """The assembled input schema of original-core §1.6 (what ``op.input.schema`` stores).

    Property order: params (minus the idempotency carrier), body fields or ``body``, the idempotency
    key, then confirm. Nested ``$defs`` of the wire schemas are hoisted to the root.

    Two inputs published under one name block the operation (``duplicate_agent_input_name``); the
    first one's property is kept. ``later_wins`` assembles as the original does instead (the later
    input's schema in the first one's place, the name listed in ``required`` once per required input),
    which is what its disclosure figures measure.
    """
    carrier = _carrier(op)
    defs: dict[str, Any] = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for source in _sources(op, carrier):
        name = source.binding.property
        if name in properties and not later_wins:
            continue  # duplicate_agent_input_name blocks the operation; keep the first
        properties[name] = _property(source, defs)
        if source.binding.required:
            required.append(name)
    keys = safety_keys(op)
    if keys.idempotency is not None:
        key_schema = idempotency_key_schema(op, carrier)
        if carrier is not None and carrier.schema is not None:
            _hoist(carrier.schema, defs)
        properties[keys.idempotency] = key_schema
        if idempotency_key_required(op):
            required.append(keys.idempotency)
    if keys.confirm is not None:
        properties[keys.confirm] = {
            "type": "boolean",
            "const": True,
            "description": op.confirmation.reason or _CONFIRM_SENTENCE,
        }
        required.append(keys.confirm)
    schema: JSONObject = {
        "$schema": JSON_SCHEMA_DIALECT,
        "type": "object",
        "title": op.canonical_name,
        "description": op.description or op.display_name,
        "additionalProperties": False,
        "properties": properties,
        "required": required,
    }
    if defs:
        schema["$defs"] = {name: defs[name] for name in sorted(defs)}
    return schema


def _hoist(schema: JSONObject, defs: dict[str, Any]) -> JSONObject:
    """``schema`` without its ``$defs``, which are merged into ``defs`` (one name = one definition)."""
    nested = schema.get("$defs")
    if not isinstance(nested, dict):
        return schema
    for name, value in nested.items():
        defs.setdefault(name, value)
    return {k: v for k, v in schema.items() if k != "$defs"}


def _property(source: _Source, defs: dict[str, Any]) -> JSONObject:
    binding = source.binding
    out = dict(_hoist(binding.schema, defs))
    if binding.location == "body":
        out.setdefault("description", _WHOLE_BODY_SENTENCE)
        return out
    if source.description and "description" not in out:
        out["description"] = source.description
    if source.aliases:
        out["x-anvil-aliases"] = list(source.aliases)
    out["x-anvil-wire-name"] = binding.wire_name
    if source.has_example and "examples" not in out and "example" not in out:
        out["examples"] = [source.example]
    return out


def _without_field(schema: JSONObject, pointer: tuple[str, ...]) -> JSONObject:
    """A copy of a body schema with the field at ``pointer`` removed (properties, required, examples)."""
    root = copy.deepcopy(schema)
    node: Any = root
    for depth, key in enumerate(pointer):
        node = _inline_ref(root, node)
        if not isinstance(node, dict):
            return root
        last = depth == len(pointer) - 1
        holder = _holder(root, node, key)
        if holder is None:
            return root
        if last:
            del holder["properties"][key]
            if isinstance(holder.get("required"), list):
                holder["required"] = [r for r in holder["required"] if r != key]
            _drop_example_key(holder, key)
            return root
        child = holder["properties"][key]
        holder["properties"][key] = _inline_ref(root, child)
        node = holder["properties"][key]
    return root


def _inline_ref(root: JSONObject, node: Any) -> Any:
    """Replace a ``#/$defs/X`` ref node by a copy of its target (so an edit stays local)."""
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 32:
        ref: str = node["$ref"]
        defs = root.get("$defs")
        name = ref[len("#/$defs/") :] if ref.startswith("#/$defs/") else None
        if name is None or not isinstance(defs, dict) or name not in defs:
            return node
        merged = copy.deepcopy(defs[name])
        extra = {k: v for k, v in node.items() if k != "$ref"}
        node = {**merged, **extra} if isinstance(merged, dict) else merged
        seen += 1
    return node


def _holder(root: JSONObject, node: JSONObject, key: str) -> JSONObject | None:
    """The schema object (``node`` or one of its allOf branches) whose properties declare ``key``."""
    props = node.get("properties")
    if isinstance(props, dict) and key in props:
        return node
    branches = node.get("allOf")
    if isinstance(branches, list):
        for index, branch in enumerate(branches):
            branches[index] = _inline_ref(root, branch)
            if isinstance(branches[index], dict):
                found = _holder(root, branches[index], key)
                if found is not None:
                    return found
    return None


def _drop_example_key(holder: JSONObject, key: str) -> None:
    if isinstance(holder.get("example"), dict):
        holder["example"] = {k: v for k, v in holder["example"].items() if k != key}
    if isinstance(holder.get("examples"), list):
        holder["examples"] = [
            {k: v for k, v in item.items() if k != key} if isinstance(item, dict) else item
            for item in holder["examples"]
        ]


def cli_flags(op: Operation) -> dict[str, str]:
    """The ``anvil run`` flag of each business input property (``--<kebab>``), as the CLI reads them.

    A flag that names one of the CLI's own (:data:`CLI_CONTROL_FLAGS`) becomes ``--input-<name>``; a
    flag that is still taken, or that another input has by its own name, is prefixed ``anvil-`` until
    it is free.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    bindings = input_bindings(op)
    natural = {"--" + kebab(b.property) for b in bindings}
    for binding in bindings:
        if binding.property in out:
            continue
        flag = "--" + kebab(binding.property)
        if flag[2:] in CLI_CONTROL_FLAGS:
            flag = "--input-" + kebab(binding.property)
            while flag in natural:
                flag = "--anvil-" + flag[2:]
        while flag in taken:
            flag = "--anvil-" + flag[2:]
        out[binding.property] = flag
        taken.add(flag)
    return out
