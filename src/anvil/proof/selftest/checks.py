"""The selftest's wire checks (original-core §8.2): surface, fidelity, confirmation gate, error
mapping, read retry, mutation retry guard, and key forwarding.

Each check drives the served gateway over MCP (:class:`Driver`) and reads what reached the wire from
the upstream's request log. A check that needs what the upstream does not offer (a request log,
fault injection) is skipped and says why; a check never fails for a limit of this harness (an
example it could not generate is a skip too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import unquote

from anvil._types import JSONObject, JSONValue
from anvil.air.carrier import resolve_carrier
from anvil.air.effects import forwards_idempotency_key
from anvil.air.inputs import idempotency_key_required, input_bindings, safety_keys
from anvil.air.model import Document, Operation
from anvil.client import AnvilClient, CallResult
from anvil.proof.selftest.support import ABSENT, Check, Example, LogEntry, Wire, show, wire_text

__all__ = ["Driver", "wire_checks"]

_GENERATOR_LIMITS: Final = frozenset({"validation_error"})


@dataclass(slots=True)
class Driver:
    """The gateway under test (an MCP session), the upstream's wire log, and example arguments."""

    client: AnvilClient
    wire: Wire
    document: Document
    example: Example
    listed: dict[str, JSONObject] = field(default_factory=dict)

    def approved(self) -> list[Operation]:
        """The approved operations, in document order."""
        return [op for op in self.document.operations if op.is_approved]

    def callable(self) -> list[Operation]:
        """The approved operations valid example arguments can be made for (the others are one skip each)."""
        return [op for op in self.approved() if self.example.problem(op) is None]

    def tool_op(self, tool: str) -> Operation | None:
        """The operation a served tool name stands for."""
        return next((op for op in self.document.operations if op.mcp.tool_name == tool), None)

    async def call(
        self, op: Operation, arguments: Mapping[str, JSONValue], *, key: str | None = None, stage: bool = False
    ) -> tuple[CallResult, list[LogEntry] | None]:
        """Call ``op``'s tool; return the answer and the requests it put on the wire (None: no log)."""
        mark = await self.wire.mark()
        result = await self.client.call_result(op.mcp.tool_name, dict(arguments), idempotency_key=key, stage=stage)
        return result, await self.wire.since(mark)

    def arguments(self, op: Operation, *, confirm: bool = True) -> tuple[JSONObject, str | None]:
        """Example arguments for ``op`` and the ``_meta`` key to send (a fresh one when it forwards keys)."""
        key = self.example.fresh_key(op.id.rsplit(".", 1)[-1], op) if _needs_key(op) else None
        return self.example.arguments(op, confirm=confirm), key


def _needs_key(op: Operation) -> bool:
    return forwards_idempotency_key(op) or idempotency_key_required(op)


def _code(result: CallResult) -> str | None:
    envelope = result.envelope or {}
    error = envelope.get("error")
    return error.get("code") if isinstance(error, dict) else None


def _upstream_status(result: CallResult) -> int | None:
    error = (result.envelope or {}).get("error")
    upstream = error.get("upstream") if isinstance(error, dict) else None
    status = upstream.get("status") if isinstance(upstream, dict) else None
    return status if isinstance(status, int) else None


def _concrete_path(op: Operation, arguments: Mapping[str, JSONValue]) -> str:
    path = op.source_ref.path or ""
    for binding in input_bindings(op):
        if binding.location == "path" and binding.property in arguments:
            path = path.replace("{" + binding.wire_name + "}", wire_text(arguments[binding.property]))
    return path


def _surface(driver: Driver) -> Check:
    approved = {op.mcp.tool_name: op for op in driver.approved()}
    if not approved:
        return Check(id="surface", status="skipped", detail="the bundle approves no operation")
    listed = set(driver.listed)
    missing, extra = sorted(set(approved) - listed), sorted(listed - set(approved))
    if missing or extra:
        return Check(id="surface", status="fail", detail=f"tools/list differs: missing {missing}, unexpected {extra}")
    for name, op in approved.items():
        schema = driver.listed[name].get("inputSchema") or {}
        declared = sorted((op.input.schema or {}).get("required") or ())
        published = sorted(schema.get("required") or ())
        if declared != published:
            return Check(
                id="surface",
                status="fail",
                operation=op.id,
                detail=f"{name} publishes required {published}, the contract says {declared}",
            )
    return Check(
        id="surface", status="pass", detail=f"{len(approved)} approved tool(s) listed with their required inputs"
    )


def _coordinates(op: Operation, arguments: Mapping[str, JSONValue], entry: LogEntry) -> tuple[int, str | None]:
    """How many argument coordinates were confirmed on the wire, and the first one that was wrong."""
    confirmed = 0
    if entry.method != (op.source_ref.method or "").upper():
        return confirmed, f"method {entry.method}, the contract says {(op.source_ref.method or '').upper()}"
    expected_path = _concrete_path(op, arguments)
    if unquote(entry.path).rstrip("/") != expected_path.rstrip("/"):
        return confirmed, f"path {entry.path}, expected {expected_path}"
    body_fields: JSONObject = {}
    for binding in input_bindings(op):
        if binding.property not in arguments:
            continue
        value = arguments[binding.property]
        where = binding.location
        if where == "path":
            confirmed += 1
        elif where == "query" and entry.query is not None:
            values = value if isinstance(value, list) else [value]
            for item in values:
                if (binding.wire_name, wire_text(item)) not in entry.query:
                    return confirmed, f"query {binding.wire_name}={wire_text(item)} did not reach the wire"
            confirmed += 1
        elif where == "header" and entry.headers is not None:
            if entry.header(binding.wire_name) != wire_text(value):
                return confirmed, f"header {binding.wire_name} did not reach the wire"
            confirmed += 1
        elif where == "body_field":
            body_fields[binding.wire_name] = value
        elif where == "body" and entry.body is not ABSENT:
            sent = entry.body
            if isinstance(sent, dict) and isinstance(value, dict):
                sent = {k: v for k, v in sent.items() if k in value}
            if sent != value:
                return confirmed, f"the request body arrived as {show(entry.body)}, sent {show(value)}"
            confirmed += 1
    if body_fields and entry.body is not ABSENT:
        body = entry.body if isinstance(entry.body, dict) else {}
        for name, value in body_fields.items():
            if body.get(name, ABSENT) != value:
                return confirmed, f"body field {name} arrived as {show(body.get(name, ABSENT))}, sent {show(value)}"
            confirmed += 1
    return confirmed, None


async def _fidelity(driver: Driver, op: Operation) -> tuple[Check, int | None]:
    arguments, key = driver.arguments(op)
    result, sent = await driver.call(op, arguments, key=key)
    code = _code(result)
    if sent is None:
        return Check(id="fidelity", operation=op.id, status="skipped", detail="the upstream keeps no request log"), None
    if not sent:
        if code in _GENERATOR_LIMITS:
            detail = f"the gateway refused the generated example ({code}); nothing reached the wire"
            return Check(id="fidelity", operation=op.id, status="skipped", detail=detail), 0
        return Check(id="fidelity", operation=op.id, status="fail", detail=f"nothing reached the wire ({code})"), 0
    confirmed, wrong = _coordinates(op, arguments, sent[0])
    if wrong is not None:
        return Check(id="fidelity", operation=op.id, status="fail", detail=wrong), len(sent)
    first = sent[0]
    if not result.is_error and first.response is not ABSENT and first.status is not None and first.status < 300:
        if result.data != first.response and not (first.response is None and result.data in (None, "")):
            detail = f"the answer did not round-trip: upstream {show(first.response)}, tool {show(result.data)}"
            return Check(id="fidelity", operation=op.id, status="fail", detail=detail), len(sent)
    if result.is_error and first.status is not None and _upstream_status(result) not in (None, sent[-1].status):
        detail = f"the envelope names upstream status {_upstream_status(result)}, the wire saw {sent[-1].status}"
        return Check(id="fidelity", operation=op.id, status="fail", detail=detail), len(sent)
    status = f"upstream {sent[-1].status}" if sent[-1].status is not None else "the upstream's error"
    answer = "answer round-trips" if not result.is_error else f"{status} surfaced as {code}"
    detail = f"{first.method} {op.source_ref.path}: {confirmed} argument(s) at their coordinates; {answer}"
    return Check(id="fidelity", operation=op.id, status="pass", detail=detail), len(sent)


async def _gate(driver: Driver, op: Operation) -> Check | None:
    if safety_keys(op).confirm is None:
        return None
    arguments, key = driver.arguments(op, confirm=False)
    result, sent = await driver.call(op, arguments, key=key)
    code = _code(result)
    if code != "confirmation_required":
        return Check(
            id="confirmation-gate", operation=op.id, status="fail", detail=f"without confirm the call answered {code}"
        )
    if sent is None:
        detail = "refused without confirm (the upstream keeps no log to count requests)"
        return Check(id="confirmation-gate", operation=op.id, status="pass", detail=detail)
    if sent:
        detail = f"refused without confirm, but {len(sent)} request(s) reached the wire"
        return Check(id="confirmation-gate", operation=op.id, status="fail", detail=detail)
    return Check(id="confirmation-gate", operation=op.id, status="pass", detail="refused without confirm; 0 requests")


def _gate_with_confirm(gate: Check, sent_with_confirm: int | None) -> Check:
    if gate.status != "pass" or sent_with_confirm is None:
        return gate
    if sent_with_confirm != 1:
        detail = f"{gate.detail}; with confirm {sent_with_confirm} request(s), expected exactly 1"
        return Check(id=gate.id, operation=gate.operation, status="fail", detail=detail)
    return Check(id=gate.id, operation=gate.operation, status="pass", detail=f"{gate.detail}; with confirm, 1")


def _retried(op: Operation, status: int) -> bool:
    return op.retries.mode != "none" and op.retries.max_attempts > 1 and f"http_{status}" in op.retries.retry_on


async def _error_mapping(driver: Driver) -> list[Check]:
    checks: list[Check] = []
    for op in driver.callable():
        spec = next(
            (
                e
                for e in op.errors
                if e.upstream is not None
                and e.upstream.http_status is not None
                and 400 <= e.upstream.http_status <= 599
                and not _retried(op, e.upstream.http_status)
            ),
            None,
        )
        if spec is None or spec.upstream is None or spec.upstream.http_status is None:
            continue
        status = spec.upstream.http_status
        arguments, key = driver.arguments(op)
        body: JSONObject = {"message": spec.message or "Documented error."}
        if spec.upstream.code is not None:
            body["code"] = spec.upstream.code
        method = (op.source_ref.method or "").upper()
        if not await driver.wire.fault(
            status=status, method=method, path=_concrete_path(op, arguments), operation=op.id, body=body
        ):
            detail = "the upstream offers no fault injection"
            checks.append(Check(id="error-mapping", operation=op.id, status="skipped", detail=detail))
            continue
        result, _sent = await driver.call(op, arguments, key=key)
        await driver.wire.clear_faults()
        code, seen = _code(result), _upstream_status(result)
        if code == spec.code and seen == status:
            detail = f"upstream {status} surfaced as {code} with the upstream status"
            checks.append(Check(id="error-mapping", operation=op.id, status="pass", detail=detail))
        else:
            detail = f"upstream {status} surfaced as {code} (upstream status {seen}), expected {spec.code}"
            checks.append(Check(id="error-mapping", operation=op.id, status="fail", detail=detail))
    if not checks:
        checks.append(Check(id="error-mapping", status="skipped", detail="no approved operation documents an error"))
    return checks


async def _retry_read(driver: Driver) -> Check:
    op = next((o for o in driver.callable() if o.is_read and _retried(o, 503)), None)
    if op is None:
        return Check(id="retry-read", status="skipped", detail="no approved read with a valid example retries a 503")
    arguments, key = driver.arguments(op)
    method = (op.source_ref.method or "").upper()
    if not await driver.wire.fault(status=503, method=method, path=_concrete_path(op, arguments), operation=op.id):
        return Check(
            id="retry-read", operation=op.id, status="skipped", detail="the upstream offers no fault injection"
        )
    result, sent = await driver.call(op, arguments, key=key)
    await driver.wire.clear_faults()
    attempts = len(sent) if sent is not None else None
    if result.is_error or attempts not in (None, 2):
        detail = f"after one injected 503: {_code(result) or 'success'} in {attempts} attempt(s), expected success in 2"
        return Check(id="retry-read", operation=op.id, status="fail", detail=detail)
    return Check(id="retry-read", operation=op.id, status="pass", detail="one injected 503, then success: 2 attempts")


async def _retry_guard(driver: Driver) -> Check:
    op = next(
        (
            o
            for o in driver.callable()
            if not o.is_read and o.retries.mode == "none" and o.idempotency.mode in ("none", "client_id")
        ),
        None,
    )
    if op is None:
        detail = "no approved non-idempotent mutation with a valid example"
        return Check(id="retry-mutation-guard", status="skipped", detail=detail)
    arguments, key = driver.arguments(op)
    method = (op.source_ref.method or "").upper()
    if not await driver.wire.fault(status=503, method=method, path=_concrete_path(op, arguments), operation=op.id):
        detail = "the upstream offers no fault injection"
        return Check(id="retry-mutation-guard", operation=op.id, status="skipped", detail=detail)
    result, sent = await driver.call(op, arguments, key=key)
    await driver.wire.clear_faults()
    attempts = len(sent) if sent is not None else None
    if not result.is_error or attempts not in (None, 1):
        detail = (
            f"after an injected 503: {_code(result) or 'success'} in {attempts} attempt(s), expected 1 and an error"
        )
        return Check(id="retry-mutation-guard", operation=op.id, status="fail", detail=detail)
    detail = f"an injected 503 was not retried: 1 attempt, {_code(result)}"
    return Check(id="retry-mutation-guard", operation=op.id, status="pass", detail=detail)


def _carried(op: Operation, entry: LogEntry, key: str) -> bool | None:
    binding = resolve_carrier(op).binding
    if binding is None:
        return None
    if binding.mechanism == "header":
        return None if entry.headers is None else entry.header(binding.key) == key
    if binding.mechanism == "query":
        return None if entry.query is None else (binding.key, key) in entry.query
    if binding.mechanism == "path":
        return key in unquote(entry.path).split("/")
    node: JSONValue = entry.body
    if node is ABSENT:
        return None
    for part in binding.pointer or (binding.key,):
        node = node.get(part) if isinstance(node, dict) else None
    return bool(node == key)


async def _key_forwarding(driver: Driver, op: Operation) -> Check:
    arguments = driver.example.arguments(op)
    key = driver.example.fresh_key("forwarded", op)
    result, sent = await driver.call(op, arguments, key=key)
    reported = (result.effect or {}).get("idempotency_key")
    if sent is not None and not sent:
        return Check(
            id="key-forwarding", operation=op.id, status="fail", detail=f"nothing reached the wire ({_code(result)})"
        )
    carried = _carried(op, sent[0], key) if sent else None
    if carried is False:
        return Check(id="key-forwarding", operation=op.id, status="fail", detail="the _meta key is not in the carrier")
    if reported != key:
        detail = f"_meta.effect.idempotency_key is {show(reported)}, the caller sent its key"
        return Check(id="key-forwarding", operation=op.id, status="fail", detail=detail)
    where = "in its carrier on the wire" if carried else "reported (the upstream log does not show the carrier)"
    return Check(id="key-forwarding", operation=op.id, status="pass", detail=f"_meta.idempotency_key forwarded {where}")


async def wire_checks(driver: Driver) -> list[Check]:
    """Every wire check, in report order."""
    checks = [_surface(driver)]
    for op in driver.approved():
        problem = driver.example.problem(op)
        if problem is not None:  # one skip says so; no check that needs the call runs for it
            checks.append(Check(id="fidelity", operation=op.id, status="skipped", detail=problem))
            continue
        gate = await _gate(driver, op)
        fidelity, sent = await _fidelity(driver, op)
        checks.append(fidelity)
        if gate is not None:
            checks.append(_gate_with_confirm(gate, sent))
    checks.extend(await _error_mapping(driver))
    checks.append(await _retry_read(driver))
    checks.append(await _retry_guard(driver))
    forwarding = [op for op in driver.callable() if forwards_idempotency_key(op)]
    checks.extend([await _key_forwarding(driver, op) for op in forwarding])
    if not forwarding:
        detail = "no approved operation with a valid example sends a key upstream"
        checks.append(Check(id="key-forwarding", status="skipped", detail=detail))
    return checks
