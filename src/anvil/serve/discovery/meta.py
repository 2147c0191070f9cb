"""The three meta-tools of a searched surface: their names, their listings, and how their input is read.

* ``anvil_search_tools`` ``{query, limit?}`` (read-only): the tools that do a task, best first, each
  exactly as ``tools/list`` would list it in flat mode, plus ``_meta["anvil/inputs_from"]``;
* ``anvil_call_read`` ``{tool, arguments?}`` (read-only annotations): calls a read found by search;
  a mutation is refused before anything runs (``discovery/write_through_read``, naming
  ``anvil_call_write``);
* ``anvil_call_write`` ``{tool, arguments?}`` (destructive, not idempotent annotations): calls a
  mutation (a read is served too: it only asks the client for more care than it needs).

A proxied call is the call itself: the request's ``_meta`` (``idempotency_key``, ``stage``) is
forwarded as it came, and the answer, ``_meta.effect``, audit line, ledger row and metrics are the
real tool's. These names are a public contract; an operation tool that would collide with one is
refused at start-up (``fleet/tool_collision``) and by certify.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue

__all__ = [
    "CALL_READ_TOOL",
    "CALL_WRITE_TOOL",
    "DEFAULT_LIMIT",
    "INPUTS_FROM_META",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MAX_TOOL_NAME_CHARS",
    "META_TOOL_NAMES",
    "SEARCH_TOOL",
    "InvalidInput",
    "ProxyCall",
    "SearchRequest",
    "meta_tools",
    "read_proxy_call",
    "read_search",
]

SEARCH_TOOL: Final = "anvil_search_tools"
CALL_READ_TOOL: Final = "anvil_call_read"
CALL_WRITE_TOOL: Final = "anvil_call_write"
#: Every meta-tool name, in listing order.
META_TOOL_NAMES: Final = (SEARCH_TOOL, CALL_READ_TOOL, CALL_WRITE_TOOL)
#: The ``_meta`` key of a search entry mapping each required input to the tools whose answers supply it.
INPUTS_FROM_META: Final = "anvil/inputs_from"
MAX_QUERY_CHARS: Final = 500
MAX_LIMIT: Final = 20
DEFAULT_LIMIT: Final = 5
MAX_TOOL_NAME_CHARS: Final = 256

_READ_ONLY: Final[JSONObject] = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}


def _proxy_schema(kind: str) -> JSONObject:
    return {
        "type": "object",
        "properties": {
            "tool": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_TOOL_NAME_CHARS,
                "description": f"The exact name of the {kind} tool, as anvil_search_tools returned it.",
            },
            "arguments": {
                "type": "object",
                "description": "The tool's own arguments, as its inputSchema describes them.",
            },
        },
        "required": ["tool"],
        "additionalProperties": False,
    }


def meta_tools(summary: str) -> tuple[JSONObject, ...]:
    """The three meta-tools as ``tools/list`` lists them; ``summary`` says what is served (e.g. ``465 tools of
    pagerduty-rest``) and ends the search tool's description."""
    search: JSONObject = {
        "name": SEARCH_TOOL,
        "title": "Search the API's tools",
        "description": (
            'Find the tools that do a task: describe the work in plain words ("close the incident I opened '
            "this morning\"), or give a tool's exact name, its operation id or 'METHOD /path'. Answers the best "
            "tools first, each as tools/list would list it (name, description, inputSchema, annotations, _meta); "
            "_meta['anvil/inputs_from'] names, for each required input, the tools whose answers supply it. Call "
            "a read with anvil_call_read and a write with anvil_call_write (or the tool directly by its name). "
            f"Serves {summary}."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_QUERY_CHARS,
                    "description": "What you want to do, or a tool name, operation id or 'METHOD /path'.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "default": DEFAULT_LIMIT,
                    "description": f"How many tools to return (1-{MAX_LIMIT}, default {DEFAULT_LIMIT}).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        "outputSchema": {
            "type": "object",
            "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
            "required": ["tools"],
        },
        "annotations": {"title": "Search the API's tools", **_READ_ONLY},
    }
    read: JSONObject = {
        "name": CALL_READ_TOOL,
        "title": "Call a read-only tool",
        "description": (
            "Call a read-only tool found with anvil_search_tools: {tool: its name, arguments: its arguments}. "
            "The answer is the tool's own. A tool that changes something is refused here: use anvil_call_write."
        ),
        "inputSchema": _proxy_schema("read-only"),
        "annotations": {"title": "Call a read-only tool", **_READ_ONLY},
    }
    write: JSONObject = {
        "name": CALL_WRITE_TOOL,
        "title": "Call a tool that changes something",
        "description": (
            "Call a tool that changes something, found with anvil_search_tools: {tool: its name, arguments: its "
            "arguments}. A write that needs confirmation takes confirm: true among its arguments. Send "
            "_meta.idempotency_key on this request so a retry never writes twice, and _meta.stage: true to "
            "perform the tool's draft form. The answer's _meta.effect says what changed and how to undo it."
        ),
        "inputSchema": _proxy_schema("write"),
        "annotations": {
            "title": "Call a tool that changes something",
            "readOnlyHint": False,
            "destructiveHint": True,
            "idempotentHint": False,
            "openWorldHint": False,
        },
    }
    return search, read, write


@dataclass(frozen=True, slots=True)
class InvalidInput:
    """A meta-tool input that cannot be used: what is wrong, and where."""

    message: str
    field: str


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A checked ``anvil_search_tools`` input."""

    query: str
    limit: int


@dataclass(frozen=True, slots=True)
class ProxyCall:
    """A checked proxy input: the tool to call and its arguments."""

    tool: str
    arguments: JSONObject


def _extra(arguments: Mapping[str, JSONValue], allowed: tuple[str, ...]) -> InvalidInput | None:
    extra = sorted(key for key in arguments if key not in allowed)
    if extra:
        shown = ", ".join(repr(key[:64]) for key in extra[:5])
        return InvalidInput(f"Unknown argument(s) {shown}; this tool takes {', '.join(allowed)}.", extra[0][:64])
    return None


def read_search(arguments: Mapping[str, JSONValue] | None) -> SearchRequest | InvalidInput:
    """The search input, checked against the published schema."""
    args = arguments or {}
    wrong = _extra(args, ("query", "limit"))
    if wrong is not None:
        return wrong
    query = args.get("query")
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY_CHARS:
        return InvalidInput(f"'query' must be a non-empty string of at most {MAX_QUERY_CHARS} characters.", "query")
    limit = args.get("limit", DEFAULT_LIMIT)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        return InvalidInput(f"'limit' must be an integer from 1 to {MAX_LIMIT}.", "limit")
    return SearchRequest(query, limit)


def read_proxy_call(arguments: Mapping[str, JSONValue] | None) -> ProxyCall | InvalidInput:
    """A proxy's input, checked against the published schema (the tool's own arguments are its own tool's to check)."""
    args = arguments or {}
    wrong = _extra(args, ("tool", "arguments"))
    if wrong is not None:
        return wrong
    tool = args.get("tool")
    if not isinstance(tool, str) or not tool or len(tool) > MAX_TOOL_NAME_CHARS:
        return InvalidInput(
            f"'tool' must be a tool name of 1-{MAX_TOOL_NAME_CHARS} characters (as anvil_search_tools returns it).",
            "tool",
        )
    inner = args.get("arguments", {})
    if inner is None:
        inner = {}
    if not isinstance(inner, dict):
        return InvalidInput("'arguments' must be an object: the tool's own arguments.", "arguments")
    return ProxyCall(tool, inner)
