"""The mock upstream as a Starlette app: an AIR document's API, answered from memory.

Requests are matched to operations by method and path template (:mod:`anvil.proof.mock.routes`),
validated against the operation's inputs (400 ``{"message", "code": "invalid_input", "field"}``; a
form body is read into its fields, typed by the body schema),
and answered by role: a create stores a new item (the request's fields over values generated from
the answer schema, with a fresh id) and answers 201; get and list read what is stored; update and
patch merge; delete removes (204 when the answer has no schema), and an RPC remove (``/pins.remove``)
removes the item its paired add stored whose fields or whose add's request hold the values it was
sent (404 when none does). A kind the API cannot create (no
create operation) is filled on first use (a read, an update or a delete), so the operations of a
read-only API answer; an item deleted stays gone. An idempotency key in
the operation's declared carrier (else an ``Idempotency-Key`` header on any write) is honoured: the
same key with the same request answers the first answer again without acting; with another request
it is 409 ``idempotency_key_reused``.

The control routes (``/__anvil*``: the request log, faults, reset and the state) are
:mod:`anvil.proof.mock.control`'s.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import unquote

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route as StarletteRoute

from anvil._types import JSONObject, JSONValue
from anvil.air.forms import decode_form, is_form_media_type
from anvil.air.model import Document, Operation, Param
from anvil.proof.mock.bodies import form_body, typed_text
from anvil.proof.mock.control import control_routes
from anvil.proof.mock.fit import AnswerFitter
from anvil.proof.mock.keyed import key_names, normalized
from anvil.proof.mock.kinds import KindCatalog, filter_text
from anvil.proof.mock.removal import named_item, request_fields
from anvil.proof.mock.routes import Route, route_table
from anvil.proof.mock.schema import SchemaSet, Validator, ValueMaker
from anvil.proof.mock.state import (
    MAX_ITEM_BYTES,
    MAX_ITEMS_PER_KIND,
    Item,
    KeyedAnswer,
    MockState,
)
from anvil.proof.mock.wire import (
    MAX_BODY_BYTES,
    MAX_QUERY,
    QuietReset,
    ResetResponse,
    Unparsed,
    finish,
    logged,
    logged_headers,
    logged_query,
    parse_body,
    read_body,
)

__all__ = ["MAX_BODY_BYTES", "MockApi", "create_mock_app"]

_INTEGER: Final = re.compile(r"-?\d{1,18}")
_MAX_SEEDED: Final = 10
_METHODS: Final = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _text(value: JSONValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _error(status: int, message: str, code: str, **extra: JSONValue) -> tuple[int, JSONValue]:
    return status, {"message": message, "code": code, **extra}


class MockApi:
    """An AIR document's API answered from memory (see the module docstring)."""

    def __init__(self, document: Document, *, seed: int = 0, max_items: int = MAX_ITEMS_PER_KIND) -> None:
        """Build the route table.

        Args:
            document: The AIR document whose operations are served (approved or not: it is the upstream).
            seed: Varies generated values; the same seed gives the same answers.
            max_items: The most items one kind holds (a create beyond it is 507 ``mock_full``).
        """
        self.document = document
        self.seed = seed
        self.max_items = max_items
        self.schemas = SchemaSet(document.schemas)
        self.routes = route_table(document, self.schemas)
        self.maker = ValueMaker(self.schemas, seed)
        self.state = MockState()
        self.kinds = KindCatalog(self.routes, self.schemas)
        self.key_names = key_names(self.routes)
        self._body_checks: dict[str, Validator] = {}
        self.fitter = AnswerFitter(self.schemas, self.maker)
        self._param_checks: dict[tuple[str, str, str], Validator] = {}

    def reset(self) -> None:
        """Forget everything and start the generated values over: after a reset the same requests get
        the same answers (conformance compares surfaces that each start from a reset mock)."""
        self.state.reset()
        self.maker = ValueMaker(self.schemas, self.seed)
        self.fitter = AnswerFitter(self.schemas, self.maker, self.fitter.answers)

    # --- matching ---------------------------------------------------------------------------------

    def match(
        self, method: str, raw_path: str, query: tuple[tuple[str, str], ...] = ()
    ) -> tuple[Route | None, dict[str, str], bool]:
        """``(route, path params, path known)`` for a request; the route is None when nothing fits.

        Routes are tried most specific first (literal segments before templates), and a route keyed by
        a query or fragment suffix matches only a request that carries it (:class:`TemplateMatcher`).
        """
        path = raw_path.rstrip("/") or "/"
        known = False
        for route in self.routes:
            found = route.match(path, query)
            if found is None:
                continue
            known = True
            if route.method == method or (method == "HEAD" and route.method == "GET"):
                return route, {name: unquote(value) for name, value in found.items()}, True
        return None, {}, known

    # --- validation -------------------------------------------------------------------------------

    def _param_check(self, op: Operation, param: Param) -> Validator:
        key = (op.id, param.in_, param.name)
        found = self._param_checks.get(key)
        if found is None:
            found = Validator(param.schema, self.schemas)
            self._param_checks[key] = found
        return found

    def _coerce(self, param: Param, text: str) -> JSONValue:
        return typed_text(self.schemas, param.schema, text)

    def body_of(self, route: Route | None, content_type: str, raw: bytes) -> JSONValue:
        """The request body: parsed JSON, or a form body's fields typed by the operation's body schema."""
        if not raw or not is_form_media_type(content_type):
            return parse_body(raw)
        spec = route.op.input.body if route is not None else None
        body = form_body(self.schemas, spec.schema if spec is not None else None, raw, content_type)
        return Unparsed() if body is None else body

    def problem(
        self, route: Route, params: Mapping[str, str], request: Request, body: JSONValue, raw: bytes
    ) -> tuple[str, str] | None:
        """``(field, sentence)`` for the first input that does not fit the operation, else None."""
        op = route.op
        carrier = route.carrier
        for param in op.input.params:
            if param.in_ == "body":
                continue
            if carrier is not None and carrier.mechanism == param.in_ and carrier.key.lower() == param.name.lower():
                continue
            values: list[str]
            if param.in_ == "path":
                values = [params[param.name]] if param.name in params else []
            elif param.in_ == "query":
                values = request.query_params.getlist(param.name)
            elif param.in_ == "header":
                values = request.headers.getlist(param.name)
            else:
                cookie = request.cookies.get(param.name)
                values = [cookie] if cookie is not None else []
            if not values:
                if param.required or param.in_ == "path":
                    return param.name, f"The {param.in_} parameter '{param.name}' is required."
                continue
            coerced = [self._coerce(param, value) for value in values]
            value: JSONValue = coerced if self.schemas.first_type(param.schema) == "array" else coerced[0]
            if self.schemas.first_type(param.schema) == "array":
                items = (self.schemas.deref(param.schema) or {}).get("items")
                holder = Param(name=param.name, in_=param.in_, schema=items if isinstance(items, dict) else {})
                value = [self._coerce(holder, v) for v in values]
            found = self._param_check(op, param).problem(value)
            if found is not None:
                return param.name, f"The {param.in_} parameter '{param.name}' is invalid: {found}"
        spec = op.input.body
        if spec is None:
            return None
        if not raw:
            return ("body", "A request body is required.") if spec.required else None
        if "json" not in spec.content_type:
            return None
        if isinstance(body, Unparsed):
            return "body", "The request body is not JSON."
        check = self._body_checks.get(op.id)
        if check is None:
            check = Validator(spec.schema, self.schemas)
            self._body_checks[op.id] = check
        found = check.problem(body)
        return ("body", f"The request body is invalid: {found}") if found is not None else None

    # --- idempotency ------------------------------------------------------------------------------

    def idempotency_key(self, route: Route, params: Mapping[str, str], request: Request, body: JSONValue) -> str | None:
        """The key this request carries: in the declared carrier, else an ``Idempotency-Key`` on a write."""
        carrier = route.carrier
        if carrier is None:
            if route.method in ("GET", "HEAD", "OPTIONS"):
                return None
            return request.headers.get("idempotency-key") or None
        if carrier.mechanism == "header":
            return request.headers.get(carrier.key) or None
        if carrier.mechanism == "query":
            return request.query_params.get(carrier.key) or None
        if carrier.mechanism == "path":
            return params.get(carrier.key) or None
        node: JSONValue = body
        for part in carrier.pointer or (carrier.key,):
            node = node.get(part) if isinstance(node, dict) else None
        return node if isinstance(node, str) and node else None

    @staticmethod
    def fingerprint(route: Route, path: str, request: Request, raw: bytes) -> str:
        """What "the same request" means for a key: operation, path, query and body bytes (a form body's
        fields, so a multipart body sent again with another boundary is the same request)."""
        query = sorted(request.query_params.multi_items())
        content_type = request.headers.get("content-type", "")
        fields = decode_form(raw, content_type) if raw and is_form_media_type(content_type) else None
        if fields is not None:
            raw = json.dumps(fields, separators=(",", ":")).encode()
        material = json.dumps([route.op.id, path, query], separators=(",", ":")).encode() + b"\0" + raw
        return hashlib.sha256(material).hexdigest()

    # --- items ------------------------------------------------------------------------------------

    def find(self, route: Route, params: Mapping[str, str]) -> tuple[str, Item] | None:
        """The stored item the route's item parameter names (:attr:`Route.item_param`)."""
        param = route.item_param
        if param is None:
            return None
        wanted = params.get(param)
        store = self.state.kind(route.kind)
        for name in self.kinds.fields_for(route.kind, param):
            for key, item in store.items():
                if name in item.data and _text(item.data[name]) == wanted:
                    return key, item
        return None

    def _generated(self, kind: str) -> JSONObject:
        made = self.maker.value(self.kinds.schema(kind), kind.lower())
        return made if isinstance(made, dict) else {}

    def _fresh_id(self, kind: str) -> JSONValue:
        """A new id for an item of ``kind`` that fits its id field and every path parameter that
        addresses the item (PayPal's order ``{id}`` is ``^[A-Z0-9]+$``): ``orde_1``, else a spelling of
        it the schemas take, else a value made from them."""
        number = self.state.next_number(kind)
        name = self.kinds.id_field(kind)
        schema = self.kinds.props(kind).get(name)
        declared = self.schemas.first_type(schema)
        if declared in ("integer", "number") or (declared is None and not self.kinds.props(kind)):
            return number
        prefix = re.sub(r"[^a-z0-9]", "", kind.lower())[:4] or "item"
        # An id the API answers as a string but addresses by an integer path parameter (Jira's
        # filters: ``"id": "10000"`` read back with ``GET /filter/{id}``, ``id`` an int64) is digits.
        spellings = [str(number)] if kind in self.kinds.numeric else []
        spellings += [f"{prefix}_{number}", f"{prefix}{number}", f"{prefix.upper()}{number}", str(number)]
        paths = self.kinds.param_schemas(kind)

        def fits(value: JSONValue) -> bool:
            held = schema is None or self.maker.fits(value, schema)
            return held and all(self._addressable(_text(value), shape) for shape in paths)

        for spelling in spellings:
            if fits(spelling):
                return spelling
        store = self.state.kind(kind)
        for _ in range(4):  # an id the schemas shape (a uuid, a pattern): made fresh, unused in the store
            for source in ([schema] if schema is not None else []) + paths:
                made = self.maker.fresh(source, name)
                if made is not None and _text(made) not in store and fits(made):
                    return made
        return spellings[0]

    def _fresh_keys(self, kind: str, data: JSONObject, sent: JSONValue) -> None:
        """Give a new item its own value of every other field its paths name it by (unless sent)."""
        number = self.state.counters.get(kind, 0)
        for name in self.kinds.alternate_keys(kind):
            if isinstance(sent, dict) and name in sent:
                continue
            made = f"{re.sub(r'[^A-Z0-9]', '', kind.upper())[:4] or 'ITEM'}-{number}"
            if self.maker.fits(made, self.kinds.props(kind).get(name)):
                data[name] = made

    def _addressable(self, text: str, shape: JSONValue) -> bool:
        """True when an id's text is a value of a path parameter ``shape`` (digits for an integer)."""
        if self.schemas.first_type(shape) in ("integer", "number"):
            return self.maker.fits(int(text), shape) if _INTEGER.fullmatch(text) else False
        return self.maker.fits(text, shape)

    def _store(
        self, kind: str, data: JSONObject, scope: str, *, key: str | None = None, sent: JSONObject | None = None
    ) -> tuple[int, JSONValue] | None:
        store = self.state.kind(kind)
        if len(store) >= self.max_items:
            return _error(507, f"The mock holds its maximum of {self.max_items} items of {kind}.", "mock_full")
        key = key if key is not None else _text(data.get(self.kinds.id_field(kind)))
        if key in store:
            return _error(409, f"An item of {kind} with this id exists.", "already_exists")
        size = len(json.dumps(data)) + (len(json.dumps(sent)) if sent else 0)
        if self.state.item_bytes + size > MAX_ITEM_BYTES:
            return _error(507, f"The mock holds its maximum of {MAX_ITEM_BYTES} bytes of items.", "mock_full")
        store[key] = Item(data, scope, sent=sent or {})
        self.state.resize(store[key], size)
        return None

    def _materialize(self, route: Route, params: Mapping[str, str], scope: str) -> tuple[str, Item] | None:
        """A read-only kind's item filled in on first use (the API offers no way to create it), one of a
        closed set the API defines (``/project/type/{projectTypeKey}``), or one addressed by a key its
        items do not carry (``/tasks/custom_id/{custom_id}``)."""
        param = route.item_param
        if param is None:
            return None
        tracked = not route.names_a_closed_set and self.kinds.addresses_field(route.kind, param)
        if route.kind in self.kinds.creatable and tracked:
            return None
        if self.state.was_deleted(route.kind, params[param]):
            return None  # it existed until it was deleted: gone, not filled in again
        data = self._generated(route.kind)
        name = self.kinds.fields_for(route.kind, param)[0]
        data[name] = self.kinds.typed(route.kind, name, params[param])
        if name != self.kinds.id_field(route.kind):  # addressed by another field (a key): a fresh id of its own
            data[self.kinds.id_field(route.kind)] = self._fresh_id(route.kind)
        for other, value in params.items():
            if other in self.kinds.props(route.kind) and other != name:
                data[other] = self.kinds.typed(route.kind, other, value)
        if self._store(route.kind, data, scope) is not None:
            return None
        key = _text(data.get(self.kinds.id_field(route.kind)))
        return key, self.state.kind(route.kind)[key]

    def plant(self, kind: str, scope: str) -> tuple[int, JSONValue]:
        """Store one item of ``kind`` made from its schema, with a fresh id (and fresh alternate keys),
        under collection path ``scope``: ``(201, {kind, key, scope, data})``, or the refusal when full."""
        data = self._generated(kind)
        data[self.kinds.id_field(kind)] = self._fresh_id(kind)
        self._fresh_keys(kind, data, None)
        schema = self.kinds.stored_schema(kind)
        if schema is not None:
            fitted = self.fit(schema, data, kind.lower())
            data = fitted if isinstance(fitted, dict) else data
        key = _text(data.get(self.kinds.id_field(kind)))
        refused = self._store(kind, data, scope, key=key)
        return refused if refused is not None else (201, {"kind": kind, "key": key, "scope": scope, "data": data})

    def _merge(self, route: Route, target: JSONObject, body: JSONValue) -> None:
        """Copy the request's fields into an item, as far as the item's schema has them.

        A field the kind's schema does not declare (or a value it would not accept) stays out, so the
        answer keeps validating against the operation's output schema; a kind without a known schema
        takes every field.
        """
        if not isinstance(body, dict):
            return
        carrier = route.carrier
        skip = (
            {carrier.pointer[0]} if carrier is not None and carrier.mechanism == "body" and carrier.pointer else set()
        )
        id_name = self.kinds.id_field(route.kind)
        props = self.kinds.props(route.kind)
        for key, value in body.items():
            if key in skip or key == id_name:
                continue
            if props and (key not in props or self.kinds.read_only(route, key)):
                continue
            if props and not self.maker.fits(value, props[key]):
                reference = self.kinds.reference(props[key], target.get(key), value, self.maker)
                if reference is not None:  # ``"parent": "123"`` sent, ``"parent": {"gid": "123"}`` held
                    target[key] = reference
                continue
            target[key] = copy.deepcopy(value)

    # --- roles ------------------------------------------------------------------------------------

    def answer(
        self, route: Route, params: Mapping[str, str], path: str, request: Request, body: JSONValue
    ) -> tuple[int, JSONValue]:
        """Carry the request out against the state: ``(status, body)`` (body None: no content).

        A success's body validates against the operation's answer schema whenever one can: what the
        state holds reaches the answer only through the fields that schema has (:meth:`fit`). A write
        answering its item in an envelope answers the fields beside it that it was sent as sent
        (Plaid's ``origination_account_id`` beside the ``balance``).
        """
        status, answer = self._act(route, params, path, request, body)
        schema = route.op.output.schema
        wrapper = {route.envelope, route.list_property} - {None}
        if wrapper and route.method != "GET" and isinstance(answer, dict) and isinstance(body, dict):
            beside = self.schemas.properties(schema)
            answer.update({k: copy.deepcopy(v) for k, v in body.items() if k in beside and k not in wrapper})
        if status < 300 and answer is not None and schema is not None:
            answer = self.fit(schema, answer, route.kind.lower())
        return status, answer

    def _wrap(self, route: Route, item: JSONObject) -> JSONValue:
        """One item as the operation answers it: itself, inside its envelope (``{"data": item}``), or,
        for a create that answers a list (a bulk create, ``{"options": [...]}``), as that list's one item."""
        if route.role == "create" and route.list_property is not None:
            shell = self.maker.value(route.op.output.schema, route.kind.lower())
            listed: JSONObject = shell if isinstance(shell, dict) else {}
            listed[route.list_property] = [copy.deepcopy(item)]
            return listed
        if route.envelope is None:
            return copy.deepcopy(item)
        shell = self.maker.value(route.op.output.schema, route.kind.lower())
        out: JSONObject = shell if isinstance(shell, dict) else {}
        out[route.envelope] = copy.deepcopy(item)
        return out

    def _unwrapped(self, route: Route, body: JSONValue) -> JSONValue:
        """A request body with the item's envelope taken off when it is wrapped like the answer (a bulk
        create's list: its first item)."""
        if route.envelope is not None and isinstance(body, dict) and isinstance(body.get(route.envelope), dict):
            return body[route.envelope]
        if route.role == "create" and route.list_property is not None and isinstance(body, dict):
            listed = body.get(route.list_property)
            if isinstance(listed, list) and listed and isinstance(listed[0], dict):
                return listed[0]
        return body

    def fit(self, schema: JSONObject, value: JSONValue, name: str) -> JSONValue:
        """``value`` made to validate against ``schema`` (:meth:`AnswerFitter.fit`)."""
        return self.fitter.fit(schema, value, name)

    def _act(
        self, route: Route, params: Mapping[str, str], path: str, request: Request, body: JSONValue
    ) -> tuple[int, JSONValue]:
        role = route.role
        no_schema = route.op.output.schema is None
        if role == "create":
            data = self._generated(route.kind)
            self._merge(route, data, self._unwrapped(route, body))
            for name, value in params.items():
                if name in self.kinds.props(route.kind):
                    data[name] = self.kinds.typed(route.kind, name, value)
            id_name = self.kinds.id_field(route.kind)
            unwrapped = self._unwrapped(route, body)
            named = isinstance(unwrapped, dict) and id_name in unwrapped
            if named and isinstance(unwrapped, dict):  # a client's id the item's paths cannot address is not its id
                text = _text(unwrapped[id_name])
                named = all(self._addressable(text, shape) for shape in self.kinds.param_schemas(route.kind))
            if not named or self.kinds.read_only(route, id_name):
                data[id_name] = self._fresh_id(route.kind)
                self._fresh_keys(route.kind, data, unwrapped)
            elif isinstance(unwrapped, dict):
                data[id_name] = copy.deepcopy(unwrapped[id_name])
            key = _text(data[id_name])
            carried = self.idempotency_key(route, params, request, body)
            for name, sub in self.kinds.props(route.kind).items():  # a field for the key holds the key it carried
                if (
                    carried is not None
                    and normalized(name) in self.key_names[route.kind]
                    and self.maker.fits(carried, sub)
                ):
                    data[name] = carried
            schema = self.kinds.stored_schema(route.kind)
            if schema is not None:  # the state holds what the kind's items can carry
                fitted = self.fit(schema, data, route.kind.lower())
                data = fitted if isinstance(fitted, dict) else data
            sent = request_fields(route, request.query_params.items(), body)
            refused = self._store(route.kind, data, path, key=key, sent=sent)
            if refused is None:
                self.state.kind(route.kind)[key].key = carried
            return refused if refused is not None else (201, self._wrap(route, data))
        if role == "remove":
            fields = request_fields(route, request.query_params.items(), body)
            gone = named_item(self.state.kind(route.kind), fields, self.kinds.id_field(route.kind))
            if gone is None:
                return _error(404, "Not Found", "not_found")
            self.state.forget(route.kind, gone)
            return (204, None) if no_schema else (200, self.maker.value(route.op.output.schema, route.kind.lower()))
        if role == "list":
            return 200, self._list(route, path, request)
        if role == "other":
            if no_schema:
                return (200, None) if route.method == "GET" else (204, None)
            made = self.maker.value(route.op.output.schema, route.kind.lower())
            if route.method != "GET" and isinstance(made, dict) and isinstance(body, dict):
                # A write the mock keeps no item for still answers with what it was sent, where the
                # answer has those fields (the fit that follows drops a value the answer refuses).
                answer_props = self.schemas.properties(route.op.output.schema)
                made.update({k: copy.deepcopy(v) for k, v in body.items() if k in answer_props})
            return 200, made
        found = self.find(route, params)
        if found is None:
            found = self._materialize(route, params, path.rsplit("/", 1)[0])
        if found is None:
            return _error(404, "Not Found", "not_found")
        key, item = found
        if role == "delete":
            self.state.forget(route.kind, key, params.get(route.item_param or ""))
            return (204, None) if no_schema else (200, self._wrap(route, item.data))
        if role in ("update", "action"):
            merged = copy.deepcopy(item.data)
            self._merge(route, merged, self._unwrapped(route, body))
            schema = self.kinds.stored_schema(route.kind)
            if schema is not None:
                fitted = self.fit(schema, merged, route.kind.lower())
                merged = fitted if isinstance(fitted, dict) else merged
            size = len(json.dumps(merged)) + (len(json.dumps(item.sent)) if item.sent else 0)
            if self.state.item_bytes - item.size + size > MAX_ITEM_BYTES:
                return _error(507, f"The mock holds its maximum of {MAX_ITEM_BYTES} bytes of items.", "mock_full")
            item.data = merged
            self.state.resize(item, size)
            if no_schema and role == "update":
                return 204, None
        return 200, self._wrap(route, item.data)

    def _list(self, route: Route, path: str, request: Request) -> JSONValue:
        store = self.state.kind(route.kind)
        if not store and route.kind not in self.kinds.creatable:
            self._seed(route, path, request, 1)  # a read-only collection lists one item, not nothing
        items = self._listed(route, path, request)
        short = self._min_listed(route) - len(items)
        if short > 0:  # an answer that must hold some items (Slack's ``messages``, ``minItems: 1``)
            self._seed(route, path, request, short)
            items = self._listed(route, path, request)
        listed = copy.deepcopy(items)
        if route.list_property is None:
            return listed
        shell = self.maker.value(route.op.output.schema, route.kind.lower())
        out: JSONObject = shell if isinstance(shell, dict) else {}
        out[route.list_property] = listed
        return out

    def _listed(self, route: Route, path: str, request: Request) -> list[JSONObject]:
        """The stored items a list request selects: its collection's, narrowed by its field filters."""
        scoped = (route.kind, route.template) in self.kinds.create_templates
        items = [item for item in self.state.kind(route.kind).values() if not scoped or item.scope == path]
        for name, wanted in self._filters(route, request):
            items = [item for item in items if filter_text(item.data.get(name)) == wanted]
        props, names = self.kinds.props(route.kind), self.key_names.get(route.kind, frozenset())
        for name, wanted in request.query_params.multi_items():  # a filter for the key its create carried
            if name not in props and normalized(name) in names:
                items = [item for item in items if item.key == wanted]
        return [item.data for item in items]

    def _filters(self, route: Route, request: Request) -> list[tuple[str, str]]:
        props = self.kinds.props(route.kind)
        paging = route.op.pagination
        # A page's size and continuation say which page, never which items (a gateway sizes pages itself).
        pages = {paging.page_size_param, paging.cursor_param} if paging is not None else set()
        out = []
        for name, wanted in request.query_params.multi_items():
            if name not in props or name in pages:
                continue
            allowed = (self.schemas.deref(props[name]) or {}).get("enum")
            if isinstance(allowed, list) and wanted not in [_text(v) for v in allowed]:
                continue  # a filter such as state=all that no item value can equal selects everything
            out.append((name, wanted))
        return out

    def _seed(self, route: Route, path: str, request: Request, count: int) -> None:
        """Store ``count`` generated items in the list's collection, each matching its filters."""
        for _ in range(count):
            data = self._generated(route.kind)
            data[self.kinds.id_field(route.kind)] = self._fresh_id(route.kind)
            for name, wanted in self._filters(route, request):
                data[name] = self.kinds.typed(route.kind, name, wanted)
            if self._store(route.kind, data, path) is not None:
                return

    def _min_listed(self, route: Route) -> int:
        """The fewest items the route's answer lists (its array's ``minItems``, bounded)."""
        schema = self.schemas.deref(route.op.output.schema)
        if route.list_property is not None:
            schema = self.schemas.deref(self.schemas.properties(schema).get(route.list_property))
        low = schema.get("minItems") if schema is not None else None
        return min(low, _MAX_SEEDED) if isinstance(low, int) and not isinstance(low, bool) and low > 0 else 0

    # --- control routes ---------------------------------------------------------------------------

    def describe(self) -> JSONObject:
        """What ``GET /__anvil`` answers."""
        return {
            "mock": "anvil",
            "service": self.document.service.id,
            "seed": self.seed,
            "operations": len(self.routes),
        }


def create_mock_app(api: MockApi) -> Starlette:
    """The ASGI app serving ``api`` (routes in the module docstring)."""
    state = api.state
    errors = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, QuietReset) for f in errors.filters):
        errors.addFilter(QuietReset())

    async def dispatch(request: Request) -> Response:
        raw_path = request.scope.get("raw_path", b"").decode("latin-1") or request.url.path
        raw_path = raw_path.split("?", 1)[0]
        path = unquote(raw_path.rstrip("/") or "/")
        route, params, known = api.match(request.method, raw_path, tuple(request.query_params.multi_items()))
        entry: JSONObject = {
            "method": request.method,
            "path": unquote(raw_path) or "/",  # as sent: a trailing slash is part of the wire
            "query": logged_query(request, route),
            "query_truncated": len(request.query_params.multi_items()) > MAX_QUERY,
            "headers": logged_headers(request, route),
            "operation": route.op.id if route is not None else None,
        }
        state.record(entry)
        raw = await read_body(request)
        if raw is None:
            entry.update(body=None, body_truncated=True)
            return finish(entry, *_error(413, "The request body is too large.", "request_too_large"))
        body = api.body_of(route, request.headers.get("content-type", ""), raw)
        entry["body"], entry["body_truncated"] = logged(raw, body)
        if route is None:
            if known:
                return finish(entry, *_error(405, "Method Not Allowed", "method_not_allowed"))
            return finish(entry, *_error(404, "Not Found", "not_found"))
        problem = api.problem(route, params, request, body, raw)
        if problem is not None:
            field, message = problem
            return finish(entry, *_error(400, message, "invalid_input", field=field))
        key = api.idempotency_key(route, params, request, body)
        scoped_key = f"{route.op.id}\0{key}" if key is not None else None
        fingerprint = api.fingerprint(route, path, request, raw)
        if scoped_key is not None and scoped_key in state.keys:
            first = state.keys[scoped_key]
            if first.fingerprint != fingerprint:
                return finish(
                    entry,
                    *_error(409, "The idempotency key was used with a different request.", "idempotency_key_reused"),
                )
            entry["replayed"] = True
            return finish(entry, first.status, json.loads(first.body) if first.body else None)
        fault = state.take_fault(request.method, path, route.template, route.op.id)
        if fault is not None:
            entry["fault"] = fault.to_json()
        if fault is not None and not fault.after_commit:
            if fault.delay_ms:
                await anyio.sleep(fault.delay_ms / 1000)
            if fault.reset:
                entry["status"] = None
                return ResetResponse()
            if fault.status is not None:
                return finish(entry, fault.status, fault.body if fault.body is not None else _INJECTED)
        status, answer = api.answer(route, params, path, request, body if not isinstance(body, Unparsed) else None)
        if scoped_key is not None and status < 500:
            encoded = json.dumps(answer).encode() if answer is not None else b""
            state.remember_key(scoped_key, KeyedAnswer(fingerprint, status, encoded))
        if fault is not None and fault.after_commit:
            entry["committed"] = True
            if fault.delay_ms:
                await anyio.sleep(fault.delay_ms / 1000)
            if fault.reset:
                entry["status"] = None
                return ResetResponse()
            if fault.status is not None:
                return finish(entry, fault.status, fault.body if fault.body is not None else _INJECTED)
        return finish(entry, status, answer)

    return Starlette(
        routes=[
            *control_routes(api),
            StarletteRoute("/{path:path}", dispatch, methods=_METHODS),
        ]
    )


_INJECTED: Final[JSONObject] = {"message": "Injected fault.", "code": "injected_fault"}
