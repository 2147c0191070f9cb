"""The surface one caller sees: flat, or searched through the meta-tools (and, later, laddered).

:class:`Discovery` is built once per naming mode of a fleet (the search index over every mounted tool,
which answers supply which inputs, which tools are pinned) and shared by every caller.
:class:`CallerSurface` is one caller's view of it: the tools its ``tools/list`` shows, the mode
``auto`` picked for it (its own listing, after grants, measured against the surface budget), and the
meta-tool calls. Search results are filtered by the caller's listing, so a tool its grant hides is
never returned; a hidden tool stays callable (and refused by its grant) as a direct call would be.

A proxied call is made through ``call`` (the composition's own entry point for a direct call), so
validation, grants, confirmation, keys, ledger, audit, metrics and the answer are the direct call's.
"""

from __future__ import annotations

import fnmatch
import json
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from anvil._types import JSONObject, JSONValue
from anvil.air.model import Document, Operation
from anvil.runtime.envelope import ErrorEnvelope
from anvil.serve.discovery.chains import inputs_from
from anvil.serve.discovery.index import IndexEntry, SearchIndex
from anvil.serve.discovery.meta import (
    CALL_READ_TOOL,
    CALL_WRITE_TOOL,
    INPUTS_FROM_META,
    META_TOOL_NAMES,
    SEARCH_TOOL,
    InvalidInput,
    meta_tools,
    read_proxy_call,
    read_search,
)
from anvil.serve.discovery.modes import DisclosureMode, DisclosureSettings, Measure, measure_listing
from anvil.serve.mcp.provider import UnknownTool
from anvil.serve.mcp.results import CallResult

__all__ = ["CallerSurface", "Discovery", "DiscoveryTool", "pinned_by"]

#: Characters per token assumed when fitting search results to the response budget (the original's fallback).
_RESULT_CHARS_PER_TOKEN: Final = 4

Call = Callable[[str, Mapping[str, JSONValue] | None, Mapping[str, Any] | None], Awaitable[CallResult | None]]


@dataclass(frozen=True, slots=True)
class DiscoveryTool:
    """One mounted tool as discovery knows it: its wire name, its operation and its bundle's document."""

    name: str
    op: Operation
    document: Document


def pinned_by(patterns: Iterable[str], op: Operation, name: str) -> bool:
    """True when a pin names ``op``: its id, its id without the service, or its tool name (globs allowed)."""
    rest = op.id.partition(".")[2]
    candidates = (op.id, rest, name, op.mcp.tool_name)
    return any(fnmatch.fnmatchcase(candidate, pattern) for pattern in patterns for candidate in candidates)


class Discovery:
    """Search over one naming mode's tools: the index, the input suppliers and the pins (shared by callers)."""

    def __init__(self, tools: Sequence[DiscoveryTool]) -> None:
        self.index = SearchIndex.build(IndexEntry.of(tool.op, tool.name) for tool in tools)
        self.suppliers: dict[str, dict[str, tuple[str, ...]]] = {}
        self.pinned: frozenset[str] = frozenset(
            tool.name
            for tool in tools
            if tool.document.disclosure is not None
            and tool.document.disclosure.pinned
            and pinned_by(tool.document.disclosure.pinned, tool.op, tool.name)
        )
        by_document: dict[int, tuple[Document, dict[str, str]]] = {}
        for tool in tools:
            found = by_document.setdefault(id(tool.document), (tool.document, {}))
            found[1][tool.op.id] = tool.name
        names = {tool.op.id: tool.name for tool in tools}
        for document, named in by_document.values():
            for op_id, supplied in inputs_from(document, named.get).items():
                name = names.get(op_id)
                if name is not None and supplied:
                    self.suppliers[name] = dict(supplied)


class CallerSurface:
    """One caller's surface: what its ``tools/list`` shows and how its meta-tool calls are answered.

    Args:
        flat: The caller's whole listing (after grants), in listing order.
        reads: The names among ``flat`` and the hidden tools whose operations are reads.
        settings: The disclosure mode and surface budget.
        discovery: Builds (or returns the shared) :class:`Discovery`; called only when search is served.
        summary: What is served, for the search tool's description.
        dialable: True for a name the caller can dial directly (listed or hidden by its grant).
        result_budget: The response budget in tokens (0: none) search answers are fitted to.
    """

    __slots__ = (
        "_by_name",
        "_dialable",
        "_discovery",
        "_meta_tools",
        "_reads",
        "_result_budget",
        "measure",
        "mode",
        "requested",
        "settings",
        "tools",
    )

    def __init__(
        self,
        flat: Sequence[JSONObject],
        reads: frozenset[str],
        settings: DisclosureSettings,
        discovery: Callable[[], Discovery],
        summary: str,
        dialable: Callable[[str], bool],
        result_budget: int = 0,
    ) -> None:
        self.settings = settings
        self._dialable = dialable
        self.requested: DisclosureMode = settings.mode
        self._reads = reads
        self._result_budget = result_budget
        self._by_name = {tool["name"]: tool for tool in flat}
        self.measure: Measure = measure_listing(flat, settings.surface_budget)
        mode = settings.mode
        if mode == "auto":
            mode = "search" if self.measure.over else "flat"
        self.mode: DisclosureMode = mode
        self._discovery: Discovery | None = None
        self._meta_tools: dict[str, JSONObject] = {}
        if mode == "flat":
            self.tools: tuple[JSONObject, ...] = tuple(flat)
            return
        found = self._discovery = discovery()
        meta = meta_tools(summary)
        self._meta_tools = {tool["name"]: tool for tool in meta}
        pinned = tuple(tool for tool in flat if tool["name"] in found.pinned)
        self.tools = (*meta, *pinned)

    @property
    def serves_meta(self) -> bool:
        """True when the meta-tools are served (every mode but ``flat``)."""
        return bool(self._meta_tools)

    def meta_schema(self, name: str) -> JSONObject | None:
        """The input schema of meta-tool ``name`` when served, else None."""
        tool = self._meta_tools.get(name)
        return tool["inputSchema"] if tool is not None else None

    def at_rest(self) -> Measure:
        """What the listing costs at rest, counted (for reports)."""
        return measure_listing(self.tools)

    def search(self, query: str, limit: int) -> list[JSONObject]:
        """The caller's tools that best match ``query``, each as flat ``tools/list`` lists it, plus suppliers."""
        discovery = self._discovery
        if discovery is None:
            return []
        by_name = self._by_name
        names = discovery.index.search(query, limit, allowed=by_name.__contains__)
        entries: list[JSONObject] = []
        for name in names:
            definition = by_name[name]
            supplied = discovery.suppliers.get(name)
            shown = {
                field: [supplier for supplier in suppliers if supplier in by_name and supplier != name]
                for field, suppliers in (supplied or {}).items()
            }
            shown = {field: suppliers for field, suppliers in shown.items() if suppliers}
            if shown:
                meta: Any = definition.get("_meta")
                listed = meta if isinstance(meta, dict) else {}
                definition = {**definition, "_meta": {**listed, INPUTS_FROM_META: shown}}
            entries.append(definition)
        return self._fitted(entries)

    def _fitted(self, entries: list[JSONObject]) -> list[JSONObject]:
        """``entries`` from the best, as many whole ones as fit the response budget (at least one)."""
        if self._result_budget <= 0:
            return entries
        room = self._result_budget * _RESULT_CHARS_PER_TOKEN
        kept: list[JSONObject] = []
        for entry in entries:
            room -= len(json.dumps(entry, separators=(",", ":"), ensure_ascii=False))
            if kept and room < 0:
                break
            kept.append(entry)
        return kept

    async def call_meta(
        self,
        name: str,
        arguments: Mapping[str, JSONValue] | None,
        meta: Mapping[str, Any] | None,
        call: Call,
    ) -> CallResult:
        """Answer meta-tool ``name``; ``call`` makes a direct call (the proxies' target).

        Raises:
            UnknownTool: a proxy names a tool nobody can dial here (answered as a direct call to it is).
        """
        if name == SEARCH_TOOL:
            request = read_search(arguments)
            if isinstance(request, InvalidInput):
                return _invalid(name, request)
            tools = self.search(request.query, request.limit)
            found: JSONObject = {"tools": tools}
            return CallResult(kind="success", data=found, structured=found)
        proxied = read_proxy_call(arguments)
        if isinstance(proxied, InvalidInput):
            return _invalid(name, proxied)
        if proxied.tool in META_TOOL_NAMES:
            return _invalid(name, InvalidInput("A proxy calls an API tool, not another meta-tool.", "tool"))
        if not self._dialable(proxied.tool):
            raise UnknownTool(proxied.tool)
        if name == CALL_READ_TOOL and proxied.tool not in self._reads:
            envelope = _envelope(
                name,
                "validation_error",
                f"'{proxied.tool}' changes something, so anvil_call_read does not call it; nothing was called. "
                f"Call it with {CALL_WRITE_TOOL}.",
                {"code": "discovery/write_through_read", "tool": proxied.tool, "use": CALL_WRITE_TOOL},
            )
            return CallResult(kind="error", envelope=envelope)
        result = await call(proxied.tool, proxied.arguments, meta)
        if result is None:
            raise UnknownTool(proxied.tool)
        return result


def _envelope(tool: str, code: str, message: str, details: JSONObject) -> ErrorEnvelope:
    return ErrorEnvelope(
        code=code,
        message=message,
        retryable=False,
        safe_to_retry=False,
        operation=tool,
        trace_id=f"trace_{uuid.uuid4()}",
        details=details,
    )


def _invalid(tool: str, problem: InvalidInput) -> CallResult:
    details: JSONObject = {"code": "discovery/invalid_arguments", "field": problem.field}
    return CallResult(kind="error", envelope=_envelope(tool, "validation_error", problem.message, details))
