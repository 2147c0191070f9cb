"""The mock's route table: every operation of an AIR document as a path pattern, a role and a kind.

A *kind* is the resource an operation touches, named after the shared schema its answer returns
(``Issue``), else after an operation with the same static path segments that has one (a ``DELETE
/issues/comments/{id}`` shares ``Comment`` with ``POST /issues/{n}/comments``), else after those
segments. A *role* says what the operation does to its kind:

* ``create``: a write to a collection (``POST /items``) stores a new item;
* ``list``: a read of a collection answers the items created under that same path;
* ``get`` / ``update`` / ``delete``: an item addressed by its last path parameter;
* ``action``: a ``POST /items/{id}/verb`` whose answer is that item (merged with the request);
* ``remove``: an RPC-style remove or delete (``POST /pins.remove``) beside the add or create that
  makes its kind (``POST /pins.add``, :mod:`anvil.air.rpc`): it takes away the item whose fields, or
  whose create's request, hold the values it was sent;
* ``other``: answered with a value generated from the answer schema.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Final, Literal
from urllib.parse import parse_qsl, quote, unquote

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.carrier import CarrierBinding, resolve_carrier
from anvil.air.enums import KEYED_MODES
from anvil.air.model import Document, Operation
from anvil.air.rpc import MAKE_VERBS, UNDO_VERBS, rpc_verb
from anvil.proof.mock.schema import SchemaSet

__all__ = ["Role", "Route", "TemplateMatcher", "route_table", "specificity"]

Role = Literal["create", "list", "get", "update", "delete", "action", "remove", "other"]
_PARAM: Final = re.compile(r"\{([^{}/]+)\}")
_STATIC_NAME: Final = re.compile(r"[^A-Za-z0-9]+")
#: The characters the executor keeps as written in a template's literal text; the rest (``?``, ``#``,
#: spaces...) it percent-encodes, and so must a pattern that matches what it sends.
_TEMPLATE_SAFE: Final = "/:@!$&'()*+,;=-._~%"


def specificity(template: str) -> tuple[tuple[int, ...], int]:
    """A sort key: per segment 0 for literal text, 1 for text with a parameter in it, 2 for a bare
    parameter; then 0 for a template keyed by a query or fragment suffix, 1 for one without.

    Sorting by it tries ``/IncomingPhoneNumbers/Local.json`` before ``/IncomingPhoneNumbers/{Sid}.json``
    before ``/IncomingPhoneNumbers/{Sid}``, and ``/responses?beta=true`` before ``/responses``: the
    spec's literal text wins over a template that would also match it.
    """
    ranks: list[int] = []
    for part in template.split("?", 1)[0].split("#", 1)[0].split("/"):
        if not part:
            continue
        ranks.append(2 if _PARAM.fullmatch(part) else 1 if _PARAM.search(part) else 0)
    return tuple(ranks), 0 if _suffix(template)[1] else 1


@dataclass(frozen=True, slots=True)
class TemplateMatcher:
    """Matches a request's raw path (and query) against an operation's path template.

    Two operations may share a URL and differ only in a suffix the spec keys them by: a query
    (``/responses?beta=true``) or a fragment (``/api#create``). The executor percent-encodes that
    suffix into the path, so the raw path carries it (``/responses%3Fbeta=true``); a query key also
    matches when it arrives as a real query (``/responses`` with ``beta=true``).
    """

    pattern: re.Pattern[str]
    params: tuple[str, ...]
    bare: re.Pattern[str] | None
    query: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, template: str) -> TemplateMatcher:
        """The matcher of ``template``."""
        pattern, params = _compile(template)
        bare: re.Pattern[str] | None = None
        query: tuple[tuple[str, str], ...] = ()
        if "?" in template and "#" not in template:
            path, _, text = template.partition("?")
            bare = _compile(path)[0]
            query = tuple(parse_qsl(text, keep_blank_values=True))
        return cls(pattern, params, bare, query)

    def match(self, raw_path: str, query: tuple[tuple[str, str], ...] = ()) -> dict[str, str] | None:
        """The (still percent-encoded) path parameters when the request fits, else None."""
        found = self.pattern.fullmatch(raw_path)
        if found is None and self.bare is not None and all(pair in query for pair in self.query):
            found = self.bare.fullmatch(raw_path)
        if found is None:
            return None
        return {name: found.group(f"p{index}") for index, name in enumerate(self.params)}


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """One operation as the mock serves it.

    Attributes:
        op: the operation.
        method: the HTTP method, upper case.
        template: the path template (``/repos/{owner}/{repo}/issues``).
        pattern: the compiled template (named groups ``p0``, ``p1``... in ``params`` order), as the
            executor encodes it on the wire.
        params: the template's parameter names, in order.
        matcher: how a raw request path (and query) is matched (:class:`TemplateMatcher`).
        role: what the operation does (module docstring).
        kind: the resource kind.
        item_schema: the schema of one item of the kind (None when unknown).
        list_property: for a list answered as an object, the property holding the items.
        envelope: for one item answered inside an object (``{"data": {...}}``, ``{"service": {...}}``),
            the property holding it; a request body wrapped the same way is unwrapped by it too.
        carrier: the operation's declared idempotency carrier, if any.
    """

    op: Operation
    method: str
    template: str
    pattern: re.Pattern[str]
    params: tuple[str, ...]
    role: Role
    kind: str
    item_schema: object
    list_property: str | None
    carrier: CarrierBinding | None
    matcher: TemplateMatcher
    envelope: str | None = None

    @property
    def item_param(self) -> str | None:
        """The path parameter that names the item: the last one whose values are not a closed set
        (``/tags/{id}/{entity_type}`` names tag ``id``; an enum segment selects, it does not identify),
        else the last parameter (None without one)."""
        selectors = {
            p.name
            for p in self.op.input.params
            if p.in_ == "path" and isinstance(p.schema, dict) and ("enum" in p.schema or "const" in p.schema)
        }
        names = [name for name in self.params if name not in selectors]
        return names[-1] if names else (self.params[-1] if self.params else None)

    @property
    def names_a_closed_set(self) -> bool:
        """True when the item parameter's values are a closed set (``/project/type/{projectTypeKey}``
        of three types): such items exist as the API defines them; no create makes one."""
        param = next((p for p in self.op.input.params if p.in_ == "path" and p.name == self.item_param), None)
        return (
            param is not None and isinstance(param.schema, dict) and ("enum" in param.schema or "const" in param.schema)
        )

    @property
    def static_count(self) -> int:
        """How many fixed segments the template has (more is more specific)."""
        return sum(1 for part in self.template.split("/") if part and not _PARAM.fullmatch(part))

    def match(self, path: str, query: tuple[tuple[str, str], ...] = ()) -> dict[str, str] | None:
        """The path parameters when the raw ``path`` (and ``query``) fits this template, else None."""
        return self.matcher.match(path, query)

    def sample_path(self) -> str:
        """The raw path the executor sends for this template with every parameter ``x`` (a query or
        fragment suffix percent-encoded into it, as the executor writes it)."""
        path, suffix = _suffix(self.template)
        return _PARAM.sub("x", path) + quote(unquote(suffix), safe=_TEMPLATE_SAFE)


def _literal(text: str) -> str:
    # The executor's encoding of literal text; an already-encoded template byte stays as written.
    return re.escape(quote(unquote(text), safe=_TEMPLATE_SAFE))


def _compile(template: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    params: list[str] = []
    pattern = ""
    last = 0
    for found in _PARAM.finditer(template):
        pattern += _literal(template[last : found.start()]) + f"(?P<p{len(params)}>[^/]+)"
        params.append(found.group(1))
        last = found.end()
    pattern += _literal(template[last:])
    return re.compile(pattern), tuple(params)


def _suffix(template: str) -> tuple[str, str]:
    """``(path, suffix)``: a template split before a ``?`` or ``#`` that keys operations sharing a URL."""
    cut = min((i for i in (template.find("?"), template.find("#")) if i >= 0), default=len(template))
    return template[:cut], template[cut:]


def _segments(template: str) -> list[str]:
    return [part for part in _suffix(template)[0].split("/") if part]


def _signature(parts: list[str]) -> str:
    return "/".join(part for part in parts if not _PARAM.fullmatch(part))


_ID_LIKE: Final = frozenset({"id", "number", "uuid", "key"})


def _envelope(
    resolved: JSONObject, schemas: SchemaSet, names: frozenset[str] = frozenset()
) -> tuple[str, object] | None:
    """``(property, item schema)`` when an answer object only wraps one item (``{"data": {...}}``).

    A wrapper has no identity of its own, at most three properties, and exactly one whose value is an
    object with properties (the item), or, among several, one named like the item (``names``: Netlify's
    ``{"form": {...}, "asset": {...}}`` answering ``POST /sites/{id}/assets``); anything else is an
    item with a nested object.
    """
    props = schemas.properties(resolved)
    if not props or len(props) > 3 or _ID_LIKE & set(props):
        return None
    objects = [(key, sub) for key, sub in props.items() if schemas.is_object(sub)]
    named = [(key, sub) for key, sub in objects if key in names]
    return objects[0] if len(objects) == 1 else named[0] if len(named) == 1 else None


def _item_names(parts: list[str]) -> frozenset[str]:
    """What an item of a collection path may be called: its last fixed segment, singular too
    (``assets`` -> ``asset``, ``policies`` -> ``policy``)."""
    fixed = [part for part in parts if not _PARAM.fullmatch(part)]
    if not fixed:
        return frozenset()
    word = fixed[-1]
    names = {word}
    if word.endswith("ies"):
        names.add(word[:-3] + "y")
    elif word.endswith("s"):
        names.add(word[:-1])
    return frozenset(names)


def _page(resolved: JSONObject, schemas: SchemaSet) -> tuple[str, object] | None:
    """``(property, item schema)`` when a named answer is a page of items: exactly one array property,
    of objects, and no identity of its own (an item that has a list of objects keeps its ``id``)."""
    props = schemas.properties(resolved)
    if _ID_LIKE & set(props):
        return None
    arrays = [(key, sub) for key, sub in props.items() if schemas.first_type(sub) == "array"]
    if len(arrays) != 1:
        return None
    key, sub = arrays[0]
    items = (schemas.deref(sub) or {}).get("items")
    return (key, items) if schemas.is_object(items) else None


def _answer_kind(op: Operation, schemas: SchemaSet) -> tuple[str | None, object, str | None]:
    """``(shared schema name, item schema, list property)`` of what the operation answers."""
    schema = op.output.schema
    names = _item_names(_segments(op.source_ref.path or ""))
    name = schemas.ref_name(schema)
    if name is not None:
        resolved = schemas.deref(schema)
        if resolved is not None and schemas.first_type(resolved) == "array":
            items = resolved.get("items")
            return schemas.ref_name(items), items, None
        wrapped = _envelope(resolved, schemas, names) if resolved is not None else None
        if wrapped is not None and schemas.ref_name(wrapped[1]) is not None:
            return schemas.ref_name(wrapped[1]), wrapped[1], None
        page = _page(resolved, schemas) if resolved is not None else None
        if page is not None:  # a named page (Jira's PageBeanProject): its one list of items
            key, items = page
            return schemas.ref_name(items), items, key
        return name, schema, None
    resolved = schemas.deref(schema)
    if resolved is None:
        return None, None, None
    kind = schemas.first_type(resolved)
    if kind == "array":
        items = resolved.get("items")
        return schemas.ref_name(items), items, None
    if kind == "object":
        props = schemas.properties(resolved)
        arrays = [(key, sub) for key, sub in props.items() if schemas.first_type(sub) == "array"]
        if len(arrays) == 1 and not _ID_LIKE & set(props):  # an item with one list (its ``id``) is no page
            key, sub = arrays[0]
            items = (schemas.deref(sub) or {}).get("items")
            return schemas.ref_name(items), items, key
        wrapped = _envelope(resolved, schemas, names)
        if wrapped is not None:
            return schemas.ref_name(wrapped[1]), wrapped[1], None
    return None, schema, None


def _sends_list(op: Operation, prop: str, schemas: SchemaSet) -> bool:
    """True when the request body carries a list under ``prop`` (a bulk create's items)."""
    body = op.input.body
    return body is not None and schemas.first_type(schemas.properties(body.schema).get(prop)) == "array"


def _role(method: str, parts: list[str], answers_list: bool) -> Role:
    ends_in_param = bool(parts) and _PARAM.fullmatch(parts[-1]) is not None
    if method == "GET":
        if ends_in_param:
            return "get"
        return "list" if answers_list else "other"
    if method == "POST":
        return "update" if ends_in_param else "create"
    if method in ("PUT", "PATCH"):
        return "update" if ends_in_param else "other"
    if method == "DELETE":
        return "delete" if ends_in_param else "other"
    return "other"


def _carrier(op: Operation) -> CarrierBinding | None:
    if op.idempotency.mode not in KEYED_MODES:
        return None
    return resolve_carrier(op).binding


def route_table(document: Document, schemas: SchemaSet) -> tuple[Route, ...]:
    """Every operation of ``document`` with a method and a path, most specific template first
    (:func:`specificity`: literal segments before templates that would also match them)."""
    drafts: list[tuple[Operation, str, list[str], str | None, object, str | None, bool]] = []
    for op in document.operations:
        method = (op.source_ref.method or "").upper()
        template = op.source_ref.path
        if not method or not template or not template.startswith("/"):
            continue
        parts = _segments(template)
        name, item, list_property = _answer_kind(op, schemas)
        if (
            list_property is not None
            and _role(method, parts, True) == "create"
            and not _sends_list(op, list_property, schemas)
        ):
            # A write answering one list beside its own fields is no bulk create unless it was sent that
            # list (Plaid's report ``{report, user_id, warnings: [...]}``): its whole answer is the item.
            name, item, list_property = schemas.ref_name(op.output.schema), op.output.schema, None
        resolved = schemas.deref(op.output.schema)
        answers_list = list_property is not None or (resolved is not None and schemas.first_type(resolved) == "array")
        drafts.append((op, method, parts, name, item, list_property, answers_list))
    # A signature (the static segments of an item collection) borrows the kind of an op that has one.
    by_signature: dict[str, str] = {}
    by_resource: dict[str, str] = {}
    family: dict[str, int] = {}  # how many item-collection routes share a signature
    # A family's create names its kind first: the list and get of the same path may each answer under
    # another schema name (IncidentTypeCustomFieldWithOptions beside IncidentTypeCustomFields) and must
    # still see what the create stored.
    ordered = sorted(drafts, key=lambda d: _role(d[1], d[2], d[6]) != "create")
    for op, method, parts, name, _item, _prop, answers_list in ordered:
        role = _role(method, parts, answers_list)
        if role in ("other", "action"):
            continue
        collection = parts[:-1] if role in ("get", "update", "delete") else parts
        family[_signature(collection)] = family.get(_signature(collection), 0) + 1
        if name is None:
            continue
        by_signature.setdefault(_signature(collection), name)
        if op.effect.resource:
            by_resource.setdefault(op.effect.resource, name)
    routes: list[Route] = []
    for op, method, parts, name, item, list_property, answers_list in drafts:
        role = _role(method, parts, answers_list)
        collection = parts[:-1] if role in ("get", "update", "delete") else parts
        static = _STATIC_NAME.sub("_", _signature(collection)).strip("_")
        # A path family of its own (a list, create, get... at the same static segments) is its own kind;
        # the classifier's resource name joins only a lone route to another path's kind (two families
        # ending in the same word, /automation_actions/actions and /incident_workflows/actions, differ).
        lone = family.get(_signature(collection), 0) < 2 or role in ("other", "action")
        shared = by_signature.get(_signature(collection)) if not lone else None
        kind = (
            shared
            or name
            or by_signature.get(_signature(collection))
            or (by_resource.get(op.effect.resource) if op.effect.resource and lone else None)
            or static
            or "root"
        )
        if role == "create" and len(parts) >= 2 and _PARAM.fullmatch(parts[-2]):
            parent = by_signature.get(_signature(parts[:-1]))
            if parent is not None and parent == kind:
                role = "action"  # POST /payments/{id}/capture answering the payment itself
        if item is None and kind in document.schemas:
            item = {"$ref": f"#/components/schemas/{kind}"}
        template = ("/" + "/".join(parts) if parts else "/") + _suffix(op.source_ref.path or "")[1]
        resolved = schemas.deref(op.output.schema)
        names = _item_names(parts)
        wrapped = _envelope(resolved, schemas, names) if resolved is not None and list_property is None else None
        matcher = TemplateMatcher.of(template)
        pattern, params = matcher.pattern, matcher.params
        routes.append(
            Route(
                op=op,
                method=method,
                template=template,
                pattern=pattern,
                params=params,
                role=role,
                kind=kind,
                item_schema=item,
                list_property=list_property,
                carrier=_carrier(op),
                matcher=matcher,
                envelope=wrapped[0] if wrapped is not None and role != "list" else None,
            )
        )
    routes = _paired_removes(routes)
    routes.sort(key=lambda route: (specificity(route.template), route.template, route.method))
    return tuple(routes)


def _paired_removes(routes: list[Route]) -> list[Route]:
    """Each RPC remove or delete (``POST /pins.remove``) with a create beside it (``POST /pins.add``)
    becomes that create's kind's ``remove`` (no item schema of its own: its answer is no item)."""
    creates = {route.template: route for route in routes if route.method == "POST" and route.role == "create"}
    out: list[Route] = []
    for route in routes:
        verb = rpc_verb(route.template) if route.method == "POST" and route.role == "create" else None
        if verb is not None and UNDO_VERBS.get(verb.verb) == "inverse":
            maker = next((creates[t] for t in map(verb.with_verb, MAKE_VERBS) if t in creates), None)
            if maker is not None:
                route = replace(
                    route, role="remove", kind=maker.kind, item_schema=None, list_property=None, envelope=None
                )
        out.append(route)
    return out
