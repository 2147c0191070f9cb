"""Effect contracts ``anvil init --propose-effects`` proposes: each create and the call that undoes it.

A create is paired with the delete of the item it made, found by path: the delete's path is the
create's path plus one trailing ``{param}`` segment (``POST /pets`` and ``DELETE /pets/{id}``). The
inverse's arguments come from the create's request (the path parameters both share) and its answer
(the new item's id: the field named like the delete's trailing parameter, else its part after the
resource name, else ``id``, matched regardless of case: a ``Sid`` parameter and the ``sid`` answered),
and any other input the delete requires from a field the create's body requires
(``request.body.shopperReference``). A format suffix stays on both paths (``POST .../Addresses.json``
and ``DELETE .../Addresses/{Sid}.json``). A read on the item path becomes the lookup by id. A create
whose item cannot be deleted is compensated by the update on its item path that moves it to a terminal
state, where the update's ``status`` (or ``state``) enumerates one (``cancelled``, ``closed``,
``archived``, ``expired``): the state is a literal argument (``{"const": "closed"}``); a POST on the
item path's ``/cancel`` (``POST /batches/{batch_id}/cancel``) compensates it first.

In RPC-style APIs the path's last word is the verb (:mod:`anvil.air.rpc`): ``/pins.add`` is undone by
``/pins.remove`` and ``/transfer/create`` by ``/transfer/delete`` or ``/remove`` (inverses: the item
is gone again), or compensated by ``/transfer/cancel`` (the item stays, cancelled). Such an undo
takes the identifying arguments the make took from its request (Slack's ``channel`` and
``timestamp``), and an input the make did not take from its answer (``reminder`` from
``{"reminder": {"id": ...}}``).

Every proposal is a suggestion for a reviewer: ``anvil init`` compiles it and leaves out one the
compiler's ``effect/*`` checks refuse, saying why. A write whose spec declares an idempotency key
header (``Idempotency-Key``, PayPal's ``PayPal-Request-Id``, or one described as idempotent) gets an
``idempotency:`` block naming it; so does a write whose JSON body has a top-level idempotency key field
(Plaid's ``idempotency_key``: ``key_location: body``), unless that field's schema is deprecated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field
from typing import Any, Final, Literal

from anvil._dataclass import dataclass
from anvil.air.inputs import BODY_PROPERTY, input_bindings
from anvil.air.model import Document, Operation
from anvil.air.naming import prop_key
from anvil.air.rpc import rpc_verb, undo_paths
from anvil.air.value_check import walk_pointer

__all__ = ["STATE_FIELDS", "TERMINAL_STATES", "TERMINAL_VERBS", "Proposal", "propose_effects", "propose_idempotency"]

#: An item path: a collection path plus one trailing ``{param}`` segment, with the collection's format
#: suffix kept after it (a telephony API's ``/Addresses.json`` and ``/Addresses/{Sid}.json``).
_FORMATS: Final = r"\.(?:json|xml|csv|yaml|yml|txt|html|htm|proto)"
_TRAILING_PARAM: Final = re.compile(rf"^(?P<base>.*)/\{{(?P<name>[^{{}}/]+)\}}(?P<suffix>{_FORMATS})?$", re.IGNORECASE)
_SUFFIX: Final = re.compile(rf"(?P<stem>.*/[^/{{}}]+?)(?P<suffix>{_FORMATS})", re.IGNORECASE)
_PARAM: Final = re.compile(r"\{([^{}/]+)\}")
#: Header names that carry an idempotency key (PayPal's is documented as its idempotency header).
_KEY_HEADER: Final = re.compile(r"^(x-)?idempotency-?key$|^paypal-request-id$", re.IGNORECASE)
_KEY_WORDS: Final = re.compile(r"idempoten", re.IGNORECASE)
#: Body field names that carry an idempotency key (``idempotency_key``, ``idempotencyKey``).
_KEY_FIELD: Final = re.compile(r"^idempotency[_-]?key$", re.IGNORECASE)
#: The body fields that hold an item's lifecycle state, and the terminal states an update may move it
#: to (in order of preference: the first the schema enumerates is proposed).
STATE_FIELDS: Final = frozenset({"status", "state"})
TERMINAL_STATES: Final = ("cancelled", "canceled", "closed", "archived", "expired")
#: The last path word of a POST that moves the item on the path before it to a terminal state.
TERMINAL_VERBS: Final = frozenset({"cancel", "close", "archive", "expire"})
#: An HTTP header name (RFC 9110 token): only such a header can carry a key, so only such is proposed.
_HEADER_NAME: Final = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}")


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
    return walk_pointer(schemas.get(parts[0]), parts[1:])


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


def _answer_fields(schema: Any, schemas: Mapping[str, Any]) -> dict[str, Any]:
    """Paths into the answer a new item's id may sit at, with their schemas: top-level fields, then
    one wrapper deep."""
    top = _resolve(schema, schemas)
    nested = {f"{name}.{inner}": sub for name, value in top.items() for inner, sub in _resolve(value, schemas).items()}
    return {**top, **nested}


def _path_params(op: Operation) -> list[str]:
    return _PARAM.findall(op.source_ref.path or "")


def _is_object(schema: Any, schemas: Mapping[str, Any]) -> bool:
    """True when a field's schema is an object with fields (a wrapper, not an id)."""
    return bool(_resolve(schema, schemas))


def _id_field(
    param: str,
    answer: Mapping[str, Any],
    resource: str | None,
    schemas: Mapping[str, Any],
    *,
    level: Literal["name", "resource", "any"] = "any",
) -> str | None:
    """The answer field that carries the new item's id for an undo taking ``param``.

    Candidates in order: the parameter's own name, the ``id`` of the object an ``<x>_id`` names
    (``transfer_id`` of ``{"transfer": {"id": ...}}``), its part after the resource name
    (``comment_id`` of ``comments`` -> ``id``), then ``id``; each first at the top of the answer, then
    inside a one-field wrapper (PagerDuty's ``{"team": {"id": ...}}``). A candidate that is itself an
    object gives its ``id`` (Slack's ``reminder`` answered as ``{"reminder": {"id": ...}}``).
    ``level`` narrows the candidates: ``name`` keeps only the parameter's own name, ``resource`` adds
    its part after the resource name but not a bare ``id`` (an RPC input such as ``client_user_id`` is
    no id of the item).
    """
    candidates = [param]
    if resource and level != "name":
        prefixes = (resource.rstrip("s") + "_", resource + "_", resource.rstrip("s"))
        candidates += [
            param[len(prefix) :].lstrip("_").lower()
            for prefix in prefixes
            if param.lower().startswith(prefix.lower()) and len(param) > len(prefix)
        ]
    if level == "any":
        candidates.append("id")
    top = [field for field in answer if "." not in field]
    wrapped = [field for field in answer if "." in field]
    owner = param[:-3] if param.endswith("_id") else param[:-2] if param.endswith("Id") else None
    if owner and level != "name" and f"{owner}.id" in answer and not _is_object(answer[f"{owner}.id"], schemas):
        return f"{owner}.id"  # ``transfer_id`` of ``{"transfer": {"id": ...}}``
    for candidate in candidates:
        named = _named(candidate, top)
        if named is not None:
            if not _is_object(answer[named], schemas):
                return named
            if f"{named}.id" in answer and not _is_object(answer[f"{named}.id"], schemas):
                return f"{named}.id"
    wrappers = {field.split(".", 1)[0] for field in wrapped}
    if len(wrappers) == 1:
        for candidate in candidates:
            found = next((field for field in wrapped if field.split(".", 1)[1] == candidate), None)
            if found is not None and not _is_object(answer[found], schemas):
                return found
    return None


def _named(candidate: str, fields: list[str]) -> str | None:
    """The field spelled ``candidate``, else the one field spelled so but for case (a ``Sid`` path
    parameter and the ``sid`` its create answers)."""
    if candidate in fields:
        return candidate
    folded = [name for name in fields if name.lower() == candidate.lower()]
    return folded[0] if len(folded) == 1 else None


def _split_suffix(path: str) -> tuple[str, str]:
    """``path`` without its format suffix, and the suffix (``/Addresses.json`` -> ``/Addresses``, ``.json``)."""
    match = _SUFFIX.fullmatch(path)
    return (match["stem"], match["suffix"]) if match else (path, "")


def _item_of(path: str, item_path: str) -> re.Match[str] | None:
    """The match of ``item_path`` as the item path of the collection ``path`` (its trailing parameter
    named ``name``), or None."""
    stem, suffix = _split_suffix(path)
    match = _TRAILING_PARAM.match(item_path)
    if match and match["base"] == stem and (match["suffix"] or "") == suffix:
        return match
    return None


def _static(path: str) -> list[str]:
    return [part for part in path.split("/") if part and not _PARAM.fullmatch(part)]


def _find(ops: list[Operation], method: str, path: str) -> Operation | None:
    return next((op for op in ops if op.source_ref.method == method and op.source_ref.path == path), None)


def _undo_target(create: Operation, ops: list[Operation]) -> tuple[Operation | None, str | None, str]:
    """The operation that undoes ``create``, the name of its trailing item parameter (None for RPC
    style), and how it undoes it (``inverse`` or ``compensate``)."""
    path = create.source_ref.path or ""
    for op in ops:
        if op.source_ref.method != "delete":
            continue
        match = _item_of(path, op.source_ref.path or "")
        if match:
            return op, match["name"], "inverse"
    stem, suffix = _split_suffix(path)
    collection = stem.rstrip("/").rsplit("/", 1)[-1]
    if collection and "{" not in collection:  # /issues/{n}/comments -> /issues/comments/{comment_id}
        for op in ops:
            match = _TRAILING_PARAM.match(op.source_ref.path or "")
            if op.source_ref.method != "delete" or match is None or not match["base"].endswith(f"/{collection}"):
                continue
            if (match["suffix"] or "") != suffix:
                continue
            others = set(_PARAM.findall(match["base"]))
            # The same collection: the same fixed segments in the same order, only the parameters
            # between them differ (not /projects/{p}/service_accounts/{s}/api_keys beside
            # /projects/{p}/api_keys/{id}: another collection that happens to end in the same word).
            if others <= set(_PARAM.findall(path)) and _static(match["base"]) == _static(stem):
                return op, match["name"], "inverse"
    for undo_path, how in undo_paths(path):  # RPC style: /pins.add -> /pins.remove, /x/create -> /x/cancel
        target = _find(ops, "post", undo_path)
        if target is not None and target.id != create.id:
            return target, None, how
    if rpc_verb(path) is not None:
        target = _find(ops, "delete", path)
        if target is not None:
            return target, None, "inverse"
    return None, None, "inverse"


def _sent(create: Operation, schemas: Mapping[str, Any]) -> dict[str, tuple[str, bool]]:
    """What the create's request carries, by input name: the request path that reads it and whether
    the create requires it (a whole body's fields are read inside it: ``request.body.client_user_id``)."""
    out: dict[str, tuple[str, bool]] = {}
    for binding in input_bindings(create):
        if binding.location != "body":
            out[binding.property] = (f"request.{binding.property}", binding.required)
            continue
        body = create.input.body
        schema = body.schema if body is not None else binding.schema
        required = set(_resolve_required(schema, schemas))
        for name in _resolve(schema, schemas):
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                # A field the body requires is sent whenever a body is: a call without one gets no undo.
                out.setdefault(prop_key(name), (f"request.body.{name}", name in required))
    return out


def _resolve_required(schema: Any, schemas: Mapping[str, Any], depth: int = 0) -> list[str]:
    """The required fields of an object schema (``$ref`` and ``allOf`` followed)."""
    if not isinstance(schema, dict) or depth > 8:
        return []
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _resolve_required(_target(ref, schemas), schemas, depth + 1)
    found = [name for name in schema.get("required") or () if isinstance(name, str)]
    for part in schema.get("allOf") or ():
        found += _resolve_required(part, schemas, depth + 1)
    return found


def _rpc_arguments(
    create: Operation, target: Operation, answer: Mapping[str, Any], schemas: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """An RPC undo's arguments: each input the create also took comes from its request (the identifying
    arguments the add took: Slack's ``channel`` and ``timestamp`` of ``pins.add``); one it did not take
    comes from the answer (the new item's id), when the answer carries it."""
    sent = _sent(create, schemas)
    arguments: dict[str, Any] = {}
    reasons: list[str] = []
    for binding in input_bindings(target):
        if binding.location == "body":
            if binding.required:
                reasons.append(f"{target.id} takes a whole request body")
            continue
        if binding.property in sent:
            path, required = sent[binding.property]
            if binding.required and not required:  # a call without it could not be undone
                reasons.append(f"{target.id} requires '{binding.wire_name}', which {create.id} may be called without")
            arguments[binding.property] = path + ("" if required else "?")
            continue
        level: Literal["name", "resource", "any"] = "resource" if binding.required else "name"
        found = _id_field(binding.wire_name, answer, create.effect.resource, schemas, level=level)
        if found is not None:
            arguments[binding.property] = f"response.{found}"
        elif binding.required:
            reasons.append(f"no field of the create's request or answer gives {target.id}'s '{binding.wire_name}'")
    named = [b for b in input_bindings(target) if b.property in arguments and b.location != "header"]
    if not reasons and not named:
        reasons.append(f"nothing the create sends or answers names the item {target.id} would undo")
    return arguments, reasons


def _item_arguments(
    create: Operation, target: Operation, item_param: str, answer: Mapping[str, Any], schemas: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The arguments of an undo on the item path: the path parameters both share from the create's
    request, the item's id from its answer, and any other input the undo requires from what the create
    sent (a field its whole body requires: ``request.body.shopperReference``)."""
    shared = set(_path_params(create))
    sent = _sent(create, schemas)
    arguments: dict[str, Any] = {}
    reasons: list[str] = []
    for param in target.input.params:
        if not (param.required or param.in_ == "path"):
            continue
        name = prop_key(param.agent_name or param.name)
        if param.in_ == "path" and param.name in shared:
            arguments[name] = f"request.{name}"
        elif param.name == item_param or param.in_ == "path":
            field = _id_field(param.name, answer, create.effect.resource, schemas)
            if field is None:
                reasons.append(f"no field of the create's answer carries {target.id}'s '{param.name}'")
            else:
                arguments[name] = f"response.{field}"
        elif name in sent and sent[name][1]:
            arguments[name] = sent[name][0]
        elif name in sent:
            reasons.append(f"{target.id} requires '{param.name}', which {create.id} may be called without")
        else:
            reasons.append(f"{target.id} requires '{param.name}', which neither the request nor the answer gives")
    return arguments, reasons


def _with_lookup(effect: dict[str, Any], item_path: str, arguments: Mapping[str, Any], ops: list[Operation]) -> None:
    """Add the read on the item path, if any, as the lookup by id."""
    read = _find(ops, "get", item_path)
    if read is not None and read.is_read:
        effect["lookup"] = {"operation": read.id, "by": "id", "arguments": dict(arguments)}


def _enum(schema: Any, schemas: Mapping[str, Any], depth: int = 0) -> list[str]:
    """The string values a schema enumerates (``$ref`` followed, every ``anyOf``/``oneOf`` branch's)."""
    if not isinstance(schema, dict) or depth > 8:
        return []
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _enum(_target(ref, schemas), schemas, depth + 1)
    found = [value for value in schema.get("enum") or () if isinstance(value, str)]
    for keyword in ("anyOf", "oneOf", "allOf"):
        for part in schema.get(keyword) or ():
            found += _enum(part, schemas, depth + 1)
    return found


def _terminal_field(update: Operation, schemas: Mapping[str, Any]) -> tuple[str, Any, list[str]] | None:
    """How ``update`` moves an item to a terminal state: the input to set, its value (a literal), and
    the other body fields the update requires; None when its body has no ``status``/``state`` whose
    enum holds a terminal state."""
    body = update.input.body
    if body is None:
        return None
    if body.projection == "fields":
        fields = {item.name: item.schema for item in body.fields}
        required = [item.name for item in body.fields if item.required]
    else:
        fields = _resolve(body.schema, schemas)
        required = _resolve_required(body.schema, schemas)
    for name, schema in fields.items():
        if name.lower() not in STATE_FIELDS:
            continue
        values = _enum(schema, schemas)
        value = next((state for state in TERMINAL_STATES if state in values), None)
        if value is None:
            continue
        others = [field for field in required if field != name]
        if body.projection == "fields":
            item = next(item for item in body.fields if item.name == name)
            return prop_key(item.agent_name or item.name), {"const": value}, others
        return BODY_PROPERTY, {"const": {name: value}}, others
    return None


def _terminal_call(
    create: Operation, ops: list[Operation], schemas: Mapping[str, Any], answer: Mapping[str, Any], reasons: list[str]
) -> Proposal | None:
    """A compensation by a POST on the item path's ``/cancel`` (``/close``, ``/archive``, ``/expire``):
    ``POST /batches`` and ``POST /batches/{batch_id}/cancel``."""
    path = create.source_ref.path or ""
    for call in ops:
        if call.is_read or call.id == create.id or call.source_ref.method != "post":
            continue
        stem, suffix = _split_suffix(call.source_ref.path or "")
        head, _, verb = stem.rpartition("/")
        match = _item_of(path, head + suffix) if verb.lower() in TERMINAL_VERBS else None
        if match is None:
            continue
        arguments, missing = _item_arguments(create, call, match["name"], answer, schemas)
        if call.input.body is not None and call.input.body.required:
            missing.append(f"{call.id} requires a request body")
        if missing:
            reasons += missing
            continue
        effect: dict[str, Any] = {"class": "compensable", "compensate": {"operation": call.id, "arguments": arguments}}
        _with_lookup(effect, head + suffix, arguments, ops)
        return Proposal(create.id, effect=effect)
    return None


def _compensation(create: Operation, ops: list[Operation], schemas: Mapping[str, Any]) -> Proposal | None:
    """A compensation by a call that moves the created item to a terminal state: a POST on its item
    path's ``/cancel`` (:func:`_terminal_call`), else the update whose ``status`` enumerates one
    (``cancelled``, ``closed``, ``archived`` or ``expired``); None when nothing on the item path can."""
    path = create.source_ref.path or ""
    answer = _answer_fields(create.output.schema, schemas)
    reasons: list[str] = []
    called = _terminal_call(create, ops, schemas, answer, reasons)
    if called is not None:
        return called
    for update in ops:
        if update.is_read or update.id == create.id or update.source_ref.method not in ("patch", "put", "post"):
            continue
        match = _item_of(path, update.source_ref.path or "")
        terminal = _terminal_field(update, schemas) if match else None
        if match is None or terminal is None:
            continue
        name, value, others = terminal
        arguments, missing = _item_arguments(create, update, match["name"], answer, schemas)
        missing += [f"{update.id} also requires the body field '{field}'" for field in others]
        if missing:
            reasons += missing
            continue
        arguments[name] = value
        effect: dict[str, Any] = {
            "class": "compensable",
            "compensate": {"operation": update.id, "arguments": arguments},
        }
        _with_lookup(effect, update.source_ref.path or "", {k: v for k, v in arguments.items() if k != name}, ops)
        return Proposal(create.id, effect=effect)
    return Proposal(create.id, reasons=tuple(reasons)) if reasons else None


def _one(create: Operation, ops: list[Operation], schemas: Mapping[str, Any]) -> Proposal:
    target, item_param, kind = _undo_target(create, ops)
    if target is None:
        fallback = _compensation(create, ops, schemas)
        if fallback is not None:
            return fallback
        return Proposal(
            create.id,
            reasons=("no delete, remove or cancel of the created item, nor an update to a terminal status, was found",),
        )
    answer = _answer_fields(create.output.schema, schemas)
    if item_param is None:  # RPC style: the undo names the item by what the create sent or answered
        found, reasons = _rpc_arguments(create, target, answer, schemas)
        if reasons:
            return Proposal(create.id, reasons=tuple(reasons))
        effect_class = "reversible" if kind == "inverse" else "compensable"
        return Proposal(create.id, effect={"class": effect_class, kind: {"operation": target.id, "arguments": found}})
    arguments, reasons = _item_arguments(create, target, item_param, answer, schemas)
    if target.input.body is not None and target.input.body.required:
        reasons.append(f"{target.id} requires a request body")
    if reasons:
        fallback = _compensation(create, ops, schemas)
        if fallback is not None and fallback.effect is not None:
            return fallback
        return Proposal(create.id, reasons=tuple(reasons))
    effect: dict[str, Any] = {"class": "reversible", "inverse": {"operation": target.id, "arguments": arguments}}
    _with_lookup(effect, target.source_ref.path or "", arguments, ops)
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


def _header_key(op: Operation) -> dict[str, Any] | None:
    for param in op.input.params:
        if param.in_ != "header" or not _HEADER_NAME.fullmatch(param.name):
            continue
        if _KEY_HEADER.match(param.name) or _KEY_WORDS.search(param.description or ""):
            strategy = "required_request_key" if param.required else "key_supported"
            return {"strategy": strategy, "key_location": "header", "header": param.name}
    return None


def _deprecated(schema: Any, schemas: Mapping[str, Any], depth: int = 0) -> bool:
    """True when a field's schema (``$ref`` followed) is marked deprecated: a key the API retired."""
    if not isinstance(schema, dict) or depth > 8:
        return False
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _deprecated(_target(ref, schemas), schemas, depth + 1)
    return schema.get("deprecated") is True


def _body_key(op: Operation, schemas: Mapping[str, Any]) -> dict[str, Any] | None:
    """A top-level JSON body field named as an idempotency key, as a body carrier (the compiler checks
    it can hold a key: :mod:`anvil.air.carrier`)."""
    body = op.input.body
    if body is None or "json" not in body.content_type.lower():
        return None
    required = set(_resolve_required(body.schema, schemas))
    for name, schema in sorted(_resolve(body.schema, schemas).items()):
        if _KEY_FIELD.match(name) and not _deprecated(schema, schemas):
            strategy = "required_request_key" if name in required else "key_supported"
            return {"strategy": strategy, "key_location": "body", "field": name}
    return None


def propose_idempotency(document: Document) -> dict[str, dict[str, Any]]:
    """An ``idempotency:`` block (manifest spelling) for every write that takes a header the spec
    names (or describes) as an idempotency key, else a top-level JSON body field named as one:
    ``required_request_key`` when the spec requires the header (or the body schema the field), else
    ``key_supported``; by AIR id."""
    out: dict[str, dict[str, Any]] = {}
    schemas = document.schemas or {}
    for op in document.operations:
        if op.effect.kind != "mutation":
            continue
        block = _header_key(op) or _body_key(op, schemas)
        if block is not None:
            out[op.id] = block
    return out
