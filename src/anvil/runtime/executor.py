"""The executor: ordered gates, then at most one protected upstream write (original-core §6.1).

Gates, each refusing before anything after it runs (none touches the wire):

1. approval  2. retry bounds  3. idempotency carrier  4. required inputs  5. confirmation
6. key validation  7. fingerprint and key derivation (principal bound), required key
8. per-attempt timeout bounds  9. request building  -> a dry run returns the plan here
10. host allowlist  11. credentials  12. durable-ledger gate outside dev  13. ledger reservation
14. bounded attempts, then complete (2xx), keep (uncertain) or release (terminal failure).

A write with a key either runs once under a reservation, replays the stored result (the outcome says
``replayed``), or is refused with a code that says why; an uncertain outcome keeps the reservation for
operator reconciliation. Every call ends with one audit line.

What a failed write means for its reservation (``details.upstream_outcome``), decided by
:attr:`~anvil.runtime.upstream.Answer.possibly_committed`:

=====================================================  ==================  ==================
last answer                                            reservation         ``safe_to_retry``
=====================================================  ==================  ==================
no byte left (no connection, no pooled connection)     released            the op's contract
a status proving nothing was applied: 4xx but 408,     released            the op's contract
429 included, and 503
any other status (408, 500-502, 504-599 such as 501,   kept in progress    false
505, 507, 520-530, 598, 599, anything unregistered),   (possibly_committed)
a timeout or reset after sending, a redirect, an
oversized, cut-off or undecodable answer
=====================================================  ==================  ==================

"The op's contract" is the retry policy: true only for a retryable code on an operation that may be
attempted again (a read, a naturally idempotent write, or a keyed write that carried its key).

An operation whose own server is on another host than the service's is sent there without the
service's credential unless someone consented (:func:`anvil.runtime.gates.credential_withheld`: the
manifest's ``credential_hosts`` or ``ANVIL_CREDENTIAL_HOSTS``); a dry run shows ``credentialWithheld``,
and a 401 or 403 answer then says ``auth/credential_withheld``.

A 401 answer to a token obtained by an OAuth2 exchange (:mod:`anvil.runtime.oauth`) proves nothing was
applied: the call gets one new token and sends once more, with the same idempotency key and under the
same reservation; a second 401, or no new token, is ``auth_required`` and the reservation is released.

With a tracer (:attr:`~anvil.runtime.context.RuntimeContext.tracer`, :mod:`anvil.runtime.tracing`) the call
reports spans under the serving layer's call span: ``anvil.gates`` (from argument validation to the host
allowlist), ``anvil.oauth.token`` for a client-credentials token, ``anvil.ledger.reserve`` (renamed
``anvil.ledger.replay``), one client span per upstream attempt (sent upstream as ``traceparent`` when the
context propagates), ``anvil.ledger.complete`` or ``anvil.ledger.release``; and it tells the call span its
operation, effect class, hashed principal, idempotency outcome and ledger reference. Without one, each site
costs one ``None`` test.

A result stored under a *derived* key (``keyDerivation: request_fingerprint``) replays only for the
context's derived-key window, the retry window it exists for; an explicit caller key keeps the ledger's
full retention. Under a reservation a derived key is sent upstream as
:func:`~anvil.runtime.keys.reservation_key` (unique to the reservation, the same on every attempt and
replay of it), so an upstream that keeps keys longer than the window never dedupes a later, deliberate
repeat. A 2xx answer too large to replay is still returned to this caller, with
``replay_unavailable`` set, and its reservation is kept for reconciliation.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Final

import anyio

from anvil._types import JSONObject, JSONValue
from anvil.air.model import Operation
from anvil.errors import LedgerError
from anvil.ledger.base import Ledger, ReserveContext, safe_reference
from anvil.runtime import gates
from anvil.runtime.audit import write_audit
from anvil.runtime.context import CallOptions, RuntimeContext, UpstreamAnswer
from anvil.runtime.credentials import Credential, credential_profile, not_configured
from anvil.runtime.envelope import CODE_TABLE, ErrorEnvelope
from anvil.runtime.gates import KeyResolution, Refusal
from anvil.runtime.keys import ledger_key, reservation_key
from anvil.runtime.oauth import TokenFailure, outbound_credential
from anvil.runtime.outcome import ExecutionRecord, LedgerState, Outcome, OutcomeKind
from anvil.runtime.request import (
    BuildError,
    OperationPlan,
    WireRequest,
    build_request,
    dry_run_plan,
    prepare,
    with_credential,
)
from anvil.runtime.retry import MAX_BACKOFF_MS, backoff_ms, condition_for_status, parse_retry_after, retry_safe
from anvil.runtime.span_shapes import attempt_shape, gates_shape, ledger_shape
from anvil.runtime.tracing import Attribute, Span, current_span, current_trace_id
from anvil.runtime.upstream import Answer, failure_envelope, parse_data, send_once

__all__ = ["execute", "host_allowed"]

host_allowed = gates.host_allowed
_NO_OPTIONS: Final = CallOptions()
_NO_KEY: Final = KeyResolution()
_TOO_LARGE: Final = "ledger/result_too_large"
#: What a reservation's outcome is called in a trace (``anvil.idempotency.outcome``).
_IDEMPOTENCY: Final[dict[str, str]] = {
    "reserved": "reserved",
    "replay": "replayed",
    "conflict": "conflict",
    "in_progress": "in_progress",
}


#: Time a finished call may still need to complete or release its row, beyond its upstream budget.
_SETTLE_S: Final = 10.0


class _Call:
    """The state of one execution, from the first gate to the audit line."""

    def __init__(self, op: Operation, arguments: Mapping[str, JSONValue], ctx: RuntimeContext, opts: CallOptions):
        self.op = op
        self.args = arguments
        self.ctx = ctx
        self.opts = opts
        self.trace_id = opts.trace_id or current_trace_id()
        self.started = time.perf_counter()
        self.plan: OperationPlan | None = None
        self.resolved = _NO_KEY
        self.principal = gates.principal_label(opts.identity)
        self.attempts = 0
        self.status: int | None = None
        self.ledger_state: LedgerState = "none"
        self.forwarded = False
        self.ledger_id = opts.ledger_id or None  # the caller's key itself: the id auditors join on
        self.retry_safe = False
        self.owned: str | None = None  # the ledger key this call reserved
        self.sent_key: str | None = None  # a derived reservation's own upstream key (else the resolved key)
        self.wire: tuple[Mapping[str, JSONValue], str] = ({}, "")  # arguments and base URL, to re-key a request
        self.reference: str | None = None
        self.touched = False
        self.credential: Credential | None = None  # what went upstream (an exchanged token may be renewed once)
        self.withheld: str | None = None  # the host the operation's own server is on, when no one consented
        self.renewed = False
        self.resends = 0
        self.tracer = ctx.tracer
        self.gates: Span | None = None  # open from the first gate to the host allowlist, when traced
        self.idempotency: str | None = None  # the reservation's outcome, as a trace names it

    # --- results ----------------------------------------------------------------------------------

    def finish(
        self,
        kind: OutcomeKind,
        *,
        envelope: ErrorEnvelope | None = None,
        status: int | None = None,
        data: JSONValue = None,
        plan: JSONObject | None = None,
        replayed: bool = False,
        replay_unavailable: str | None = None,
    ) -> Outcome:
        """Build the outcome and its record, and write the audit line."""
        prepared = self.plan
        effect_class = prepared.effect_class if prepared is not None else self.op.effect.class_ or "irreversible"
        record = ExecutionRecord(
            trace_id=self.trace_id,
            operation=self.op.id,
            principal=self.principal,
            outcome=kind,
            error_code=envelope.code if envelope is not None else None,
            status=self.status,
            attempts=self.attempts,
            duration_ms=(time.perf_counter() - self.started) * 1000,
            effect_class=effect_class,
            ledger=self.ledger_state,
            ledger_id=self.ledger_id,
            key_forwarded=self.forwarded,
            staged_for=self.opts.staged_for,
            dry_run=self.opts.dry_run,
        )
        outcome = Outcome(
            kind=kind,
            status=status,
            data=data,
            envelope=envelope,
            plan=plan,
            record=record,
            idempotency_key=(self.sent_key or self.resolved.key) if self.forwarded else None,
            replayed=replayed,
            replay_unavailable=replay_unavailable,
            attempts=self.attempts,
            trace_id=self.trace_id,
        )
        write_audit(self.ctx.audit, record.to_json())
        if self.tracer is not None:
            self._annotate(record, envelope)
        return outcome

    def _annotate(self, record: ExecutionRecord, envelope: ErrorEnvelope | None) -> None:
        """Close the gates span and say on the call span what the ledger and the upstream did (never a value)."""
        if self.gates is not None:
            self.gates.end(envelope.code if envelope is not None else None)
            self.gates = None
        span = current_span()
        if span is None:
            return
        span.set("anvil.operation", record.operation)
        span.set("anvil.effect_class", record.effect_class)
        span.set("anvil.principal", record.principal)
        span.set("anvil.upstream.attempts", record.attempts)
        if record.status is not None:
            span.set("anvil.upstream.status_code", record.status)
        if self.idempotency is not None:
            span.set("anvil.idempotency.outcome", self.idempotency)
        if self.reference:
            span.set("anvil.ledger.reference", self.reference)
        if record.dry_run:
            span.set("anvil.dry_run", True)

    def _child(self, name: str, ledger: Ledger) -> Span | None:
        """A ledger child span of the call (None when nothing is traced)."""
        return None if self.tracer is None else self.tracer.start(name, fixed=ledger_shape(ledger.scheme))

    def error(
        self,
        code: str,
        message: str,
        *,
        retryable: bool | None = None,
        safe_to_retry: bool | None = None,
        upstream: Mapping[str, JSONValue] | None = None,
        required_flags: tuple[str, ...] | None = None,
        details: Mapping[str, JSONValue] | None = None,
    ) -> Outcome:
        """An error outcome; retryability defaults to the code table's, safety to that AND the op's."""
        again = CODE_TABLE[code].retryable if retryable is None else retryable
        envelope = ErrorEnvelope(
            code=code,
            message=message,
            retryable=again,
            safe_to_retry=(again and self.retry_safe) if safe_to_retry is None else safe_to_retry,
            operation=self.op.id,
            trace_id=self.trace_id,
            upstream=upstream,
            required_flags=required_flags,
            details=details,
        )
        return self.finish("error", envelope=envelope)

    def _ledger_details(self, phase: str | None = None, **extra: JSONValue) -> dict[str, JSONValue]:
        details: dict[str, JSONValue] = {}
        if phase is not None:
            details.update(ledger_phase=phase, upstream_touched=True)
        details.update(extra)
        details["operator_action_required"] = True
        if self.reference:
            details["ledger_reference"] = self.reference
        return details

    def unexpected(self) -> Outcome:
        """An unexpected fault: never a traceback; a reservation held after the wire was touched stays."""
        details = None
        if self.owned is not None and self.touched:
            details = self._ledger_details(upstream_outcome="possibly_committed")
        message = f"An unexpected fault interrupted {self.op.id}."
        return self.error("unknown_upstream_error", message, retryable=False, safe_to_retry=False, details=details)

    # --- the gates --------------------------------------------------------------------------------

    async def run(self) -> Outcome:
        try:
            return await self._run()
        except Refusal as refusal:
            return self.error(
                refusal.code,
                refusal.message,
                retryable=refusal.retryable,
                safe_to_retry=refusal.safe_to_retry,
                required_flags=refusal.required_flags,
                details=refusal.details,
            )

    async def _run(self) -> Outcome:
        op, ctx, opts = self.op, self.ctx, self.opts
        if self.tracer is not None:
            self.gates = self.tracer.start("anvil.gates", started=opts.gates_started, fixed=gates_shape(op.id))
        gates.check_operation(op)
        plan = self.plan = prepare(op)
        arguments = gates.check_required(plan, self.args)
        business, candidates = gates.split_key_inputs(plan, arguments, opts.idempotency_key)
        gates.check_confirmation(plan, arguments, opts.confirm, candidates)
        explicit = gates.explicit_key(plan, candidates)
        if explicit is not None and self.ledger_id is None:
            self.ledger_id = explicit
        self.resolved = resolved = gates.resolve_key(plan, ctx, opts, business, explicit)
        gates.check_timeout(ctx.timeout_ms)
        self.retry_safe = ctx.retries and retry_safe(op, key_present=resolved.key is not None)
        base_url = ctx.upstream_url(plan.server)  # the operation's own server, else the service's
        self.wire = (arguments, base_url)
        try:
            request = build_request(plan, arguments, base_url, resolved.key)
        except BuildError as exc:
            message = f"Input '{exc.field}' cannot be sent upstream."
            raise Refusal("validation_error", message, details={"field": exc.field}) from None
        if op.auth.type != "none":
            self.withheld = gates.credential_withheld(plan, base_url, ctx)
        if opts.dry_run:
            shown = dry_run_plan(plan, request, key_present=resolved.key is not None, retry_enabled=self.retry_safe)
            if self.withheld is not None:
                shown["credentialWithheld"] = self.withheld
            return self.finish("dry_run", plan=shown)
        if not gates.host_allowed(base_url, ctx.env, ctx.allowed_hosts):
            raise Refusal("policy_denied", f"Upstream host is not in the allowed hosts list for env '{ctx.env}'.")
        if self.gates is not None:
            self.gates.end()
            self.gates = None
        if op.auth.type != "none" and self.withheld is None:
            found = await self._credential()
            gates.check_credential_carrier(plan, found)
            request = with_credential(request, found, base_url)
        write = not op.is_read
        if write and op.idempotency.mode == "required" and ctx.env != "dev":
            if ctx.ledger is None or not ctx.ledger.durable:
                raise Refusal(
                    "idempotency_ledger_unavailable",
                    f"A durable idempotency ledger is required in env '{ctx.env}': set ANVIL_LEDGER "
                    "(firestore://PROJECT/DATABASE/SERVICE_NAMESPACE or sqlite:///PATH).",
                    retryable=False,
                    safe_to_retry=False,
                )
        if write and ctx.ledger is not None and resolved.key is not None and resolved.scope is not None:
            return await self._guarded(ctx.ledger, request, resolved)
        return await self._send(request)

    # --- outbound credentials ---------------------------------------------------------------------

    async def _credential(self, stale: Credential | None = None) -> Credential:
        """The operation's credential (an OAuth2 token is obtained here, before any ledger row exists).

        Raises:
            Refusal: ``auth_required`` naming the variables, or with the token failure's detail code.
        """
        op, ctx = self.op, self.ctx
        began, issued = (time.time_ns(), ctx.tokens.issued) if self.tracer is not None else (0, 0)
        try:
            found = await outbound_credential(op.auth, credential_profile(ctx.auth_profile, op.auth), ctx, stale=stale)
        except TokenFailure as failure:
            self._token_span(began, stale, None, failure.code)
            message = f"No access token could be obtained for {op.id}: {failure.message}"
            raise Refusal("auth_required", message, details=failure.details, retryable=failure.transient) from None
        if began and isinstance(found, Credential) and found.exchanged is not None:  # a client-credentials token
            self._token_span(began, stale, ctx.tokens.issued == issued, None)
        if not isinstance(found, Credential):
            raise Refusal(
                "auth_required",
                not_configured(op.id, found.expected_env, ctx.auth_profile),
                details={"expected_env": list(found.expected_env), "auth_profile": ctx.auth_profile},
            )
        self.credential = found
        return found

    def _token_span(self, began: int, stale: Credential | None, cache_hit: bool | None, error: str | None) -> None:
        """The span of an OAuth2 token a call needed (a static token is none): from the cache or exchanged."""
        if self.tracer is None:
            return
        attributes: dict[str, Attribute] = {"anvil.oauth.renewal": stale is not None}
        if cache_hit is not None:
            attributes["anvil.oauth.cache_hit"] = cache_hit
        self.tracer.start("anvil.oauth.token", "internal", attributes, started=began).end(error)

    async def _renew(
        self, request: WireRequest, refused: Answer, details: dict[str, JSONValue], number: int
    ) -> tuple[WireRequest, Answer]:
        """After a 401 to an exchanged token: one new token and one resend (same key); else the 401 stands."""
        self.renewed = True
        try:
            fresh = await self._credential(stale=self.credential)
        except Refusal as refusal:
            details.update(refusal.details or {})
            return request, refused
        server = self.plan.server if self.plan is not None else None
        request = with_credential(request, fresh, self.ctx.upstream_url(server))  # the operation's own server
        self.resends += 1
        answer = await self._attempt(request, number, renewal=True)
        return request, answer

    # --- the ledger -------------------------------------------------------------------------------

    async def _guarded(self, ledger: Ledger, request: WireRequest, resolved: KeyResolution) -> Outcome:
        """Reserve, call, then complete / keep / release: the write runs at most once per key."""
        assert resolved.key is not None and resolved.scope is not None and resolved.fingerprint is not None
        key = ledger_key(resolved.key, resolved.scope_text or resolved.scope)
        correlation = ReserveContext(operation_id=self.op.id, trace_id=self.trace_id)
        span = self._child("anvil.ledger.reserve", ledger)
        try:
            found = await ledger.reserve(key, resolved.fingerprint, correlation)
        except LedgerError as exc:
            if span is not None:
                span.end(exc.code)
            return self.error(
                "idempotency_ledger_unavailable",
                "The idempotency ledger could not reserve the key; nothing was sent upstream.",
                retryable=True,
                safe_to_retry=True,
                details={"ledger_phase": "reserve", "upstream_touched": False},
            )
        self.reference = safe_reference(found.reference)
        quarantined = found.outcome == "in_progress" and self._quarantine(found.started_at) is not None
        self.idempotency = "quarantined" if quarantined else _IDEMPOTENCY[found.outcome]
        if span is not None:
            span.set("anvil.idempotency.outcome", self.idempotency)
            if self.reference:
                span.set("anvil.ledger.reference", self.reference)
            if found.outcome == "replay":
                span.rename("anvil.ledger.replay")
            span.end()
        if found.outcome == "conflict":
            self.ledger_state = "conflict"
            return self.error("conflict", "This idempotency key was already used for a different request.")
        if found.outcome == "in_progress":
            self.ledger_state = "in_progress"
            return self._held(found.started_at)
        if resolved.derived and found.started_at is not None:  # what this reservation sends (or sent)
            self.sent_key = reservation_key(resolved.fingerprint, found.started_at)
        if found.outcome == "replay":
            self.ledger_state = "replay"
            self.status = found.status or 200
            self.forwarded = True
            return self.finish("success", status=self.status, data=found.result, replayed=True)
        self.ledger_state = "reserved"
        self.owned = key
        try:
            return await self._send(self._rekeyed(request))
        except BaseException:
            if not self.touched and ledger.owns(key):
                with anyio.CancelScope(shield=True):
                    try:
                        await ledger.release(key)
                    except LedgerError:
                        pass  # the row stays in progress: the safe side of an unknown
            raise

    def _rekeyed(self, request: WireRequest) -> WireRequest:
        """``request`` carrying :attr:`sent_key` instead of the request-derived key (same shape: it builds)."""
        if self.sent_key is None or self.plan is None:
            return request
        arguments, base_url = self.wire
        rebuilt = build_request(self.plan, arguments, base_url, self.sent_key)
        return rebuilt if self.credential is None else with_credential(rebuilt, self.credential, base_url)

    def _held(self, started_at: float | None) -> Outcome:
        """The refusal for a key another call holds: in flight, or (older than any call could run)
        a quarantined row only an operator can reconcile, which the details say apart."""
        details: dict[str, JSONValue] = self._ledger_details() if self.reference else {}
        message = "A request with this idempotency key is already in progress."
        if started_at is not None:
            age = max(0.0, time.time() - started_at)
            quarantined = self._quarantine(started_at) is not None
            details.update(reservation_age_s=round(age, 3), quarantined=quarantined)
            if quarantined:
                message = (
                    "This idempotency key is held by a reservation older than any call could still be running: "
                    "the upstream may or may not have committed, so it is quarantined for an operator."
                )
        if self.reference:
            details["hint"] = (
                f"If no call with this key is still running, reconcile the row: anvil ledger inspect {self.reference} "
                "--ledger URI, then anvil ledger resolve."
            )
        return self.error("conflict", message, details=details or None)

    def _quarantine(self, started_at: float | None) -> float | None:
        """The age of a held reservation older than any call with this key could still be running, else None."""
        if started_at is None:
            return None
        age = max(0.0, time.time() - started_at)
        retries = self.op.retries
        attempts = max(1, retries.max_attempts)
        bound = (attempts * self.ctx.timeout_ms + (attempts - 1) * retries.max_delay_ms) / 1000 + _SETTLE_S
        return age if age > bound else None

    # --- the wire ---------------------------------------------------------------------------------

    async def _attempt(self, request: WireRequest, number: int, *, renewal: bool = False) -> Answer:
        """One upstream attempt; traced as an HTTP client span (status, bytes, retry number; never the URL's
        values), and with propagation on, the upstream receives that span as its ``traceparent``."""
        ctx = self.ctx
        write = not self.op.is_read
        tracer = self.tracer
        if tracer is None:
            return await send_once(
                ctx.client, request, timeout_ms=ctx.timeout_ms, max_bytes=ctx.max_response_bytes, write=write
            )
        base = ctx.upstream_url(self.plan.server if self.plan is not None else None)
        shape = attempt_shape(base, request.method, (self.plan.path if self.plan is not None else None) or "")
        span = tracer.start(request.method, "client", self._attempt_attributes(request, number, renewal), fixed=shape)
        if ctx.propagate_trace:
            headers = tuple(item for item in request.headers if item[0].lower() != "traceparent")
            request = replace(request, headers=(*headers, ("traceparent", span.traceparent())))
        try:
            answer = await send_once(
                ctx.client, request, timeout_ms=ctx.timeout_ms, max_bytes=ctx.max_response_bytes, write=write
            )
        except BaseException:
            span.end("cancelled")
            raise
        error = answer.condition
        if answer.status is not None:
            span.set("http.response.status_code", answer.status)
            span.set("http.response.body.size", len(answer.body))
            if answer.status >= 400 or answer.after_response:
                error = error or str(answer.status)
        span.end(error)
        return answer

    def _attempt_attributes(self, request: WireRequest, number: int, renewal: bool) -> dict[str, Attribute]:
        """An attempt span's own attributes (its shape's: :func:`~anvil.runtime.span_shapes.attempt_shape`)."""
        attributes: dict[str, Attribute] = {"anvil.upstream.attempt": number}
        if number > 1:
            attributes["http.request.resend_count"] = number - 1
        if renewal:
            attributes["anvil.upstream.renewed_token"] = True
        if request.content:
            attributes["http.request.body.size"] = len(request.content)
        return attributes

    async def _send(self, request: WireRequest) -> Outcome:
        op, ctx = self.op, self.ctx
        self.forwarded = self.resolved.key is not None
        allowed = op.retries.max_attempts if self.retry_safe else 1
        spent_ms = 0
        possibly_committed = False
        retry_details: dict[str, JSONValue] = {}
        last = Answer()
        for number in range(1, allowed + 1):
            self.touched = True
            last = await self._attempt(request, number)
            if last.status == 401 and not self.renewed and self.credential is not None and self.credential.exchanged:
                request, last = await self._renew(request, last, retry_details, number)
            self.attempts = number + self.resends
            if last.status is not None:
                self.status = last.status
            if last.ok:
                return await self._succeeded(last)
            possibly_committed = possibly_committed or last.possibly_committed
            condition = last.condition if last.status is None else condition_for_status(last.status)
            wait_after = parse_retry_after(last.retry_after, ctx.clock()) if last.status is not None else None
            if wait_after is not None:
                retry_details["retry_after_ms"] = wait_after
            if number == allowed or condition is None or condition not in op.retries.retry_on:
                break
            if wait_after is not None and wait_after > MAX_BACKOFF_MS:
                retry_details.update(retry_stopped="retry_after_exceeds_ceiling", max_delay_ms=MAX_BACKOFF_MS)
                break
            wait = max(backoff_ms(op.retries, number, ctx.rng), wait_after or 0)
            if spent_ms + wait > MAX_BACKOFF_MS:
                retry_details.update(retry_stopped="backoff_budget_exhausted", max_delay_ms=MAX_BACKOFF_MS)
                break
            spent_ms += wait
            if wait:
                await ctx.sleep(wait / 1000)
        return await self._failed(last, possibly_committed and not op.is_read, retry_details)

    async def _succeeded(self, answer: Answer) -> Outcome:
        ctx = self.ctx
        status = answer.status or 200
        data = parse_data(answer.body)
        reserved = self.owned is not None
        try:
            if ctx.on_upstream_answered is not None:
                report = UpstreamAnswer(
                    operation_id=self.op.id,
                    trace_id=self.trace_id,
                    status=status,
                    attempts=self.attempts,
                    reserved=reserved,
                )
                await ctx.on_upstream_answered(report)
            if self.owned is not None and ctx.ledger is not None:
                window = ctx.derived_key_window_seconds if self.resolved.derived else None
                await self._complete(ctx.ledger, data, status, window)
        except LedgerError as exc:
            if not reserved:
                raise
            self.ledger_state = "in_progress"
            self.idempotency = "in_progress"
            if exc.code == _TOO_LARGE:
                # The write happened: this caller gets its answer; only the replay is impossible.
                reason = "the answer exceeds the ledger's replay ceiling; the key stays reserved for reconciliation"
                return self.finish("success", status=status, data=data, replay_unavailable=reason)
            return self._completion_failed()
        except Exception:
            if not reserved:
                raise
            self.ledger_state = "in_progress"
            self.idempotency = "in_progress"
            return self._completion_failed()
        return self.finish("success", status=status, data=data)

    async def _complete(self, ledger: Ledger, data: JSONValue, status: int, window: int | None) -> None:
        assert self.owned is not None
        span = self._child("anvil.ledger.complete", ledger)
        try:
            await ledger.complete(self.owned, data, status, result_ttl_seconds=window)
        except LedgerError as exc:
            if span is not None:
                span.end(exc.code)
            raise
        except BaseException as exc:
            if span is not None:
                span.end(type(exc).__name__)
            raise
        if span is not None:
            span.end()

    def _completion_failed(self) -> Outcome:
        return self.error(
            "idempotency_ledger_unavailable",
            "The upstream write may have completed, but its result could not be recorded; "
            "the reservation was retained for reconciliation.",
            retryable=False,
            safe_to_retry=False,
            details=self._ledger_details("complete"),
        )

    async def _failed(self, last: Answer, possibly_committed: bool, retry_details: dict[str, JSONValue]) -> Outcome:
        op, ledger = self.op, self.ctx.ledger
        if self.withheld is not None and last.status in (401, 403):  # say why no credential went
            retry_details = {**retry_details, "code": "auth/credential_withheld", "credential_withheld": self.withheld}
        envelope = failure_envelope(
            op, last, trace_id=self.trace_id, retry_safe=self.retry_safe, details=retry_details or None
        )
        if possibly_committed:
            if self.owned is not None:
                self.ledger_state = "in_progress"
                self.idempotency = "in_progress"
            details = {**(envelope.details or {}), **self._ledger_details(upstream_outcome="possibly_committed")}
            return self.error(
                envelope.code,
                f"The upstream write for {op.id} may have completed; check before retrying.",
                retryable=envelope.retryable,
                safe_to_retry=False,
                upstream=envelope.upstream,
                details=details,
            )
        if self.owned is not None and ledger is not None:
            span = self._child("anvil.ledger.release", ledger)
            try:
                await ledger.release(self.owned)
            except LedgerError as exc:
                if span is not None:
                    span.end(exc.code)
                return self.error(
                    "idempotency_ledger_unavailable",
                    "The upstream refused the write, but the reservation could not be released.",
                    retryable=False,
                    safe_to_retry=False,
                    details=self._ledger_details("release"),
                )
            if span is not None:
                span.end()
            self.idempotency = "released"
        return self.finish("error", envelope=envelope)


async def execute(
    op: Operation,
    arguments: Mapping[str, JSONValue],
    context: RuntimeContext,
    options: CallOptions | None = None,
) -> Outcome:
    """Execute ``op`` with public ``arguments`` (snake-case input properties) under ``context``.

    Never raises for bad input, refusals or upstream failures: every result is an :class:`Outcome`
    (``success``, ``error`` with an envelope, or ``dry_run`` with the plan), and one audit line is
    written to ``context.audit``. Cancellation propagates (a reservation is released only if the
    upstream was not yet touched; otherwise it stays in progress for reconciliation).
    """
    call = _Call(op, arguments, context, options or _NO_OPTIONS)
    try:
        return await call.run()
    except Exception:
        return call.unexpected()
