"""What an agent pays to see a bundle's tools, measured the way the compiler measures (original-core §3.7).

Shared by ``anvil certify`` (the static budget checks), ``anvil simulate`` (the ``disclosure``
cells) and ``anvil inspect`` (:func:`served_surfaces`: the surface at rest in each disclosure mode).
The measured surface is the one ``anvil serve`` publishes: :func:`served_tool_definition`, the AIR
tool definition (its output schema included) plus the effect keys the server lists, as compact JSON,
counted in o200k_base tokens like AIR's ``disclosureCost`` (which measures the original's reconstruction
of the tool, without output schema or effect keys, so the two differ).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.budget_waiver import waiver_lever
from anvil.air.model import Document, Operation
from anvil.air.surface import surface_of
from anvil.compiler.disclosure import ESTIMATOR, count_tokens
from anvil.serve.mcp.listing import served_tool_definition

if TYPE_CHECKING:
    import httpx

    from anvil.serve.discovery.ladder import Ladder, LadderPlan
    from anvil.serve.fleet import Fleet

__all__ = [
    "ESTIMATOR",
    "INSPECT_KEYS",
    "Figure",
    "Surfaces",
    "budget_lever",
    "served_surfaces",
    "served_tools",
    "tokens_of",
    "tool_budget",
]

#: The keys of ``anvil inspect --json``'s ``disclosure`` object, in order (a public contract).
INSPECT_KEYS: Final = (
    "auto",
    "surfaceBudgetTokens",
    "flatTools",
    "flatTokens",
    "searchTokens",
    "ladderedTokens",
    "lanes",
    "estimator",
)


@dataclass(frozen=True, slots=True)
class Figure:
    """One measurement against a budget: the report's ``figure`` object.

    Attributes:
        tokens: What is judged against the budget (an answer: its text as served, after any cut).
        budget_tokens: The budget.
        seed: The simulator's seed, for a measure of simulated data.
        raw_tokens: An answer's whole text before the gateway's cut (None: not an answer).
        cut: Whether the gateway cut the answer to the budget (None: not an answer).
    """

    tokens: int
    budget_tokens: int
    seed: int | None = None
    raw_tokens: int | None = None
    cut: bool | None = None

    @property
    def within(self) -> bool:
        """True when the measurement does not exceed the budget."""
        return self.tokens <= self.budget_tokens

    def to_json(self) -> JSONObject:
        """``{tokens, budgetTokens, estimator, seed?, rawTokens?, cut?}``."""
        out: JSONObject = {"tokens": self.tokens, "budgetTokens": self.budget_tokens, "estimator": ESTIMATOR}
        if self.seed is not None:
            out["seed"] = self.seed
        if self.raw_tokens is not None:
            out["rawTokens"] = self.raw_tokens
        if self.cut is not None:
            out["cut"] = self.cut
        return out


def tokens_of(value: JSONValue) -> int:
    """The o200k_base tokens of ``value`` as compact JSON (strings as they are)."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return count_tokens(text)


def served_tools(doc: Document) -> dict[str, JSONObject]:
    """Operation id -> the ``tools/list`` entry ``anvil serve`` publishes, for every approved operation."""
    approved: list[Operation] = [op for op in doc.operations if op.is_approved]
    names = {op.id: op.mcp.tool_name for op in approved}
    surface = surface_of(doc)
    every = doc.service.list_effect_class == "all"
    return {op.id: served_tool_definition(op, names.get, surface=surface, every_effect_class=every) for op in approved}


def budget_lever(tokens: int, capabilities: Sequence[str] = ()) -> str:
    """The operator's levers for tools over the tool budget: the smallest budget that fits them all and,
    when ``capabilities`` (those of the tools over it) are given, the per-capability waiver naming them."""
    lever = (
        f"to publish every tool as it is, set `disclosure: tool_budget_tokens: {tokens}` in anvil.yaml (the "
        "smallest budget every tool fits) and recompile, or narrow the inputs of the tools over it in the spec"
    )
    return f"{lever}; {waiver_lever(capabilities)}" if capabilities else lever


def tool_budget(doc: Document) -> int:
    """The tool budget ``doc`` publishes within: its ``disclosure.toolBudgetTokens``, else the default 1200."""
    return surface_of(doc).budget_tokens


@dataclass(frozen=True, slots=True)
class Surfaces:
    """A bundle served as ``anvil serve`` serves it to a caller without a grant, in every disclosure mode.

    Built in-process (:func:`served_surfaces`): the bundle's own :class:`~anvil.serve.fleet.Fleet`, its
    upstream an ``httpx.MockTransport`` that records every request and answers none (``requests``).

    Attributes:
        fleet: The fleet, serving ``search`` (``flat`` when an operation is named like a meta-tool:
            ``meta_collision`` then says which).
        requests: Every request that reached the upstream.
        budget: The surface budget (tokens at rest).
        flat_tokens: The flat listing's o200k tokens, counted whole.
        auto: The mode ``auto`` picks: ``flat`` when the flat listing fits the budget, else ``search``.
        search_tokens: The searched listing at rest (meta-tools and pinned tools), in tokens.
        ladder: The lanes over the approved tools (pinned ones in none), collisions said, never refused.
        laddered_tokens: The laddered listing at rest (proxies, every card, pinned tools), in tokens.
        plan: The original's decision at ``budget`` (``ladderPlan``): what certify's ``ladder_*`` checks judge.
        meta_collision: The operation tools named like a meta-tool (empty: none).
    """

    fleet: Fleet
    requests: list[httpx.Request]
    budget: int
    flat_tokens: int
    auto: str
    search_tokens: int
    ladder: Ladder
    laddered_tokens: int
    plan: LadderPlan
    meta_collision: tuple[str, ...]

    @property
    def flat_tools(self) -> int:
        """How many tools the flat listing holds."""
        return len(self.fleet.default.flat_tools)

    @property
    def auto_tokens(self) -> int:
        """The tokens at rest in the mode ``auto`` picks."""
        return self.flat_tokens if self.auto == "flat" else self.search_tokens

    def to_json(self) -> JSONObject:
        """``anvil inspect``'s ``disclosure`` object (its keys, :data:`INSPECT_KEYS`, are a public contract).

        ``ladderedTokens`` is null when a card would collide with a tool (``anvil serve --disclosure laddered``
        refuses to start).
        """
        return {
            "auto": self.auto,
            "surfaceBudgetTokens": self.budget,
            "flatTools": self.flat_tools,
            "flatTokens": self.flat_tokens,
            "searchTokens": self.search_tokens,
            "ladderedTokens": None if self.ladder.collisions else self.laddered_tokens,
            "lanes": len(self.ladder.lanes),
            "estimator": ESTIMATOR,
        }

    def line(self) -> str:
        """``anvil inspect``'s text line: what ``auto`` serves and the tokens at rest in each mode."""
        budget, flat = self.budget, f"{self.flat_tools} tool(s) is {self.flat_tokens:,} tokens"
        why = f"the flat list of {flat}, {'within' if self.auto == 'flat' else 'over'} the {budget:,}-token budget"
        laddered = "refused (a card collides)" if self.ladder.collisions else f"{self.laddered_tokens:,}"
        return (
            f"disclosure: auto serves {self.auto} ({why}); at rest: search {self.search_tokens:,}, "
            f"laddered {laddered} ({len(self.ladder.lanes)} lane(s)) tokens ({ESTIMATOR})"
        )


def served_surfaces(doc: Document, budget: int | None = None) -> Surfaces:
    """``doc`` served in-process, measured in every disclosure mode (nothing leaves the process).

    Args:
        doc: The bundle's AIR.
        budget: The surface budget (default: ``anvil serve``'s, 20,000 tokens).
    """
    import httpx

    from anvil.runtime.context import RuntimeContext
    from anvil.serve.discovery.ladder import Ladder, LaneTool, plan_ladder
    from anvil.serve.discovery.meta import META_TOOL_NAMES as META_TOOLS
    from anvil.serve.discovery.modes import DEFAULT_SURFACE_BUDGET_TOKENS, DisclosureSettings, measure_listing
    from anvil.serve.fleet import Fleet, FleetBundle

    limit = DEFAULT_SURFACE_BUDGET_TOKENS if budget is None else budget
    requests: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(599)

    client = httpx.AsyncClient(transport=httpx.MockTransport(refuse))
    context = RuntimeContext(service_id=doc.service.id, base_url="http://upstream.invalid", client=client, env="dev")
    bundle = FleetBundle(id=doc.service.id, document=doc, context=context)
    clash = tuple(
        sorted(op.mcp.tool_name for op in doc.operations if op.is_approved and op.mcp.tool_name in META_TOOLS)
    )
    # A meta-tool collision refuses search at start: such a bundle is served flat here and judged apart.
    served = DisclosureSettings(mode="flat" if clash else "search", surface_budget=limit)
    fleet = Fleet([bundle], disclosure=served)
    composition = fleet.default
    flat_tokens = measure_listing(composition.flat_tools).tokens or 0
    auto = composition.view(DisclosureSettings(mode="auto", surface_budget=limit)).mode
    search_tokens = composition.view(DisclosureSettings(mode="search", surface_budget=limit)).at_rest().tokens or 0
    mounted = fleet.mounted(False)
    pinned = fleet.discovery(False).pinned
    tools = [LaneTool(name, entry.tool.op, entry.bundle.document) for name, entry in mounted.items()]
    ladder = Ladder.build(tools, pinned=pinned, taken=(*mounted, *META_TOOLS))
    laddered_tokens = 0
    if not ladder.collisions:
        view = composition.view(DisclosureSettings(mode="laddered", surface_budget=limit))
        laddered_tokens = measure_listing(view.ladder_tools).tokens or 0
    sizes = [len(lane.members) for lane in ladder.lanes]
    plan = plan_ladder(sizes, flat_tokens, laddered_tokens, limit)
    return Surfaces(
        fleet=fleet,
        requests=requests,
        budget=limit,
        flat_tokens=flat_tokens,
        auto=auto,
        search_tokens=search_tokens,
        ladder=ladder,
        laddered_tokens=laddered_tokens,
        plan=plan,
        meta_collision=clash,
    )
