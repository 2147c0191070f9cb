"""The one application path: resolved overlay predicates onto an operation (original-core §2.3).

:func:`entry_assertions` turns a manifest entry into ``(predicate, value)`` pairs; overlay resolution
(:mod:`anvil.compiler.overlay`) picks one value per predicate; :func:`apply_values` writes them onto an
operation in the order of §2.3 and :func:`apply_effect_contract` writes the ``effect:`` block once
every operation's names are final, so references can be pinned to AIR ids.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final, cast

from anvil._types import JSONObject, JSONValue
from anvil.air.codec import MAX_RETRY_ATTEMPTS
from anvil.air.effects import reversible_for_class
from anvil.air.enums import EffectClass, EffectKind, LookupBy, RetryCondition
from anvil.air.model import (
    Claim,
    Confirmation,
    Deadline,
    Draft,
    Effect,
    Evidence,
    FollowUp,
    Idempotency,
    Lookup,
    Mcp,
    Operation,
    RetryPolicy,
    StepCall,
)
from anvil.air.naming import project_routing_names, singularize
from anvil.compiler.classify import READ_METHODS, classify_operation, confirmation_for, retry_policy_for
from anvil.compiler.manifest.auth import (
    AuthFields,
    apply_auth_fields,
    block_incoherent_auth,
    carrier_json,
    enriched_claim,
    provider_json,
    with_claim,
)
from anvil.compiler.manifest.inputs import rename_inputs
from anvil.compiler.manifest.model import Location, OperationManifest
from anvil.compiler.manifest.parse import normalize_retry_condition
from anvil.diagnostics import Diagnostic

__all__ = [
    "HUMAN_APPROVAL_REASON",
    "PREDICATES",
    "SAFETY_PREDICATES",
    "OperationIndex",
    "apply_effect_contract",
    "apply_values",
    "base_value",
    "entry_assertions",
    "heuristic_read",
    "keyed_write_by_manifest",
    "match_operations",
    "pin_reference",
]

#: Every predicate an assertion may name (original-core §2.10, plus ADR-0030's ``effectContract``).
PREDICATES: Final = (
    "effect.kind", "effect.risk", "effect.reversible", "effect.action", "displayName", "description",
    "name.resource", "name.verb",
    "auth.type", "auth.credentialProfile", "auth.provider", "auth.principal", "auth.issuer", "auth.audience",
    "auth.carrier", "auth.secretSource", "auth.tenant", "auth.actor", "auth.subject", "auth.scopes",
    "idempotency.mode", "idempotency.mechanism", "idempotency.key",
    "confirmation.required", "confirmation.risk", "confirmation.reason", "confirmation.human_approval",
    "retries.mode", "retries.maxAttempts", "retries.retryOn",
    "effectContract", "state", "credentialHosts",
)  # fmt: skip
#: Predicates on which two equally authoritative values are a conflict that blocks the operation.
SAFETY_PREDICATES: Final = frozenset(
    {
        "effect.kind", "effect.reversible", "idempotency.mode", "confirmation.required",
        "confirmation.human_approval", "retries.mode", "auth.principal", "auth.type", "auth.credentialProfile",
        "auth.provider", "auth.scopes", "auth.issuer", "auth.audience", "auth.carrier", "state", "effectContract",
        "credentialHosts",
    }
)  # fmt: skip
#: The confirmation reason ``human_approval: true`` supplies when there is none.
HUMAN_APPROVAL_REASON: Final = "This operation requires explicit human approval."

_STRATEGY_MODE: Final = {
    "natural": "natural",
    "required_request_key": "required",
    "key_supported": "key_supported",
    "client_id": "client_id",
    "none": "none",
}
_AUTH_PREDICATES: Final = {
    "type": "auth.type",
    "credential_profile": "auth.credentialProfile",
    "principal": "auth.principal",
    "issuer": "auth.issuer",
    "audience": "auth.audience",
    "secret_source": "auth.secretSource",
    "tenant": "auth.tenant",
    "actor": "auth.actor",
    "subject": "auth.subject",
}


def entry_assertions(entry: OperationManifest) -> list[tuple[str, JSONValue, Location]]:
    """The ``(predicate, value, where)`` statements of one manifest entry, in predicate order."""
    out: list[tuple[str, JSONValue, Location]] = []

    def put(predicate: str, value: JSONValue, where: Location | None = None) -> None:
        if value is not None:
            out.append((predicate, value, where or entry.location))

    put("effect.kind", entry.side_effect)
    put("effect.risk", entry.risk)
    put("effect.reversible", entry.reversible)
    put("effect.action", entry.action)
    put("displayName", entry.display_name)
    put("description", entry.description)
    if entry.name is not None:
        put("name.resource", entry.name.resource)
        put("name.verb", entry.name.verb)
    if entry.inputs:
        put("inputs", dict(entry.inputs))
    if entry.auth is not None:
        for field_name, predicate in _AUTH_PREDICATES.items():
            if field_name == "type" and entry.auth.scheme is not None:
                continue  # with a scheme, type says how that scheme is served: the scheme choice applies it
            put(predicate, getattr(entry.auth, field_name))
        put("auth.carrier", carrier_json(entry.auth))
        put("auth.provider", provider_json(entry.auth.provider))
    idem = entry.idempotency
    if idem is not None and idem.strategy is not None:
        put("idempotency.mode", _STRATEGY_MODE[idem.strategy])
        mechanism = idem.key_location
        if mechanism is None and idem.parameter is None:
            # Only one spelling was given and it names its own location: a header or a body field.
            mechanism = (
                "header" if idem.header and not idem.field else "body" if idem.field and not idem.header else None
            )
        put("idempotency.mechanism", mechanism)
        put("idempotency.key", idem.key)
    if entry.confirmation is not None:
        put("confirmation.required", entry.confirmation.required)
        put("confirmation.risk", entry.confirmation.risk)
        put("confirmation.reason", entry.confirmation.reason)
        put("confirmation.human_approval", entry.confirmation.human_approval)
    if entry.retries is not None:
        enabled = entry.retries.enabled
        put("retries.mode", None if enabled is None else ("safe" if enabled else "none"))
        put("retries.maxAttempts", entry.retries.max_attempts)
        put("retries.retryOn", list(entry.retries.only_on) if entry.retries.only_on else None)
    if entry.effect is not None:
        put("effectContract", entry.effect.to_json(), entry.effect.location)
    put("state", entry.state)
    if entry.credential_hosts is not None:
        put("credentialHosts", list(entry.credential_hosts))
    return out


def base_value(op: Operation, predicate: str) -> JSONValue:
    """The operation's current value for ``predicate`` (what loosening is measured against)."""
    auth = op.auth
    simple: dict[str, JSONValue] = {
        "effect.kind": op.effect.kind,
        "effect.risk": op.effect.risk,
        "effect.reversible": op.effect.reversible,
        "effect.action": op.effect.action,
        "displayName": op.display_name,
        "description": op.description,
        "name.resource": op.effect.resource,
        "name.verb": op.canonical_name.split("_")[0],
        "auth.type": auth.type,
        "auth.credentialProfile": auth.credential_profile,
        "auth.principal": auth.principal,
        "auth.issuer": auth.issuer,
        "auth.audience": auth.audience,
        "auth.secretSource": auth.secret_source,
        "auth.tenant": auth.tenant,
        "auth.actor": auth.delegation.actor if auth.delegation else None,
        "auth.subject": auth.delegation.subject if auth.delegation else None,
        "auth.scopes": list(auth.scopes),
        "idempotency.mode": op.idempotency.mode,
        "idempotency.mechanism": op.idempotency.mechanism,
        "idempotency.key": op.idempotency.key,
        "confirmation.required": op.confirmation.required,
        "confirmation.risk": op.confirmation.risk,
        "confirmation.reason": op.confirmation.reason,
        "confirmation.human_approval": op.confirmation.human_approval,
        "retries.mode": op.retries.mode,
        "retries.maxAttempts": op.retries.max_attempts,
        "retries.retryOn": list(op.retries.retry_on),
        "state": op.state,
        "credentialHosts": list(op.credential_hosts or ()),
    }
    return simple.get(predicate)


# --- operation references -----------------------------------------------------------------------------


class OperationIndex:
    """Answers "which operations does this reference name?" in constant time (§1.18, §3.9)."""

    def __init__(self, operations: Sequence[Operation]) -> None:
        self._ids = frozenset(op.id for op in operations)
        self._names: dict[str, list[str]] = {}
        for op in operations:
            for name in dict.fromkeys((op.canonical_name, op.source_ref.operation_id)):
                if name:
                    self._names.setdefault(name, []).append(op.id)

    def match(self, ref: str) -> tuple[str, ...]:
        """An exact AIR id alone, else every operation whose canonical name or operationId is ``ref``."""
        if ref in self._ids:
            return (ref,)
        return tuple(self._names.get(ref, ()))


def match_operations(operations: Sequence[Operation], ref: str) -> tuple[str, ...]:
    """AIR ids a reference names (§1.18, §3.9): an exact id alone, else every id/canonical/operationId match."""
    return OperationIndex(operations).match(ref)


def pin_reference(operations: Sequence[Operation] | OperationIndex, ref: str) -> str:
    """The AIR id ``ref`` names when it names exactly one operation; else ``ref`` as written."""
    index = operations if isinstance(operations, OperationIndex) else OperationIndex(operations)
    matches = index.match(ref)
    return matches[0] if len(matches) == 1 else ref


# --- application --------------------------------------------------------------------------------------


def _reclassify(op: Operation, kind: EffectKind) -> Operation:
    """Re-run the classifier with ``kind`` forced (§2.3 ``side_effect``); the resource and contract stay."""
    old = op.effect
    result = classify_operation(
        method=op.source_ref.method,
        path=op.source_ref.path or "",
        operation_id=op.source_ref.operation_id,
        summary=op.display_name,
        forced_kind=kind,
    )
    effect = replace(
        result.effect,
        resource=old.resource,
        class_=old.class_,
        inverse=old.inverse,
        compensate=old.compensate,
        lookup=old.lookup,
        draft=old.draft,
    )
    return replace(op, effect=effect, idempotency=result.idempotency)


def _rehome(op: Operation, resource: str | None, verb: str | None, service_id: str) -> Operation:
    """Re-project canonical name, CLI command and tool name together; the id never moves (§1.5)."""
    words = op.cli.command.split(" ")
    current_resource = words[1] if len(words) > 2 else (op.effect.resource or service_id)
    names = project_routing_names(service_id, resource or current_resource, verb or op.canonical_name.split("_")[0])
    effect = replace(op.effect, resource=singularize(resource)) if resource else op.effect
    claims: list[Claim] = []
    found = False
    for claim in op.evidence.claims:
        if claim.predicate == "name.quality":
            found = True
            claim = replace(claim, value=names.canonical_name, confidence=0.95, note="name re-homed by manifest")
        claims.append(claim)
    if not found:
        claims.append(
            Claim(
                subject=op.id,
                predicate="name.quality",
                value=names.canonical_name,
                source="spec",
                method="anvil-manifest",
                confidence=0.95,
                note="name re-homed by manifest",
            )
        )
    return replace(
        op,
        canonical_name=names.canonical_name,
        cli=replace(op.cli, command=names.command),
        mcp=Mcp(tool_name=names.tool_name),
        effect=effect,
        evidence=Evidence(claims=tuple(claims)),
    )


def _idempotency(current: Idempotency, values: Mapping[str, JSONValue]) -> Idempotency:
    """The §2.4 strategy table; applied only when a mode (strategy) was resolved."""
    mode = values.get("idempotency.mode")
    if mode is None:
        return current
    out = replace(current, mode=mode)
    if values.get("idempotency.mechanism") is not None:
        out = replace(out, mechanism=values["idempotency.mechanism"])
    if values.get("idempotency.key") is not None:
        out = replace(out, key=values["idempotency.key"])
    if mode == "required":
        out = replace(out, key_derivation="client_supplied")
    elif mode == "key_supported":
        out = replace(out, key_derivation="request_fingerprint")
    return out


def _retries(current: RetryPolicy, values: Mapping[str, JSONValue]) -> RetryPolicy:
    """Explicit retries (§2.5) over the recomputed policy."""
    out = current
    mode = values.get("retries.mode")
    if mode == "none":
        out = replace(out, mode="none", max_attempts=1, backoff="none", retry_on=())
    elif mode == "safe":
        out = replace(out, mode="safe", backoff="exponential_jitter" if out.backoff == "none" else out.backoff)
    stated = values.get("retries.retryOn")
    conditions = [normalize_retry_condition(item) for item in stated] if isinstance(stated, list) else []
    retry_on = tuple(dict.fromkeys(item for item in conditions if item is not None))
    if retry_on:  # when nothing survives normalization the recomputed conditions stay
        out = replace(out, retry_on=cast(tuple[RetryCondition, ...], retry_on))
    attempts = values.get("retries.maxAttempts")
    if isinstance(attempts, int) and not isinstance(attempts, bool) and 1 <= attempts <= MAX_RETRY_ATTEMPTS:
        out = replace(out, max_attempts=attempts)
    return out


def _confirmation(current: Confirmation, values: Mapping[str, JSONValue]) -> Confirmation:
    """Explicit confirmation (§2.6) over the recomputed one."""
    out = current
    for predicate, name in (
        ("confirmation.required", "required"),
        ("confirmation.risk", "risk"),
        ("confirmation.reason", "reason"),
    ):
        if values.get(predicate) is not None:
            out = replace(out, **{name: values[predicate]})
    human = values.get("confirmation.human_approval")
    if human is not None:
        out = replace(out, human_approval=human)
        if human:
            out = replace(out, required=True, reason=out.reason or HUMAN_APPROVAL_REASON)
    return out


def _declared_class(values: Mapping[str, JSONValue]) -> str | None:
    block = values.get("effectContract")
    return block.get("class") if isinstance(block, dict) else None


#: Strategies that carry a caller key: stating one says the operation writes.
_KEYED_MODES: Final = frozenset({"required", "key_supported", "client_id"})


def heuristic_read(op: Operation) -> bool:
    """True for an operation classified ``read`` only by its name although its HTTP method changes state
    (a ``POST`` whose operationId says query or search, original-core §3.4)."""
    method = (op.source_ref.method or "").lower()
    return op.effect.kind == "read" and bool(method) and method not in READ_METHODS


def keyed_write_by_manifest(op: Operation, values: Mapping[str, JSONValue]) -> bool:
    """True when the manifest gives a heuristic read (:func:`heuristic_read`) a keyed idempotency strategy
    without stating ``side_effect``: the operation is then a mutation."""
    return heuristic_read(op) and values.get("idempotency.mode") in _KEYED_MODES


def apply_values(
    op: Operation, values: Mapping[str, JSONValue], *, service_id: str
) -> tuple[Operation, list[Diagnostic]]:
    """Write resolved predicate values onto ``op`` in the order of §2.3.

    side_effect → risk → reversible → action → display name/description → name re-homing → auth →
    idempotency → retries and confirmation recomputed by the classifier → explicit retries → explicit
    confirmation → state → auth coherence (blocks) → the ``enriched`` claim. A declared effect class
    sets ``reversible`` (unless stated) *before* the recompute, so an irreversible class confirms.
    The effect block itself is written later by :func:`apply_effect_contract`.
    """
    if not values:
        return op, []
    kind = values.get("effect.kind")
    if kind is None and keyed_write_by_manifest(op, values):
        kind = "mutation"  # a key means the reviewer expects a write: the name heuristic does not win
    if kind is not None and kind != op.effect.kind:
        op = _reclassify(op, cast(EffectKind, kind))
    effect = op.effect
    if values.get("effect.risk") is not None:
        effect = replace(effect, risk=values["effect.risk"])
    reversible = values.get("effect.reversible")
    declared = _declared_class(values)
    if reversible is None and declared is not None:
        reversible = reversible_for_class(cast(EffectClass, declared))
    if reversible is not None:
        effect = replace(effect, reversible=reversible)
    if values.get("effect.action") is not None:
        effect = replace(effect, action=values["effect.action"])
    op = replace(
        op,
        effect=effect,
        display_name=values.get("displayName") or op.display_name,
        description=values["description"] if values.get("description") is not None else op.description,
    )
    resource, verb = values.get("name.resource"), values.get("name.verb")
    if resource or verb:
        op = _rehome(op, resource, verb, service_id)
    renamed: list[Diagnostic] = []
    if isinstance(values.get("inputs"), dict):
        op, renamed = rename_inputs(op, cast(dict[str, str], values["inputs"]))
    fields = AuthFields(
        type=values.get("auth.type"),
        credential_profile=values.get("auth.credentialProfile"),
        principal=values.get("auth.principal"),
        issuer=values.get("auth.issuer"),
        audience=values.get("auth.audience"),
        carrier=values.get("auth.carrier"),
        secret_source=values.get("auth.secretSource"),
        tenant=values.get("auth.tenant"),
        actor=values.get("auth.actor"),
        subject=values.get("auth.subject"),
        provider=values.get("auth.provider"),
    )
    if fields.stated:
        op = replace(op, auth=apply_auth_fields(op.auth, fields))
    idempotency = _idempotency(op.idempotency, values)
    retries = _retries(retry_policy_for(op.effect, idempotency), values)
    confirmation = _confirmation(confirmation_for(op.effect, idempotency), values)
    op = replace(op, idempotency=idempotency, retries=retries, confirmation=confirmation)
    if values.get("state") is not None:
        op = replace(op, state=values["state"])
    hosts = values.get("credentialHosts")
    if isinstance(hosts, list):  # a reviewer's consent: the operation's credential may go to these hosts
        op = replace(op, credential_hosts=tuple(str(host) for host in hosts) or None)
    op, found = block_incoherent_auth(op)
    return with_claim(op, enriched_claim(op.id)), [*renamed, *found]


# --- the effect contract --------------------------------------------------------------------------------


def _arguments(piece: Mapping[str, Any]) -> JSONObject:
    return copy.deepcopy(dict(piece.get("arguments") or {}))


def _follow_up(piece: Mapping[str, Any], pin: Any) -> FollowUp:
    deadline = piece.get("deadline")
    return FollowUp(
        operation=pin(piece["operation"]),
        arguments=_arguments(piece),
        deadline=Deadline(within_ms=deadline.get("within_ms"), at=deadline.get("at")) if deadline is not None else None,
    )


def _step(piece: Mapping[str, Any] | None, pin: Any) -> StepCall | None:
    return None if piece is None else StepCall(operation=pin(piece["operation"]), arguments=_arguments(piece))


def apply_effect_contract(
    op: Operation,
    block: Mapping[str, Any],
    operations: Sequence[Operation] | OperationIndex,
    *,
    explicit_reversible: bool,
) -> Operation:
    """Write a resolved ``effect:`` block (manifest spelling) onto ``op``.

    Every operation reference (inverse, compensate, lookup, draft, draft.promote, draft.discard) is
    pinned to an AIR id when it names exactly one of ``operations``; otherwise it is kept as written
    for the effect checks to report. A declared class replaces the class and sets ``reversible``
    unless the same entry stated ``reversible``; each declared piece replaces what was there.
    """

    index = operations if isinstance(operations, OperationIndex) else OperationIndex(operations)

    def pin(ref: str) -> str:
        return pin_reference(index, ref)

    effect: Effect = op.effect
    declared = block.get("class")
    if declared is not None:
        effect = replace(effect, class_=declared)
        if not explicit_reversible:
            effect = replace(effect, reversible=reversible_for_class(declared))
    if "inverse" in block:
        effect = replace(effect, inverse=_follow_up(block["inverse"], pin))
    if "compensate" in block:
        effect = replace(effect, compensate=_follow_up(block["compensate"], pin))
    if "lookup" in block:
        lookup = block["lookup"]
        effect = replace(
            effect,
            lookup=Lookup(
                operation=pin(lookup["operation"]), by=cast(LookupBy, lookup["by"]), arguments=_arguments(lookup)
            ),
        )
    if "draft" in block:
        draft = block["draft"]
        effect = replace(
            effect,
            draft=Draft(
                operation=pin(draft["operation"]),
                arguments=_arguments(draft),
                handle=draft["handle"],
                promote=_step(draft.get("promote"), pin),
                discard=_step(draft.get("discard"), pin),
            ),
        )
    return replace(op, effect=effect)
