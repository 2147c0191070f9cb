"""Following ``$ref``s and judging a value against a schema, for the value generator (stdlib only).

:class:`SchemaRoot` resolves the references a bundle's schemas hold: an input schema's own
``#/$defs/X`` and a response schema's ``#/components/schemas/X`` (also spelled ``#/definitions/X`` or
``#/$defs/X``), including JSON pointers into them (``#/components/schemas/Tag/allOf/0``). A reference
that names nothing is the empty schema, as the published output schema treats it.

:func:`fits` is the generator's own check of what it made: the keywords real specs use (type with
OpenAPI's ``nullable``, enum/const, string length/pattern/format, number bounds in both the 2020-12
and the OpenAPI 3.0 spelling and ``multipleOf``, array and object bounds, ``allOf``/``anyOf``/
``oneOf``/``not``). A keyword it does not know accepts; ``jsonschema`` stays the judge in tests.
A :class:`SchemaRoot` made ``published`` judges compositions as a published output schema states them
(:func:`answer_node`).
Patterns are matched in linear time (:mod:`anvil.air.patterns`), and a judgement is bounded in work
(:data:`MAX_JUDGED`): a value too large to judge does not fit.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any, Final, TypeGuard
from urllib.parse import urlsplit

from anvil._types import JSONObject, JSONValue
from anvil.air.answer_schema import COMPOSITIONS, answer_node
from anvil.air.patterns import schema_pattern

__all__ = [
    "COMPOSITIONS",
    "MAX_JUDGED",
    "SchemaRoot",
    "answer_node",
    "bound",
    "combine",
    "discriminate",
    "fits",
    "format_fits",
    "json_equal",
    "multiple_fits",
]

_MAX_REFS: Final = 32
#: The keywords that compose a schema from branches.
#: The most schema nodes one judgement visits (a value against nested ``oneOf``s multiplies them).
MAX_JUDGED: Final = 100_000
#: The longest text a regex-shaped format (date-time, email, hostname...) is judged on; longer is not one.
_MAX_FORMAT_TEXT: Final = 1024
_SHAPED: Final = frozenset({"date-time", "date", "time", "email", "hostname", "uuid", "ipv4", "ipv6"})
_LOWER: Final = ("minLength", "minItems", "minProperties", "minimum")
_UPPER: Final = ("maxLength", "maxItems", "maxProperties", "maximum")
_DATE_TIME: Final = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_TIME: Final = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_DATE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_EMAIL: Final = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_SCHEME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*$")
_HOST: Final = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


class SchemaRoot:
    """Where a schema's ``$ref``s lead: the document's shared schemas and a root's own ``$defs``."""

    def __init__(
        self,
        schemas: Mapping[str, JSONValue] | None = None,
        root: JSONObject | None = None,
        *,
        published: bool = False,
    ) -> None:
        """Args: schemas: ``Document.schemas`` (named components); root: the schema being generated for;
        published: resolve as a published output schema does (:func:`anvil.air.tools.output_projection`):
        only ``#/components/schemas/<Name>`` leads anywhere, any other reference is the empty schema;
        and judge compositions as it states them (:func:`answer_node`), unless :meth:`exactly` says not.
        """
        self.schemas: Mapping[str, JSONValue] = schemas or {}
        self.published = published
        #: compositions judged as written (``oneOf``: exactly one branch), not as an answer's schema states them
        self.exact = not published
        self.root: JSONObject = root or {}
        own = self.root.get("$defs")
        self.defs: Mapping[str, JSONValue] = own if isinstance(own, dict) else {}

    def with_root(self, root: JSONObject) -> SchemaRoot:
        """The same shared schemas with another root (its ``$defs`` win over shared names)."""
        out = SchemaRoot(self.schemas, root, published=self.published)
        out.exact = self.exact
        return out

    def exactly(self) -> SchemaRoot:
        """This root judging compositions as written: a ``oneOf`` value matches exactly one branch."""
        if self.exact:
            return self
        out = SchemaRoot(self.schemas, self.root, published=self.published)
        out.exact = True
        return out

    def target(self, ref: str) -> tuple[JSONValue, str | None]:
        """``(node, component name)`` a reference names; ``({}, None)`` when it names nothing."""
        if not ref.startswith("#/"):
            return {}, None
        parts = [part.replace("~1", "/").replace("~0", "~") for part in ref[2:].split("/")]
        if self.published and (len(parts) != 3 or parts[:2] != ["components", "schemas"]):
            return {}, None
        node: JSONValue
        if parts[0] in ("$defs", "definitions") and len(parts) > 1:
            name = parts[1]
            node = self.defs.get(name, self.schemas.get(name))
            rest = parts[2:]
        elif parts[:2] == ["components", "schemas"] and len(parts) > 2:
            name = parts[2]
            node = self.schemas.get(name)
            rest = parts[3:]
        else:
            name, node, rest = None, self.root, parts
        node = walk_pointer(node, rest)
        if not isinstance(node, dict | bool):
            return {}, None
        return node, (name if not rest else None)

    def resolve(self, schema: JSONValue) -> tuple[JSONValue, str | None]:
        """``schema`` with its ``$ref`` chain followed (sibling keywords kept), and the last component named."""
        name: str | None = None
        seen = 0
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < _MAX_REFS:
            target, found = self.target(schema["$ref"])
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            name = found or name
            if isinstance(target, bool):
                return (target if not siblings else {"allOf": [target, siblings]}), name
            schema = {**target, **siblings}
            seen += 1
        if isinstance(schema, dict) and "$ref" in schema:
            schema = {k: v for k, v in schema.items() if k != "$ref"}
        return schema, name


def json_equal(left: JSONValue, right: JSONValue) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, objects and arrays compare deeply."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    return bool(left == right)


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_type(value: JSONValue, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return _number(value) and float(value).is_integer()
    if kind == "number":
        return _number(value)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return True  # "file" and other spec oddities: not ours to judge


def format_fits(fmt: str, text: str) -> bool:
    """True when ``text`` is a valid ``fmt`` (the formats the generator makes; any other accepts)."""
    if fmt in _SHAPED and len(text) > _MAX_FORMAT_TEXT:
        return False  # none is that long, and the email check backtracks quadratically on such a text
    try:
        if fmt == "date-time":
            return bool(_DATE_TIME.match(text)) and bool(datetime.fromisoformat(text.upper().replace("Z", "+00:00")))
        if fmt == "date":
            return bool(_DATE.match(text)) and bool(date.fromisoformat(text))
        if fmt == "time":
            found = _TIME.match(text)
            return bool(found) and int(found[1]) < 24 and int(found[2]) < 60 and int(found[3]) < 61  # type: ignore[index]
        if fmt == "email":
            return bool(_EMAIL.match(text))
        if fmt in ("uri", "url"):
            parts = urlsplit(text)
            web = fmt == "uri" or (parts.scheme in ("http", "https") and bool(parts.netloc))
            return bool(_SCHEME.match(parts.scheme)) and web and " " not in text
        if fmt == "uuid":
            return len(text) == 36 and text.count("-") == 4 and bool(uuid.UUID(text))
        if fmt == "ipv4":
            return bool(ipaddress.IPv4Address(text))
        if fmt == "ipv6":
            return bool(ipaddress.IPv6Address(text))
        if fmt == "hostname":
            return bool(_HOST.match(text))
        if fmt == "byte":
            return len(text) % 4 == 0 and base64.b64decode(text, validate=True) is not None
    except (ValueError, TypeError, binascii.Error):
        return False
    return True


class _TooMuch(Exception):
    """A judgement past :data:`MAX_JUDGED` steps."""


class _Judge:
    """Judges values; ``formats`` False treats ``format`` as the annotation most validators take it for."""

    def __init__(self, root: SchemaRoot, formats: bool = True, steps: list[int] | None = None) -> None:
        self.root = root
        self.formats = formats
        self._lenient: _Judge | None = None
        #: the steps left, shared with the lenient judge (branches nest: their work multiplies)
        self.steps = steps if steps is not None else [MAX_JUDGED]

    def lenient(self) -> _Judge:
        """The judge that does not assert formats: what "matches no other branch" must hold for."""
        if not self.formats:
            return self
        if self._lenient is None:
            self._lenient = _Judge(self.root, formats=False, steps=self.steps)
        return self._lenient

    def spend(self, steps: int = 1) -> None:
        self.steps[0] -= steps
        if self.steps[0] < 0:
            raise _TooMuch

    def fits(self, value: JSONValue, schema: JSONValue, depth: int = 0) -> bool:
        self.spend()
        if depth > 64:
            return True
        schema, _ = self.root.resolve(schema)
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, dict):
            return True
        if not self.root.exact:
            schema = answer_node(schema)
        if not self._kind(value, schema):
            return False
        if "const" in schema and not json_equal(value, schema["const"]):
            return False
        enum = schema.get("enum")
        if isinstance(enum, list) and not any(json_equal(value, item) for item in enum):
            return value is None and schema.get("nullable") is True
        if isinstance(value, str) and not self._string(value, schema):
            return False
        if _number(value) and not _number_fits(value, schema):
            return False
        if isinstance(value, list) and not self._array(value, schema, depth):
            return False
        if isinstance(value, dict) and not self._object(value, schema, depth):
            return False
        return self._logic(value, schema, depth)

    def _kind(self, value: JSONValue, schema: JSONObject) -> bool:
        declared = schema.get("type")
        if declared is None:
            return True
        kinds = declared if isinstance(declared, list) else [declared]
        if value is None and (schema.get("nullable") is True or schema.get("x-nullable") is True):
            return True
        return any(_is_type(value, kind) for kind in kinds if isinstance(kind, str))

    def _string(self, value: str, schema: JSONObject) -> bool:
        low, high = schema.get("minLength"), schema.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            return False
        if isinstance(high, int) and len(value) > high:
            return False
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not schema_pattern(pattern).search(value):
            return False
        fmt = schema.get("format")
        return not self.formats or not isinstance(fmt, str) or format_fits(fmt, value)

    def _array(self, value: list[JSONValue], schema: JSONObject, depth: int) -> bool:
        low, high = schema.get("minItems"), schema.get("maxItems")
        if (isinstance(low, int) and len(value) < low) or (isinstance(high, int) and len(value) > high):
            return False
        prefix = schema.get("prefixItems")
        items = schema.get("items")
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems", True)
        heads = prefix if isinstance(prefix, list) else []
        for index, item in enumerate(value):
            sub = heads[index] if index < len(heads) else items
            if sub is not None and not self.fits(item, sub, depth + 1):
                return False
        if schema.get("uniqueItems") is True:
            self.spend(len(value) * len(value) // 2)
            for index, item in enumerate(value):
                if any(json_equal(item, other) for other in value[:index]):
                    return False
        contains = schema.get("contains")
        return contains is None or any(self.fits(item, contains, depth + 1) for item in value)

    def _object(self, value: JSONObject, schema: JSONObject, depth: int) -> bool:
        required = schema.get("required")
        if isinstance(required, list) and any(isinstance(k, str) and k not in value for k in required):
            return False
        low, high = schema.get("minProperties"), schema.get("maxProperties")
        if (isinstance(low, int) and len(value) < low) or (isinstance(high, int) and len(value) > high):
            return False
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        patterns = schema.get("patternProperties")
        patterns = patterns if isinstance(patterns, dict) else {}
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            matched = False
            if key in props:
                matched = True
                if not self.fits(item, props[key], depth + 1):
                    return False
            for pattern, sub in patterns.items():
                if isinstance(pattern, str) and schema_pattern(pattern).search(key):
                    matched = True
                    if not self.fits(item, sub, depth + 1):
                        return False
            if not matched and not self.fits(item, extra, depth + 1):
                return False
        dependent = schema.get("dependentRequired")
        if isinstance(dependent, dict):
            for key, needs in dependent.items():
                if key in value and isinstance(needs, list) and any(n not in value for n in needs):
                    return False
        return True

    def _logic(self, value: JSONValue, schema: JSONObject, depth: int) -> bool:
        every = schema.get("allOf")
        if isinstance(every, list) and not all(self.fits(value, sub, depth + 1) for sub in every):
            return False
        some = schema.get("anyOf")
        if isinstance(some, list) and some and not any(self.fits(value, sub, depth + 1) for sub in some):
            return False
        one = schema.get("oneOf")
        if isinstance(one, list) and one:
            # exactly one branch, whether or not the validator asserts formats: the value matches one
            # branch as written and no other even with formats taken as annotations
            lenient = self.lenient()
            matches = [sub for sub in one if lenient.fits(value, sub, depth + 1)]
            if len(matches) != 1 or not self.fits(value, matches[0], depth + 1):
                return False
        negated = schema.get("not")
        return negated is None or not self.lenient().fits(value, negated, depth + 1)


def _bound(schema: JSONObject, plain: str, exclusive: str) -> tuple[float | None, bool]:
    """``(bound, exclusive)`` from either spelling: 2020-12 numbers or OpenAPI 3.0 booleans."""
    found = schema.get(exclusive)
    if _number(found):
        return float(found), True
    value = schema.get(plain)
    return (float(value), found is True) if _number(value) else (None, False)


def multiple_fits(value: float, step: float) -> bool:
    """``value`` is a multiple of ``step`` by the arithmetic ``jsonschema`` uses."""
    if isinstance(step, float) or isinstance(value, float):
        try:
            quotient = value / step
            return int(quotient) == quotient
        except (OverflowError, ZeroDivisionError):
            return False
    return value % step == 0


def _number_fits(value: float, schema: JSONObject) -> bool:
    low, low_open = _bound(schema, "minimum", "exclusiveMinimum")
    if low is not None and (value < low or (low_open and value == low)):
        return False
    high, high_open = _bound(schema, "maximum", "exclusiveMaximum")
    if high is not None and (value > high or (high_open and value == high)):
        return False
    step = schema.get("multipleOf")
    return not (_number(step) and step > 0 and not multiple_fits(value, step))


def fits(value: JSONValue, schema: JSONValue, root: SchemaRoot, steps: list[int] | None = None) -> bool:
    """True when ``value`` satisfies ``schema`` as far as the keywords this module knows say.

    ``steps`` is a budget shared with other judgements (one cell, decremented); by default this one
    may take :data:`MAX_JUDGED`. A judgement that runs out does not fit.
    """
    try:
        return _Judge(root, steps=steps).fits(value, schema)
    except (RecursionError, _TooMuch):
        return False


def bound(schema: JSONObject, plain: str, exclusive: str) -> tuple[float | None, bool]:
    """A number bound of ``schema`` in either spelling (see :func:`_bound`)."""
    return _bound(schema, plain, exclusive)


def combine(out: JSONObject, part: JSONObject, allowed: str) -> None:
    """Fold one ``allOf`` branch into ``out``: the intersection of what both accept, as far as it goes.

    ``out[allowed]`` collects the property names every closed branch (``additionalProperties: false``)
    allows. Raises ValueError when the branches ask for types no value has.
    """
    for key, value in part.items():
        if key not in out:
            if key == "additionalProperties" and value is False:
                props = part.get("properties")
                out[allowed] = frozenset(props) if isinstance(props, dict) else frozenset()
            out[key] = value
            continue
        mine = out[key]
        if key == "properties" and isinstance(mine, dict) and isinstance(value, dict):
            joined = dict(mine)
            for name, sub in value.items():
                joined[name] = sub if name not in joined or joined[name] == sub else {"allOf": [joined[name], sub]}
            out[key] = joined
        elif key == "required" and isinstance(mine, list) and isinstance(value, list):
            out[key] = mine + [name for name in value if name not in mine]
        elif key == "type":
            out[key] = _type_meet(mine, value)
        elif key == "enum" and isinstance(mine, list) and isinstance(value, list):
            out[key] = [v for v in mine if any(json_equal(v, w) for w in value)]
        elif key in _LOWER and isinstance(mine, int | float) and isinstance(value, int | float):
            out[key] = max(mine, value)
        elif key in _UPPER and isinstance(mine, int | float) and isinstance(value, int | float):
            out[key] = min(mine, value)
        elif key == "nullable":
            out[key] = mine is True and value is True
        elif key == "additionalProperties" and value is False:
            props = part.get("properties")
            names = frozenset(props) if isinstance(props, dict) else frozenset()
            current = out.get(allowed)
            out[allowed] = names & current if isinstance(current, frozenset) else names
            out[key] = False
        elif key in ("items", "additionalProperties") and isinstance(mine, dict) and isinstance(value, dict):
            out[key] = {"allOf": [mine, value]}


def _type_meet(left: JSONValue, right: JSONValue) -> JSONValue:
    mine = {left} if isinstance(left, str) else set(left) if isinstance(left, list) else set()
    theirs = {right} if isinstance(right, str) else set(right) if isinstance(right, list) else set()
    if "number" in mine and "integer" in theirs:
        mine.add("integer")
    if "number" in theirs and "integer" in mine:
        theirs.add("integer")
    both = sorted(mine & theirs)
    if not both:
        raise ValueError(f"allOf branches ask for different types ({left} and {right})")
    return both[0] if len(both) == 1 else both


def discriminate(
    value: JSONObject,
    discriminator: JSONObject,
    branch_name: str | None,
    branch: JSONValue,
    root: SchemaRoot,
    props: Mapping[str, JSONValue] | None = None,
) -> None:
    """Set the discriminator property to the mapping key naming the branch (or the branch's name)."""
    prop = discriminator.get("propertyName")
    if not isinstance(prop, str):
        return
    ref = branch.get("$ref") if isinstance(branch, dict) else None
    mapping = discriminator.get("mapping")
    wanted = None
    if isinstance(mapping, dict):
        for key, target in mapping.items():
            if target == ref or (
                branch_name is not None and isinstance(target, str) and target.rsplit("/", 1)[-1] == branch_name
            ):
                wanted = key
                break
    if wanted is None:
        wanted = branch_name
    if wanted is None:
        return
    schema = (props or {}).get(prop)
    if schema is None or fits(wanted, schema, root):
        value[prop] = wanted


def walk_pointer(node: Any, parts: Sequence[str]) -> Any:
    """The node unescaped JSON-pointer ``parts`` name under ``node`` (object keys, in-range list
    indexes), or None when one of them names nothing."""
    for part in parts:
        if isinstance(node, dict):
            node = node.get(part)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node
