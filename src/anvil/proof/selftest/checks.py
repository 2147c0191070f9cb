"""The selftest's wire checks (original-core §8.2): surface, fidelity, confirmation gate, error
mapping, read retry, mutation retry guard, and key forwarding.

Each check drives the served gateway over MCP (:class:`Driver`) and reads what reached the wire from
the upstream's request log. A check that needs what the upstream does not offer (a request log,
fault injection) is skipped and says why; a check never fails for a limit of this harness (an
example it could not generate is a skip too).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import unquote

import httpx

from anvil._types import JSONObject, JSONValue
from anvil.air.carrier import resolve_carrier
from anvil.air.effects import forwards_idempotency_key
from anvil.air.forms import is_form_media_type
from anvil.air.inputs import idempotency_key_required, input_bindings, safety_keys
from anvil.air.model import Document, ErrorSpec, Operation
from anvil.air.paths import resolve_mapping
from anvil.client import AnvilClient, CallResult
from anvil.proof.mock.kinds import KindCatalog
from anvil.proof.mock.routes import Route, route_table
from anvil.proof.mock.schema import SchemaSet, Validator, ValueMaker
from anvil.proof.selftest.support import ABSENT, Check, Example, LogEntry, Wire, show, wire_text

__all__ = ["Driver", "closing_checks", "identity_value", "operation_checks", "surface_check", "typed_for"]

_GENERATOR_LIMITS: Final = frozenset({"validation_error"})
_KEY_NAME: Final = re.compile(r"^(x[-_])?idempotency[-_]?key$", re.IGNORECASE)
_ITEM_ROLES: Final = frozenset({"get", "update", "delete", "action"})


@dataclass(slots=True)
class Driver:
    """The gateway under test (an MCP session), the upstream's wire log, and example arguments.

    ``selected`` narrows the operations the per-operation checks and proofs drive (default: every
    approved one); the surface check always covers the whole bundle.
    """

    client: AnvilClient
    wire: Wire
    document: Document
    example: Example
    listed: dict[str, JSONObject] = field(default_factory=dict)
    selected: list[Operation] | None = None
    routes: tuple[Route, ...] = ()
    route_of: dict[str, Route] = field(default_factory=dict)
    kinds: KindCatalog = field(init=False)
    #: Operation id -> why the gateway refused its example before the wire (its later checks skip it).
    refused: dict[str, str] = field(default_factory=dict)
    _problems: dict[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.routes = route_table(self.document, SchemaSet(self.document.schemas))
        self.route_of = {route.op.id: route for route in self.routes}
        self.kinds = KindCatalog(self.routes, SchemaSet(self.document.schemas))

    def approved(self) -> list[Operation]:
        """The approved operations this run drives, in document order."""
        if self.selected is not None:
            return list(self.selected)
        return [op for op in self.document.operations if op.is_approved]

    def tool_op(self, tool: str) -> Operation | None:
        """The operation a served tool name stands for."""
        return next((op for op in self.document.operations if op.mcp.tool_name == tool), None)

    def problem(self, op: Operation) -> str | None:
        """Why no valid example arguments can be made for ``op`` (None: they can).

        A probe with its own generator, so the run's numbering is untouched: the arguments must be made
        at all and fit the operation's published input schema, else nothing can be proven with them.
        """
        if op.id not in self._problems and self.example.problem(op) is not None:
            self._problems[op.id] = self.example.problem(op)
        if op.id not in self._problems:
            try:
                probe = Example(self.document).arguments(op, key="selftest-probe-key")
            except Exception as exc:  # the generator's own refusal: the reason is the point
                self._problems[op.id] = f"no valid example input can be made: {exc}"
            else:
                found = Validator(op.input.schema, SchemaSet(self.document.schemas)).problem(probe)
                self._problems[op.id] = (
                    None if found is None else f"the generated example does not fit the input schema: {found}"
                )
        return self._problems[op.id]

    def callable(self) -> list[Operation]:
        """The approved operations this run drives that valid example arguments can be made for."""
        return [op for op in self.approved() if self.problem(op) is None]

    async def call(
        self, op: Operation, arguments: Mapping[str, JSONValue], *, key: str | None = None, stage: bool = False
    ) -> tuple[CallResult, list[LogEntry] | None]:
        """Call ``op``'s tool; return the answer and the requests it put on the wire (None: no log)."""
        mark = await self.wire.mark()
        result = await self.client.call_result(op.mcp.tool_name, dict(arguments), idempotency_key=key, stage=stage)
        return result, await self.wire.since(mark)

    def arguments(self, op: Operation, *, confirm: bool = True) -> tuple[JSONObject, str | None]:
        """Example arguments for ``op`` and the ``_meta`` key to send (a fresh one when it forwards keys).

        An input that is an idempotency key on the wire (``Idempotency-Key`` and its spellings, or the
        declared carrier) always gets a fresh value, never a spec example: a reused key is a replay.
        """
        key = self.example.fresh_key(op.id.rsplit(".", 1)[-1], op) if _needs_key(op) else None
        arguments = self.example.arguments(op, confirm=confirm)
        carrier = resolve_carrier(op).binding
        for binding in input_bindings(op):
            if binding.property not in arguments or binding.location not in ("header", "query", "body_field"):
                continue
            if _KEY_NAME.match(binding.wire_name) or (carrier is not None and binding.wire_name == carrier.key):
                arguments[binding.property] = self.example.fresh_key(binding.property)
        return arguments, key

    def creator(self, op: Operation) -> Operation | None:
        """The approved create of the item ``op`` addresses (None: ``op`` addresses no item a create makes)."""
        route = self.route_of.get(op.id)
        if route is not None and route.role == "remove":  # an RPC remove takes away what its add made
            makers = [r.op for r in self.routes if r.role == "create" and r.kind == route.kind and r.op.is_approved]
            paired = [m for m in makers if m.effect.inverse is not None and m.effect.inverse.operation == op.id]
            return next((m for m in paired + makers if self.problem(m) is None), None)
        if route is None or route.role not in _ITEM_ROLES or route.item_param is None or route.names_a_closed_set:
            return None
        if not self.kinds.addresses_field(route.kind, route.item_param):
            return None  # a key no created item carries: nothing a create makes is found by it
        makers = [r.op for r in self.routes if r.role == "create" and r.kind == route.kind and r.op.is_approved]
        return next((m for m in makers if self.problem(m) is None), makers[0] if makers else None)

    def dependency_problem(self, op: Operation) -> str | None:
        """Why ``op`` cannot address an item: the create that makes it has no valid example (None: it can)."""
        create = self.creator(op)
        problem = self.problem(create) if create is not None else None
        return None if problem is None or create is None else f"its item is made by {create.id}, and {problem}"

    async def subject(self, op: Operation, *, confirm: bool = True) -> tuple[JSONObject, str | None, bool | None]:
        """Arguments for ``op`` that address an item this run made: ``(arguments, key, made)``.

        For an operation on one item (a get, update, delete or action) whose kind an approved create
        makes, that create is called first and the item's identity (and the create's own path values)
        fill ``op``'s path inputs. ``made`` is True when an item was made for it, False when making one
        failed, None when ``op`` addresses no item that a create could make.
        """
        arguments, key = self.arguments(op, confirm=confirm)
        create = self.creator(op)
        if create is None or self.problem(create) is not None:
            return arguments, key, None
        made_arguments, made_key = self.arguments(create)
        result, _sent = await self.call(create, made_arguments, key=made_key)
        if result.is_error:
            return arguments, key, False
        made = self.made_item(create, result.data) if isinstance(result.data, dict) else {}
        route = self.route_of[op.id]
        if route.role == "remove":
            arguments.update(_removal(op, create, made_arguments, result.data, arguments))
            return arguments, key, True
        last = route.item_param
        for binding in input_bindings(op):
            if binding.location != "path":
                continue
            if binding.wire_name == last:
                value = identity_value(binding.property, made, wire=binding.wire_name)
                if value is ABSENT:  # an answer that does not name the item (a bulk create's list)
                    value = await self.newest_identity(create)
                if value is ABSENT:
                    return arguments, key, False
                arguments[binding.property] = typed_for(binding.schema, value)
            elif binding.property in made_arguments:
                arguments[binding.property] = made_arguments[binding.property]
        return arguments, key, True

    def answer_holds(self, op: Operation) -> Callable[[str, JSONValue], bool]:
        """Whether ``op``'s answer schema carries field ``name`` and lets it hold ``value`` (refs resolved):
        only such a field must come back as it was sent."""
        schemas = SchemaSet(self.document.schemas)
        fields = schemas.properties(op.output.schema)
        maker = ValueMaker(schemas)

        def holds(name: str, value: JSONValue) -> bool:
            return name in fields and maker.fits(value, fields[name])

        return holds

    async def newest_identity(self, create: Operation) -> JSONValue:
        """The identity of the item ``create`` made last, read from the generated mock's own state
        (ABSENT on another upstream, or when the mock holds no item of that kind)."""
        route = self.route_of.get(create.id)
        if route is None or self.wire.log != "anvil":
            return ABSENT
        try:
            answer = await self.wire.http.get("/__anvil/items", params={"kind": route.kind})
            listed = answer.json().get("items") if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return ABSENT
        if not isinstance(listed, list) or not listed or not isinstance(listed[-1], dict):
            return ABSENT
        newest, data = listed[-1].get("key"), listed[-1].get("data")
        if isinstance(data, dict):  # the stored value itself, so an integer id stays an integer
            return next((v for v in data.values() if isinstance(v, str | int) and wire_text(v) == newest), newest)
        return newest if newest is not None else ABSENT

    def made_item(self, create: Operation, answer: Mapping[str, JSONValue]) -> Mapping[str, JSONValue]:
        """The item a create's ``answer`` holds: the answer itself, or the item inside its envelope
        (``{"business_service": {...}}``)."""
        route = self.route_of.get(create.id)
        envelope = route.envelope if route is not None else None
        inner = answer.get(envelope) if envelope is not None else None
        return inner if isinstance(inner, dict) else answer


def _removal(
    op: Operation, create: Operation, sent: Mapping[str, JSONValue], answer: JSONValue, made: Mapping[str, JSONValue]
) -> JSONObject:
    """The arguments that name, to the RPC remove ``op``, the item ``create`` just made: the create's
    declared inverse to ``op`` resolved on that call, and every input of ``op`` (or field of its whole
    body, over the ones ``made`` for it) the create was sent or answered under the same name."""
    body = sent.get("body")
    fields = {**(body if isinstance(body, dict) else {}), **sent}
    answered = answer if isinstance(answer, dict) else {}

    def named(name: str) -> JSONValue:
        if name in fields:
            return fields[name]
        found = answered.get(name)
        return found if found is not None and not isinstance(found, dict | list) else ABSENT

    out: JSONObject = {}
    for binding in input_bindings(op):
        if binding.location == "body":
            whole = made.get(binding.property)
            if isinstance(whole, dict):
                out[binding.property] = {k: v if named(k) is ABSENT else named(k) for k, v in whole.items()}
            continue
        value = named(binding.property)
        if value is not ABSENT:
            out[binding.property] = value
    inverse = create.effect.inverse
    if inverse is not None and inverse.operation == op.id:
        resolved = resolve_mapping(inverse.arguments, request=dict(sent), response=answer)
        out.update(resolved.arguments or {})
    return out


def typed_for(schema: Mapping[str, JSONValue], value: JSONValue) -> JSONValue:
    """An identity as the input that takes it is typed: digits for an integer input become a number
    (an API may answer ``"id": "10000"`` and address the item as ``{id}``, an int64), a number for a
    string input its text."""
    kind = schema.get("type")
    if kind in ("integer", "number") and isinstance(value, str) and value.isdigit() and len(value) <= 18:
        return int(value)
    if kind == "string" and isinstance(value, int | float) and not isinstance(value, bool):
        return wire_text(value)  # ``"id": 10000`` addressed as a string path segment
    return value


def identity_value(param: str, response: Mapping[str, JSONValue], *, wire: str | None = None) -> JSONValue:
    """The value in ``response`` that a path input called ``param`` (on the wire ``wire``) names: the
    field of either name itself first (``entityId``), then ``id`` for ``note_id``, ``key`` for ``idOrKey``..."""
    candidates = [name for name in (wire, param) if name is not None]
    candidates += [f for f in response if param.endswith("_" + f) or param.endswith(f.capitalize())]
    candidates += [f for f in response if f.startswith(param + "_")]
    candidates += [f for f in _ID_FIELDS if f in response]
    for name in candidates:
        if name in response and response[name] is not None and not isinstance(response[name], dict | list):
            return response[name]
    return ABSENT


_ID_FIELDS: Final = ("id", "gid", "number", "uuid", "key", "name")


def _needs_key(op: Operation) -> bool:
    return forwards_idempotency_key(op) or idempotency_key_required(op)


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


def _concrete_path(op: Operation, arguments: Mapping[str, JSONValue]) -> str:
    path = op.source_ref.path or ""
    for binding in input_bindings(op):
        if binding.location == "path" and binding.property in arguments:
            path = path.replace("{" + binding.wire_name + "}", wire_text(arguments[binding.property]))
    return path


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
    expected_path = _concrete_path(op, arguments)
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
    if route is not None and (route.role in _ITEM_ROLES or route.role == "create"):
        # The path names the item, or the API names a new one: its identity is the API's to answer.
        addressed = frozenset((*_ID_FIELDS, driver.kinds.id_field(route.kind)))
    echo = _echo_problem(op, arguments, result.data, addressed=addressed, holds=driver.answer_holds(op))
    if echo is not None:
        return Check(id="fidelity", operation=op.id, status="fail", detail=echo), len(sent)
    where = " on an item it made" if made else ""
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
        status=status, method=method, path=_concrete_path(op, arguments), operation=op.id, body=body
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
        key=lambda o: (route_role[o.id] != "list", route_role[o.id] in _ITEM_ROLES and not driver.creator(o))
    )
    op = candidates[0] if candidates else None
    if op is None:
        return Check(id="retry-read", status="skipped", detail="no approved read with a valid example retries a 503")
    arguments, key, _made = await driver.subject(op)
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
