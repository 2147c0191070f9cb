"""Effect contracts ``anvil init --propose-effects`` proposes: each create and the call that undoes it.

A create is paired with the delete of the item it made, found by path: the delete's path is the
create's path plus one trailing ``{param}`` segment (``POST /pets`` and ``DELETE /pets/{id}``), or,
in RPC-style APIs, the create's path with its last word ``create`` turned into ``delete``, ``remove``
or ``cancel`` (``/transfer/create`` and ``/transfer/cancel``). The inverse's arguments come from the
create's request (the path parameters both share) and its answer (the new item's id: the field named
like the delete's trailing parameter, else its part after the resource name, else ``id``). A read on
the item path becomes the lookup by id. Every proposal is a suggestion for a reviewer: ``anvil init``
compiles it and leaves out one the compiler's ``effect/*`` checks refuse, saying why. A write whose
spec declares an idempotency key header (``Idempotency-Key``, PayPal's ``PayPal-Request-Id``, or one
described as idempotent) gets an ``idempotency:`` block naming it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from anvil.air.model import Document, Operation
from anvil.air.naming import prop_key

__all__ = ["Proposal", "propose_effects", "propose_idempotency"]

_TRAILING_PARAM: Final = re.compile(r"^(?P<base>.*)/\{(?P<name>[^{}/]+)\}$")
_PARAM: Final = re.compile(r"\{([^{}/]+)\}")
_UNDO_WORDS: Final = ("delete", "remove", "cancel")
#: Header names that carry an idempotency key (PayPal's is documented as its idempotency header).
_KEY_HEADER: Final = re.compile(r"^(x-)?idempotency-?key$|^paypal-request-id$", re.IGNORECASE)
_KEY_WORDS: Final = re.compile(r"idempoten", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Proposal:
    """An ``effect:`` block for one create (manifest spelling), or why none could be proposed, and an
    ``idempotency:`` block for a write whose spec declares an idempotency key header."""

    operation_id: str
    effect: Mapping[str, Any] | None = None
    reasons: tuple[str, ...] = field(default_factory=tuple)
    idempotency: Mapping[str, Any] | None = None


def _target(ref: str, schemas: Mapping[str, Any]) -> Any:
    """What a local ``$ref`` into the named schemas points at (a pointer inside one is walked)."""
    prefix = next((p for p in ("#/components/schemas/", "#/definitions/", "#/$defs/") if ref.startswith(p)), None)
    if prefix is None:
        return None
    parts = [part.replace("~1", "/").replace("~0", "~") for part in ref[len(prefix) :].split("/")]
    node: Any = schemas.get(parts[0])
    for part in parts[1:]:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _resolve(schema: Any, schemas: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """The properties of an object schema (``$ref`` and ``allOf`` followed a little, and the ones every
    ``oneOf``/``anyOf`` branch shares), by name."""
    if not isinstance(schema, dict) or depth > 8:
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _resolve(_target(ref, schemas), schemas, depth + 1)
    found = dict(schema["properties"]) if isinstance(schema.get("properties"), dict) else {}
    for part in schema.get("allOf") or ():
        found.update(_resolve(part, schemas, depth + 1))
    for keyword in ("oneOf", "anyOf"):  # an item of one of several shapes: the fields every shape has
        branches = [_resolve(part, schemas, depth + 1) for part in schema.get(keyword) or ()]
        if branches and all(branches):
            found.update({name: sub for name, sub in branches[0].items() if all(name in b for b in branches)})
    return found


def _answer_fields(schema: Any, schemas: Mapping[str, Any]) -> list[str]:
    """Paths into the answer a new item's id may sit at: top-level fields, then one wrapper deep."""
    top = _resolve(schema, schemas)
    nested = [f"{name}.{inner}" for name, value in top.items() for inner in _resolve(value, schemas)]
    return [*top, *nested]


def _path_params(op: Operation) -> list[str]:
    return _PARAM.findall(op.source_ref.path or "")


def _id_field(param: str, answer: list[str], resource: str | None) -> str | None:
    """The answer field that carries the new item's id for a delete taking ``{param}``.

    Candidates in order: the parameter's own name, its part after the resource name
    (``comment_id`` of ``comments`` -> ``id``), then ``id``; each first at the top of the answer, then
    inside a one-field wrapper (PagerDuty's ``{"team": {"id": ...}}``).
    """
    candidates = [param]
    if resource:
        prefixes = (resource.rstrip("s") + "_", resource + "_", resource.rstrip("s"))
        candidates += [
            param[len(prefix) :].lstrip("_").lower()
            for prefix in prefixes
            if param.lower().startswith(prefix.lower()) and len(param) > len(prefix)
        ]
    candidates.append("id")
    top = [field for field in answer if "." not in field]
    wrapped = [field for field in answer if "." in field]
    for candidate in candidates:
        if candidate in top:
            return candidate
    wrappers = {field.split(".", 1)[0] for field in wrapped}
    if len(wrappers) == 1:
        for candidate in candidates:
            found = next((field for field in wrapped if field.split(".", 1)[1] == candidate), None)
            if found is not None:
                return found
    return None


def _static(path: str) -> list[str]:
    return [part for part in path.split("/") if part and not _PARAM.fullmatch(part)]


def _find(ops: list[Operation], method: str, path: str) -> Operation | None:
    return next((op for op in ops if op.source_ref.method == method and op.source_ref.path == path), None)


def _undo_target(create: Operation, ops: list[Operation]) -> tuple[Operation | None, str | None]:
    """The delete that undoes ``create``, and the name of its trailing item parameter (None for RPC style)."""
    path = create.source_ref.path or ""
    for op in ops:
        if op.source_ref.method != "delete":
            continue
        match = _TRAILING_PARAM.match(op.source_ref.path or "")
        if match and match["base"] == path:
            return op, match["name"]
    collection = path.rstrip("/").rsplit("/", 1)[-1]
    if collection and "{" not in collection:  # /issues/{n}/comments -> /issues/comments/{comment_id}
        for op in ops:
            match = _TRAILING_PARAM.match(op.source_ref.path or "")
            if op.source_ref.method != "delete" or match is None or not match["base"].endswith(f"/{collection}"):
                continue
            others = set(_PARAM.findall(match["base"]))
            # The same collection: the same fixed segments in the same order, only the parameters
            # between them differ (not /projects/{p}/service_accounts/{s}/api_keys beside
            # /projects/{p}/api_keys/{id}: another collection that happens to end in the same word).
            if others <= set(_PARAM.findall(path)) and _static(match["base"]) == _static(path):
                return op, match["name"]
    head, _, last = path.rpartition("/")
    if last.lower().startswith("create"):
        for word in _UNDO_WORDS:
            target = _find(ops, "post", f"{head}/{word}{last[len('create') :]}") or _find(ops, "delete", path)
            if target is not None:
                return target, None
    return None, None


def _one(create: Operation, ops: list[Operation], schemas: Mapping[str, Any]) -> Proposal:
    target, item_param = _undo_target(create, ops)
    if target is None:
        return Proposal(create.id, reasons=("no delete, remove or cancel of the created item was found",))
    answer = _answer_fields(create.output.schema, schemas)
    shared = set(_path_params(create))
    arguments: dict[str, Any] = {}
    reasons: list[str] = []
    for param in target.input.params:
        if not (param.required or param.in_ == "path"):
            continue
        name = prop_key(param.agent_name or param.name)
        if param.in_ == "path" and param.name in shared:
            arguments[name] = f"request.{name}"
        elif param.name == item_param or param.in_ == "path":
            found = _id_field(param.name, answer, create.effect.resource)
            if found is None:
                reasons.append(f"no field of the create's answer carries {target.id}'s '{param.name}'")
            else:
                arguments[name] = f"response.{found}"
        else:
            reasons.append(f"{target.id} requires '{param.name}', which neither the request nor the answer gives")
    if target.input.body is not None and target.input.body.required and item_param is not None:
        reasons.append(f"{target.id} requires a request body")
    if item_param is None:  # RPC style: the body carries the id
        body = target.input.body
        if body is not None and body.projection == "fields":
            for item in body.fields:
                if item.required:
                    found = _id_field(item.name, answer, create.effect.resource)
                    if found is None:
                        reasons.append(f"no field of the create's answer carries {target.id}'s '{item.name}'")
                    else:
                        arguments[prop_key(item.agent_name or item.name)] = f"response.{found}"
        elif body is not None and body.required:
            reasons.append(f"{target.id} takes a whole request body")
    if reasons:
        return Proposal(create.id, reasons=tuple(reasons))
    kind = "inverse" if target.source_ref.method == "delete" or item_param is not None else "compensate"
    effect: dict[str, Any] = {
        "class": "reversible" if kind == "inverse" else "compensable",
        kind: {"operation": target.id, "arguments": arguments},
    }
    if item_param is not None:
        read = _find(ops, "get", target.source_ref.path or "")
        if read is not None and read.is_read:
            effect["lookup"] = {"operation": read.id, "by": "id", "arguments": dict(arguments)}
    return Proposal(create.id, effect=effect)


def propose_effects(document: Document) -> dict[str, Proposal]:
    """A :class:`Proposal` for every create of ``document`` (by AIR id), effect or reasons."""
    ops = list(document.operations)
    schemas = document.schemas or {}
    return {
        op.id: _one(op, ops, schemas)
        for op in ops
        if op.effect.kind == "mutation" and op.effect.action == "create" and op.source_ref.method == "post"
    }


def propose_idempotency(document: Document) -> dict[str, dict[str, Any]]:
    """An ``idempotency:`` block (manifest spelling) for every write that takes a header the spec
    names (or describes) as an idempotency key: ``required_request_key`` when the spec requires the
    header, else ``key_supported``; by AIR id."""
    out: dict[str, dict[str, Any]] = {}
    for op in document.operations:
        if op.effect.kind != "mutation":
            continue
        for param in op.input.params:
            if param.in_ != "header":
                continue
            if _KEY_HEADER.match(param.name) or _KEY_WORDS.search(param.description or ""):
                strategy = "required_request_key" if param.required else "key_supported"
                out[op.id] = {"strategy": strategy, "key_location": "header", "header": param.name}
                break
    return out
