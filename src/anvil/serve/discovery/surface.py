"""The surface one caller sees: flat, searched through the meta-tools, or laddered behind lane cards.

:class:`Discovery` is built once per naming mode of a fleet (the search index over every mounted tool,
which answers supply which inputs, which tools are pinned) and shared by every caller; so is the
:class:`~anvil.serve.discovery.ladder.Ladder` (the lanes). :class:`CallerSurface` is one caller's view
of them: the tools its ``tools/list`` shows, the mode ``auto`` picked for it (its own listing, after
grants, measured against the surface budget), and the meta-tool and card calls. Search results and
lanes are filtered by the caller's listing, so a tool its grant hides is never returned; a hidden tool
stays callable (and refused by its grant) as a direct call would be.

Laddered (``--disclosure laddered``, original-core §5.15): ``tools/list`` at rest shows
``anvil_call_read``, ``anvil_call_write``, one card per lane holding a tool this caller sees, and the
pinned tools. Opening a card (calling it, no arguments) answers ``{"lane", "total", "tools": [...]}``,
its members each exactly as search returns them, as many as fit the response budget from the best
(``next_offset`` then says where to go on: call the card again with ``{"offset": next_offset}``), so a
client that never lists again calls them through the proxies. Where the transport keeps a session, the
MCP server also lists the opened lanes' members in that session's ``tools/list``
(:meth:`CallerSurface.tools_with`) and says so with ``notifications/tools/list_changed``. A ladder that
does not help (:func:`~anvil.serve.discovery.ladder.plan_ladder`: no lane of two tools, or no saving at
rest) is not served: the surface is then what ``auto`` picks, and :attr:`CallerSurface.plan` says why.

A proxied call is made through ``call`` (the composition's own entry point for a direct call), so
validation, grants, confirmation, keys, ledger, audit, metrics and the answer are the direct call's.
"""

from __future__ import annotations

import fnmatch
import json
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.model import Document, Operation
from anvil.runtime.envelope import ErrorEnvelope
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

if TYPE_CHECKING:
    from anvil.serve.discovery.index import SearchIndex
    from anvil.serve.discovery.ladder import Ladder, LadderPlan, Lane

__all__ = [
    "CallerSurface",
    "Card",
    "Discovery",
    "DiscoveryTool",
    "pinned_by",
    "pinned_names",
    "served_summary",
]

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


def pinned_names(tools: Iterable[DiscoveryTool]) -> frozenset[str]:
    """The wire names among ``tools`` that their document's ``disclosure.pinned`` names."""
    return frozenset(
        tool.name
        for tool in tools
        if tool.document.disclosure is not None
        and tool.document.disclosure.pinned
        and pinned_by(tool.document.disclosure.pinned, tool.op, tool.name)
    )


def served_summary(count: int, services: Sequence[str]) -> str:
    """What a caller is served, for the search tool's description: ``465 tools of pagerduty-rest``."""
    shown = ", ".join(services[:8])
    more = f" and {len(services) - 8} more APIs" if len(services) > 8 else ""
    return f"{count} tool{'s' if count != 1 else ''} of {shown}{more}"


class Discovery:
    """Search over one naming mode's tools: the index, the input suppliers and the pins (shared by callers).

    The index is built on first use (a searched surface uses it at once; a laddered one needs only the
    suppliers and the pins).
    """

    def __init__(self, tools: Sequence[DiscoveryTool]) -> None:
        from anvil.serve.discovery.chains import inputs_from  # a flat surface never imports the search modules

        self._tools = tuple(tools)
        self._index: SearchIndex | None = None
        self.suppliers: dict[str, dict[str, tuple[str, ...]]] = {}
        self.pinned: frozenset[str] = pinned_names(tools)
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

    @property
    def index(self) -> SearchIndex:
        """The search index over every tool (built once, on first use)."""
        found = self._index
        if found is None:
            from anvil.serve.discovery.index import IndexEntry, SearchIndex

            found = self._index = SearchIndex.build(
                IndexEntry.of(tool.op, tool.name, tool.document.schemas) for tool in self._tools
            )
        return found


@dataclass(frozen=True, slots=True)
class Card:
    """One lane card as one caller sees it: its lane, the members this caller sees, and its listing."""

    lane: Lane
    members: tuple[str, ...]
    definition: JSONObject


class CallerSurface:
    """One caller's surface: what its ``tools/list`` shows and how its meta-tool and card calls are answered.

    Args:
        flat: The caller's whole listing (after grants), in listing order.
        reads: The names among ``flat`` and the hidden tools whose operations are reads.
        settings: The disclosure mode and surface budget.
        discovery: Builds (or returns the shared) :class:`Discovery`; called only when search or the
            ladder is served.
        summary: What is served, for the search tool's description.
        dialable: True for a name the caller can dial directly (listed or hidden by its grant).
        result_budget: The response budget in tokens (0: none) search and card answers are fitted to.
        ladder: Builds (or returns the shared) :class:`~anvil.serve.discovery.ladder.Ladder`, by capability
            (False) or one lane per API (True: what a fleet whose capability cards alone are over the surface
            budget serves instead); called only when ``laddered`` is asked for (None: no ladder can be
            served, as if it had no lane).
    """

    __slots__ = (
        "_by_name",
        "_cards",
        "_dialable",
        "_discovery",
        "_handled",
        "_meta_tools",
        "_reads",
        "_result_budget",
        "ladder_tools",
        "measure",
        "mode",
        "plan",
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
        ladder: Callable[[bool], Ladder] | None = None,
    ) -> None:
        self.settings = settings
        self._dialable = dialable
        self.requested: DisclosureMode = settings.mode
        self._reads = reads
        self._result_budget = result_budget
        self._by_name = {tool["name"]: tool for tool in flat}
        self.measure: Measure = measure_listing(flat, settings.surface_budget)
        #: The ladder's decision when ``laddered`` was asked for (None otherwise).
        self.plan: LadderPlan | None = None
        #: The laddered listing at rest when ``laddered`` was asked for, served or declined (for reports).
        self.ladder_tools: tuple[JSONObject, ...] = ()
        self._discovery: Discovery | None = None
        self._meta_tools: dict[str, JSONObject] = {}
        self._cards: dict[str, Card] = {}
        self._handled: frozenset[str] = frozenset()
        self.tools: tuple[JSONObject, ...] = tuple(flat)
        self.mode: DisclosureMode = settings.mode
        if self.mode == "laddered":
            self._discovery = discovery()  # the input suppliers a card's answer names
            if self._laddered(flat, ladder(False) if ladder is not None else None, summary):
                fine = self.plan
                over = fine is not None and fine.rest_tokens > settings.surface_budget
                if not over or ladder is None or len({lane.bundle_id for lane in self._laned()}) < 2:
                    return
                # A fleet whose capability cards alone are over the budget: one card per API instead.
                if self._laddered(flat, ladder(True), summary):
                    return
                self._laddered(flat, ladder(False), summary)
                return
            self.mode = "auto"  # a ladder that does not help is not served: auto's pick is
        if self.mode == "auto":
            self.mode = "search" if self.measure.over else "flat"
        if self.mode == "flat":
            return
        found = self._discovery = discovery()
        found.index  # built now, at start-up, not on the first search  # noqa: B018
        meta = meta_tools(summary)
        self._meta_tools = {tool["name"]: tool for tool in meta}
        self._handled = frozenset(self._meta_tools)
        pinned = tuple(tool for tool in flat if tool["name"] in found.pinned)
        self.tools = (*meta, *pinned)

    def _laddered(self, flat: Sequence[JSONObject], ladder: Ladder | None, summary: str) -> bool:
        """Set up the laddered listing; False (nothing kept) when the ladder does not help this caller."""
        from anvil.serve.discovery.ladder import card_definition, plan_ladder  # laddered only (cold start)

        listed = self._by_name
        cards: dict[str, Card] = {}
        laned: set[str] = set()
        for lane in ladder.lanes if ladder is not None else ():
            shown = [(member, cost) for member, cost in zip(lane.members, lane.costs, strict=True) if member in listed]
            if not shown:  # a card that opens nothing for this caller is a dead end: not listed
                continue
            members = tuple(member for member, _ in shown)
            definition = card_definition(lane, len(members), sum(cost for _, cost in shown))
            cards[lane.card] = Card(lane, members, definition)
            laned.update(members)
        proxies = tuple(tool for tool in meta_tools(summary) if tool["name"] != SEARCH_TOOL)
        at_rest = tuple(tool for tool in flat if tool["name"] not in laned)  # pinned, or in no lane
        listing = (*proxies, *(card.definition for card in cards.values()), *at_rest)
        self.ladder_tools = listing
        rest = measure_listing(listing).tokens or 0
        plan = plan_ladder([len(card.members) for card in cards.values()], self._flat_tokens(rest), rest, 0)
        self.plan = plan
        if plan.mode != "laddered":
            return False
        self._meta_tools = {tool["name"]: tool for tool in proxies}
        self._cards = cards
        self._handled = frozenset((*self._meta_tools, *cards))
        self.tools = listing
        return True

    def _laned(self) -> tuple[Lane, ...]:
        return tuple(card.lane for card in self._cards.values())

    def _flat_tokens(self, rest: int) -> int:
        """The flat listing's tokens, counted whole only when a partial count cannot settle ``rest < flat``."""
        measured = self.measure
        if measured.tokens is not None and (not measured.over or measured.tokens > rest):
            return measured.tokens
        return measure_listing(list(self._by_name.values())).tokens or 0

    @property
    def serves_meta(self) -> bool:
        """True when meta-tools are served (every mode but ``flat``)."""
        return bool(self._meta_tools)

    @property
    def cards(self) -> tuple[Card, ...]:
        """The lane cards this caller's listing shows (laddered mode), in listing order."""
        return tuple(self._cards.values())

    def handles(self, name: str) -> bool:
        """True when ``name`` is a meta-tool or a card this surface serves (answered by :meth:`call_meta`)."""
        return name in self._handled

    def is_card(self, name: str) -> bool:
        """True when ``name`` is a lane card this surface serves."""
        return name in self._cards

    def tools_with(self, opened: Iterable[str]) -> tuple[JSONObject, ...]:
        """The listing with the members of the ``opened`` cards added (after the at-rest tools, in card order)."""
        if not self._cards:
            return self.tools
        wanted = set(opened)
        shown = {tool["name"] for tool in self.tools}
        extra: list[JSONObject] = []
        for card in self._cards.values():
            if card.lane.card not in wanted:
                continue
            for member in card.members:
                if member not in shown:
                    shown.add(member)
                    extra.append(self._by_name[member])
        return (*self.tools, *extra) if extra else self.tools

    def meta_schema(self, name: str) -> JSONObject | None:
        """The input schema of meta-tool or card ``name`` when served, else None."""
        tool = self._meta_tools.get(name)
        if tool is None:
            card = self._cards.get(name)
            tool = card.definition if card is not None else None
        return tool["inputSchema"] if tool is not None else None

    def at_rest(self) -> Measure:
        """What the listing costs at rest, counted (for reports)."""
        return measure_listing(self.tools)

    def search(self, query: str, limit: int) -> list[JSONObject]:
        """The caller's tools that best match ``query``, each as flat ``tools/list`` lists it, plus suppliers."""
        discovery = self._discovery
        if discovery is None:
            return []
        names = discovery.index.search(query, limit, allowed=self._by_name.__contains__)
        return self._fitted(self._entry(name) for name in names)

    def _entry(self, name: str) -> JSONObject:
        """Tool ``name`` as flat ``tools/list`` lists it, plus ``_meta["anvil/inputs_from"]`` for supplied inputs."""
        by_name = self._by_name
        definition = by_name[name]
        discovery = self._discovery
        supplied = discovery.suppliers.get(name) if discovery is not None else None
        shown = {
            field: [supplier for supplier in suppliers if supplier in by_name and supplier != name]
            for field, suppliers in (supplied or {}).items()
        }
        shown = {field: suppliers for field, suppliers in shown.items() if suppliers}
        if not shown:
            return definition
        meta: Any = definition.get("_meta")
        listed = meta if isinstance(meta, dict) else {}
        return {**definition, "_meta": {**listed, INPUTS_FROM_META: shown}}

    def _fitted(self, entries: Iterable[JSONObject]) -> list[JSONObject]:
        """``entries`` from the best, as many whole ones as fit the response budget (at least one)."""
        if self._result_budget <= 0:
            return list(entries)
        room = self._result_budget * _RESULT_CHARS_PER_TOKEN
        kept: list[JSONObject] = []
        for entry in entries:
            room -= len(json.dumps(entry, separators=(",", ":"), ensure_ascii=False))
            if kept and room < 0:
                break
            kept.append(entry)
        return kept

    def open_card(self, name: str, arguments: Mapping[str, JSONValue] | None) -> CallResult:
        """Open card ``name``: ``{"lane", "total", "tools", "next_offset"?}``, members from ``offset`` on."""
        from anvil.serve.discovery.ladder import OFFSET_ARGUMENT

        card = self._cards[name]
        args = arguments or {}
        extra = sorted(key for key in args if key != OFFSET_ARGUMENT)
        if extra:
            shown = ", ".join(repr(key[:64]) for key in extra[:5])
            return _invalid(
                name, InvalidInput(f"Unknown argument(s) {shown}; a lane card takes only offset.", extra[0][:64])
            )
        offset = args.get(OFFSET_ARGUMENT, 0)
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            return _invalid(
                name, InvalidInput("'offset' must be an integer of 0 or more (a next_offset).", OFFSET_ARGUMENT)
            )
        members = card.members
        tools = self._fitted(self._entry(member) for member in members[offset:])
        found: JSONObject = {"lane": card.lane.capability_id, "total": len(members), "tools": tools}
        if offset + len(tools) < len(members):
            found["next_offset"] = offset + len(tools)
        return CallResult(kind="success", data=found, structured=found)

    async def call_meta(
        self,
        name: str,
        arguments: Mapping[str, JSONValue] | None,
        meta: Mapping[str, Any] | None,
        call: Call,
    ) -> CallResult:
        """Answer meta-tool or card ``name``; ``call`` makes a direct call (the proxies' target).

        Raises:
            UnknownTool: a proxy names a tool nobody can dial here (answered as a direct call to it is).
        """
        if name in self._cards:
            return self.open_card(name, arguments)
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
        if proxied.tool in META_TOOL_NAMES or proxied.tool in self._cards:
            return _invalid(name, InvalidInput("A proxy calls an API tool, not a meta-tool or a lane card.", "tool"))
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
