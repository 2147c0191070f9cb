"""What the mock knows about each kind of item: its schema, its fields, and the field that names it.

A kind's item is what its get answers (a create may answer only identifiers), and it holds every
field any of its routes' items declares. Its identity is the field an item path names by its own name
(``entityId`` of ``/workflow/{entityId}``), else ``id`` and its spellings, else ``name``. An id the API
answers as a string but addresses through an integer path parameter is made of digits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from anvil._types import JSONObject, JSONValue
from anvil.proof.mock.routes import Route
from anvil.proof.mock.schema import SchemaSet, ValueMaker

__all__ = ["KindCatalog", "filter_text"]

_INTEGER: Final = re.compile(r"-?\d{1,18}")
_NUMBER: Final = re.compile(r"-?\d{1,18}(\.\d{1,18})?([eE][-+]?\d{1,3})?")
#: Whose item schema a kind's stored items take, first to last.
_STORED_SHAPE: Final = {"get": 0, "list": 1, "update": 2, "create": 3, "action": 4, "delete": 5}
_ITEM_ROLES: Final = frozenset({"get", "update", "delete", "action"})


class KindCatalog:
    """The kinds of a route table (see the module docstring); read-only once built."""

    def __init__(self, routes: Sequence[Route], schemas: SchemaSet) -> None:
        """Args: routes: the mock's route table; schemas: where refs lead."""
        self.schemas = schemas
        self.served = {route.kind for route in routes}
        self.creatable = {route.kind for route in routes if route.role == "create"}
        self.create_templates = {(route.kind, route.template) for route in routes if route.role == "create"}
        self._schema: dict[str, object] = {}
        self._props: dict[str, dict[str, JSONValue]] = {}
        self._stored: dict[str, JSONObject | None] = {}
        for route in sorted(routes, key=lambda r: _STORED_SHAPE.get(r.role, len(_STORED_SHAPE))):
            if route.item_schema is not None:
                self._schema.setdefault(route.kind, route.item_schema)
                props = self._props.setdefault(route.kind, {})
                for name, sub in schemas.properties(route.item_schema).items():
                    props.setdefault(name, sub)
        self.numeric = {route.kind for route in routes if self._addressed_by_number(route)}
        self._addressed: dict[str, list[str]] = {}  # kind -> the item parameters its routes name items by
        self._param_schemas: dict[str, list[JSONValue]] = {}  # kind -> the schemas of those parameters
        for route in routes:
            if route.role in _ITEM_ROLES and route.item_param is not None and not route.names_a_closed_set:
                names = self._addressed.setdefault(route.kind, [])
                if route.item_param not in names:
                    names.append(route.item_param)
                found = [p.schema for p in route.op.input.params if p.in_ == "path" and p.name == route.item_param]
                shapes = self._param_schemas.setdefault(route.kind, [])
                shapes += [shape for shape in found if shape and shape not in shapes]
        self._request_fields: dict[str, dict[str, JSONValue]] = {}

    def _addressed_by_number(self, route: Route) -> bool:
        """True when the route names its item by an integer (or number) path parameter."""
        param = next((p for p in route.op.input.params if p.in_ == "path" and p.name == route.item_param), None)
        return param is not None and self.schemas.first_type(param.schema) in ("integer", "number")

    def param_schemas(self, kind: str) -> list[JSONValue]:
        """The schemas of the path parameters that address an item of ``kind`` (its id must fit each)."""
        return self._param_schemas.get(kind, [])

    def schema(self, kind: str) -> object:
        """The item schema of ``kind`` (None when unknown)."""
        return self._schema.get(kind)

    def props(self, kind: str) -> dict[str, JSONValue]:
        """Every field an item of ``kind`` may hold, by name."""
        return self._props.get(kind, {})

    def stored_schema(self, kind: str) -> JSONObject | None:
        """What a stored item of ``kind`` must fit: each field as some route's item declares it (an
        open object, so a field only the create answers, such as Jira's ``entityId``, is kept)."""
        if kind not in self._stored:
            props = self.props(kind)
            schema = self._schema.get(kind)
            self._stored[kind] = (
                {"type": "object", "properties": props} if props else schema if isinstance(schema, dict) else None
            )
        return self._stored[kind]

    def id_field(self, kind: str) -> str:
        """The field that identifies an item of ``kind``: the field an item path names by its own name
        (``entityId`` of ``/workflow/{entityId}``, ``issueType`` of ``.../issuetype/{issueType}``), else
        ``id`` (``number``, ``uuid``, ``key``, ``gid``), else a field a path parameter ends in, else
        ``name``, else an ``*_id``."""
        props = self.props(kind)
        params = self._addressed.get(kind, ())
        addressed = next((name for name in params if name in props), None)
        if addressed is not None:
            return addressed
        for name in ("id", "number", "uuid", "key", "gid"):
            if name in props:
                return name
        for param in params:  # ``{widget_ref}`` names ``ref``, when the item has no ``id`` of its own
            named = next((name for name in props if _names(param, name)), None)
            if named is not None:
                return named
        if "name" in props:
            return "name"
        return next((name for name in props if name.endswith(("_id", "Id", "_number"))), "id")

    def alternate_keys(self, kind: str) -> list[str]:
        """Fields besides the id that item paths name items by (Jira's ``key`` of ``{issueIdOrKey}``):
        each must be as unique as the id."""
        props, identity = self.props(kind), self.id_field(kind)
        found = [name for param in self._addressed.get(kind, ()) for name in props if _names(param, name)]
        return [name for name in dict.fromkeys(found) if name != identity]

    def fields_for(self, kind: str, param: str) -> list[str]:
        """The fields a path parameter called ``param`` may name an item of ``kind`` by, best first."""
        props = self.props(kind)
        fields = [param] if param in props else []
        fields += [name for name in props if _names(param, name)]
        fields += [name for name in props if name.startswith(param + "_")]
        fields.append(self.id_field(kind))
        return list(dict.fromkeys(fields))

    def addresses_field(self, kind: str, param: str) -> bool:
        """True when a path parameter names a field of ``kind`` (itself, by its last word, as the start
        of one such as ``tag`` of ``tag_name``, or, for a kind of unknown fields, as an ``id``-like name);
        False for a key the item does not carry (Asana's ``.../custom_id/{custom_id}``)."""
        props = self.props(kind)
        if param in props or any(_names(param, name) or name.startswith(param + "_") for name in props):
            return True
        if props:
            return False
        return param == "id" or param.endswith(("_id", "Id", "_gid", "_key", "Key", "_number", "_uuid"))

    def typed(self, kind: str, name: str, text: str) -> JSONValue:
        """A path value as field ``name`` of ``kind`` holds it (digits of an integer field as a number)."""
        declared = self.schemas.first_type(self.props(kind).get(name))
        if declared == "integer" and _INTEGER.fullmatch(text):
            return int(text)
        if declared == "number" and _NUMBER.fullmatch(text):
            return float(text)
        return text

    def reference(self, schema: JSONValue, held: JSONValue, value: JSONValue, maker: ValueMaker) -> JSONObject | None:
        """The object a field holds when a request names it by its id (Asana's ``parent``, Jira's
        ``lead``): the held (or a generated) object with that id, when it fits; else None."""
        if isinstance(value, dict | list) or value is None or self.schemas.first_type(schema) != "object":
            return None
        props = self.schemas.properties(schema)
        name = next((n for n in ("id", "gid", "key", "accountId", "uuid") if n in props), None)
        if name is None:
            return None
        base = held if isinstance(held, dict) else maker.value(schema, name)
        made = {**base, name: value} if isinstance(base, dict) else {name: value}
        return made if maker.fits(made, schema) else None

    def read_only(self, route: Route, name: str) -> bool:
        """A field the server sets, so a request's value for it is ignored as the API would: read-only
        in the request's own schema (else, when the request's schema does not name it, in the kind's).
        A request schema of its own may let the caller set what the item's schema marks read-only."""
        sent = self.request_props(route)
        sub = sent.get(name) if name in sent else self.props(route.kind).get(name)
        resolved = self.schemas.deref(sub)
        return resolved is not None and resolved.get("readOnly") is True

    def request_props(self, route: Route) -> dict[str, JSONValue]:
        """The fields of the item a request body carries (inside its envelope when it has one)."""
        found = self._request_fields.get(route.op.id)
        if found is None:
            body = route.op.input.body
            found = self.schemas.properties(body.schema) if body is not None else {}
            if route.envelope is not None and route.envelope in found:
                found = self.schemas.properties(found[route.envelope])
            self._request_fields[route.op.id] = found
        return found


def _names(param: str, name: str) -> bool:
    """True when a path parameter ends in a field's name (``goal_gid`` and ``gid``, ``projectIdOrKey`` and ``key``)."""
    return param.endswith("_" + name) or param.endswith(name[:1].upper() + name[1:])


def filter_text(value: JSONValue) -> str:
    """What a list filter compares with a field: its text, or an object's id (``parent=123`` matches
    ``"parent": {"gid": "123"}``)."""
    if isinstance(value, dict):
        found = next((value[n] for n in ("id", "gid", "key", "accountId", "uuid") if n in value), None)
        return _text(found) if found is not None else ""
    return _text(value)


def _text(value: JSONValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
