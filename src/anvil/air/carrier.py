"""Idempotency carrier resolution (original-core §1.8): where an idempotency key travels on the wire.

Shared by the compiler (validation, approval) and the runtime (key injection). A keyed operation
(mode ``required`` or ``key_supported``) names its carrier with ``idempotency.mechanism`` and
``idempotency.key``; :func:`resolve_carrier` proves that coordinate exists in the modeled request and
can hold a key, or says in one sentence why it cannot.

A body carrier travels in a JSON body (at any object depth) or in a form body
(``application/x-www-form-urlencoded`` or ``multipart/form-data``, a top-level field: see
:mod:`anvil.air.forms`); either way it is forwarded and ledger-keyed the same.

Schemas in AIR are self-contained: a ``$ref`` inside an operation's schema points at ``#/$defs/<Name>``
of that same schema, so resolution needs nothing but the operation.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.enums import KEYED_MODES
from anvil.air.forms import is_form_media_type
from anvil.air.model import Auth, AuthCarrier, Operation, Param, credential_parts
from anvil.air.naming import prop_key

__all__ = [
    "CARRIER_ISSUE",
    "CARRIER_SCHEMA_ISSUE",
    "COMPOSITE_FACTOR_TYPES",
    "RUNTIME_OWNED_HEADERS",
    "CarrierBinding",
    "CarrierResolution",
    "auth_carrier_conflict",
    "effective_auth_carrier",
    "effective_auth_carriers",
    "factor_carrier_clash",
    "is_json_media_type",
    "parse_body_pointer",
    "resolve_carrier",
    "string_like",
]

#: Diagnostic code for a carrier that names no exact modeled request coordinate.
CARRIER_ISSUE: Final = "unsupported_idempotency_carrier"
#: Diagnostic code for a carrier whose schema cannot hold (or be proven to hold) a key.
CARRIER_SCHEMA_ISSUE: Final = "unsupported_idempotency_carrier_schema"

#: Headers the runtime writes itself; an idempotency key may never travel in one.
RUNTIME_OWNED_HEADERS: Final = frozenset(
    {
        "accept",
        "authorization",
        "connection",
        "content-length",
        "content-type",
        "cookie",
        "expect",
        "host",
        "proxy-authorization",
        "transfer-encoding",
    }
)

_HTTP_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_FINGERPRINT_PATTERNS = frozenset({r"^[\u0021-\u007E]+$", "^[!-~]+$", "^anvil-[0-9a-f]{32}$"})
_FINGERPRINT_LENGTH = 38  # "anvil-" + 32 hex
_FINGERPRINT_FORBIDDEN = (
    "const",
    "enum",
    "format",
    "not",
    "allOf",
    "anyOf",
    "oneOf",
    "if",
    "then",
    "else",
    "$ref",
    "contentEncoding",
    "contentMediaType",
)
#: The auth types a composite's factor may have: static material the runtime sends as it is, with no
#: exchange and no end user (an exchange per factor, or a factor the runtime cannot execute, is refused).
COMPOSITE_FACTOR_TYPES: Final = frozenset({"api_key", "basic", "jwt_bearer"})
_BEARER_TYPES: Final = frozenset(
    {"oauth2_client_credentials", "oauth2_authorization_code", "oauth2_on_behalf_of", "jwt_bearer", "workload_identity"}
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CarrierBinding:
    """A resolved carrier.

    ``key``: the header name (manifest spelling), query/path parameter wire name, or body field name
    (the last pointer segment for a nested body field).
    ``pointer``: for body carriers, the path of object keys from the body root to the field (a legacy
    ``in: body`` parameter is the first key).
    ``input_name``: the public property name the modeled carrier param/field *would* have. It is never
    published: :func:`anvil.air.inputs.assemble_input_schema` skips the carrier and the caller supplies
    the key through the idempotency safety input, so the executor reads the key from there, writes it
    to this coordinate and drops ``input_name`` from business input if present. None for an unmodeled
    header and for a field inside a whole-body projection.
    ``schema``: the modeled carrier's JSON Schema, when modeled.
    """

    mechanism: Literal["header", "query", "path", "body"]
    key: str
    pointer: tuple[str, ...] | None = None
    input_name: str | None = None
    schema: JSONObject | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CarrierResolution:
    """``binding`` when the op's keyed mode resolves; ``issue`` (a sentence) when it cannot; both None
    for modes that use no carrier (natural, client_id, none).

    ``code`` classifies an issue: :data:`CARRIER_ISSUE` (no exact modeled coordinate) or
    :data:`CARRIER_SCHEMA_ISSUE` (the coordinate exists but its schema cannot hold a key).
    """

    binding: CarrierBinding | None = None
    issue: str | None = None
    code: str | None = None

    @property
    def ok(self) -> bool:
        """True when no issue was found (a binding, or no carrier needed)."""
        return self.issue is None


def _fail(issue: str, code: str = CARRIER_ISSUE) -> CarrierResolution:
    return CarrierResolution(issue=issue, code=code)


def resolve_carrier(op: Operation) -> CarrierResolution:
    """Resolve ``op``'s idempotency carrier (keyed modes ``required``/``key_supported`` only).

    Args:
        op: a compiled operation.

    Returns:
        A binding, an issue, or neither (the mode uses no carrier).
    """
    idem = op.idempotency
    if idem.mode not in KEYED_MODES:
        return CarrierResolution()
    if idem.mechanism == "none":
        return _fail(f"idempotency mode {idem.mode} declares no key mechanism")
    key = idem.key or ""
    if not key.strip():
        return _fail(f"the {idem.mechanism} idempotency key name is missing or blank")
    if idem.mechanism == "header":
        result = _resolve_header(op, key)
    elif idem.mechanism == "query":
        result = _resolve_param(op, key, "query")
    elif idem.mechanism == "path":
        result = _resolve_path(op, key)
    else:
        result = _resolve_body(op, key)
    if result.binding is None:
        return result
    schema_issue = _schema_issue(result.binding.schema, fingerprint=idem.key_derivation == "request_fingerprint")
    if schema_issue is not None:
        return _fail(f"{result.binding.mechanism} carrier {key!r} {schema_issue}", CARRIER_SCHEMA_ISSUE)
    return result


# --- per mechanism ------------------------------------------------------------------------------------


def _param_name(param: Param) -> str:
    return prop_key(param.agent_name or param.name)


def _resolve_header(op: Operation, key: str) -> CarrierResolution:
    if not _HTTP_TOKEN.match(key):
        return _fail(f"header name {key!r} is not an HTTP token")
    if key.lower() in RUNTIME_OWNED_HEADERS:
        return _fail(f"header {key!r} is owned by the runtime")
    for param in op.input.params:
        if param.in_ == "header" and param.name.lower() == key.lower():
            if not _string_compatible(param.schema):
                return _fail(f"header parameter {param.name!r} is not string-typed")
            binding = CarrierBinding(mechanism="header", key=key, input_name=_param_name(param), schema=param.schema)
            return CarrierResolution(binding=binding)
    return CarrierResolution(binding=CarrierBinding(mechanism="header", key=key))


def _resolve_param(op: Operation, key: str, where: Literal["query", "path"]) -> CarrierResolution:
    for param in op.input.params:
        if param.in_ == where and param.name == key:
            if not _string_compatible(param.schema):
                return _fail(f"{where} parameter {key!r} is not string-typed")
            binding = CarrierBinding(mechanism=where, key=key, input_name=_param_name(param), schema=param.schema)
            return CarrierResolution(binding=binding)
    return _fail(f"{where} parameter {key!r} is not declared by the operation")


def _resolve_path(op: Operation, key: str) -> CarrierResolution:
    template = op.source_ref.path or ""
    if "{" + key + "}" not in template:
        return _fail(f"path parameter {key!r} has no {{{key}}} placeholder in the path template")
    return _resolve_param(op, key, "path")


def _resolve_body(op: Operation, key: str) -> CarrierResolution:
    pointer = parse_body_pointer(key)
    if pointer is None:
        return _fail(f"body field {key!r} is not a field name or a JSON Pointer")
    head, rest = pointer[0], pointer[1:]
    for param in op.input.params:  # a legacy `in: body` parameter is a top-level body key
        if param.in_ == "body" and param.name == head:
            found = _field_schema(param.schema, param.schema, rest)
            if found is None or not string_like(found):
                return _fail(f"body field {key!r} is not declared as a string")
            input_name = _param_name(param) if not rest else None
            binding = CarrierBinding(mechanism="body", key=pointer[-1], pointer=pointer, input_name=input_name)
            return CarrierResolution(binding=_with_schema(binding, found))
    body = op.input.body
    if body is None:
        return _fail(f"body field {key!r} is declared but the operation has no request body")
    form = is_form_media_type(body.content_type)
    if not form and not is_json_media_type(body.content_type):
        return _fail(f"body field {key!r} needs a JSON or form request body, not {body.content_type}")
    if form and len(pointer) > 1:  # a form has top-level fields only: a nested key has no coordinate in it
        return _fail(f"body field {key!r} is nested, but a form body ({body.content_type}) has top-level fields only")
    found = _field_schema(body.schema, body.schema, pointer)
    if found is None:
        return _fail(f"body field {key!r} is not declared by the request body schema")
    if not string_like(found):
        return _fail(f"body field {key!r} is not declared as a string")
    input_name = None
    if body.projection == "fields" and len(pointer) == 1:
        for item in body.fields:
            if item.name == head:
                input_name = prop_key(item.agent_name or item.name)
    binding = CarrierBinding(mechanism="body", key=pointer[-1], pointer=pointer, input_name=input_name)
    return CarrierResolution(binding=_with_schema(binding, found))


def _with_schema(binding: CarrierBinding, schema: JSONObject) -> CarrierBinding:
    return CarrierBinding(
        mechanism=binding.mechanism,
        key=binding.key,
        pointer=binding.pointer,
        input_name=binding.input_name,
        schema=schema,
    )


# --- helpers shared with the compiler and the runtime ------------------------------------------------


def parse_body_pointer(key: str) -> tuple[str, ...] | None:
    """Split a body carrier key into object keys: a plain field name, or a JSON Pointer (``/a/b``).

    ``~1`` unescapes to ``/`` and ``~0`` to ``~`` (in that order, per RFC 6901). Returns None for an
    empty key or a pointer with an empty segment or a malformed escape.
    """
    if not key:
        return None
    if not key.startswith("/"):
        return (key,)
    parts = key[1:].split("/")
    out: list[str] = []
    for part in parts:
        if not part or re.search(r"~(?![01])", part):
            return None
        out.append(part.replace("~1", "/").replace("~0", "~"))
    return tuple(out)


def is_json_media_type(content_type: str) -> bool:
    """True for ``application/json`` and any ``+json`` media type (parameters ignored)."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def string_like(schema: JSONValue) -> bool:
    """True when a schema declares a string: type string (or a type list with string), a string
    ``const``, or an all-string ``enum``."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    if "const" in schema:
        return isinstance(schema["const"], str)
    enum = schema.get("enum")
    return isinstance(enum, list) and bool(enum) and all(isinstance(v, str) for v in enum)


def _string_compatible(schema: JSONObject) -> bool:
    """A parameter schema that does not declare a non-string type (a missing type is a string on the wire)."""
    if "type" not in schema and "const" not in schema and "enum" not in schema:
        return True
    return string_like(schema)


def _deref(root: JSONObject, schema: JSONValue, seen: int = 0) -> JSONValue:
    """Follow a local ``#/$defs/<Name>`` ref within ``root`` (bounded, so a cycle cannot loop)."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 32:
        ref: str = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            return schema
        defs = root.get("$defs")
        name = ref[len("#/$defs/") :].replace("~1", "/").replace("~0", "~")
        if not isinstance(defs, dict) or name not in defs:
            return None
        schema = defs[name]
        seen += 1
    return schema


def _field_schema(root: JSONObject, schema: JSONValue, pointer: tuple[str, ...]) -> JSONObject | None:
    """The schema declared at ``pointer`` (object keys) below ``schema``, looking through allOf."""
    node = _deref(root, schema)
    if not isinstance(node, dict):
        return None
    if not pointer:
        return node
    head, rest = pointer[0], pointer[1:]
    props = node.get("properties")
    if isinstance(props, dict) and head in props:
        return _field_schema(root, props[head], rest)
    for branch in node.get("allOf") or ():
        found = _field_schema(root, branch, pointer)
        if found is not None:
            return found
    return None


def _schema_issue(schema: JSONObject | None, *, fingerprint: bool) -> str | None:
    """Why a modeled carrier schema cannot hold a key (or a derived fingerprint key), or None."""
    if schema is None:
        return None
    min_len, max_len = schema.get("minLength"), schema.get("maxLength")
    if isinstance(max_len, int | float) and max_len < 1:
        return "accepts no non-empty key (maxLength < 1)"
    if isinstance(min_len, int | float) and isinstance(max_len, int | float) and min_len > max_len:
        return "accepts no key (minLength > maxLength)"
    if isinstance(min_len, int | float) and min_len > 255:
        return "rejects every portable key (minLength > 255)"
    if not fingerprint:
        return None
    for keyword in _FINGERPRINT_FORBIDDEN:
        if keyword in schema:
            return f"cannot be proven to accept a derived key 'anvil-<32 hex>' ({keyword} is declared)"
    if isinstance(min_len, int | float) and min_len > _FINGERPRINT_LENGTH:
        return "cannot accept a derived 38-character key (minLength)"
    if isinstance(max_len, int | float) and max_len < _FINGERPRINT_LENGTH:
        return "cannot accept a derived 38-character key (maxLength)"
    pattern = schema.get("pattern")
    if pattern is not None and pattern not in _FINGERPRINT_PATTERNS:
        return "cannot be proven to accept a derived key 'anvil-<32 hex>' (pattern)"
    return None


def effective_auth_carrier(auth: Auth) -> AuthCarrier | None:
    """Where ``auth``'s credential travels (original-core §1.11), or None when it sends none.

    The explicit carrier wins; else ``api_key`` uses ``provider.apiKey`` or header ``X-API-Key``,
    ``basic`` the Basic ``Authorization`` header, and bearer types the Bearer ``Authorization`` header.
    A composite has no single carrier (None): its factors' are :func:`effective_auth_carriers`.
    """
    if auth.carrier is not None:
        return auth.carrier
    if auth.type == "api_key":
        api_key = auth.provider.api_key if auth.provider is not None else None
        if api_key is not None:
            return AuthCarrier(in_=api_key.in_, name=api_key.name)
        return AuthCarrier(in_="header", name="X-API-Key")
    if auth.type == "basic":
        return AuthCarrier(in_="header", name="Authorization", scheme="Basic")
    if auth.type in _BEARER_TYPES:
        return AuthCarrier(in_="header", name="Authorization", scheme="Bearer")
    return None


def effective_auth_carriers(auth: Auth) -> tuple[AuthCarrier, ...]:
    """Every carrier a call under ``auth`` puts a credential in: one per credential part
    (:func:`anvil.air.model.credential_parts`) that has one, in order."""
    found = (effective_auth_carrier(part) for part in credential_parts(auth))
    return tuple(carrier for carrier in found if carrier is not None)


def _carrier_key(carrier: AuthCarrier) -> tuple[str, str]:
    """What makes two carriers one wire slot: header names compare case-insensitively, query names exactly."""
    return (carrier.in_, carrier.name.lower() if carrier.in_ == "header" else carrier.name)


def factor_carrier_clash(factors: tuple[Auth, ...]) -> tuple[int, int, AuthCarrier] | None:
    """The first two factors (their indexes) whose credentials would travel in one slot, and that slot;
    None when every factor has its own (two factors in ``Authorization`` clash, whatever their scheme)."""
    seen: dict[tuple[str, str], int] = {}
    for index, factor in enumerate(factors):
        carrier = effective_auth_carrier(factor)
        if carrier is None:
            continue
        earlier = seen.setdefault(_carrier_key(carrier), index)
        if earlier != index:
            return earlier, index, carrier
    return None


def auth_carrier_conflict(op: Operation, binding: CarrierBinding) -> bool:
    """True when the idempotency header/query carrier is a credential carrier of ``op.auth`` (any factor's)."""
    if binding.mechanism not in ("header", "query"):
        return False
    wanted = _carrier_key(AuthCarrier(in_=binding.mechanism, name=binding.key))
    return any(_carrier_key(carrier) == wanted for carrier in effective_auth_carriers(op.auth))
