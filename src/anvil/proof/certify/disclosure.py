"""Certify's disclosure checks: the surface at rest, the ladder (original-core §5.15, §8.1) and discovery.

Each judges the bundle served in-process (:meth:`~anvil.proof.certify.checks.Bundle.surfaces`) and answers
``(passed, detail)``, as every check of :mod:`anvil.proof.certify.checks`, where they are registered:

* ``tool_surface_within_disclosure_budget``: every served tool is within the per-tool budget, or over it
  with its capability's reviewed waiver (``allow_large`` and a note: :mod:`anvil.air.budget_waiver`),
  which the detail names with the note; a failure says both levers (the smallest budget that fits, and
  the capabilities to waive it for);
* ``surface_at_rest_within_disclosure_budget``: the listing at rest in the mode ``auto`` picks (flat when
  the flat list fits the surface budget, else the meta-tools and the pinned tools) is within the budget;
* ``ladder_preserves_approved_surface``, ``ladder_entry_names_unique``, ``ladder_reduces_surface``,
  ``ladder_mode_justified``: the original's four ladder checks, over the lanes ``--disclosure laddered``
  serves and the original's plan at the surface budget (a surface the plan serves flat passes them and
  says so);
* ``approved_operations_reachable``: every approved operation is in exactly one lane or listed at rest,
  and searching its exact tool name finds it first through the real index;
* ``discovery_names_distinct_from_tools``: no meta-tool or lane card carries an operation tool's name
  (nor two cards one name);
* ``proxies_refuse_as_direct_calls``: each confirmation-gated write called without its confirmation,
  directly and through ``anvil_call_write``, is refused with the same codes, a write through
  ``anvil_call_read`` is refused (``discovery/write_through_read``), and no request reaches the upstream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio

from anvil._types import JSONObject
from anvil.air.budget_waiver import budget_waivers
from anvil.air.inputs import safety_keys
from anvil.air.model import Document, Operation
from anvil.bundle.example import example_input
from anvil.compiler.disclosure import ESTIMATOR
from anvil.proof.disclosure import budget_lever, served_tools, tokens_of, tool_budget
from anvil.serve.discovery.ladder import card_name
from anvil.serve.discovery.meta import CALL_READ_TOOL, CALL_WRITE_TOOL, META_TOOL_NAMES, SEARCH_TOOL
from anvil.serve.discovery.modes import DisclosureSettings
from anvil.serve.mcp.provider import UnknownTool
from anvil.serve.mcp.results import CallResult

if TYPE_CHECKING:
    from anvil.proof.disclosure import Surfaces

__all__ = [
    "approved_operations_reachable",
    "discovery_names_distinct",
    "ladder_entry_names_unique",
    "ladder_mode_justified",
    "ladder_preserves_approved_surface",
    "ladder_reduces_surface",
    "proxies_refuse_as_direct_calls",
    "surface_at_rest_within_budget",
    "tool_surface_within_budget",
]

Verdict = tuple[bool, str]
_MAX_NAMES: Final = 6
#: Seconds the proxy check may take in all (each call is refused in-process; this bounds a runaway).
_PROXY_SECONDS: Final = 120


def _names(items: list[str]) -> str:
    ordered = sorted(items)
    shown = ", ".join(ordered[:_MAX_NAMES])
    return shown + (f" and {len(ordered) - _MAX_NAMES} more" if len(ordered) > _MAX_NAMES else "")


def tool_surface_within_budget(bundle: Bundle) -> Verdict:
    """Every served tool within ``disclosure.toolBudgetTokens``, or over it with its capability's waiver."""
    doc = bundle.doc
    measured = {op_id: tokens_of(tool) for op_id, tool in served_tools(doc).items()}
    budget = tool_budget(doc)
    waivers = budget_waivers(doc)
    over = {op_id: tokens for op_id, tokens in measured.items() if tokens > budget}
    unwaived = {op_id: tokens for op_id, tokens in over.items() if op_id not in waivers}
    if unwaived:
        named = [f"{op_id} ({tokens} tokens)" for op_id, tokens in unwaived.items()]
        # The smallest budget that fits every tool no waiver covers.
        most = max(tokens for op_id, tokens in measured.items() if op_id not in waivers)
        ops = {op.id: op for op in doc.operations}
        capabilities = sorted({ops[op_id].capability_id or op_id for op_id in unwaived})
        lever = budget_lever(most, capabilities)
        return False, f"over the {budget}-token tool budget ({ESTIMATOR}): {_names(named)}; {lever}"
    detail = f"{len(measured) - len(over)} operation(s) within {budget} tokens"
    if over:
        by_review: dict[str, list[str]] = {}
        for op_id, tokens in sorted(over.items()):
            by_review.setdefault(waivers[op_id].said(), []).append(f"{op_id} ({tokens} tokens)")
        reviews = sorted(by_review.items())
        waived = "; ".join(f"{_names(tools)} by {review}" for review, tools in reviews[:_MAX_NAMES])
        more = f"; and {len(reviews) - _MAX_NAMES} more review(s)" if len(reviews) > _MAX_NAMES else ""
        detail += f"; {len(over)} over it waived: {waived}{more}"
    return True, detail


def _laddered(surfaces: Surfaces) -> bool:
    return surfaces.plan.mode == "laddered"


class Bundle(Protocol):
    """What these checks read of a certified bundle (:class:`anvil.proof.certify.checks.Bundle`)."""

    @property
    def doc(self) -> Document:
        """The bundle's AIR."""

    @property
    def approved(self) -> list[Operation]:
        """The approved operations, in AIR order."""

    def surfaces(self) -> Surfaces:
        """The bundle served in-process in every disclosure mode."""


def surface_at_rest_within_budget(bundle: Bundle) -> Verdict:
    """The listing at rest in the mode ``auto`` picks is within the surface budget."""
    found = bundle.surfaces()
    budget, tools = found.budget, found.flat_tools
    if found.auto == "flat":
        figure = f"{tools} tool(s) at rest: {found.flat_tokens}/{budget} tokens ({ESTIMATOR})"
        return True, f"served flat (auto: the flat list fits): {figure}"
    pinned = len(found.fleet.discovery(False).pinned)
    figure = (
        f"{len(META_TOOL_NAMES)} meta-tool(s) + {pinned} pinned tool(s) at rest: {found.search_tokens}/{budget} tokens "
        f"({ESTIMATOR}); the flat list of {tools} tool(s) is {found.flat_tokens}"
    )
    if found.search_tokens > budget:
        return False, f"over the surface budget, served search: {figure}"
    return True, f"served search (auto: the flat list is over {budget}): {figure}"


def ladder_preserves_approved_surface(bundle: Bundle) -> Verdict:
    """Laddering exposes exactly what flat exposes: each approved operation in a lane or at rest, nothing else."""
    found = bundle.surfaces()
    approved = {op.id for op in bundle.approved}
    ids = _operation_ids(found)
    laned = [ids[member] for lane in found.ladder.lanes for member in lane.members]
    disclosed = [*laned, *(ids[name] for name in found.ladder.unlaned)]
    duplicates = sorted({op_id for op_id in disclosed if disclosed.count(op_id) > 1})
    unreachable = sorted(approved - set(disclosed))
    leaked = sorted(set(disclosed) - approved)
    if unreachable or leaked:
        problems = []
        if unreachable:
            problems.append(f"unreachable (in no lane, not listed at rest): {_names(unreachable)}")
        if leaked:
            problems.append(f"disclosed but not approved: {_names(leaked)}")
        return False, "; ".join(problems)
    if not approved:
        return True, "no approved operation to preserve"
    if not _laddered(found):
        return True, f"served flat ({found.plan.reason}): all {len(approved)} approved operation(s) listed at rest"
    note = f"; disclosed by more than one lane: {_names(duplicates)}" if duplicates else ""
    return True, (
        f"{len(approved)} approved operation(s) reachable: {len(set(laned))} across {len(found.ladder.lanes)} "
        f"lane(s), {len(found.ladder.unlaned)} listed at rest{note}"
    )


def ladder_entry_names_unique(bundle: Bundle) -> Verdict:
    """Card names are distinct from each other and from every tool, and each is its capability's own name."""
    found = bundle.surfaces()
    tools = set(found.fleet.mounted(False))
    shadowing, misnamed = [], []
    owners: dict[str, str] = {}
    colliding = []
    for lane in found.ladder.lanes:
        if lane.card in tools:
            shadowing.append(f"{lane.capability_id} -> {lane.card}")
        if lane.card != card_name(lane.capability_id):
            misnamed.append(f"{lane.capability_id} -> {lane.card}")
        prior = owners.setdefault(lane.card, lane.capability_id)
        if prior != lane.capability_id:
            colliding.append(f"{prior} + {lane.capability_id} -> {lane.card}")
    problems = []
    if shadowing:
        problems.append(f"entry card shadows a tool name: {_names(shadowing)}")
    if colliding:
        problems.append(f"two capabilities mint one entry card: {_names(colliding)}")
    if misnamed:
        problems.append(f"entry card is not the deterministic name for its capability: {_names(misnamed)}")
    if problems:
        return False, "; ".join(problems)
    if not found.ladder.lanes:
        return True, f"served flat ({found.plan.reason}): no entry card is minted, so none can shadow a tool"
    return True, f"{len(found.ladder.lanes)} entry card(s) distinct from each other and from {len(tools)} tool name(s)"


def ladder_reduces_surface(bundle: Bundle) -> Verdict:
    """A served ladder is smaller at rest than the flat list it replaces."""
    found = bundle.surfaces()
    plan = found.plan
    if not _laddered(found):
        return True, f"served flat ({plan.reason}): no lane is served, so there is no indirection to justify"
    if plan.rest_tokens < plan.flat_tokens:
        saving = plan.flat_tokens - plan.rest_tokens
        return True, f"laddered: {plan.rest_tokens} tokens at rest vs {plan.flat_tokens} flat, saving {saving}"
    return False, (
        f"laddered: {plan.rest_tokens} tokens at rest is no cheaper than {plan.flat_tokens} flat — "
        "the ladder should have declined"
    )


def ladder_mode_justified(bundle: Bundle) -> Verdict:
    """The plan's reason is one the contract implies (re-derived from the AIR's capabilities)."""
    found = bundle.surfaces()
    plan = found.plan
    approved = {op.id for op in bundle.approved}
    tools = set(found.fleet.mounted(False))
    sizes = [
        size
        for capability in bundle.doc.capabilities
        if card_name(capability.id) not in tools
        for size in [sum(1 for op_id in capability.operation_ids if op_id in approved)]
        if size > 0
    ]
    groupings = f"{len(sizes)} usable capability grouping(s)"
    budget = found.budget
    reason = plan.reason
    if reason == "fits_budget":
        holds, because = plan.flat_tokens <= budget, f"the flat surface is {plan.flat_tokens}/{budget} tokens"
    elif reason == "no_capabilities":
        holds, because = not sizes, groupings
    elif reason == "no_grouping_benefit":
        holds, because = bool(sizes) and max(sizes) == 1, f"{groupings}, largest holds {max(sizes, default=0)}"
    elif reason == "no_token_benefit":
        holds = plan.flat_tokens > budget and max(sizes, default=0) > 1
        because = f"{groupings} over a {plan.flat_tokens}/{budget} token surface, but the entry cards saved nothing"
    else:
        holds = plan.flat_tokens > budget and plan.lanes > 0 and max(sizes, default=0) > 1
        because = (
            f"the flat surface is {plan.flat_tokens}/{budget} tokens over {groupings}, served as {plan.lanes} lane(s)"
        )
    coherent = _laddered(found) == (reason == "over_budget")
    said = "re-derived from the contract" if holds else "is not what the contract implies"
    detail = f"{plan.mode}/{reason} {said}: {because}"
    if not coherent:
        detail += f"; mode {plan.mode} does not match reason {reason}"
    return holds and coherent, detail


def approved_operations_reachable(bundle: Bundle) -> Verdict:
    """Each approved operation is in exactly one lane or listed at rest, and its exact name finds it first."""
    found = bundle.surfaces()
    ids = _operation_ids(found)
    approved = {op.id: op.mcp.tool_name for op in bundle.approved}
    placed: dict[str, int] = dict.fromkeys(approved, 0)
    for name in [*(member for lane in found.ladder.lanes for member in lane.members), *found.ladder.unlaned]:
        op_id = ids.get(name)
        if op_id in placed:
            placed[op_id] += 1
    misplaced = [f"{op_id} ({count} places)" for op_id, count in placed.items() if count != 1]
    search = found.fleet.default.view(DisclosureSettings(mode="search", surface_budget=found.budget))
    missed = []
    for name in approved.values():
        first = search.search(name, 1)
        if not first or first[0]["name"] != name:
            missed.append(f"{name} (found {first[0]['name'] if first else 'nothing'})")
    problems = []
    if misplaced:
        problems.append(f"not in exactly one lane or at rest: {_names(misplaced)}")
    if missed:
        problems.append(f"{SEARCH_TOOL} does not find these first by their exact name: {_names(missed)}")
    if problems:
        return False, "; ".join(problems)
    return True, (
        f"{len(approved)} approved operation(s) each in exactly one of {len(found.ladder.lanes)} lane(s) or at rest, "
        f"and each found first by its exact tool name"
    )


def discovery_names_distinct(bundle: Bundle) -> Verdict:
    """No meta-tool or lane card carries an operation tool's name, and no two cards share one."""
    found = bundle.surfaces()
    problems = []
    if found.meta_collision:
        problems.append(f"operation tool named like a meta-tool: {_names(list(found.meta_collision))}")
    if found.ladder.collisions:
        problems.append(_names(list(found.ladder.collisions)))
    if problems:
        return False, "; ".join(problems)
    return True, (
        f"{len(META_TOOL_NAMES)} meta-tool(s) and {len(found.ladder.lanes)} lane card(s) distinct from "
        f"{len(found.fleet.mounted(False))} operation tool(s) and from each other"
    )


def proxies_refuse_as_direct_calls(bundle: Bundle) -> Verdict:
    """Unconfirmed gated writes are refused alike directly and through the write proxy; the read proxy refuses
    writes; nothing reaches the upstream."""
    found = bundle.surfaces()
    if found.meta_collision:
        return False, f"the proxies cannot be served: {_names(list(found.meta_collision))} named like a meta-tool"
    writes = [op for op in bundle.approved if not op.is_read]
    gated = [op for op in writes if op.confirmation.required]
    before = len(found.requests)
    differing, reached_read = anyio.run(_proxy_calls, found, gated, writes[:1])
    reached = len(found.requests) - before
    problems = []
    if differing:
        problems.append(f"the proxy answers differently from the direct call: {_names(differing)}")
    if reached_read:
        problems.append(f"{CALL_READ_TOOL} did not refuse a write: {_names(reached_read)}")
    if reached:
        problems.append(f"{reached} request(s) reached the upstream")
    if problems:
        return False, "; ".join(problems)
    if not writes:
        return True, "no approved write: the proxies have nothing to refuse"
    return True, (
        f"{len(gated)} confirmation-gated write(s) refused alike directly and through {CALL_WRITE_TOOL}, "
        f"a write refused by {CALL_READ_TOOL}, and no request reached the upstream"
    )


def _operation_ids(found: Surfaces) -> dict[str, str]:
    """Wire tool name -> operation id, for every mounted tool."""
    return {name: entry.tool.op.id for name, entry in found.fleet.mounted(False).items()}


def _codes(result: CallResult | None) -> tuple[str, str] | None:
    """A refusal's ``(code, details.code)``; None for an answer that is not a refusal."""
    if result is None or result.envelope is None:
        return None
    details = result.envelope.details if isinstance(result.envelope.details, dict) else {}
    return result.envelope.code, str(details.get("code", ""))


async def _proxy_calls(found: Surfaces, gated: list[Operation], writes: list[Operation]) -> tuple[list[str], list[str]]:
    with anyio.fail_after(_PROXY_SECONDS):
        return await _each_proxy_call(found, gated, writes)


async def _each_proxy_call(
    found: Surfaces, gated: list[Operation], writes: list[Operation]
) -> tuple[list[str], list[str]]:
    composition = found.fleet.default
    call: Callable[..., Any] = composition.call
    differing: list[str] = []
    for op in gated:
        name = op.mcp.tool_name
        arguments: JSONObject = dict(example_input(op))
        confirm = safety_keys(op).confirm
        if confirm is not None:
            arguments.pop(confirm, None)
        direct = _codes(await call(name, arguments))
        try:
            proxied = _codes(await call(CALL_WRITE_TOOL, {"tool": name, "arguments": arguments}))
        except UnknownTool:
            proxied = ("unknown tool", "")
        if direct is None or direct != proxied:
            differing.append(f"{op.id} (direct {direct or 'not refused'}, proxied {proxied or 'not refused'})")
    reached: list[str] = []
    for op in writes:
        refused = _codes(await call(CALL_READ_TOOL, {"tool": op.mcp.tool_name, "arguments": example_input(op)}))
        if refused != ("validation_error", "discovery/write_through_read"):
            reached.append(f"{op.id} ({refused or 'not refused'})")
    return differing, reached
