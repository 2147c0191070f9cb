"""The effect report, ``_meta.effect`` on every operation result except a dry run (ADR-0030 §4).

An :class:`EffectPlan` is built once per served operation: its class, and each declared follow-up
with the tool that serves it on this server (or None). Building a report per call is then only path
resolution (:func:`anvil.air.paths.resolve_mapping`, :func:`~anvil.air.paths.resolve_deadline`)
over the request and the response: no schema work.

Report keys, always present and in this order: ``class``, ``operation``, ``idempotency_key`` (the key
that went upstream, else null; a replay echoes the key its first call sent), ``undo`` (null or
``{kind, operation, tool, arguments}``), ``deadline_ms`` (the chosen undo's deadline in epoch ms,
else null), ``lookup``. Optional, after them:
``compensate`` (``{operation, tool, arguments, deadline_ms}``, a reversible effect's declared
compensation for after the deadline, only when it resolves), ``undo_unavailable`` (why a class that
promises an undo has none in this call), ``staged`` (a staged call, §7), ``replayed`` (``true`` when
the ledger answered with the stored result of an earlier call and nothing new happened upstream;
absent otherwise) and ``replay_unavailable`` (why a successful answer cannot be replayed later: it
is larger than the ledger's replay ceiling, so its key stays reserved for reconciliation).

Every follow-up call (``undo``, ``compensate``, ``staged.promote``, ``staged.discard`` and a resolved
``lookup``) whose operation requires confirmation ends with ``requires_confirmation: true``: calling it
with exactly its ``arguments`` is refused (``confirmation_required``), so the caller adds its own
``confirm: true`` (ADR-0030 §6). Like ``replayed``, the key is absent when it does not apply, so a
follow-up that needs no confirmation keeps the ADR's shape.

``lookup`` is, for an operation whose class is not ``read``, the declared lookup resolved for this
call (``{operation, tool, arguments, by}``) or null. For an operation that is itself the declared
lookup of some operation on this server, it is the interpreted answer ``{"found": true|false}``: a
success is found unless its data is null or an empty list; a lookup that lists (it pages, its answer
schema is an array, or it lists or searches and its answer schema has exactly one array property) is
found when its items are not empty, the items being the answer itself, its pagination's items field,
or that array property (a paged answer without an items field: its only list field); when no items can be
located in such an answer it says nothing (null), since a wrong "not found" would have a reconciler
repeat the effect; ``not_found`` is not found; any other failure says nothing (null).

A failed call reports its class, operation, key and lookup, with ``undo`` and ``deadline_ms`` null
and no ``undo_unavailable``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Final, Literal

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.effects import effect_class_of
from anvil.air.enums import EffectClass
from anvil.air.model import Deadline, FollowUp, Operation, StepCall
from anvil.serve.mcp.listing import ToolOf

__all__ = [
    "EffectPlan",
    "FollowUpPlan",
    "ListedItems",
    "LookupPlan",
    "StagePlan",
    "call_report",
    "lookup_found",
    "rewrite_report_tools",
    "staged_report",
]

UndoKind = Literal["inverse", "compensate"]
_UNDO_OF: Final[dict[str, UndoKind]] = {"reversible": "inverse", "compensable": "compensate"}


@dataclass(frozen=True, slots=True)
class FollowUpPlan:
    """A declared follow-up call: its target, the tool serving it here (None: not served), its mapping,
    and whether its operation requires confirmation (the caller must add ``confirm``)."""

    operation: str
    tool: str | None
    arguments: Mapping[str, object]
    deadline: Deadline | None = None
    confirm: bool = False

    @classmethod
    def of(cls, declared: FollowUp | StepCall, tool_of: ToolOf, confirming: Collection[str] = ()) -> FollowUpPlan:
        """The plan for an inverse, compensation, promote or discard declaration (``confirming``: the
        AIR ids whose operation requires confirmation)."""
        deadline = declared.deadline if isinstance(declared, FollowUp) else None
        target = declared.operation
        return cls(target, tool_of(target), declared.arguments, deadline, target in confirming)


@dataclass(frozen=True, slots=True)
class LookupPlan:
    """A declared lookup: the read that finds the effect, ``by`` id or idempotency key."""

    operation: str
    tool: str | None
    by: str
    arguments: Mapping[str, object]
    confirm: bool = False


@dataclass(frozen=True, slots=True)
class StagePlan:
    """A declared draft form: the draft operation, its mapping, its handle, promote and discard."""

    draft_operation: str
    arguments: Mapping[str, object]
    handle: str
    promote: FollowUpPlan | None
    discard: FollowUpPlan | None


@dataclass(frozen=True, slots=True)
class EffectPlan:
    """Everything a report needs about one served operation, resolved once at start-up."""

    operation: str
    effect_class: EffectClass
    inverse: FollowUpPlan | None = None
    compensate: FollowUpPlan | None = None
    lookup: LookupPlan | None = None
    stage: StagePlan | None = None
    answers_lookup: bool = False
    lists: ListedItems | None = None

    @classmethod
    def of(
        cls,
        op: Operation,
        tool_of: ToolOf,
        lookup_targets: Collection[str] = (),
        confirming: Collection[str] = (),
        answer_schema: JSONValue = None,
    ) -> EffectPlan:
        """The plan for ``op`` on a server whose tools ``tool_of`` names.

        Args:
            op: The operation.
            tool_of: AIR id -> served tool name, or None when that operation is not directly callable here.
            lookup_targets: The AIR ids some served operation declares as its lookup.
            confirming: The AIR ids whose operation requires confirmation (its follow-ups say so).
        """
        effect = op.effect
        lookup = None
        if effect.lookup is not None:
            declared = effect.lookup
            target = declared.operation
            lookup = LookupPlan(target, tool_of(target), declared.by, declared.arguments, target in confirming)
        stage = None
        if effect.draft is not None:
            draft = effect.draft
            stage = StagePlan(
                draft.operation,
                draft.arguments,
                draft.handle,
                FollowUpPlan.of(draft.promote, tool_of, confirming) if draft.promote is not None else None,
                FollowUpPlan.of(draft.discard, tool_of, confirming) if draft.discard is not None else None,
            )
        inverse, compensate = effect.inverse, effect.compensate
        return cls(
            operation=op.id,
            effect_class=effect_class_of(op),
            inverse=FollowUpPlan.of(inverse, tool_of, confirming) if inverse is not None else None,
            compensate=FollowUpPlan.of(compensate, tool_of, confirming) if compensate is not None else None,
            lookup=lookup,
            stage=stage,
            answers_lookup=op.id in lookup_targets,
            lists=ListedItems.of(op, answer_schema) if op.id in lookup_targets else None,
        )


@dataclass(frozen=True, slots=True)
class _Resolved:
    """A follow-up resolved for one result: the call to make, its deadline, or why there is none."""

    call: JSONObject | None
    deadline_ms: int | float | None = None
    reason: str | None = None


def _resolve(
    plan: FollowUpPlan,
    label: str,
    *,
    request: JSONValue,
    response: JSONValue,
    answered_at_ms: int,
) -> _Resolved:
    if plan.tool is None:
        return _Resolved(None, reason=f"operation '{plan.operation}' is not served here")
    from anvil.air.paths import NOTHING, resolve_deadline, resolve_mapping  # a call's, not start-up's (cold start)

    mapping = resolve_mapping(plan.arguments, request=request, response=response)
    if mapping.arguments is None:
        return _Resolved(None, reason=mapping.reason)
    deadline = resolve_deadline(plan.deadline, answered_at_ms=answered_at_ms, response=response)
    if deadline is NOTHING:
        at = plan.deadline.at if plan.deadline is not None else None
        return _Resolved(None, reason=f"the {label}'s deadline ({at}) names no time in this call")
    call: JSONObject = {"operation": plan.operation, "tool": plan.tool, "arguments": mapping.arguments}
    return _Resolved(call, deadline if isinstance(deadline, int | float) else None)


def _confirmed(call: JSONObject, confirm: bool) -> JSONObject:
    """``call`` ending with ``requires_confirmation: true`` when its operation requires confirmation."""
    if confirm:
        call["requires_confirmation"] = True
    return call


def _lookup(plan: LookupPlan | None, request: JSONValue, response: JSONValue, key: str | None) -> JSONObject | None:
    if plan is None or plan.tool is None:
        return None
    from anvil.air.paths import resolve_mapping

    mapping = resolve_mapping(plan.arguments, request=request, response=response, idempotency_key=key)
    if mapping.arguments is None:
        return None
    call: JSONObject = {"operation": plan.operation, "tool": plan.tool, "arguments": mapping.arguments, "by": plan.by}
    return _confirmed(call, plan.confirm)


@dataclass(frozen=True, slots=True)
class ListedItems:
    """Where a lookup that lists keeps its items: ``items_field`` (dotted), else the answer or its only list."""

    items_field: str | None

    @classmethod
    def of(cls, op: Operation, answer_schema: JSONValue = None) -> ListedItems | None:
        """The items of ``op``'s answer when ``op`` lists (see the module docstring), else None.

        Args:
            op: The lookup operation.
            answer_schema: Its success answer's schema with a top-level ``$ref`` resolved, if known. Only
                the schema says an answer is a list wrapper: a record with an empty list field is still
                found.
        """
        if op.pagination is not None:
            return cls(op.pagination.items_field)
        if not isinstance(answer_schema, dict):
            return None
        if answer_schema.get("type") == "array":
            return cls(None)
        properties = answer_schema.get("properties")
        if op.effect.action in ("list", "search") and isinstance(properties, dict):
            arrays = [
                name
                for name, schema in properties.items()
                if isinstance(schema, dict) and (schema.get("type") == "array" or "items" in schema)
            ]
            if len(arrays) == 1:
                return cls(arrays[0])
        return None

    def count(self, data: JSONValue) -> int | None:
        """How many items ``data`` holds, or None when they cannot be located."""
        if isinstance(data, list):
            return len(data)
        if not isinstance(data, dict):
            return None
        if self.items_field is not None:
            found: JSONValue = data
            for part in self.items_field.split("."):
                found = found.get(part) if isinstance(found, dict) else None
            return len(found) if isinstance(found, list) else None
        lists = [value for value in data.values() if isinstance(value, list)]
        return len(lists[0]) if len(lists) == 1 else None


def lookup_found(
    succeeded: bool, data: JSONValue, error_code: str | None, lists: ListedItems | None = None
) -> bool | None:
    """How a call to a declared lookup answers: found, not found, or unknown (None).

    Args:
        succeeded: The call succeeded.
        data: Its answer.
        error_code: Its error code, on failure.
        lists: Where the lookup's items are when it lists (:attr:`EffectPlan.lists`), else None.
    """
    if succeeded:
        if data is None or data == []:
            return False
        if lists is None:
            return True
        count = lists.count(data)
        return None if count is None else count > 0
    if error_code == "not_found":
        return False
    return None


def call_report(
    plan: EffectPlan,
    *,
    succeeded: bool,
    request: JSONValue,
    response: JSONValue,
    idempotency_key: str | None,
    answered_at_ms: int,
    found: bool | None = None,
    replayed: bool = False,
    replay_unavailable: str | None = None,
) -> JSONObject:
    """The report for an ordinary (unstaged) call.

    Args:
        plan: The called operation's plan.
        succeeded: True for a success (a replay included), False for any error.
        request: The arguments as the tool took them (after the caller's key was forwarded).
        response: The upstream's answer on success (None on failure).
        idempotency_key: The key that went upstream, else None.
        answered_at_ms: When the call answered, epoch ms (``deadline.withinMs`` counts from it).
        found: For a declared lookup, :func:`lookup_found`'s verdict.
        replayed: The ledger answered with a stored result (adds ``replayed: true``).
        replay_unavailable: Why this success cannot be replayed (adds ``replay_unavailable``).
    """
    report = _ordinary(
        plan,
        succeeded=succeeded,
        request=request,
        response=response,
        idempotency_key=idempotency_key,
        answered_at_ms=answered_at_ms,
        found=found,
    )
    return _marked(report, replayed=replayed, replay_unavailable=replay_unavailable)


def _marked(report: JSONObject, *, replayed: bool, replay_unavailable: str | None) -> JSONObject:
    if replayed:
        report["replayed"] = True
    if replay_unavailable is not None:
        report["replay_unavailable"] = replay_unavailable
    return report


def _ordinary(
    plan: EffectPlan,
    *,
    succeeded: bool,
    request: JSONValue,
    response: JSONValue,
    idempotency_key: str | None,
    answered_at_ms: int,
    found: bool | None,
) -> JSONObject:
    if plan.answers_lookup:
        lookup: JSONObject | None = {"found": found} if found is not None else None
    elif plan.effect_class == "read":
        lookup = None
    else:
        lookup = _lookup(plan.lookup, request, response if succeeded else None, idempotency_key)
    report: JSONObject = {
        "class": plan.effect_class,
        "operation": plan.operation,
        "idempotency_key": idempotency_key,
        "undo": None,
        "deadline_ms": None,
        "lookup": lookup,
    }
    if not succeeded:
        return report
    kind = _UNDO_OF.get(plan.effect_class)
    if kind is None:
        return report
    chosen = plan.inverse if kind == "inverse" else plan.compensate
    reason: str | None
    if chosen is None:
        reason = f"the operation declares no {kind}"
    else:
        resolved = _resolve(chosen, kind, request=request, response=response, answered_at_ms=answered_at_ms)
        reason = resolved.reason
        if resolved.call is not None:
            report["undo"] = _confirmed({"kind": kind, **resolved.call}, chosen.confirm)
            report["deadline_ms"] = resolved.deadline_ms
    if kind == "inverse" and plan.compensate is not None:
        extra = _resolve(
            plan.compensate, "compensate", request=request, response=response, answered_at_ms=answered_at_ms
        )
        if extra.call is not None:
            report["compensate"] = _confirmed({**extra.call, "deadline_ms": extra.deadline_ms}, plan.compensate.confirm)
    if reason is not None:
        report["undo_unavailable"] = reason
    return report


def staged_report(
    plan: EffectPlan,
    *,
    request: JSONValue,
    response: JSONValue,
    idempotency_key: str | None,
    replayed: bool = False,
    replay_unavailable: str | None = None,
) -> JSONObject:
    """The report for a successful staged call (a staged call that fails carries none).

    ``class`` and ``operation`` are the staged operation's; ``staged`` holds the draft's handle and the
    promote and discard calls resolved with ``request`` = the staged request and ``response`` = the
    draft's answer (null when not declared or unavailable; ``unavailable`` says why for the latter).
    """
    stage = plan.stage
    staged: JSONObject = {"draft_operation": None, "handle": None, "promote": None, "discard": None}
    if stage is not None:
        from anvil.air.paths import NOTHING, resolve_source

        handle = resolve_source(stage.handle, response=response)
        staged["draft_operation"] = stage.draft_operation
        staged["handle"] = None if handle is NOTHING else handle
        reasons: list[str] = []
        for name, step in (("promote", stage.promote), ("discard", stage.discard)):
            if step is None:
                continue
            resolved = _resolve(step, name, request=request, response=response, answered_at_ms=0)
            staged[name] = None if resolved.call is None else _confirmed(resolved.call, step.confirm)
            if resolved.reason is not None:
                reasons.append(f"{name}: {resolved.reason}")
        if reasons:
            staged["unavailable"] = "; ".join(reasons)
    report: JSONObject = {
        "class": plan.effect_class,
        "operation": plan.operation,
        "idempotency_key": idempotency_key,
        "undo": None,
        "deadline_ms": None,
        "lookup": None,
        "staged": staged,
    }
    return _marked(report, replayed=replayed, replay_unavailable=replay_unavailable)


def _renamed(call: JSONValue, rename: Callable[[str], str]) -> JSONValue:
    if isinstance(call, dict) and isinstance(call.get("tool"), str):
        return {**call, "tool": rename(call["tool"])}
    return call


def rewrite_report_tools(report: JSONObject, rename: Callable[[str], str]) -> JSONObject:
    """A copy of ``report`` with every follow-up ``tool`` renamed (a fleet's prefixed names).

    Rewrites ``undo``, ``lookup``, ``compensate``, ``staged.promote`` and ``staged.discard``; nulls stay
    null and nothing else changes.
    """
    out = dict(report)
    for key in ("undo", "lookup", "compensate"):
        if key in out:
            out[key] = _renamed(out[key], rename)
    staged = out.get("staged")
    if isinstance(staged, dict):
        out["staged"] = {**staged, "promote": _renamed(staged.get("promote"), rename)}
        out["staged"]["discard"] = _renamed(staged.get("discard"), rename)
    return out
