"""The selftest's driver: the gateway under test over MCP, the upstream's wire log, and example arguments.

:class:`Driver` calls tools, makes example arguments (fresh idempotency keys), and finds the item an
operation on one item addresses: made by an approved create first, or, when the API creates such items
but no approved create does, planted in the generated mock's state (``POST /__anvil/items``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Final

import httpx

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.carrier import resolve_carrier
from anvil.air.effects import forwards_idempotency_key
from anvil.air.inputs import idempotency_key_required, input_bindings
from anvil.air.model import Document, Operation
from anvil.air.paths import resolve_mapping
from anvil.client import AnvilClient, CallResult
from anvil.proof.contract_inputs import complete_for_contract
from anvil.proof.mock.kinds import KindCatalog
from anvil.proof.mock.routes import Route, route_table
from anvil.proof.mock.schema import SchemaSet, Validator, ValueMaker
from anvil.proof.selftest.support import ABSENT, Example, LogEntry, Wire, wire_text

__all__ = ["ID_FIELDS", "ITEM_ROLES", "Driver", "concrete_path", "identity_value", "needs_key", "typed_for"]

_KEY_NAME: Final = re.compile(r"^(x[-_])?idempotency[-_]?key$", re.IGNORECASE)
ITEM_ROLES: Final = frozenset({"get", "update", "delete", "action"})


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
    #: Operations whose item was planted in the generated mock (no approved create makes it).
    planted: set[str] = field(default_factory=set)
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
        key = self.example.fresh_key(op.id.rsplit(".", 1)[-1], op) if needs_key(op) else None
        arguments = self.example.arguments(op, confirm=confirm)
        complete_for_contract(op, arguments, self.example.generator)  # a deeper path its undo or lookup reads
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
        if route is None or route.role not in ITEM_ROLES or route.item_param is None or route.names_a_closed_set:
            return None
        if not self.kinds.addresses_field(route.kind, route.item_param):
            return None  # a key no created item carries: nothing a create makes is found by it
        makers = [r.op for r in self.routes if r.role == "create" and r.kind == route.kind and r.op.is_approved]
        return next((m for m in makers if self.problem(m) is None), makers[0] if makers else None)

    def dependency_problem(self, op: Operation) -> str | None:
        """Why ``op`` cannot address an item: the create that makes it has no valid example, or it removes
        what only an unapproved add makes (None: it can)."""
        create = self.creator(op)
        route = self.route_of.get(op.id)
        if create is None and route is not None and route.role == "remove":
            return "it removes an item only its add makes, and no approved add makes one in this run"
        problem = self.problem(create) if create is not None else None
        return None if problem is None or create is None else f"its item is made by {create.id}, and {problem}"

    async def subject(self, op: Operation, *, confirm: bool = True) -> tuple[JSONObject, str | None, bool | None]:
        """Arguments for ``op`` that address an item this run made: ``(arguments, key, made)``.

        For an operation on one item (a get, update, delete or action) whose kind an approved create
        makes, that create is called first and the item's identity (and the create's own path values)
        fill ``op``'s path inputs. When the API creates such items but no approved create does, the
        generated mock is given one (:meth:`plant`), so the read meets an item that exists rather than
        a 404 nothing could avoid. ``made`` is True when an item was made (or planted) for it, False
        when that failed, None when ``op`` addresses no item that a create could make.
        """
        arguments, key = self.arguments(op, confirm=confirm)
        create = self.creator(op)
        if create is None and self.unmade(op):
            planted = await self.plant(op, arguments)
            if planted is None:
                return arguments, key, False
            self.planted.add(op.id)
            return (arguments, key, True) if self._address(op, arguments, planted, {}) else (arguments, key, False)
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
        if not self._address(op, arguments, made, made_arguments):
            value = await self.newest_identity(create)  # an answer that does not name the item (a bulk create's list)
            if value is ABSENT or not self._address(op, arguments, {"id": value}, made_arguments):
                return arguments, key, False
        return arguments, key, True

    def _address(
        self,
        op: Operation,
        arguments: JSONObject,
        item: Mapping[str, JSONValue],
        made_arguments: Mapping[str, JSONValue],
    ) -> bool:
        """Fill ``op``'s path inputs to address ``item``: its identity in the item parameter, the values
        its create was sent (``made_arguments``) in the others. False when ``item`` names no identity."""
        last = self.route_of[op.id].item_param
        for binding in input_bindings(op):
            if binding.location != "path":
                continue
            if binding.wire_name == last:
                value = identity_value(binding.property, item, wire=binding.wire_name)
                if value is ABSENT:
                    return False
                arguments[binding.property] = typed_for(binding.schema, value)
            elif binding.property in made_arguments:
                arguments[binding.property] = made_arguments[binding.property]
        return True

    def unmade(self, op: Operation) -> bool:
        """True when ``op`` addresses one item of a kind the API creates, but no approved create makes it
        (the generated mock answers such a read 404 unless it is given the item)."""
        route = self.route_of.get(op.id)
        if route is None or route.role not in ITEM_ROLES or route.item_param is None or route.names_a_closed_set:
            return False
        if route.kind not in self.kinds.creatable or not self.kinds.addresses_field(route.kind, route.item_param):
            return False
        return not any(r.role == "create" and r.kind == route.kind and r.op.is_approved for r in self.routes)

    async def plant(self, op: Operation, arguments: Mapping[str, JSONValue]) -> Mapping[str, JSONValue] | None:
        """The item the generated mock was given for ``op`` to address (``POST /__anvil/items``), made from
        its kind's schema under the collection path ``op`` names; None on another upstream or a refusal."""
        route = self.route_of.get(op.id)
        if route is None or route.item_param is None or self.wire.log != "anvil":
            return None
        scope = concrete_path(op, arguments).split("/")
        depth = len((op.source_ref.path or "").split("{" + route.item_param + "}")[0].rstrip("/").split("/"))
        try:
            answer = await self.wire.http.post(
                "/__anvil/items", json={"kind": route.kind, "scope": "/".join(scope[:depth])}
            )
            data = answer.json().get("data") if answer.status_code == 201 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        return data if isinstance(data, dict) else None

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
    candidates += [f for f in ID_FIELDS if f in response]
    for name in candidates:
        if name in response and response[name] is not None and not isinstance(response[name], dict | list):
            return response[name]
    return ABSENT


ID_FIELDS: Final = ("id", "gid", "number", "uuid", "key", "name")


def needs_key(op: Operation) -> bool:
    return forwards_idempotency_key(op) or idempotency_key_required(op)


def concrete_path(op: Operation, arguments: Mapping[str, JSONValue]) -> str:
    path = op.source_ref.path or ""
    for binding in input_bindings(op):
        if binding.location == "path" and binding.property in arguments:
            path = path.replace("{" + binding.wire_name + "}", wire_text(arguments[binding.property]))
    return path
