"""The argument grammar of ``anvil run`` (original-core §7): tokens, the ``--mcp`` target, typed values.

Pure functions: nothing here reads the environment, files or the network. A refusal is raised as
:class:`Refused` carrying the ``validation_error`` envelope the command prints (exit 2).
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import field
from typing import Any, Final
from urllib.parse import urlsplit

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue

__all__ = [
    "BOOLEAN_FLAGS",
    "CONTROL_FLAGS",
    "VIEW_FLAGS",
    "Invocation",
    "Refused",
    "Target",
    "coerce_flag",
    "parse_target",
    "parse_tokens",
    "refusal",
    "schema_type",
    "schema_types",
    "suggest",
]

#: Flags that never take a value.
BOOLEAN_FLAGS: Final = frozenset(
    {"confirm", "dry-run", "json", "trace", "help", "no-retries", "stage", "validate-input"}
)
#: The read-only views, in precedence order; each applies only when given bare.
VIEW_FLAGS: Final = ("help", "explain", "policy", "schema", "examples", "errors")
_VALUED: Final = frozenset(
    {"idempotency-key", "auth-profile", "base-url", "timeout", "mcp", "mcp-token-env", "input", "body", "projection"}
)
#: Every flag that is not a business input (``--body`` is the whole-body input).
CONTROL_FLAGS: Final = (BOOLEAN_FLAGS | _VALUED | frozenset(VIEW_FLAGS)) - {"body"}


# --- the grammar -----------------------------------------------------------------------------------


@dataclass(slots=True)
class Invocation:
    """Parsed tokens: positional ``words`` and ``flags`` (name without ``--`` -> values in order; bare = True)."""

    words: list[str] = field(default_factory=list)
    flags: dict[str, list[str | bool]] = field(default_factory=dict)

    def flag(self, name: str) -> str | bool | None:
        """The last value given for ``name``, or None."""
        values = self.flags.get(name)
        return values[-1] if values else None

    def bare(self, name: str) -> bool:
        """True when ``name`` was given without a value."""
        return self.flag(name) is True


def parse_tokens(tokens: list[str]) -> Invocation:
    """Split ``tokens`` into words and flags by the grammar of original-core §7."""
    out = Invocation()
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token == "--":
            out.words.extend(tokens[index:])
            break
        if token in ("-h", "--help"):
            out.flags.setdefault("help", []).append(True)
            continue
        if not token.startswith("--") or token == "--":
            out.words.append(token)
            continue
        name, eq, value = token[2:].partition("=")
        given: str | bool
        if eq:
            given = value
        elif name in BOOLEAN_FLAGS or index >= len(tokens) or tokens[index].startswith("--"):
            given = True
        else:
            given = tokens[index]
            index += 1
        out.flags.setdefault(name, []).append(given)
    return out


# --- the MCP target --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """Where a call goes: ``direct``, ``stdio``, ``http`` (Streamable HTTP) or ``sse``, with its URL."""

    kind: str
    url: str | None = None


def parse_target(value: str | bool | None) -> Target | None:
    """The ``--mcp`` target; None when the value is malformed. Bare ``--mcp`` is stdio; unset is direct."""
    if value is None or value in ("direct", "off", "none", ""):
        return Target("direct")
    if value is True or value in ("stdio", "local"):
        return Target("stdio")
    text = str(value)
    kind = "http"
    if text.startswith("sse:"):
        kind, text = "sse", text[4:]
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return Target(kind, text)


# --- small helpers ---------------------------------------------------------------------------------


def _edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, left in enumerate(a, 1):
        current = [i]
        for j, right in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (left != right)))
        previous = current
    return previous[-1]


def suggest(word: str, choices: list[str]) -> str | None:
    best = min(choices, key=lambda choice: (_edit_distance(word, choice), choice), default=None)
    if best is None or _edit_distance(word, best) > max(2, math.ceil(len(word) / 3)):
        return None
    return best


def refusal(op_id: str, code: str, message: str, details: JSONObject | None = None) -> JSONObject:
    error: JSONObject = {
        "code": code,
        "message": message,
        "retryable": False,
        "safe_to_retry": False,
        "operation": op_id,
        "trace_id": f"trace_{uuid.uuid4()}",
    }
    if details:
        error["details"] = details
    return {"error": error}


class Refused(Exception):
    """A CLI-side refusal before anything is sent: carries its envelope."""

    def __init__(self, envelope: JSONObject) -> None:
        super().__init__(envelope["error"]["code"])
        self.envelope = envelope


def coerce_flag(
    op_id: str, flag: str, values: list[str | bool], schema: JSONObject, defs: JSONObject | None = None
) -> JSONValue:
    """A flag's value(s) as the schema's type; a valued flag without a value is a validation_error.

    ``defs`` are the ``$defs`` of the operation's input schema, so a ``$ref`` types its flag as what it
    names (a whole body that refers to its schema is JSON, as MCP takes it). When the schema admits
    several types (``anyOf: [integer, string]``), each is tried in its order and a string admits any
    text: the CLI refuses only a value MCP would refuse for its type too.
    """
    defs = defs or {}
    kinds = schema_types(schema, defs)
    if kinds[:1] == ["array"]:
        declared = _resolved(schema, defs).get("items")
        items: JSONObject = declared if isinstance(declared, dict) else {}
        out: list[JSONValue] = []
        for value in values:
            if not isinstance(value, str):
                raise Refused(refusal(op_id, "validation_error", f"{flag} needs a value.", {"field": flag}))
            if value.lstrip().startswith("["):
                try:
                    parsed = json.loads(value)
                except ValueError:
                    raise _not_valid(op_id, flag, "array") from None
                if not isinstance(parsed, list):
                    raise _not_valid(op_id, flag, "array")
                out.extend(parsed)
            else:
                out.extend(_scalar(op_id, flag, part, schema_types(items, defs)) for part in value.split(","))
        return out
    value = values[-1]
    if not isinstance(value, str):
        if "boolean" in kinds:
            return True
        raise Refused(refusal(op_id, "validation_error", f"{flag} needs a value.", {"field": flag}))
    return _scalar(op_id, flag, value, kinds)


def _not_valid(op_id: str, flag: str, kind: str | None) -> Refused:
    return Refused(
        refusal(op_id, "validation_error", f"{flag} is not a valid {kind or 'value'}.", {"field": flag, "type": kind})
    )


def _scalar(op_id: str, flag: str, value: str, kinds: list[str]) -> JSONValue:
    """``value`` as the first of ``kinds`` it reads as (text as is when none is declared)."""
    for kind in kinds:
        if kind == "string":
            return value
        parsed = _as(kind, value)
        if parsed is not _UNREAD:
            return parsed
    if not kinds:
        return value
    raise _not_valid(op_id, flag, kinds[0])


_UNREAD: Final = object()


def _as(kind: str, value: str) -> Any:
    """``value`` read as a JSON ``kind``, or :data:`_UNREAD`."""
    text = value.strip()
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            number = float(text)
            if not math.isfinite(number):
                return _UNREAD
            return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        if kind == "boolean":
            return text.lower() == "true" if text.lower() in ("true", "false") else _UNREAD
        if kind in ("object", "array"):
            parsed = json.loads(value)
            return parsed if isinstance(parsed, dict if kind == "object" else list) else _UNREAD
    except ValueError:
        return _UNREAD
    return _UNREAD


_MAX_REF_HOPS: Final = 32


def _resolved(schema: JSONObject, defs: JSONObject) -> JSONObject:
    """``schema`` with its local ``#/$defs/<Name>`` reference followed (a chain of them too)."""
    for _ in range(_MAX_REF_HOPS):
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            return schema
        target = defs.get(ref.removeprefix("#/$defs/"))
        if not isinstance(target, dict):
            return schema
        schema = target
    return schema


def schema_types(schema: JSONObject, defs: JSONObject | None = None, depth: int = 0) -> list[str]:
    """The JSON types ``schema`` admits, in the order it declares them, ``null`` left out: its ``type``
    (a list in order), else its ``allOf``/``anyOf``/``oneOf`` arms', else ``object`` for ``properties``,
    else its ``const``/``enum`` literals' types. Empty when it declares none."""
    schema = _resolved(schema, defs or {})
    kind = schema.get("type")
    declared = (
        [kind] if isinstance(kind, str) else [k for k in kind if isinstance(k, str)] if isinstance(kind, list) else []
    )
    out = [k for k in declared if k != "null"]
    if not declared and depth < _MAX_REF_HOPS:
        for combinator in ("allOf", "anyOf", "oneOf"):
            arms = schema.get(combinator)
            for arm in arms if isinstance(arms, list) else []:
                if isinstance(arm, dict):
                    out += [k for k in schema_types(arm, defs, depth + 1) if k not in out]
        if not out and "properties" in schema:
            out = ["object"]
        if not out:
            literals = [schema["const"]] if "const" in schema else schema.get("enum")
            for literal in literals if isinstance(literals, list) else []:
                found = _literal_type(literal)
                if found is not None and found not in out:
                    out.append(found)
    return out


def _literal_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object" if isinstance(value, dict) else None


def schema_type(schema: JSONObject, defs: JSONObject | None = None) -> str | None:
    """The first JSON type ``schema`` admits (see :func:`schema_types`), None when it declares none."""
    kinds = schema_types(schema, defs)
    return kinds[0] if kinds else None
