"""The disclosure ladder (original-core §5.15): lanes of tools, one lane card each, members listed once opened.

A **lane** groups the approved tools of one capability: an operation's lane is its capability
(``Operation.capability_id``, described by the document's ``capabilities``), else its first tag, else
its resource, else its service (the compiler's grouping, original-core §1.15, for AIR that carries no
capability). A tool pinned by ``disclosure.pinned`` is in no lane: it is listed at rest. A fleet whose
capability cards alone would be over the surface budget (every corpus spec together: about 79,000
tokens of cards) ladders one lane per API instead (``Ladder.build(..., by_service=True)``: one card
``<api>__open_<service>`` each), whose members a card answers page by page.

Each lane is served as one read-only **card** tool ``open_<capability id>`` (every character outside
``[A-Za-z0-9_-]`` becomes ``_``; fleet-prefixed like every other tool when the surface is prefixed).
Its title is ``Open <Display Name>``, its description the original's: the capability's description,
``Opens N tool(s) for <Display Name>.``, ``Covers:`` the first eight distinct ``<action> <resource>`` of
its members and ``Use for requests like:`` the first five intent examples. Its ``_meta``:

* ``anvil/lane``: true (this tool is a card, not an operation);
* ``anvil/capability_id``: the capability the card opens;
* ``anvil/lane_tools``: how many tools it opens for this caller;
* ``anvil/lane_tokens``: what those tools cost as the compiler measured them (AIR ``disclosureCost``).

Card names share the tools' namespace: a card named like an operation tool, a meta-tool or another card
is a collision (:attr:`Ladder.collisions`), refused at start (``fleet/tool_collision``) and by certify.

:func:`plan_ladder` is the original's decision (``ladderPlan``): a ladder is served only when it helps
(lanes exist, one holds two tools or more, and the surface at rest is smaller than flat); its reasons
are the original's ``LadderReason`` values. Pure and deterministic: the same tools give the same lanes,
in the same order, with the same cards.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final, Literal

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.model import Capability, Document, Operation
from anvil.air.naming import snake, split_words, title_case
from anvil.serve.auth.naming import fleet_tool_name

__all__ = [
    "CAPABILITY_META",
    "CARD_INPUT_SCHEMA",
    "CARD_PREFIX",
    "LANE_META",
    "LANE_TOKENS_META",
    "LANE_TOOLS_META",
    "OFFSET_ARGUMENT",
    "Ladder",
    "LadderMode",
    "LadderPlan",
    "LadderReason",
    "Lane",
    "LaneTool",
    "card_definition",
    "card_name",
    "lane_description",
    "plan_ladder",
]

#: What every card's name starts with.
CARD_PREFIX: Final = "open_"
#: ``_meta`` key: true on a lane card.
LANE_META: Final = "anvil/lane"
#: ``_meta`` key: the capability a card opens.
CAPABILITY_META: Final = "anvil/capability_id"
#: ``_meta`` key: how many tools a card opens for this caller.
LANE_TOOLS_META: Final = "anvil/lane_tools"
#: ``_meta`` key: the compiler-measured tokens of those tools (AIR ``disclosureCost.toolTokens``, summed).
LANE_TOKENS_META: Final = "anvil/lane_tokens"
#: A card's only (optional) input: where to go on when an earlier answer was cut to the response budget.
OFFSET_ARGUMENT: Final = "offset"
#: At most this many ``<action> <resource>`` phrases on a card (the original's ``MEMBER_VOCABULARY_LIMIT``).
MEMBER_VOCABULARY_LIMIT: Final = 8
#: At most this many intent examples on a card.
ROUTING_PHRASES_LIMIT: Final = 5
#: A card's input: nothing, or the ``next_offset`` of its last answer.
CARD_INPUT_SCHEMA: Final[JSONObject] = {
    "type": "object",
    "properties": {OFFSET_ARGUMENT: {"type": "integer", "minimum": 0, "description": "next_offset of a cut answer."}},
    "additionalProperties": False,
}
_OUTSIDE: Final = re.compile(r"[^A-Za-z0-9_-]")
_FLEET_META: Final = ("anvil/fleet_bundle_id", "anvil/fleet_tool_name")

LadderMode = Literal["flat", "laddered"]
#: Why a surface is (not) laddered, as the original says it: ``fits_budget`` (the flat list fits),
#: ``no_capabilities`` (no lane), ``no_grouping_benefit`` (every lane holds one tool),
#: ``no_token_benefit`` (the cards cost as much as the tools), ``over_budget`` (laddered).
LadderReason = Literal["fits_budget", "no_capabilities", "no_grouping_benefit", "no_token_benefit", "over_budget"]


def card_name(capability_id: str) -> str:
    """The card of a capability as its bundle names it: ``open_`` + the id, outside ``[A-Za-z0-9_-]`` as ``_``."""
    return CARD_PREFIX + _OUTSIDE.sub("_", capability_id)


@dataclass(frozen=True, slots=True)
class LaneTool:
    """One approved tool as the ladder sees it: its wire name, operation, document, and its bundle's fleet
    id when the surface is prefixed (None: names are the bundle's own)."""

    name: str
    op: Operation
    document: Document
    bundle_id: str | None = None


@dataclass(frozen=True, slots=True)
class Lane:
    """One lane: its capability, its card's wire name, what the card says, and its members (by operation id).

    Attributes:
        capability_id: The capability (AIR id, or the grouping key's id when the AIR carries none).
        card: The card's wire name (fleet-prefixed when the surface is).
        bundle_id: The bundle's fleet id when prefixed, else None.
        display_name: The capability's display name.
        summary: The capability's description.
        routing_phrases: Its intent examples.
        members: The members' wire names, in operation id order.
        operation_ids: The members' operation ids, sorted.
        vocabulary: Up to eight distinct ``<action> <resource>`` of the members.
        costs: Each member's compiler-measured tokens (0 when never measured), as ``members``.
    """

    capability_id: str
    card: str
    bundle_id: str | None
    display_name: str
    summary: str
    routing_phrases: tuple[str, ...]
    members: tuple[str, ...]
    operation_ids: tuple[str, ...]
    vocabulary: tuple[str, ...]
    costs: tuple[int, ...]

    @property
    def tokens(self) -> int:
        """The members' compiler-measured tokens, summed."""
        return sum(self.costs)


def lane_description(lane: Lane, count: int | None = None) -> str:
    """The card's description (the original's ``laneEntryDescription``); ``count`` tools (default: all)."""
    shown = len(lane.members) if count is None else count
    parts = [lane.summary or lane.display_name, f"Opens {shown} tool(s) for {lane.display_name}."]
    if lane.vocabulary:
        parts.append(f"Covers: {', '.join(lane.vocabulary)}.")
    if lane.routing_phrases:
        parts.append(f"Use for requests like: {'; '.join(lane.routing_phrases[:ROUTING_PHRASES_LIMIT])}.")
    return " ".join(parts)


def card_definition(lane: Lane, count: int | None = None, tokens: int | None = None) -> JSONObject:
    """The card as ``tools/list`` lists it, opening ``count`` tools costing ``tokens`` (default: the lane's)."""
    title = f"Open {lane.display_name}"
    meta: JSONObject = {
        LANE_META: True,
        CAPABILITY_META: lane.capability_id,
        LANE_TOOLS_META: len(lane.members) if count is None else count,
        LANE_TOKENS_META: lane.tokens if tokens is None else tokens,
    }
    if lane.bundle_id is not None:
        meta[_FLEET_META[0]] = lane.bundle_id
        meta[_FLEET_META[1]] = card_name(lane.capability_id)
    return {
        "name": lane.card,
        "title": title,
        "description": lane_description(lane, count),
        "inputSchema": CARD_INPUT_SCHEMA,
        "annotations": {
            "title": title,
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
        "_meta": meta,
    }


@dataclass(frozen=True, slots=True)
class _Group:
    """A lane being built: its capability (or the grouping that stands for one) and its tools."""

    capability: Capability
    bundle_id: str | None
    tools: list[LaneTool]


def _fallback(service_id: str, op: Operation) -> Capability:
    """The capability the compiler would group ``op`` into (original-core §1.15): first tag, resource, service."""
    if op.tags and snake(op.tags[0]):
        key = op.tags[0]
    elif op.effect.resource and snake(op.effect.resource):
        key = op.effect.resource
    else:
        key = service_id
    return _described(f"{service_id}.{snake(key)}", key, service_id)


def _described(capability_id: str, key: str, service_id: str) -> Capability:
    title = title_case(key) or key
    noun = " ".join(split_words(key)) or key
    return Capability(
        id=capability_id,
        display_name=title,
        description=f"{title} capability for {service_id}.",
        intent_examples=(f"work with {noun}", f"manage {noun}"),
    )


def _capability_of(op: Operation, document: Document, known: dict[str, Capability]) -> Capability:
    service_id = document.service.id
    if op.capability_id is None:
        return _fallback(service_id, op)
    found = known.get(op.capability_id)
    if found is not None:
        return found
    key = op.capability_id.removeprefix(f"{service_id}.")  # named by the AIR, described by none of its capabilities
    return _described(op.capability_id, key, service_id)


def _vocabulary(ops: Sequence[Operation]) -> tuple[str, ...]:
    phrases: list[str] = []
    for op in ops:
        phrase = f"{op.effect.action} {op.effect.resource}".strip()
        if phrase and phrase not in phrases:
            phrases.append(phrase)
            if len(phrases) == MEMBER_VOCABULARY_LIMIT:
                break
    return tuple(phrases)


def _lane(group: _Group) -> Lane:
    tools = sorted(group.tools, key=lambda tool: tool.op.id)
    capability = group.capability
    own = card_name(capability.id)
    return Lane(
        capability_id=capability.id,
        card=fleet_tool_name(group.bundle_id, own) if group.bundle_id is not None else own,
        bundle_id=group.bundle_id,
        display_name=capability.display_name,
        summary=capability.description,
        routing_phrases=capability.intent_examples,
        members=tuple(tool.name for tool in tools),
        operation_ids=tuple(tool.op.id for tool in tools),
        vocabulary=_vocabulary([tool.op for tool in tools]),
        costs=tuple(
            tool.op.disclosure_cost.tool_tokens if tool.op.disclosure_cost is not None else 0 for tool in tools
        ),
    )


@dataclass(frozen=True, slots=True)
class Ladder:
    """The lanes over a set of tools.

    Attributes:
        lanes: The lanes, bundle by bundle (in the order their tools came), by capability id within one.
        unlaned: The tools in no lane (the pinned ones: listed at rest), in the order they came.
        collisions: Each card name that is already a tool's or another card's, said in words (empty: none).
    """

    lanes: tuple[Lane, ...]
    unlaned: tuple[str, ...]
    collisions: tuple[str, ...]

    @classmethod
    def build(
        cls,
        tools: Iterable[LaneTool],
        *,
        pinned: frozenset[str] = frozenset(),
        taken: Iterable[str] = (),
        by_service: bool = False,
    ) -> Ladder:
        """The lanes of ``tools``; ``pinned`` names stay out of every lane, ``taken`` are names cards must not use.

        Args:
            tools: The approved tools, in listing order.
            pinned: Wire names listed at rest (in no lane).
            taken: Every other wire name served beside the cards (operation tools, meta-tools).
            by_service: One lane per bundle (its service) instead of one per capability: the coarser
                ladder a fleet falls back to when its capability cards alone are over the surface budget.
        """
        groups: dict[tuple[str | None, str], _Group] = {}
        bundles: dict[str | None, int] = {}
        described: dict[int, dict[str, Capability]] = {}
        unlaned: list[str] = []
        for tool in tools:
            if tool.name in pinned:
                unlaned.append(tool.name)
                continue
            document = tool.document
            known = described.get(id(document))
            if known is None:
                known = described[id(document)] = {cap.id: cap for cap in document.capabilities}
            if by_service:
                service = document.service.id
                capability = _described(service, service, service)
            else:
                capability = _capability_of(tool.op, document, known)
            bundles.setdefault(tool.bundle_id, len(bundles))
            group = groups.get((tool.bundle_id, capability.id))
            if group is None:
                group = groups[(tool.bundle_id, capability.id)] = _Group(capability, tool.bundle_id, [])
            group.tools.append(tool)
        ordered = sorted(groups.items(), key=lambda item: (bundles[item[0][0]], item[0][1]))
        lanes = tuple(_lane(group) for _, group in ordered)
        names = set(taken)
        cards: dict[str, str] = {}
        collisions: list[str] = []
        for lane in lanes:
            if lane.card in names:
                collisions.append(f"card {lane.card} of {lane.capability_id} is the name of a served tool")
            prior = cards.setdefault(lane.card, lane.capability_id)
            if prior != lane.capability_id:
                collisions.append(f"capabilities {prior} and {lane.capability_id} both mint card {lane.card}")
        return cls(lanes, tuple(unlaned), tuple(collisions))

    def members(self) -> dict[str, str]:
        """Member wire name -> its lane's card."""
        return {member: lane.card for lane in self.lanes for member in lane.members}


@dataclass(frozen=True, slots=True)
class LadderPlan:
    """Whether a ladder is served, why (the original's reasons) and the figures it was decided on.

    Attributes:
        mode: ``laddered`` or ``flat`` (the ladder declined).
        reason: Why (:data:`LadderReason`).
        flat_tokens: The flat listing's tokens (at least this many when it was not counted whole).
        rest_tokens: The laddered listing's tokens at rest (cards, proxies, pinned tools).
        lanes: How many lanes (cards) there are.
        largest: How many tools the largest lane holds.
    """

    mode: LadderMode
    reason: LadderReason
    flat_tokens: int
    rest_tokens: int
    lanes: int
    largest: int


def plan_ladder(lane_sizes: Sequence[int], flat_tokens: int, rest_tokens: int, budget: int) -> LadderPlan:
    """The original's decision (``ladderPlan``), in its order: no lane, the flat list fits ``budget``, no lane
    holds two tools, the ladder saves nothing (at rest not strictly below flat); else laddered.

    ``--disclosure laddered`` decides with a budget of 0 (the original's forced mode): the same lanes,
    served whenever they help.
    """
    largest = max(lane_sizes, default=0)

    def plan(mode: LadderMode, reason: LadderReason) -> LadderPlan:
        return LadderPlan(mode, reason, flat_tokens, rest_tokens, len(lane_sizes), largest)

    if not lane_sizes:
        return plan("flat", "no_capabilities")
    if flat_tokens <= budget:
        return plan("flat", "fits_budget")
    if largest <= 1:
        return plan("flat", "no_grouping_benefit")
    if rest_tokens >= flat_tokens:
        return plan("flat", "no_token_benefit")
    return plan("laddered", "over_budget")
