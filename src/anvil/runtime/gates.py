"""The executor's pre-flight gates (original-core §6.1 steps 1-9, §6.6): pure checks that touch no wire.

Each gate returns what later steps need or raises :class:`Refusal`, which the executor turns into an
error envelope. Gates run in a fixed order so the first problem a caller sees is always the same one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final
from urllib.parse import urlsplit

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.canonical import hash_canonical
from anvil.air.hosts import host_allowed
from anvil.air.model import Operation
from anvil.runtime.context import CallOptions, RuntimeContext
from anvil.runtime.credentials import Credential, credential_hosts, credential_profile
from anvil.runtime.keys import (
    derived_key,
    is_portable_key,
    principal_of,
    scope_texts,
    text_fingerprint,
)
from anvil.runtime.request import OperationPlan
from anvil.runtime.retry import MAX_ATTEMPT_TIMEOUT_MS, MAX_ATTEMPTS, MAX_BACKOFF_MS, MIN_ATTEMPT_TIMEOUT_MS, bounds_ok

__all__ = [
    "KeyResolution",
    "Refusal",
    "check_confirmation",
    "check_credential_carrier",
    "check_operation",
    "check_required",
    "check_timeout",
    "explicit_key",
    "host_allowed",
    "principal_label",
    "resolve_key",
    "split_key_inputs",
]

_KEY_RULE: Final = {"encoding": "visible_ascii", "max_bytes": 255}
_KEY_MESSAGE: Final = "An idempotency key must be 1 to 255 bytes of visible ASCII with no spaces or control characters."


class Refusal(Exception):
    """A gate refused the call; the fields become the error envelope."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: Mapping[str, JSONValue] | None = None,
        required_flags: tuple[str, ...] | None = None,
        retryable: bool | None = None,
        safe_to_retry: bool | None = None,
    ) -> None:
        super().__init__(code)
        self.code = code
        self.message = message
        self.details = details
        self.required_flags = required_flags
        self.retryable = retryable
        self.safe_to_retry = safe_to_retry


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyResolution:
    """The key a call sends (explicit or derived), and the replay fingerprint and ledger scope (keyed ops only).

    ``derived`` is True when the key was derived from the request fingerprint (no caller key);
    ``scope_text`` is the ledger scope's canonical JSON (what the ledger key hashes).
    """

    key: str | None = None
    fingerprint: str | None = None
    scope: JSONObject | None = None
    derived: bool = False
    scope_text: str | None = None


def principal_label(identity: Mapping[str, JSONValue] | None) -> str:
    """The caller as the audit line names it: ``anonymous``, ``unresolved`` (an identity without a stable
    principal) or a ``sha256:`` digest of the principal (never its claims)."""
    if identity is None:
        return "anonymous"
    principal = principal_of(identity)
    return "unresolved" if principal is None else "sha256:" + hash_canonical(principal)[:16]


def check_operation(op: Operation) -> None:
    """Gates 1-2: the operation is approved and its retry policy is inside the hard bounds.

    Raises:
        Refusal: ``unsupported_operation``.
    """
    if not op.is_approved:
        raise Refusal(
            "unsupported_operation",
            f"Operation '{op.id}' is not approved for execution (state: {op.state}).",
            details={"state": op.state, "required_action": f"anvil approve <bundle> {op.id}"},
        )
    if not bounds_ok(op.retries):
        raise Refusal(
            "unsupported_operation",
            f"Operation '{op.id}' has retry settings outside the runtime bounds.",
            details={"max_attempts": MAX_ATTEMPTS, "max_delay_ms": MAX_BACKOFF_MS},
        )


def check_required(plan: OperationPlan, arguments: object) -> Mapping[str, JSONValue]:
    """Gates 3-4: the carrier and the operation's own server (if any) resolve, arguments are an object
    and no required input is missing (absent, null or empty).

    Raises:
        Refusal: ``unsupported_operation`` (carrier, server) or ``validation_error`` (``details.missing``).
    """
    if plan.carrier_issue is not None:
        raise Refusal(
            "unsupported_operation",
            f"Operation '{plan.op.id}' has no usable idempotency carrier.",
            details={"idempotency_carrier": plan.carrier_issue},
        )
    if plan.server_issue is not None:  # never sent to the service's server instead
        raise Refusal(
            "unsupported_operation",
            f"Operation '{plan.op.id}' declares its own server, which has no URL to send to.",
            details={"server": plan.server_issue},
        )
    if not isinstance(arguments, Mapping):
        raise Refusal("validation_error", "Arguments must be an object.", details={"field": "arguments"})
    missing = [name for name in plan.required if arguments.get(name) in (None, "")]
    if missing:
        raise Refusal(
            "validation_error", f"Missing required input: {', '.join(missing)}.", details={"missing": missing}
        )
    return arguments


def _pop_pointer(body: JSONObject, pointer: tuple[str, ...]) -> tuple[JSONObject, JSONValue]:
    """A copy of ``body`` without the value at ``pointer``, and that value (containers copied, not mutated)."""
    root = dict(body)
    node = root
    for part in pointer[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            return root, None
        node[part] = node = dict(child)
    return root, node.pop(pointer[-1], None)


def split_key_inputs(
    plan: OperationPlan, arguments: Mapping[str, JSONValue], option_key: str | None
) -> tuple[dict[str, JSONValue], list[object]]:
    """The business input the fingerprint covers, and every key candidate the call carries.

    Candidates: the explicit option, and (only when a carrier exists) the idempotency safety input,
    the modeled carrier input and, for a whole-body carrier, the value at its pointer. The confirm
    input is not business input either.

    Raises:
        Refusal: ``validation_error`` for a non-string carrier input or a non-object whole body.
    """
    business = dict(arguments)
    candidates: list[object] = [] if option_key is None else [option_key]
    carrier = plan.carrier
    if carrier is not None:
        if plan.safety.idempotency is not None and plan.safety.idempotency in business:
            candidates.append(business.pop(plan.safety.idempotency))
        if carrier.input_name is not None and carrier.input_name in business:
            value = business.pop(carrier.input_name)
            if value is not None and not isinstance(value, str):
                raise Refusal(
                    "validation_error",
                    "The idempotency carrier input must be a string.",
                    details={"field": carrier.input_name},
                )
            candidates.append(value)
        if carrier.mechanism == "body" and plan.whole_body and carrier.pointer:
            body = business.get("body")
            if body is None:
                business["body"] = {}
            elif not isinstance(body, dict):
                raise Refusal("validation_error", "The request body must be an object.", details={"field": "body"})
            else:
                business["body"], nested = _pop_pointer(body, carrier.pointer)
                candidates.append(nested)
    if plan.safety.confirm is not None:
        business.pop(plan.safety.confirm, None)
    return business, candidates


def check_confirmation(
    plan: OperationPlan, arguments: Mapping[str, JSONValue], confirmed: bool, candidates: list[object]
) -> None:
    """Gate 5: an operation that requires confirmation got ``confirm`` (the option or its input).

    Raises:
        Refusal: ``confirmation_required`` with ``--confirm`` (and ``--idempotency-key`` when a
            client-supplied required key is also absent) in ``required_flags``.
    """
    op = plan.op
    if not op.confirmation.required or confirmed:
        return
    if plan.safety.confirm is not None and arguments.get(plan.safety.confirm) is True:
        return
    flags: tuple[str, ...] = ("--confirm",)
    idem = op.idempotency
    supplied = any(candidate not in (None, "") for candidate in candidates)
    if idem.mode == "required" and idem.key_derivation != "request_fingerprint" and not supplied:
        flags += ("--idempotency-key",)
    reason = op.confirmation.reason or f"{op.id} is an unsafe {op.effect.risk} mutation and requires confirmation."
    raise Refusal("confirmation_required", reason, required_flags=flags)


def explicit_key(plan: OperationPlan, candidates: list[object]) -> str | None:
    """Gate 6: every supplied key is portable, the operation has a carrier for it, and they agree.

    Raises:
        Refusal: ``validation_error`` (details name the field, never the key).
    """
    field = plan.safety.idempotency or "idempotency_key"
    explicit: list[str] = []
    for candidate in candidates:
        if candidate is None:
            continue
        if not is_portable_key(candidate):
            raise Refusal("validation_error", _KEY_MESSAGE, details={"field": field, **_KEY_RULE})
        explicit.append(str(candidate))
    if explicit and plan.carrier is None:
        raise Refusal(
            "validation_error",
            f"Operation '{plan.op.id}' does not send an idempotency key upstream.",
            details={
                "field": field,
                "declared_mode": plan.op.idempotency.mode,
                "accepted_modes": ["required", "key_supported"],
            },
        )
    if len(set(explicit)) > 1:
        raise Refusal("validation_error", "Conflicting idempotency keys were supplied.", details={"field": field})
    return explicit[0] if explicit else None


def resolve_key(
    plan: OperationPlan,
    ctx: RuntimeContext,
    opts: CallOptions,
    business: dict[str, JSONValue],
    explicit: str | None,
) -> KeyResolution:
    """Gate 7: bind the principal, fingerprint the request, derive a key when allowed, require one when needed.

    Raises:
        Refusal: ``validation_error`` (blank service id, key outside the carrier schema),
            ``auth_required`` (an identity without a stable principal) or ``idempotency_required``.
    """
    op = plan.op
    if not ctx.service_id.strip():
        raise Refusal("validation_error", "The runtime serviceId must not be blank.", details={"field": "service_id"})
    principal = principal_of(opts.identity)
    resolution = KeyResolution()
    if plan.carrier is not None:
        derive = op.idempotency.key_derivation == "request_fingerprint"
        if principal is None:
            if explicit is not None or derive:
                raise Refusal("auth_required", "Replay protection requires a stable verified caller principal.")
        else:
            texts = scope_texts(
                service_id=ctx.service_id.strip(),
                environment=ctx.env,
                base_url=ctx.upstream_url(plan.server),
                auth_profile=ctx.auth_profile,
                credential_profile=credential_profile(ctx.auth_profile, op.auth),
            )
            fingerprint = text_fingerprint(op.id, business, texts.replay(principal))
            key = explicit if explicit is not None else (derived_key(fingerprint) if derive else None)
            resolution = KeyResolution(
                key=key,
                fingerprint=fingerprint,
                scope=texts.scope(),
                derived=explicit is None and key is not None,
                scope_text=texts.ledger,
            )
        if resolution.key is not None and plan.key_check is not None and not plan.key_check(resolution.key):
            raise Refusal(
                "validation_error",
                "The idempotency key does not satisfy the modeled upstream carrier constraints.",
                details={"field": plan.safety.idempotency or "idempotency_key"},
            )
    if op.idempotency.mode == "required" and resolution.key is None:
        raise Refusal(
            "idempotency_required",
            f"Operation '{op.id}' requires an idempotency key.",
            required_flags=("--idempotency-key",),
        )
    return resolution


def check_timeout(timeout_ms: object) -> None:
    """Gate 8: the per-attempt timeout is an integer from 100 to 30000 ms.

    Raises:
        Refusal: ``validation_error`` with ``details{field: timeout_ms, min, max}``.
    """
    if (
        isinstance(timeout_ms, bool)
        or not isinstance(timeout_ms, int)
        or not MIN_ATTEMPT_TIMEOUT_MS <= timeout_ms <= MAX_ATTEMPT_TIMEOUT_MS
    ):
        raise Refusal(
            "validation_error",
            "The upstream timeout must be an integer from 100 to 30000 milliseconds.",
            details={"field": "timeout_ms", "min": MIN_ATTEMPT_TIMEOUT_MS, "max": MAX_ATTEMPT_TIMEOUT_MS},
        )


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def credential_withheld(plan: OperationPlan, base_url: str, ctx: RuntimeContext) -> str | None:
    """The host a call goes to when the operation's credential may not go there, else None.

    A credential goes to the service's host (where :attr:`RuntimeContext.base_url` points) and to the
    hosts someone consented to for it: the operation's ``credential_hosts`` (reviewed in the manifest)
    and ``ANVIL_CREDENTIAL_HOSTS`` (the operator's), each naming the operation's declared server host or
    the host the operator re-pointed it to. An operation whose own server is elsewhere is sent without it.
    """
    if plan.server is None:
        return None
    target = _host(base_url)
    if target and target == _host(ctx.base_url):
        return None
    consented = {*(plan.op.credential_hosts or ()), *credential_hosts(ctx.credentials)}
    if target in consented or _host(plan.server) in consented:
        return None
    return target or _host(plan.server)


def check_credential_carrier(plan: OperationPlan, credential: Credential) -> None:
    """Credential material must never overwrite the idempotency header or query carrier.

    Raises:
        Refusal: ``unsupported_operation`` with ``details.credential_carrier_conflict``.
    """
    carrier = plan.carrier
    if carrier is None or carrier.mechanism not in ("header", "query"):
        return
    if carrier.mechanism == "header":
        clash = any(name.lower() == carrier.key.lower() for name, _ in credential.headers)
    else:
        clash = any(name == carrier.key for name, _ in credential.query)
    if clash:
        raise Refusal(
            "unsupported_operation",
            f"The credential for {plan.op.id} would overwrite its idempotency key.",
            details={"idempotency_carrier": carrier.key, "credential_carrier_conflict": True},
        )
