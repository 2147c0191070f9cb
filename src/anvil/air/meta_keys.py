"""The registry of every ``_meta`` key and effect-report key a caller can see or send.

Three places carry ``_meta``: a listed tool (``tools/list`` and ``tools.json``), a tool result, and a
caller's ``tools/call`` request. The effect report (``_meta.effect`` on a result, ``X-Anvil-Effect`` over
REST) has keys of its own, always present or optional. These names are a public contract like the codes in
:mod:`anvil.codes`: ``tests/air/test_meta_keys.py`` fails when the source uses an ``anvil/*`` key that is not
registered here, or registers one nothing uses, and when a report carries a key this table does not list;
``scripts/gen_reference.py`` writes ``docs/reference/meta.md`` from it.
"""

from __future__ import annotations

from typing import Final, Literal

from anvil._dataclass import dataclass

__all__ = ["EFFECT_REPORT_KEYS", "META_KEYS", "MetaKey", "MetaPlace", "ReportKey"]

MetaPlace = Literal["listing", "result", "request"]


@dataclass(frozen=True, slots=True)
class MetaKey:
    """One ``_meta`` key: where it appears and what it says."""

    name: str
    place: MetaPlace
    summary: str


@dataclass(frozen=True, slots=True)
class ReportKey:
    """One key of the effect report; ``always`` keys are present on every report, in this order."""

    name: str
    always: bool
    summary: str


#: Every ``_meta`` key, grouped by place.
META_KEYS: Final[tuple[MetaKey, ...]] = (
    MetaKey("anvil/effect", "listing", "read or mutation."),
    MetaKey("anvil/action", "listing", "The operation's action (create, update, delete, ...)."),
    MetaKey("anvil/risk", "listing", "The reviewed risk: low, medium, high or critical."),
    MetaKey("anvil/retry_safe", "listing", "True when the gateway may retry the call."),
    MetaKey("anvil/retry_basis", "listing", "Why a retry is safe (or none)."),
    MetaKey("anvil/idempotency", "listing", "The idempotency mode."),
    MetaKey("anvil/principal", "listing", "Whose credential the call carries."),
    MetaKey("anvil/operation_id", "listing", "The AIR operation id."),
    MetaKey("anvil/effect_class", "listing", "The effect class (ADR-0030): read, reversible, compensable, ..."),
    MetaKey("anvil/effect_contract", "listing", "The declared effect contract, when there is one."),
    MetaKey("effect", "listing", "The contract's follow-up tools: deletion, draft, lookup (ADR-0030)."),
    MetaKey("anvil/input_schema", "listing", "summarised: the whole input schema is anvil://schema/<tool>."),
    MetaKey("anvil/output_schema", "listing", "summarised or omitted: the outputSchema was cut to the tool budget."),
    MetaKey("anvil/inputs_from", "listing", "A search result: for each required input, the tools that supply it."),
    MetaKey("anvil/lane", "listing", "A laddered lane card: the lane's name."),
    MetaKey("anvil/capability_id", "listing", "A laddered lane card: the capability id it opens."),
    MetaKey("anvil/lane_tools", "listing", "A laddered lane card: how many tools the lane holds."),
    MetaKey("anvil/lane_tokens", "listing", "A laddered lane card: the lane's tools in o200k tokens."),
    MetaKey("anvil/fleet_bundle_id", "listing", "In a fleet: the bundle a tool belongs to."),
    MetaKey("anvil/fleet_tool_name", "listing", "In a fleet: the tool's name inside its own bundle."),
    MetaKey("effect", "result", "The effect report (keys below); absent on a dry run."),
    MetaKey("anvil/truncated", "result", "An answer cut to the response budget: what was served and how to continue."),
    MetaKey("anvil/page_cap", "result", "A list answer at the upstream's maximum page that says nothing of more."),
    MetaKey("idempotency_key", "request", "The caller's idempotency key (its ledger id)."),
    MetaKey("stage", "request", "true: perform the operation's draft form."),
    MetaKey("traceparent", "request", "A W3C traceparent to continue (wins over the HTTP header)."),
)

#: The keys of ``_meta.effect``: the always-present ones in report order, then the optional ones.
EFFECT_REPORT_KEYS: Final[tuple[ReportKey, ...]] = (
    ReportKey("class", True, "The effect class."),
    ReportKey("operation", True, "The AIR operation id."),
    ReportKey("idempotency_key", True, "The key that went upstream (a replay: the first call's), else null."),
    ReportKey(
        "undo",
        True,
        "null or {kind, operation, tool, arguments}: the exact call that undoes this one; it ends with "
        "requires_confirmation: true when that call needs the caller's confirm: true (absent otherwise).",
    ),
    ReportKey("deadline_ms", True, "The chosen undo's deadline in epoch ms, else null."),
    ReportKey(
        "lookup",
        True,
        "The declared lookup resolved for this call (requires_confirmation: true as in undo), or a lookup's "
        "{found} answer.",
    ),
    ReportKey(
        "compensate",
        False,
        "A reversible effect's compensation for after the deadline (requires_confirmation: true as in undo).",
    ),
    ReportKey("undo_unavailable", False, "Why a class that promises an undo has none in this call."),
    ReportKey(
        "staged",
        False,
        "A staged call: the draft and its promote and discard calls (requires_confirmation: true as in undo).",
    ),
    ReportKey("replayed", False, "true: the ledger answered with an earlier call's stored result."),
    ReportKey("replay_unavailable", False, "Why this successful answer cannot be replayed later."),
)
