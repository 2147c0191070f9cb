"""The conservative classifier (original-core §3.4): effect, idempotency, retries, confirmation, archetype.

Pure functions of what the source says. Anything the classifier cannot prove stays on the safe side:
an unknown method is a mutation, a mutation without proven idempotency never retries and asks for
confirmation. The manifest may tighten freely and loosen only by an explicit statement.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.enums import Action, EffectKind, RetryBasis, RetryCondition, RiskLevel
from anvil.air.model import Confirmation, Effect, Idempotency, Operation, RetryPolicy
from anvil.air.naming import (
    MUTATION_FAMILIES,
    READ_FAMILIES,
    derive_names,
    has_word,
    path_segments,
    post_search_read,
    snake,
)

__all__ = [
    "PASSTHROUGH_BODY_NAMES",
    "PASSTHROUGH_NAMES",
    "TRANSIENT_CONDITIONS",
    "Classification",
    "archetype_for",
    "classify_operation",
    "confirmation_for",
    "effect_kind_for",
    "passthrough_inputs",
    "retry_policy_for",
]

READ_METHODS: Final = frozenset({"get", "head", "options", "trace"})
DESTRUCTIVE_WORDS: Final = ("delete", "remove", "destroy", "purge", "revoke", "terminate", "cancel", "drop")
FINANCIAL_WORDS: Final = ("refund", "charge", "payment", "payout", "transfer", "invoice", "capture", "debit", "credit")
COMMS_WORDS: Final = ("send", "email", "notify", "message", "dispatch", "publish", "sms")
#: The full transient list a proven-safe policy retries on.
TRANSIENT_CONDITIONS: Final[tuple[RetryCondition, ...]] = (
    "timeout",
    "connection_reset",
    "dns_failure",
    "http_408",
    "http_429",
    "http_500",
    "http_502",
    "http_503",
    "http_504",
)
#: Input names that carry a query language anywhere (case-insensitive).
PASSTHROUGH_NAMES: Final = frozenset({"sql", "jql", "cql", "kql", "xpath", "dsl", "where", "expression"})
#: Further names that carry a query language in a request body.
PASSTHROUGH_BODY_NAMES: Final = frozenset({"q", "query", "filter"})
_METHOD_DEFAULT_ACTION: Final[dict[str, Action]] = {
    "post": "create",
    "put": "replace",
    "patch": "update",
    "delete": "delete",
}


@dataclass(frozen=True, slots=True)
class Classification:
    """What the classifier decided for one operation."""

    effect: Effect
    idempotency: Idempotency


def _signal(operation_id: str | None, summary: str | None, path: str) -> str:
    return snake(f"{operation_id or ''} {summary or ''} {path}")


def effect_kind_for(method: str | None, path: str, operation_id: str | None, summary: str | None) -> EffectKind:
    """read for GET/HEAD/OPTIONS/TRACE and a POST search; mutation otherwise (and when unknown)."""
    if method is None:
        return "mutation"
    method = method.lower()
    if method in READ_METHODS:
        return "read"
    if method == "post" and post_search_read(operation_id, summary, path):
        return "read"
    return "mutation"


def _family_action(signal: str, families: Iterable[tuple[str, tuple[str, ...]]]) -> str | None:
    for family, words in families:
        if any(has_word(signal, word) for word in words):
            return family
    return None


def _ends_in_param(path: str) -> bool:
    segments = path_segments(path)
    return bool(segments) and (segments[-1].startswith("{") or segments[-1].endswith(")"))


def _risk(kind: EffectKind, method: str, signal: str) -> RiskLevel:
    if kind == "read":
        return "none"
    if method == "delete" or any(word in signal for word in DESTRUCTIVE_WORDS):
        return "destructive"
    if any(word in signal for word in FINANCIAL_WORDS):
        return "financial"
    if any(word in signal for word in COMMS_WORDS):  # substring, as the original: unpublish, resend
        return "high"
    return "medium"


def classify_operation(
    *,
    method: str | None,
    path: str,
    operation_id: str | None,
    summary: str | None,
    forced_kind: EffectKind | None = None,
) -> Classification:
    """Classify one operation (original-core §3.4; §2.3 for ``forced_kind`` and a missing method).

    Args:
        method: the HTTP method, or None when the operation has none.
        path: the source path template.
        operation_id: the source operationId, if any.
        summary: the source summary, if any.
        forced_kind: a kind stated by the manifest (or an adapter); the rest is re-derived for it.

    Returns:
        The effect (kind, action, resource, risk, reversible) and the idempotency posture.
    """
    kind = forced_kind or effect_kind_for(method, path, operation_id, summary)
    resource = _resource(method, path, operation_id, summary, kind)
    if method is None:
        if kind == "read":
            return Classification(
                Effect(kind="read", action="list", resource=resource, risk="none", reversible=True),
                Idempotency(mode="natural"),
            )
        return Classification(
            Effect(kind="mutation", action="other", resource=resource, risk="medium", reversible=True),
            Idempotency(mode="none"),
        )
    verb = method.lower()
    signal = _signal(operation_id, summary, path)
    risk = _risk(kind, verb, signal)
    reversible = risk not in ("financial", "destructive")
    family = _family_action(signal, READ_FAMILIES if kind == "read" else MUTATION_FAMILIES)
    action: Action
    if family is not None:
        action = family  # type: ignore[assignment]  # family names are Action values
    elif kind == "read":
        action = "get" if _ends_in_param(path) else "list"
    else:
        action = _METHOD_DEFAULT_ACTION.get(verb, "other")
    natural = kind == "read" or verb in ("put", "delete")
    effect = Effect(kind=kind, action=action, resource=resource, risk=risk, reversible=reversible)
    return Classification(effect, Idempotency(mode="natural" if natural else "none"))


def _resource(
    method: str | None, path: str, operation_id: str | None, summary: str | None, kind: EffectKind
) -> str | None:
    verb = (method or "get").lower()
    names = derive_names("", path, verb, operation_id, summary, search_read=kind == "read" and verb == "post")
    return names.effect_resource or None


def retry_policy_for(effect: Effect, idempotency: Idempotency) -> RetryPolicy:
    """The retry policy the classifier gives: proven-safe retries 3 times on transient faults, else none."""
    basis: RetryBasis
    if effect.kind == "read":
        basis = "read_safe"
    elif idempotency.mode in ("natural", "client_id"):
        basis = "natural_idempotent"
    elif idempotency.mode in ("required", "key_supported"):
        basis = "idempotency_key"
    else:
        return RetryPolicy(mode="none", basis="unproven", max_attempts=1, backoff="none")
    return RetryPolicy(
        mode="safe",
        basis=basis,
        max_attempts=3,
        backoff="exponential_jitter",
        base_delay_ms=200,
        max_delay_ms=20000,
        retry_on=TRANSIENT_CONDITIONS,
    )


def confirmation_for(effect: Effect, idempotency: Idempotency) -> Confirmation:
    """Confirmation is required for a mutation that is high-stakes, irreversible or not proven idempotent."""
    if effect.kind != "mutation":
        return Confirmation(required=False)
    unsafe = effect.risk in ("financial", "destructive", "high") or not effect.reversible or idempotency.mode == "none"
    if not unsafe:
        return Confirmation(required=False)
    if not effect.reversible:
        reason = f"This operation is an irreversible {effect.risk} mutation."
    else:
        reason = f"This operation is an unsafe {effect.risk} mutation."
    return Confirmation(required=True, risk=effect.risk, reason=reason)


def _unconstrained_string(schema: JSONObject) -> bool:
    kind = schema.get("type")
    is_string = kind == "string" or (isinstance(kind, list) and "string" in kind)
    return is_string and not any(k in schema for k in ("enum", "const", "maxLength", "pattern"))


def passthrough_inputs(op: Operation) -> tuple[str, ...]:
    """Wire names of inputs that pass a query language through as a plain unconstrained string.

    Body properties count only when the body is projected as fields (original-core §3.4, §3.6): a
    whole-object body is passed as one object, so a ``query`` property inside it is not an input of its own.
    """
    found: list[str] = []
    for param in op.input.params:
        names = PASSTHROUGH_NAMES | (PASSTHROUGH_BODY_NAMES if param.in_ == "body" else frozenset())
        if param.name.lower() in names and _unconstrained_string(param.schema):
            found.append(param.name)
    body = op.input.body
    if body is not None and body.projection == "fields":
        names = PASSTHROUGH_NAMES | PASSTHROUGH_BODY_NAMES
        found.extend(f.name for f in body.fields if f.name.lower() in names and _unconstrained_string(f.schema))
    return tuple(found)


def archetype_for(op: Operation) -> str | None:
    """long_running, query_passthrough, search (read list/search), transaction (mutation), else None."""
    if op.long_running:
        return "long_running"
    if passthrough_inputs(op):
        return "query_passthrough"
    if op.effect.kind == "read":
        return "search" if op.effect.action in ("list", "search") else None
    return "transaction"
