"""The effect-contract path grammar (ADR-0030 §2): one parser, one resolver, one schema walker.

A follow-up call's arguments are a mapping ``target input -> source``. A source is a path or the
literal ``{"const": value}``::

    path  := root ( "." name | "[" index "]" )* [ "?" ]
    root  := "request" | "response" | "idempotency_key"
    name  := [A-Za-z_$][A-Za-z0-9_$-]*
    index := "0" | [1-9][0-9]*

``idempotency_key`` takes no segments; ``request`` and ``response`` need at least one. A trailing
``?`` makes the argument optional. There are no wildcards, filters or expressions: a path names one
value or nothing, and has one spelling (``[01]`` is refused rather than read as ``[1]``).

The compiler uses :func:`parse_source` and :func:`check_schema_path` for its static checks; the
gateway uses :func:`resolve_mapping` and :func:`resolve_deadline` to turn a declaration into concrete
arguments for one real call.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Final, Literal, TypeAlias
from urllib.parse import unquote

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.model import Deadline

__all__ = [
    "MAX_SCHEMA_DEPTH",
    "NOTHING",
    "ROOTS",
    "Const",
    "JSONType",
    "MappingResolution",
    "Nothing",
    "Path",
    "PathError",
    "PathRoot",
    "SchemaLookup",
    "Segment",
    "Source",
    "Verdict",
    "check_schema_path",
    "format_path",
    "json_type_of",
    "parse_path",
    "parse_source",
    "resolve_deadline",
    "resolve_mapping",
    "resolve_path",
    "resolve_source",
    "schema_types",
    "types_fit",
]

PathRoot = Literal["request", "response", "idempotency_key"]
Segment: TypeAlias = str | int
JSONType = Literal["string", "number", "integer", "boolean", "object", "array", "null"]
Verdict = Literal["declared", "missing", "unverified"]

ROOTS: Final[tuple[PathRoot, ...]] = ("request", "response", "idempotency_key")
_ROOT_OF: Final[dict[str, PathRoot]] = {root: root for root in ROOTS}
#: Schema nesting beyond this is too complex to judge (a path there is unverified, never missing).
MAX_SCHEMA_DEPTH: Final = 32

_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")
_INDEX = re.compile(r"\[([0-9]+)\]")
_REF = re.compile(r"^#/(components/schemas|\$defs|definitions)/(.+)$")
_JSON_TYPES: Final = frozenset(("string", "number", "integer", "boolean", "object", "array", "null"))
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Python refuses to convert very long digit strings; no array is that long anyway.
_MAX_INDEX_DIGITS: Final = 18


# --- grammar ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Path:
    """A parsed path: its root, the property names (``str``) and array indices (``int``) under it."""

    root: PathRoot
    segments: tuple[Segment, ...] = ()
    optional: bool = False

    def __str__(self) -> str:
        return format_path(self)


@dataclass(frozen=True, slots=True)
class Const:
    """A literal source, ``{"const": value}``: always yields ``value``."""

    value: JSONValue


@dataclass(frozen=True, slots=True)
class PathError:
    """Why a source is not a path: ``message`` is a sentence fragment naming the problem.

    ``code`` is the diagnostic a mapping source that does not parse is reported with.
    """

    source: str
    message: str
    code: str = "effect/path_invalid"


Source: TypeAlias = Path | Const


def parse_path(text: object) -> Path | PathError:
    """Parse a path; never raises, whatever ``text`` is.

    Args:
        text: The written source, normally a string.

    Returns:
        The :class:`Path`, or a :class:`PathError` saying why ``text`` is not one.
    """
    if not isinstance(text, str):
        return PathError(repr(text), "a path is a string")
    optional = text.endswith("?")
    body = text[:-1] if optional else text
    head = _NAME.match(body)
    root = _ROOT_OF.get(head.group(0)) if head else None
    if root is None:
        return PathError(text, f"a path starts with request, response or idempotency_key: {text!r}")
    segments: list[Segment] = []
    at = len(root)
    while at < len(body):
        if body[at] == ".":
            name = _NAME.match(body, at + 1)
            if name is None:
                return PathError(text, f"expected a property name after '.' at {at + 1} in {text!r}")
            segments.append(name.group(0))
            at = name.end()
            continue
        index = _INDEX.match(body, at)
        if index is None:
            return PathError(text, f"unexpected {body[at]!r} at {at} in {text!r}")
        digits = index.group(1)
        if len(digits) > _MAX_INDEX_DIGITS:
            return PathError(text, f"index at {at} is too large in {text!r}")
        if len(digits) > 1 and digits.startswith("0"):
            return PathError(text, f"index at {at} has a leading zero in {text!r}; write [{int(digits)}]")
        segments.append(int(digits))
        at = index.end()
    if root == "idempotency_key" and segments:
        return PathError(text, f"idempotency_key takes no segments: {text!r}")
    if root != "idempotency_key" and not segments:
        return PathError(text, f"name a value under {root}, not the whole {root}: {text!r}")
    return Path(root, tuple(segments), optional)


def format_path(path: Path) -> str:
    """Write a path back in the grammar (``parse_path(format_path(p)) == p``)."""
    tail = "".join(f"[{segment}]" if isinstance(segment, int) else f".{segment}" for segment in path.segments)
    return f"{path.root}{tail}{'?' if path.optional else ''}"


def parse_source(value: object) -> Source | PathError:
    """Parse one mapping source: a path string or exactly ``{"const": value}``; never raises."""
    if isinstance(value, Mapping):
        if set(value) == {"const"}:
            return Const(value["const"])
        return PathError(_show(value), 'a literal source is exactly {"const": <value>}')
    return parse_path(value)


# --- run-time resolution -----------------------------------------------------------------------------


class Nothing(enum.Enum):
    """The one value meaning "this path names nothing in this call"."""

    NOTHING = "nothing"

    def __repr__(self) -> str:
        return "NOTHING"


NOTHING: Final = Nothing.NOTHING


def resolve_path(
    path: Path,
    *,
    request: JSONValue = None,
    response: JSONValue = None,
    idempotency_key: str | None = None,
) -> JSONValue | Nothing:
    """The value ``path`` names in one call, or :data:`NOTHING`.

    Walks own object keys only (no attribute or method lookups), numeric segments only into arrays,
    and treats ``null`` anywhere on the way as naming nothing.

    Args:
        path: A parsed path.
        request: The call's arguments as the tool took them (agent input names).
        response: The upstream's answer after agent projection.
        idempotency_key: The key that went upstream, if any.
    """
    if path.root == "idempotency_key":
        return idempotency_key if idempotency_key is not None else NOTHING
    current: JSONValue = request if path.root == "request" else response
    for segment in path.segments:
        if isinstance(segment, int):
            if not isinstance(current, list) or segment >= len(current):
                return NOTHING
            current = current[segment]
        else:
            if not isinstance(current, dict) or segment not in current:
                return NOTHING
            current = current[segment]
        if current is None:
            return NOTHING
    return NOTHING if current is None else current


def resolve_source(
    source: object,
    *,
    request: JSONValue = None,
    response: JSONValue = None,
    idempotency_key: str | None = None,
) -> JSONValue | Nothing:
    """The value one mapping source yields in one call: a literal's value, a path's value, or NOTHING.

    A source that does not parse names nothing (the compiler refuses such contracts; this is defence).
    """
    parsed = parse_source(source)
    if isinstance(parsed, Const):
        return parsed.value
    if isinstance(parsed, PathError):
        return NOTHING
    return resolve_path(parsed, request=request, response=response, idempotency_key=idempotency_key)


@dataclass(frozen=True, slots=True)
class MappingResolution:
    """The concrete arguments of a follow-up, or which argument made it unavailable.

    ``arguments`` is None exactly when ``argument``/``source`` name the first mapping entry whose
    required source named nothing.
    """

    arguments: JSONObject | None
    argument: str | None = None
    source: str | None = None

    @property
    def ok(self) -> bool:
        """True when every required argument resolved."""
        return self.arguments is not None

    @property
    def reason(self) -> str | None:
        """Why the follow-up is unavailable, as the report's ``undo_unavailable`` says it."""
        if self.ok:
            return None
        return f"argument '{self.argument}' ({self.source}) names no value in this call"


def resolve_mapping(
    mapping: Mapping[str, object],
    *,
    request: JSONValue = None,
    response: JSONValue = None,
    idempotency_key: str | None = None,
) -> MappingResolution:
    """Resolve a whole mapping, all or nothing.

    The first source (in mapping order) that names nothing makes the follow-up unavailable, unless
    the source is an optional path (trailing ``?``), whose argument is then simply left out.
    """
    out: JSONObject = {}
    for argument, source in mapping.items():
        value = resolve_source(source, request=request, response=response, idempotency_key=idempotency_key)
        if value is NOTHING:
            parsed = parse_source(source)
            if isinstance(parsed, Path) and parsed.optional:
                continue
            return MappingResolution(None, argument, source if isinstance(source, str) else _show(source))
        out[argument] = value
    return MappingResolution(out)


def resolve_deadline(
    deadline: Deadline | None,
    *,
    answered_at_ms: int,
    response: JSONValue = None,
) -> int | float | Nothing | None:
    """The epoch milliseconds by which a follow-up must run.

    Args:
        deadline: The declared deadline, if any.
        answered_at_ms: When the call answered (epoch ms), injected by the caller.
        response: The upstream's answer, for ``at``.

    Returns:
        None when no deadline applies; ``answered_at_ms + within_ms``; for ``at`` the response value
        as epoch ms (a finite number as is, an ISO-8601 string parsed; a time without a zone is UTC);
        :data:`NOTHING` when ``at`` names no time (a caller must read that as "deadline unknown").
    """
    if deadline is None:
        return None
    if deadline.within_ms is not None:
        return answered_at_ms + deadline.within_ms
    if deadline.at is None:
        return None
    value = resolve_source(deadline.at, response=response)
    if isinstance(value, bool):
        return NOTHING
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return NOTHING
        return int(value) if value.is_integer() else value
    if isinstance(value, str):
        return _iso_epoch_ms(value)
    return NOTHING


def _iso_epoch_ms(text: str) -> int | Nothing:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        try:
            moment = datetime.combine(date.fromisoformat(text.strip()), datetime.min.time())
        except ValueError:
            return NOTHING
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _show(value: object) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


# --- static checks against JSON Schemas -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SchemaLookup:
    """How a path fares against a schema.

    ``status``: ``declared`` (the schema declares it), ``missing`` (the schema declares its members and
    not this one, or indexes a type with no members), ``unverified`` (too open or complex to judge).
    ``types``: the JSON types the schema declares at the path, when it says (for type-fit checks).
    """

    status: Verdict
    types: frozenset[str] | None = None


def check_schema_path(
    schema: JSONObject | None,
    segments: Sequence[Segment],
    schemas: Mapping[str, JSONValue] | None = None,
    *,
    root: JSONObject | None = None,
) -> SchemaLookup:
    """Judge whether ``segments`` name a value a document matching ``schema`` can hold.

    ``$ref``s of the form ``#/components/schemas/X``, ``#/$defs/X`` and ``#/definitions/X`` are followed:
    ``$defs``/``definitions`` into the root schema's own (AIR schemas are self-contained), then into
    ``schemas``. ``allOf`` branches are all searched, ``anyOf``/``oneOf`` any; array indices go into
    ``items``. No schema, an open object, an unresolvable ``$ref`` or nesting deeper than
    :data:`MAX_SCHEMA_DEPTH` is ``unverified``. Never raises.

    Args:
        schema: The schema to walk (an operation's input or output schema, or a subschema of ``root``).
        segments: The path's segments under its root.
        schemas: The document's named schemas (``components.schemas``).
        root: The schema whose ``$defs`` local references point into; ``schema`` itself by default.
    """
    defs = _Defs.of(root if root is not None else schema, schemas or {})
    status = _walk(schema, tuple(segments), defs, 0)
    types = schema_types(_schema_at(schema, tuple(segments), defs, 0)) if status == "declared" else None
    return SchemaLookup(status, types)


@dataclass(frozen=True, slots=True)
class _Defs:
    """Where ``$ref`` targets live: the root schema's ``$defs``/``definitions`` and the document's schemas."""

    local: Mapping[str, JSONValue]
    legacy: Mapping[str, JSONValue]
    components: Mapping[str, JSONValue]

    @classmethod
    def of(cls, root: JSONValue, components: Mapping[str, JSONValue]) -> _Defs:
        local = root.get("$defs") if isinstance(root, dict) else None
        legacy = root.get("definitions") if isinstance(root, dict) else None
        return cls(
            local if isinstance(local, dict) else {},
            legacy if isinstance(legacy, dict) else {},
            components,
        )

    def target(self, ref: str) -> JSONValue:
        match = _REF.match(ref)
        if match is None:
            return None
        kind, name = match.group(1), _unescape(match.group(2))
        if kind == "$defs" and name in self.local:
            return self.local[name]
        if kind == "definitions" and name in self.legacy:
            return self.legacy[name]
        return self.components.get(name)


def _deref(schema: JSONValue, defs: _Defs, depth: int) -> tuple[JSONObject | None, int]:
    """Follow ``$ref`` chains; (None, depth) when one names nothing we hold or the chain is too deep."""
    current = schema
    while isinstance(current, dict) and isinstance(current.get("$ref"), str):
        depth += 1
        if depth > MAX_SCHEMA_DEPTH:
            return None, depth
        current = defs.target(current["$ref"])
    return (current if isinstance(current, dict) else None), depth


def _unescape(name: str) -> str:
    return unquote(name).replace("~1", "/").replace("~0", "~")


def _declared_types(schema: JSONObject) -> frozenset[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset((kind,))
    if isinstance(kind, list):
        return frozenset(item for item in kind if isinstance(item, str))
    return frozenset()


def _invites_others(schema: JSONObject) -> bool:
    extra = schema.get("additionalProperties")
    return extra is True or isinstance(extra, dict)


def _walk(schema: JSONValue, segments: tuple[Segment, ...], defs: _Defs, depth: int) -> Verdict:
    if not isinstance(schema, dict) or depth > MAX_SCHEMA_DEPTH:
        return "unverified"
    resolved, depth = _deref(schema, defs, depth)
    if resolved is None:
        return "unverified"
    if not segments:
        return "declared"
    composed_missing = False
    for keyword in ("allOf", "anyOf", "oneOf"):
        branches = resolved.get(keyword)
        if not isinstance(branches, list) or not branches:
            continue
        verdicts: set[Verdict] = {_walk(branch, segments, defs, depth + 1) for branch in branches}
        if "declared" in verdicts:
            return "declared"
        if "unverified" in verdicts:
            return "unverified"
        if keyword != "allOf":
            return "missing"
        # Every allOf branch was judged and none holds it: only this schema's own members can.
        composed_missing = True
    head, rest = segments[0], segments[1:]
    types = _declared_types(resolved)
    if isinstance(head, int):
        items = resolved.get("items")
        if isinstance(items, dict):
            return _walk(items, rest, defs, depth + 1)
        if (types and "array" not in types) or composed_missing:
            return "missing"
        return "unverified"
    properties = resolved.get("properties")
    if isinstance(properties, dict) and head in properties:
        return _walk(properties[head], rest, defs, depth + 1)
    if _invites_others(resolved):
        return "unverified"
    # A schema that declares its properties and does not invite others is taken at its word: a path
    # to an undeclared name is a typo far more often than a real, undocumented field.
    if isinstance(properties, dict) or (types and "object" not in types) or composed_missing:
        return "missing"
    return "unverified"


def _schema_at(schema: JSONValue, segments: tuple[Segment, ...], defs: _Defs, depth: int) -> JSONObject | None:
    """The subschema at ``segments`` via ``$ref``, ``properties``, ``items`` and the first ``allOf`` branch."""
    if not isinstance(schema, dict) or depth > MAX_SCHEMA_DEPTH:
        return None
    resolved, depth = _deref(schema, defs, depth)
    if resolved is None:
        return None
    if not segments:
        return resolved
    head, rest = segments[0], segments[1:]
    if isinstance(head, int):
        items = resolved.get("items")
        return _schema_at(items, rest, defs, depth + 1) if isinstance(items, dict) else None
    properties = resolved.get("properties")
    if isinstance(properties, dict) and head in properties:
        return _schema_at(properties[head], rest, defs, depth + 1)
    branches = resolved.get("allOf")
    for branch in branches if isinstance(branches, list) else ():
        found = _schema_at(branch, segments, defs, depth + 1)
        if found is not None:
            return found
    return None


def json_type_of(value: JSONValue) -> JSONType:
    """The JSON type of one value (``integer`` for whole numbers, ``number`` otherwise)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    return "object"


def schema_types(schema: JSONObject | None) -> frozenset[str] | None:
    """The JSON types a schema admits, when it says: from ``type``, else the ``const``/``enum`` literals.

    None when the schema declares no type (an undeclared side is never judged).
    """
    if not isinstance(schema, dict):
        return None
    declared = _declared_types(schema) & _JSON_TYPES
    if declared:
        return declared
    if "const" in schema:
        return frozenset((json_type_of(schema["const"]),))
    literals = schema.get("enum")
    if isinstance(literals, list) and literals:
        return frozenset(json_type_of(item) for item in literals)
    return None


def types_fit(source: frozenset[str], target: frozenset[str]) -> bool:
    """Whether a value of one of ``source`` types can go where ``target`` types are accepted.

    An integer is a number; nothing else converts.
    """
    return any(kind in target or (kind == "integer" and "number" in target) for kind in source)
