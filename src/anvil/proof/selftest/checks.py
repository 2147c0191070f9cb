"""The selftest's wire checks (original-core §8.2): surface, fidelity, confirmation gate, error
mapping, read retry, mutation retry guard, and key forwarding.

Each check drives the served gateway over MCP (:class:`Driver`) and reads what reached the wire from
the upstream's request log. A check that needs what the upstream does not offer (a request log,
fault injection) is skipped and says why; a check never fails for a limit of this harness (an
example it could not generate is a skip too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final
from urllib.parse import unquote

from anvil._types import JSONObject, JSONValue
from anvil.air.carrier import resolve_carrier
from anvil.air.effects import forwards_idempotency_key
from anvil.air.forms import is_form_media_type
from anvil.air.inputs import input_bindings, safety_keys
from anvil.air.model import ErrorSpec, Operation
from anvil.client import CallResult
from anvil.proof.selftest.driver import (
    ID_FIELDS,
    ITEM_ROLES,
    Driver,
    concrete_path,
    identity_value,
    typed_for,
)
from anvil.proof.selftest.support import ABSENT, Check, LogEntry, show, wire_text

__all__ = ["Driver", "closing_checks", "identity_value", "operation_checks", "surface_check", "typed_for"]

_GENERATOR_LIMITS: Final = frozenset({"validation_error"})


def _code(result: CallResult) -> str | None:
    envelope = result.envelope or {}
    error = envelope.get("error")
    return error.get("code") if isinstance(error, dict) else None


def _message(result: CallResult) -> str:
    error = (result.envelope or {}).get("error")
    message = error.get("message") if isinstance(error, dict) else None
    return message[:200] if isinstance(message, str) else ""


def _upstream_status(result: CallResult) -> int | None:
    error = (result.envelope or {}).get("error")
    upstream = error.get("upstream") if isinstance(error, dict) else None
    status = upstream.get("status") if isinstance(upstream, dict) else None
    return status if isinstance(status, int) else None


def surface_check(driver: Driver) -> Check:
    """``surface``: tools/list lists exactly the bundle's approved tools, each with its required inputs."""
    approved = {op.mcp.tool_name: op for op in driver.document.operations if op.is_approved}
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
    expected_path = concrete_path(op, arguments)
    if unquote(entry.path).rstrip("/") != expected_path.rstrip("/"):
        return confirmed, f"path {entry.path}, expected {expected_path}"
    body_fields: JSONObject = {}
    form = op.input.body is not None and is_form_media_type(op.input.body.content_type)
    for binding in input_bindings(op):
        if binding.property not in arguments:
            continue
        if form and binding.location == "body_field" and arguments[binding.property] in ([], None):
            continue  # nothing of it reaches a form body
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
            if form:  # a form carries text: no empty list, no null field, no type beside the text
                sent, value = _as_form(sent), _as_form(value)
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


def _as_form(value: JSONValue) -> JSONValue:
    """A body as a form carries it: each field's text (a list's items' texts), empty fields left out."""
    if not isinstance(value, dict):
        return value
    out: JSONObject = {}
    for name, field_value in value.items():
        if field_value in ([], None):
            continue
        if isinstance(field_value, list):
            out[name] = [wire_text(item) for item in field_value]
        else:
            out[name] = wire_text(field_value)
    return out


def _echo_problem(
    op: Operation,
    arguments: Mapping[str, JSONValue],
    answer: JSONValue,
    *,
    addressed: frozenset[str] = frozenset(),
    holds: Callable[[str, JSONValue], bool] = lambda _name, _value: True,
) -> str | None:
    """Where a write's answer carries a field the request set, but with another value (None: it does not).

    For a write on one item the path names the item, and a create's item is named by the API: their
    identity fields (``addressed``) answer as the item's, whatever the body said.
    """
    if op.is_read or not isinstance(answer, dict):
        return None
    in_path = {binding.wire_name for binding in input_bindings(op) if binding.location == "path"}
    for binding in input_bindings(op):
        if binding.location != "body_field" or binding.property not in arguments:
            continue
        if binding.wire_name in addressed or binding.wire_name in in_path:
            continue  # the path's value governs a field the path also names (Netlify's site_id)
        if not holds(binding.wire_name, arguments[binding.property]):
            continue  # the answer's field cannot hold what was sent (Slack's channel ids have a pattern)
        sent = arguments[binding.property]
        if isinstance(sent, dict | list) or type(answer.get(binding.wire_name)) is not type(sent):
            continue  # the API answers this field in another shape (a lead's id sent, the lead answered)
        if binding.wire_name in answer and answer[binding.wire_name] != sent:
            return (
                f"the answer's {binding.wire_name} is {show(answer[binding.wire_name])}, the request set {show(sent)}"
            )
    return None


async def _fidelity(driver: Driver, op: Operation) -> tuple[Check, int | None]:
    """``fidelity``: the arguments reach their wire coordinates and the answer round-trips.

    It passes only on a 2xx answer the gateway accepted (so it validates against the output schema),
    equal to what the upstream sent, and carrying back the request's values where it has their
    fields. An item operation addresses an item this run made first (:meth:`Driver.subject`).
    """
    arguments, key, made = await driver.subject(op)
    result, sent = await driver.call(op, arguments, key=key)
    code = _code(result)
    if sent is None:
        return Check(id="fidelity", operation=op.id, status="skipped", detail="the upstream keeps no request log"), None
    if not sent:
        if code in _GENERATOR_LIMITS:
            said = _message(result)
            detail = f"the gateway refused the generated example ({code}{': ' + said if said else ''}); "
            detail += "nothing reached the wire"
            driver.refused[op.id] = detail
            return Check(id="fidelity", operation=op.id, status="skipped", detail=detail), 0
        return Check(id="fidelity", operation=op.id, status="fail", detail=f"nothing reached the wire ({code})"), 0
    confirmed, wrong = _coordinates(op, arguments, sent[0])
    if wrong is not None:
        return Check(id="fidelity", operation=op.id, status="fail", detail=wrong), len(sent)
    first, last = sent[0], sent[-1]
    if result.is_error:
        seen = _upstream_status(result)
        if first.status is not None and seen not in (None, last.status):
            detail = f"the envelope names upstream status {seen}, the wire saw {last.status}"
            return Check(id="fidelity", operation=op.id, status="fail", detail=detail), len(sent)
        status = f"upstream {last.status}" if last.status is not None else "the upstream's error"
        if last.status == 404 and made is None and driver.wire.log != "anvil":
            detail = f"{status} ({code}): no approved create makes the item it addresses in this sandbox"
            return Check(id="fidelity", operation=op.id, status="skipped", detail=detail), len(sent)
        detail = f"the answer did not round-trip: {status} surfaced as {code}"
        if made is False:
            detail += " (making the item it addresses failed first)"
        return Check(id="fidelity", operation=op.id, status="fail", detail=detail), len(sent)
    if first.response is not ABSENT and first.status is not None and first.status < 300:
        if result.data != first.response and not (first.response is None and result.data in (None, "")):
            detail = f"the answer did not round-trip: upstream {show(first.response)}, tool {show(result.data)}"
            return Check(id="fidelity", operation=op.id, status="fail", detail=detail), len(sent)
    route = driver.route_of.get(op.id)
    addressed: frozenset[str] = frozenset()
    if route is not None and (route.role in ITEM_ROLES or route.role == "create"):
        # The path names the item, or the API names a new one: its identity is the API's to answer.
        addressed = frozenset((*ID_FIELDS, driver.kinds.id_field(route.kind)))
    echo = _echo_problem(op, arguments, result.data, addressed=addressed, holds=driver.answer_holds(op))
    if echo is not None:
        return Check(id="fidelity", operation=op.id, status="fail", detail=echo), len(sent)
    where = " on an item it made" if made else ""
    if op.id in driver.planted:
        where = " on an item planted in the mock's state (no approved create makes it)"
    detail = (
        f"{first.method} {op.source_ref.path}: {confirmed} argument(s) at their coordinates{where}; answer round-trips"
    )
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


def _documented_error(op: Operation) -> ErrorSpec | None:
    return next(
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


async def _error_mapping(driver: Driver, op: Operation) -> Check | None:
    """``error-mapping`` for ``op``: a documented upstream error surfaces as its code (None: none documented)."""
    spec = _documented_error(op)
    if spec is None or spec.upstream is None or spec.upstream.http_status is None:
        return None
    status = spec.upstream.http_status
    arguments, key = driver.arguments(op)
    body: JSONObject = {"message": spec.message or "Documented error."}
    if spec.upstream.code is not None:
        body["code"] = spec.upstream.code
    method = (op.source_ref.method or "").upper()
    if not await driver.wire.fault(
        status=status, method=method, path=concrete_path(op, arguments), operation=op.id, body=body
    ):
        return Check(
            id="error-mapping", operation=op.id, status="skipped", detail="the upstream offers no fault injection"
        )
    result, _sent = await driver.call(op, arguments, key=key)
    await driver.wire.clear_faults()
    code, seen = _code(result), _upstream_status(result)
    if code == spec.code and seen == status:
        detail = f"upstream {status} surfaced as {code} with the upstream status"
        return Check(id="error-mapping", operation=op.id, status="pass", detail=detail)
    detail = f"upstream {status} surfaced as {code} (upstream status {seen}), expected {spec.code}"
    return Check(id="error-mapping", operation=op.id, status="fail", detail=detail)


async def _retry_read(driver: Driver, ops: list[Operation]) -> Check:
    """``retry-read``: one injected 503 on a retried read, then success in two attempts.

    A read of a collection is preferred; a read of one item reads an item this run made first.
    """
    candidates = [o for o in ops if o.is_read and _retried(o, 503)]
    route_role = {o.id: driver.route_of[o.id].role if o.id in driver.route_of else "other" for o in candidates}
    candidates = [o for o in candidates if driver.dependency_problem(o) is None]
    candidates.sort(
        key=lambda o: (route_role[o.id] != "list", route_role[o.id] in ITEM_ROLES and not driver.creator(o))
    )
    op = candidates[0] if candidates else None
    if op is None:
        return Check(id="retry-read", status="skipped", detail="no approved read with a valid example retries a 503")
    arguments, key, _made = await driver.subject(op)
    method = (op.source_ref.method or "").upper()
    if not await driver.wire.fault(status=503, method=method, path=concrete_path(op, arguments), operation=op.id):
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


async def _retry_guard(driver: Driver, ops: list[Operation]) -> Check:
    """``retry-mutation-guard``: an injected 503 on a non-idempotent write is not retried."""
    op = next(
        (o for o in ops if not o.is_read and o.retries.mode == "none" and o.idempotency.mode in ("none", "client_id")),
        None,
    )
    if op is None:
        detail = "no approved non-idempotent mutation with a valid example"
        return Check(id="retry-mutation-guard", status="skipped", detail=detail)
    arguments, key = driver.arguments(op)
    method = (op.source_ref.method or "").upper()
    if not await driver.wire.fault(status=503, method=method, path=concrete_path(op, arguments), operation=op.id):
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
    arguments, _key = driver.arguments(op)
    key = driver.example.fresh_key("forwarded")
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


async def operation_checks(driver: Driver, op: Operation) -> list[Check]:
    """The wire checks of one operation: fidelity, its confirmation gate, error mapping, key forwarding.

    An operation the generator cannot make a valid example for is one ``skipped`` check saying why,
    and no check that would need that call runs for it (the gateway would refuse it before the wire).
    """
    problem = driver.problem(op)
    if problem is not None:
        return [Check(id="fidelity", operation=op.id, status="skipped", detail=problem)]
    gate = await _gate(driver, op)
    depends = driver.dependency_problem(op)
    if depends is not None:  # the call itself can be made, but only on an item nothing can make
        checks = [Check(id="fidelity", operation=op.id, status="skipped", detail=depends)]
        return checks + ([gate] if gate is not None else [])
    fidelity, sent = await _fidelity(driver, op)
    checks = [fidelity]
    if gate is not None:  # a call the gateway refused for its example proves nothing about the gate's count
        checks.append(_gate_with_confirm(gate, sent) if fidelity.status != "skipped" else gate)
    if op.id in driver.refused:
        return checks  # the checks below would send the example the gateway refused: its skip says why
    mapping = await _error_mapping(driver, op)
    if mapping is not None:
        checks.append(mapping)
    if forwards_idempotency_key(op):
        checks.append(await _key_forwarding(driver, op))
    return checks


async def closing_checks(driver: Driver, ops: list[Operation], earlier: list[Check]) -> list[Check]:
    """The checks over the operations that ran (``ops``): read retry, mutation guard, and a skip for
    error mapping and key forwarding when no operation had one to prove (``earlier``: the checks so far)."""
    usable = [op for op in ops if driver.problem(op) is None and op.id not in driver.refused]
    checks = [await _retry_read(driver, usable), await _retry_guard(driver, usable)]
    ids = {check.id for check in earlier}
    if "error-mapping" not in ids:
        checks.append(Check(id="error-mapping", status="skipped", detail="no approved operation documents an error"))
    if "key-forwarding" not in ids:
        detail = "no approved operation with a valid example sends a key upstream"
        checks.append(Check(id="key-forwarding", status="skipped", detail=detail))
    return checks
