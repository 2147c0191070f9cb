"""The argument grammar of ``anvil run`` (original-core §7): tokens, the ``--mcp`` target, typed values.

Pure functions: nothing here reads the environment, files or the network. A refusal is raised as
:class:`Refused` carrying the ``validation_error`` envelope the command prints (exit 2).
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

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


def coerce_flag(op_id: str, flag: str, values: list[str | bool], schema: JSONObject) -> JSONValue:
    """A flag's value(s) as the schema's type; a valued flag without a value is a validation_error."""
    kind = schema_type(schema)
    refuse = Refused(
        refusal(op_id, "validation_error", f"{flag} is not a valid {kind or 'value'}.", {"field": flag, "type": kind})
    )
    if kind == "array":
        declared = schema.get("items")
        items: JSONObject = declared if isinstance(declared, dict) else {}
        out: list[JSONValue] = []
        for value in values:
            if not isinstance(value, str):
                raise Refused(refusal(op_id, "validation_error", f"{flag} needs a value.", {"field": flag}))
            if value.lstrip().startswith("["):
                try:
                    parsed = json.loads(value)
                except ValueError:
                    raise refuse from None
                if not isinstance(parsed, list):
                    raise refuse
                out.extend(parsed)
            else:
                out.extend(_scalar(op_id, flag, part, items) for part in value.split(","))
        return out
    value = values[-1]
    if not isinstance(value, str):
        if kind == "boolean":
            return True
        raise Refused(refusal(op_id, "validation_error", f"{flag} needs a value.", {"field": flag}))
    return _scalar(op_id, flag, value, schema)


def _scalar(op_id: str, flag: str, value: str, schema: JSONObject) -> JSONValue:
    kind = schema_type(schema)
    refuse = Refused(
        refusal(op_id, "validation_error", f"{flag} is not a valid {kind or 'value'}.", {"field": flag, "type": kind})
    )
    try:
        if kind == "integer":
            return int(value.strip())
        if kind == "number":
            number = float(value.strip())
            if not math.isfinite(number):
                raise refuse
            return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number
        if kind == "boolean":
            lowered = value.strip().lower()
            if lowered not in ("true", "false"):
                raise refuse
            return lowered == "true"
        if kind == "object":
            parsed = json.loads(value)
            if not isinstance(parsed, dict):
                raise refuse
            return parsed
    except ValueError:
        raise refuse from None
    return value


def schema_type(schema: JSONObject) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if isinstance(kind, str):
        return kind
    for combinator in ("allOf", "anyOf", "oneOf"):
        arms = schema.get(combinator)
        if isinstance(arms, list):
            for arm in arms:
                found = schema_type(arm) if isinstance(arm, dict) else None
                if found is not None:
                    return found
    if "properties" in schema:
        return "object"
    return None
