"""AIR <-> JSON: declaration-ordered serialization and a validating loader.

``to_json`` writes every dataclass field in declaration order, in camel case (or the field's
``metadata["json"]`` name), omitting optional fields whose value is ``None``; tuples become lists.
``load_document`` is its inverse and applies defaults, so ``load(dump(load(x))) == load(x)``.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import types
import typing
from functools import cache
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

from anvil.air.canonical import hash_canonical
from anvil.air.hosts import is_host, normalize_host
from anvil.air.model import Document
from anvil.errors import AirError

__all__ = [
    "MAX_OUTPUT_SCHEMA_PERCENT",
    "MAX_TOOL_BUDGET_TOKENS",
    "SERVICE_ID_PATTERN",
    "contract_hash",
    "document_json",
    "from_json",
    "load_document",
    "to_json",
]

T = TypeVar("T")

SERVICE_ID_PATTERN = re.compile(r"^[a-z](?:[a-z0-9_-]{0,62}[a-z0-9])?$")
MAX_RETRY_ATTEMPTS = 5
MAX_RETRY_DELAY_MS = 20000
#: The largest disclosure budgets a document may state (the manifest's bounds too).
MAX_TOOL_BUDGET_TOKENS = 1_000_000
MAX_OUTPUT_SCHEMA_PERCENT = 10_000


def _camel(name: str) -> str:
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


#: Each annotation text compiled once: the model's annotations are postponed strings, and most are
#: shared by many classes (``str | None``, ``tuple[str, ...]``), which ``typing.get_type_hints`` compiles
#: afresh for each.
_ANNOTATIONS: dict[str, types.CodeType] = {}


def _hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)`` for a class whose annotations are plain types or their texts:
    each text evaluated as it evaluates it (the module's names first, then the class's), its
    compilation shared."""
    hints: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        annotations = inspect.get_annotations(base)  # its own, not evaluated
        if not annotations:
            continue
        module = getattr(sys.modules.get(base.__module__), "__dict__", {})
        names = dict(vars(base))
        for name, value in annotations.items():
            if value is None:
                value = type(None)
            elif isinstance(value, str):
                code = _ANNOTATIONS.get(value)
                if code is None:
                    code = _ANNOTATIONS.setdefault(value, compile(value, "<string>", "eval"))
                value = eval(code, names, module)  # an annotation, as get_type_hints evaluates it
            hints[name] = value
    return hints


@cache
def _fields(cls: Any) -> tuple[tuple[str, str, Any, bool], ...]:
    """(python name, json name, type, has default) per field, in declaration order."""
    hints = _hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        json_name = f.metadata.get("json") or _camel(f.name)
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        out.append((f.name, json_name, hints[f.name], has_default))
    return tuple(out)


#: Per type: its fields as (python name, json name) when it is an AIR node (a dataclass), else None.
_NODE_FIELDS: dict[type, tuple[tuple[str, str], ...] | None] = {}


def _node_fields(kind: type) -> tuple[tuple[str, str], ...] | None:
    fields = _NODE_FIELDS.get(kind, ())
    if fields == ():
        is_node = dataclasses.is_dataclass(kind) and not issubclass(kind, type)
        fields = tuple((py, js) for py, js, _tp, _d in _fields(kind)) if is_node else None
        _NODE_FIELDS[kind] = fields
    return fields


def to_json(value: Any) -> Any:
    """Serialize an AIR node (or a tuple/list/dict of them) to plain JSON values."""
    kind = type(value)
    if kind is str or kind is bool or kind is int or value is None or kind is dict:
        return value
    fields = _node_fields(kind)
    if fields is not None:
        out: dict[str, Any] = {}
        for py_name, json_name in fields:
            item = getattr(value, py_name)
            if item is None:
                continue
            out[json_name] = to_json(item)
        return out
    if isinstance(value, tuple | list):
        return [to_json(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _fail(path: str, message: str) -> AirError:
    return AirError(
        "air/invalid", f"AIR {path or '<root>'}: {message}", hint="Recompile the bundle with `anvil compile`."
    )


_Converter = typing.Callable[[Any, str], Any]


def _same(value: Any, path: str) -> Any:
    return value


@cache
def _converter(tp: Any) -> _Converter:
    """How a JSON value becomes a field of type ``tp`` (worked out once per type)."""
    if tp is Any:
        return _same
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        arms = [arm for arm in get_args(tp) if arm is not type(None)]
        arm = _converter(arms[0]) if arms else _same
        return lambda value, path: None if value is None else arm(value, path)
    if origin is Literal:
        allowed = get_args(tp)

        def literal(value: Any, path: str) -> Any:
            if value not in allowed:
                raise _fail(path, f"{value!r} is not one of {', '.join(map(str, allowed))}")
            return value

        return literal
    if origin is tuple:
        item = _converter(get_args(tp)[0])

        def sequence(value: Any, path: str) -> Any:
            if not isinstance(value, list | tuple):
                raise _fail(path, "expected an array")
            return tuple(item(entry, f"{path}[{i}]") for i, entry in enumerate(value))

        return sequence
    if origin is dict or tp is dict:
        return _mapping
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return lambda value, path: _build(tp, value, path)
    return _SCALARS.get(tp, _same)


def _mapping(value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise _fail(path, "expected an object")
    return value


def _boolean(value: Any, path: str) -> Any:
    if not isinstance(value, bool):
        raise _fail(path, "expected a boolean")
    return value


def _integer(value: Any, path: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise _fail(path, "expected an integer")
    return int(value)


def _number(value: Any, path: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(path, "expected a number")
    return value


def _string(value: Any, path: str) -> Any:
    if not isinstance(value, str):
        raise _fail(path, "expected a string")
    return value


_SCALARS: dict[Any, _Converter] = {bool: _boolean, int: _integer, float: _number, str: _string}


@cache
def _plan(cls: Any) -> tuple[tuple[tuple[str, str, _Converter, bool], ...], frozenset[str]]:
    """(python name, json name, converter, has default) per field of ``cls``, and its json names."""
    fields = tuple((py, js, _converter(tp), has_default) for py, js, tp, has_default in _fields(cls))
    return fields, frozenset(js for _py, js, _c, _d in fields)


def _build(cls: Any, data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        raise _fail(path, f"expected an object for {cls.__name__}")
    fields, known = _plan(cls)
    kwargs: dict[str, Any] = {}
    for py_name, json_name, convert, has_default in fields:
        if json_name in data:
            kwargs[py_name] = convert(data[json_name], f"{path}.{json_name}" if path else json_name)
        elif not has_default:
            raise _fail(path, f"missing required field {json_name!r}")
    if len(kwargs) != len(data):
        unknown = sorted(set(data) - known)
        if unknown:
            raise _fail(path, f"unknown field(s) {', '.join(unknown)}")
    return cls(**kwargs)


def from_json(cls: type[T], data: Any) -> T:
    """Build an AIR node of type ``cls`` from JSON, applying defaults.

    Raises:
        AirError: a field is missing, unknown or of the wrong type.
    """
    built: T = _build(cls, data, "")
    return built


def load_document(data: Any) -> Document:
    """Load and validate a whole AIR document (ids, enums, retry bounds).

    Raises:
        AirError: the document does not load.
    """
    doc = from_json(Document, data)
    if not SERVICE_ID_PATTERN.match(doc.service.id):
        raise _fail("service.id", f"service id {doc.service.id!r} is not a lowercase slug of 1-64 characters")
    budget = doc.disclosure
    if budget is not None:
        if not 1 <= budget.tool_budget_tokens <= MAX_TOOL_BUDGET_TOKENS:
            where, value = "disclosure.toolBudgetTokens", budget.tool_budget_tokens
            raise _fail(where, f"{value} is outside 1..{MAX_TOOL_BUDGET_TOKENS}")
        if not 0 <= budget.output_schema_percent <= MAX_OUTPUT_SCHEMA_PERCENT:
            where, value = "disclosure.outputSchemaPercent", budget.output_schema_percent
            raise _fail(where, f"{value} is outside 0..{MAX_OUTPUT_SCHEMA_PERCENT}")
    for index, op in enumerate(doc.operations):
        for host in op.credential_hosts or ():
            if not is_host(host) or host != normalize_host(host):
                raise _fail(f"operations[{index}].credentialHosts", f"{host!a} is not a lower-case host name or IP")
        r = op.retries
        where = f"operations[{index}].retries"
        if not 1 <= r.max_attempts <= MAX_RETRY_ATTEMPTS:
            raise _fail(where, f"maxAttempts {r.max_attempts} is outside 1..{MAX_RETRY_ATTEMPTS}")
        for name, delay in (("baseDelayMs", r.base_delay_ms), ("maxDelayMs", r.max_delay_ms)):
            if not 0 <= delay <= MAX_RETRY_DELAY_MS:
                raise _fail(where, f"{name} {delay} is outside 0..{MAX_RETRY_DELAY_MS}")
    return doc


def document_json(doc: Document, *, operations: list[Any] | None = None) -> dict[str, Any]:
    """The document as JSON (what ``air.json`` holds), equal to :func:`to_json`'s.

    ``operations``: the JSON of ``doc.operations`` when the caller already has it (a compile's round
    trip wrote it): it is used as is, not serialized again or copied.
    """
    out: dict[str, Any] = {}
    for py_name, json_name in _node_fields(Document) or ():
        item = getattr(doc, py_name)
        if item is None:
            continue
        if py_name == "operations" and operations is not None:
            out[json_name] = operations
        else:
            out[json_name] = to_json(item)
    return out


def contract_hash(doc: Document | dict[str, Any]) -> str:
    """``contractHash``: the canonical hash of the loaded document without its diagnostics."""
    data = document_json(load_document(doc)) if isinstance(doc, dict) else document_json(doc)
    data = {k: v for k, v in data.items() if k != "diagnostics"}
    return hash_canonical(data)
