"""The simulator's upstream: an in-process HTTP answerer that plays the API as its contract says.

It is an :class:`httpx.MockTransport` handler, so the real executor builds and sends real requests
and nothing leaves the process. It answers from the *reference* AIR (the bundle as compiled), not
from the surface under test, so a mutant that understates what the API needs (a dropped scope) is
refused here exactly as the real API would refuse it:

* a request to no operation's path and method is 404;
* an operation that needs auth answers 401 without its credential (in ``Authorization``, or where its
  API key travels) and 403 when the token (``sim <scope> <scope>...``) lacks a scope the reference
  declares;
* the injected fault (``throttle`` 429, ``outage`` 503, ``conflict`` 409) answers every attempt;
* otherwise 200 (201 for a create) with data made from the output schema by the one value generator
  (:mod:`anvil.air.values`, seeded), so every answer validates against the published output schema
  and the same seed gives the same answers;
* a read with AIR ``pagination`` answers in two pages (:mod:`anvil.proof.simulate.pages`) and
  records each page it served with the continuation the request carried (:attr:`pages`).

Every request is counted per operation, which is how the matrix sees attempts and replays.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import field
from typing import Any, Final, Literal

import httpx

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.air.carrier import effective_auth_carriers
from anvil.air.model import Document, Operation
from anvil.air.values import CannotMake, Style, ValueGenerator
from anvil.proof.mock.routes import TemplateMatcher, specificity
from anvil.proof.simulate.pages import PageServed, page_items, page_length, received_continuation, set_path

__all__ = ["FAULT_STATUS", "Fault", "SimulatedUpstream", "scope_token"]

Fault = Literal["none", "throttle", "outage", "conflict"]
#: The status each injected fault answers with.
FAULT_STATUS: Final[dict[str, int]] = {"throttle": 429, "outage": 503, "conflict": 409}
_MAX_DEPTH: Final = 6
_TOKEN_PREFIX: Final = "sim"


def scope_token(scopes: tuple[str, ...] | list[str]) -> str:
    """The simulator's bearer token for a principal holding ``scopes`` (a space list)."""
    return " ".join([_TOKEN_PREFIX, *sorted(scopes)]).replace(" ", "+") if scopes else _TOKEN_PREFIX


def _granted(authorization: str | None) -> set[str] | None:
    if not authorization:
        return None
    token = authorization.split(" ", 1)[-1]
    parts = token.split("+")
    return set(parts[1:]) if parts and parts[0] == _TOKEN_PREFIX else set()


def _credential(op: Operation, request: httpx.Request) -> str | None:
    """The credential a request carries where ``op``'s auth puts it: the ``Authorization`` header, or an
    API key's own header or query parameter (Plaid's ``PLAID-SECRET``). A composite needs every factor's:
    None when one is absent, else the first (the simulator gives every factor the same token)."""
    carriers = effective_auth_carriers(op.auth)
    if not carriers:
        authorization: str | None = request.headers.get("authorization")
        return authorization
    found: list[str] = [
        str((request.url.params if carrier.in_ == "query" else request.headers).get(carrier.name) or "")
        for carrier in carriers
    ]
    return None if any(not value for value in found) else found[0]


def _resolve(schema: JSONValue, defs: Mapping[str, Any]) -> JSONValue:
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < _MAX_DEPTH:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        schema = defs.get(name, {})
        seen += 1
    return schema


def _properties(schema: JSONValue, defs: Mapping[str, Any], depth: int = 0) -> dict[str, Any]:
    """An object schema's properties with its ``allOf`` branches' joined (``allOf: [Page, {items}]``)."""
    schema = _resolve(schema, defs)
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return {}
    out: dict[str, Any] = {}
    for branch in schema.get("allOf") or ():
        out.update(_properties(branch, defs, depth + 1))
    own = schema.get("properties")
    if isinstance(own, dict):
        out.update(own)
    return out


def _numeric_input(op: Operation, name: str | None) -> bool:
    """True when the input ``name`` (a query parameter or a body field) takes an integer or number."""
    schemas = [p.schema for p in op.input.params if p.name == name]
    body = op.input.body
    if body is not None:
        schemas += [f.schema for f in body.fields if f.name == name]
    return any(isinstance(s, dict) and s.get("type") in ("integer", "number") for s in schemas)


def _walk_value(data: JSONValue, path: str) -> JSONValue:
    for part in path.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


@dataclass
class SimulatedUpstream:
    """The answerer. Set :attr:`fault` before a call; read :attr:`hits` after it.

    Args:
        reference: The AIR the API really implements (the compiled bundle, never a mutant).
        seed: The generator seed; one seed, one sequence of answers.
    """

    reference: Document
    seed: int = 1
    fault: Fault = "none"
    hits: Counter[str] = field(default_factory=Counter)
    #: Operation id -> every page served, in order, with what it received and handed out.
    pages: dict[str, list[PageServed]] = field(default_factory=dict)
    _cursors: dict[tuple[str, str], int] = field(default_factory=dict)
    _routes: list[tuple[str, TemplateMatcher, Operation]] = field(default_factory=list)
    _rng: random.Random = field(default_factory=random.Random)
    _values: ValueGenerator = field(default_factory=ValueGenerator)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._values = ValueGenerator(self.reference.schemas, seed=self.seed, style=Style(label="sim", numbered=True))
        for op in self.reference.operations:
            path, method = op.source_ref.path, op.source_ref.method
            if path and method:
                self._routes.append((method.upper(), TemplateMatcher.of(path), op))
        # Most specific first: a literal segment wins over a template that would also match it.
        self._routes.sort(key=lambda route: specificity(route[2].source_ref.path or ""))

    def transport(self) -> httpx.MockTransport:
        """An httpx transport answering every request with :meth:`answer`."""
        return httpx.MockTransport(self.answer)

    def _route(self, request: httpx.Request) -> Operation | None:
        raw = request.url.raw_path.split(b"?", 1)[0].decode("ascii", errors="replace")
        query = tuple(request.url.params.multi_items())
        for method, matcher, op in self._routes:
            if method == request.method and matcher.match(raw, query) is not None:
                return op
        return None

    def answer(self, request: httpx.Request) -> httpx.Response:
        """Answer one request as the module docstring describes."""
        op = self._route(request)
        if op is None:
            return httpx.Response(404, json={"message": "Not Found"})
        self.hits[op.id] += 1
        if op.auth.type != "none":
            granted = _granted(_credential(op, request))
            if granted is None:
                return httpx.Response(401, json={"message": "Unauthenticated"})
            if not set(op.auth.scopes) <= granted:
                return httpx.Response(403, json={"message": "Missing scope"})
        if self.fault != "none":
            return httpx.Response(FAULT_STATUS[self.fault], json={"message": f"simulated {self.fault}"})
        if op.output.schema is None:
            return httpx.Response(204)
        data = self.value(op.output.schema, op.canonical_name)
        if op.pagination is not None and op.is_read:
            return self._page(op, request, data)
        return httpx.Response(201 if op.effect.action == "create" else 200, json=data)

    def value(self, schema: JSONValue, name: str) -> JSONValue:
        """An answer value for ``schema`` that validates against it (an empty object when none can be made)."""
        try:
            return self._values.make(schema, name=name, direction="response", published=True)
        except CannotMake:
            return {}  # the contract contradicts itself; the cell that checks the answer says so

    def item_schema(self, op: Operation) -> dict[str, Any] | None:
        """The resolved schema of one item of a paged read's answer (None: the contract does not locate items)."""
        paging = op.pagination
        defs = self.reference.schemas
        schema = _resolve(op.output.schema, defs)
        if paging is None or not isinstance(schema, dict):
            return None
        if paging.items_field:
            schema = _resolve(_properties(schema, defs).get(paging.items_field), defs)
        if not isinstance(schema, dict) or not (schema.get("type") == "array" or "items" in schema):
            return None
        item = _resolve(schema.get("items"), defs)
        return item if isinstance(item, dict) else {}

    def _page_number(self, op: Operation, received: str | None) -> int | None:
        paging = op.pagination
        if received is None or paging is None or paging.style == "link":
            return 1
        if paging.style == "cursor":
            return self._cursors.get((op.id, received))
        if not received.isdigit() or len(received) > 9:
            return None
        number = int(received)
        if paging.style == "page":
            return number if number >= 1 else None
        return number // page_length(paging) + 1

    def _page(self, op: Operation, request: httpx.Request, data: JSONValue) -> httpx.Response:
        paging = op.pagination
        assert paging is not None  # only paged reads come here
        received = received_continuation(request, paging.cursor_param)
        page = self._page_number(op, received)
        if page is None:
            return httpx.Response(400, json={"message": f"unknown {paging.cursor_param}"})
        length = page_length(paging)
        count = page_items(paging, page)
        item = self.item_schema(op)
        items: list[JSONValue] = []
        if item is not None:
            items = [self.value(item, "item") for _ in range(count)]
            if paging.items_field:
                set_path(data, paging.items_field, items)
            else:
                data = items
        token: JSONValue = None
        if paging.style == "cursor" and paging.next_field:
            current = _walk_value(data, paging.next_field)
            numeric = isinstance(current, int) and not isinstance(current, bool)
            if page != 1:
                token = None
            elif numeric or _numeric_input(op, paging.cursor_param):
                # A cursor input that takes a number (Jira's ``after``) continues with one, whatever
                # the next field's type: a token the cursor input refuses continues nothing.
                token = 2 if numeric else "2"
            else:
                token = f"sim-cursor-{self._rng.randrange(10**9)}"
            set_path(data, paging.next_field, token if token is not None else (None if numeric else ""))
        elif paging.style == "cursor" and items and isinstance(items[-1], dict) and page == 1:
            token = items[-1].get("id")
        elif paging.style in ("page", "offset") and page == 1:
            token = 2 if paging.style == "page" else length
        handed_out = str(token) if token is not None and page == 1 else None
        if handed_out is not None:
            self._cursors[(op.id, handed_out)] = 2
        self.pages.setdefault(op.id, []).append(PageServed(page, received, handed_out))
        return httpx.Response(200, json=data)
