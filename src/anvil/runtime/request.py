"""Request building (original-core §6.2): an operation's plan, prepared once, and the wire request per call.

:func:`prepare` resolves everything that depends only on the operation (bindings, carrier, safety
input names, the carrier-schema check) and caches it by identity, so the hot path does no schema
work. :func:`build_request` turns public arguments into a :class:`WireRequest`, writing the
idempotency key into its carrier (header, query, path or body field) on copies: the caller's input
is never mutated. A body is JSON, except a form body (``application/x-www-form-urlencoded``,
``multipart/form-data``), which is encoded as :mod:`anvil.air.forms` says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Final
from urllib.parse import quote, urlencode

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.canonical import js_number
from anvil.air.carrier import CarrierBinding, effective_auth_carriers, resolve_carrier
from anvil.air.forms import FormError, encode_form, is_form_media_type
from anvil.air.inputs import InputBinding, SafetyKeys, input_bindings, safety_keys
from anvil.air.model import AuthCarrier, Operation
from anvil.air.patterns import linear_validator, pattern_budget
from anvil.air.servers import operation_server, resolve_server
from anvil.runtime.credentials import Credential

if TYPE_CHECKING:  # a served gateway sends with its own pooled client; httpx loads only when a call is checked
    import httpx

__all__ = [
    "REDACTED",
    "BuildError",
    "OperationPlan",
    "WireRequest",
    "build_request",
    "check_target",
    "dry_run_plan",
    "prepare",
    "render_path",
    "with_credential",
]

REDACTED: Final = "***"
_SECRET_HEADERS: Final = frozenset({"authorization", "x-api-key", "proxy-authorization", "cookie"})
_MATERIAL_IGNORED: Final = frozenset(
    {"type", "title", "description", "default", "example", "examples", "deprecated", "readOnly", "writeOnly"}
    | {"$comment", "nullable", "$defs"}
)
_PATH_SAFE: Final = "!~*'()"  # with quote()'s own "_.-~" and alphanumerics: encodeURIComponent's set
#: Characters a path template's literal text keeps as written (RFC 3986 pchar, "/" and existing escapes).
_TEMPLATE_SAFE: Final = "/:@!$&'()*+,;=-._~%"
_PLACEHOLDER: Final = re.compile(r"\{([^{}/]+)\}")
#: Control characters a header value may not hold: C0 but HTAB (RFC 9110 allows it inside a value), DEL, C1.
_HEADER_CONTROL: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
#: RFC 6265 cookie-octets other than ``%`` (quote() keeps alphanumerics and "_.-~" too): everything else
#: in a cookie value is percent-encoded, ``%`` included, so the upstream can decode it back unambiguously.
_COOKIE_SAFE: Final = "!#$&'()*+-./:<=>?@[]^_`{|}~"
_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_DOT_SEGMENTS: Final = frozenset({".", ".."})
_CACHE_LIMIT: Final = 4096


class BuildError(Exception):
    """An argument cannot be put on the wire; ``field`` names the public input (never its value)."""

    def __init__(self, field: str) -> None:
        super().__init__(field)
        self.field = field


@dataclass(frozen=True, slots=True, kw_only=True)
class OperationPlan:
    """Everything about an operation the executor needs per call, resolved once."""

    op: Operation
    method: str
    path: str | None
    bindings: tuple[InputBinding, ...]
    required: tuple[str, ...]
    carrier: CarrierBinding | None
    carrier_issue: str | None
    safety: SafetyKeys
    whole_body: bool
    has_body: bool
    content_type: str
    form: bool
    key_check: Callable[[str], bool] | None
    auth_carriers: tuple[AuthCarrier, ...]
    """Where the operation's credentials travel (one per composite factor), all redacted in a dry run."""
    effect_class: str
    server: str | None = None
    """The URL of the operation's own server (variables at their defaults); None: the service's."""
    server_issue: str | None = None
    """Why the operation's own server has no URL (it is then never called), else None."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WireRequest:
    """One request as it goes on the wire (headers keep their spelling and order)."""

    method: str
    url: str
    path: str
    query: tuple[tuple[str, str], ...]
    headers: tuple[tuple[str, str], ...]
    body: JSONValue = None
    has_body: bool = False
    content: bytes | None = None

    def header(self, name: str) -> str | None:
        """The last value of header ``name`` (case-insensitive), or None."""
        found = None
        lowered = name.lower()
        for key, value in self.headers:
            if key.lower() == lowered:
                found = value
        return found


_cache: dict[int, tuple[Operation, OperationPlan]] = {}


def _key_check(carrier: CarrierBinding | None) -> Callable[[str], bool] | None:
    schema = carrier.schema if carrier is not None else None
    if not schema or all(k in _MATERIAL_IGNORED or k.startswith("x-") for k in schema):
        return None
    # jsonschema is imported only for operations with a constrained carrier; patterns match in linear time
    validator = linear_validator()(schema)

    def check(key: str) -> bool:
        with pattern_budget():
            return bool(validator.is_valid(key))

    return check


def _wire_media_type(declared: str) -> str:
    """The ``content-type`` a body travels with: the spec's, or, for a range such as ``*/*`` (Jira's
    column lists; a range is no media type a request may name), ``application/json``, as it is encoded."""
    return "application/json" if "*" in declared.split(";", 1)[0] else declared


def prepare(op: Operation) -> OperationPlan:
    """The plan for ``op``, built on first use and cached by identity (operations are immutable)."""
    cached = _cache.get(id(op))
    if cached is not None and cached[0] is op:
        return cached[1]
    resolution = resolve_carrier(op)
    carrier = resolution.binding
    bindings = input_bindings(op)
    body = op.input.body
    whole = any(b.location == "body" for b in bindings)
    has_body = body is not None or any(b.location == "body_field" for b in bindings)
    own = operation_server(op)
    server = resolve_server(own) if own is not None else None
    plan = OperationPlan(
        op=op,
        method=(op.source_ref.method or "").upper(),
        path=op.source_ref.path,
        bindings=bindings,
        required=tuple(b.property for b in bindings if b.required),
        carrier=carrier,
        carrier_issue=resolution.issue,
        safety=safety_keys(op),
        whole_body=whole,
        has_body=has_body,
        content_type=_wire_media_type(body.content_type) if body is not None else "application/json",
        form=body is not None and is_form_media_type(body.content_type),
        key_check=_key_check(carrier),
        auth_carriers=effective_auth_carriers(op.auth) if op.auth.type != "none" else (),
        effect_class=op.effect.class_ or ("read" if op.is_read else "irreversible"),
        server=server.url if server is not None else None,
        server_issue=server.issue if server is not None else None,
    )
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[id(op)] = (op, plan)
    return plan


def _wire(value: JSONValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return ",".join(_wire(item) for item in value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _header_value(field: str, value: str) -> str:
    if _HEADER_CONTROL.search(value) is not None:
        raise BuildError(field)
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise BuildError(field) from None
    return value


def _cookie(field: str, name: str, value: str) -> str:
    """One ``name=value`` pair of the cookie header, the value percent-encoded to RFC 6265 cookie-octets,
    so it can neither end its pair (``;``) nor start another: it never leaves its coordinate."""
    if _TOKEN.match(name) is None:
        raise BuildError(field)  # a name that is not a token would be split or joined by the upstream
    return f"{name}={quote(value, safe=_COOKIE_SAFE)}"


def _set_pointer(body: JSONValue, pointer: tuple[str, ...], key: str) -> JSONObject:
    """A copy of ``body`` with ``key`` at ``pointer``; containers along the path are copied, never mutated."""
    root: JSONObject = dict(body) if isinstance(body, dict) else {}
    node = root
    for part in pointer[:-1]:
        child = node.get(part)
        child = dict(child) if isinstance(child, dict) else {}
        node[part] = child
        node = child
    node[pointer[-1]] = key
    return root


def render_path(template: str, values: Mapping[str, tuple[str, str]]) -> str:
    """The operation's path with every placeholder replaced by its value, confined to its segment.

    Values are percent-encoded (``/``, ``?``, ``#`` and ``%`` included), so a value can never add a
    segment or a query; a segment that a value turns into a dot segment (``.`` or ``..``, which an
    HTTP client or server would collapse) or into nothing is refused. ``values`` maps a wire name to
    ``(public field, raw value)``.

    Raises:
        BuildError: a placeholder has no value, or a value would leave its segment.
    """
    out: list[str] = []
    for segment in template.split("/"):
        names = _PLACEHOLDER.findall(segment)
        if not names:
            out.append(quote(segment, safe=_TEMPLATE_SAFE))
            continue
        pieces: list[str] = []
        last = 0
        for match in _PLACEHOLDER.finditer(segment):
            pieces.append(quote(segment[last : match.start()], safe=_TEMPLATE_SAFE))
            found = values.get(match.group(1))
            if found is None:
                raise BuildError(field=match.group(1))
            pieces.append(quote(found[1], safe=_PATH_SAFE))
            last = match.end()
        pieces.append(quote(segment[last:], safe=_TEMPLATE_SAFE))
        rendered = "".join(pieces)
        if rendered in _DOT_SEGMENTS or not rendered:
            field = values[names[-1]][0]
            raise BuildError(field=field)
        out.append(rendered)
    return "/".join(out)


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


def check_target(url: str, base_url: str, path: str) -> None:
    """The last check before a request is built: the HTTP client will send exactly ``base + path``.

    The URL is parsed the way the client will parse it; its origin must be the base URL's and its path
    the base path followed by ``path`` byte for byte (no dot segment collapsed, nothing re-encoded).
    So the upstream only ever receives the operation's own path template, and credentials only ever
    travel to the base URL's origin.

    Raises:
        BuildError: ``field="path"`` when the URL the client would send differs.
    """
    import httpx  # its parser is the stricter of the two clients' (the served client sends the URL as is)

    base = _base_target(base_url)
    try:
        final = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError):
        raise BuildError(field="path") from None
    if base is None:
        raise BuildError(field="path")
    origin, prefix = base
    sent = final.raw_path.split(b"?", 1)[0]
    if _origin(final) != origin or sent != prefix + path.encode("ascii", "replace"):
        raise BuildError(field="path")


@lru_cache(maxsize=64)
def _base_target(base_url: str) -> tuple[tuple[str, str, int | None], bytes] | None:
    """The base URL's origin and path prefix as the client parses them (one base per context: kept),
    or None when it does not parse."""
    import httpx

    try:
        base = httpx.URL(base_url)
    except (httpx.InvalidURL, ValueError, TypeError):
        return None
    return _origin(base), base.raw_path.split(b"?", 1)[0].rstrip(b"/")


def _encodable(value: JSONValue) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return True


def build_request(
    plan: OperationPlan, arguments: Mapping[str, JSONValue], base_url: str, key: str | None
) -> WireRequest:
    """Build the wire request for ``arguments``, with ``key`` (if any) in the operation's carrier.

    Raises:
        BuildError: a header value cannot travel in a header, a value is not encodable as UTF-8 (a
            lone surrogate), a path value would leave its segment, or the path has no template.
    """
    try:
        return _build(plan, arguments, base_url, key)
    except UnicodeEncodeError:
        culprit = next((b.property for b in plan.bindings if not _encodable(arguments.get(b.property))), "arguments")
        raise BuildError(field=culprit) from None


def _build(plan: OperationPlan, arguments: Mapping[str, JSONValue], base_url: str, key: str | None) -> WireRequest:
    template = plan.path
    if template is None:
        raise BuildError(field="path")
    segments: dict[str, tuple[str, str]] = {}  # wire name -> (public field, raw value)
    query: list[tuple[str, str]] = []
    headers: list[tuple[str, str]] = [("accept", "application/json")]
    cookies: list[str] = []
    fields: JSONObject = {}
    body: JSONValue = None
    for binding in plan.bindings:
        value = arguments.get(binding.property)
        if value is None:
            continue
        location = binding.location
        if location == "path":
            segments[binding.wire_name] = (binding.property, _wire(value))
        elif location == "query":
            items = value if isinstance(value, list) else [value]
            query.extend((binding.wire_name, _wire(item)) for item in items if item is not None)
        elif location == "header":
            headers.append((binding.wire_name, _header_value(binding.property, _wire(value))))
        elif location == "cookie":
            cookies.append(_cookie(binding.property, binding.wire_name, _wire(value)))
        elif location == "body_field":
            fields[binding.wire_name] = value
        else:
            body = value
    if cookies:
        headers.append(("cookie", _header_value("cookie", "; ".join(cookies))))
    has_body = plan.has_body and (not plan.whole_body or body is not None)
    if has_body and not plan.whole_body:
        body = fields
    carrier = plan.carrier
    if key is not None and carrier is not None:
        if carrier.mechanism == "header":
            lowered = carrier.key.lower()
            headers = [(name, value) for name, value in headers if name.lower() != lowered]
            headers.append((carrier.key, key))
        elif carrier.mechanism == "query":
            query = [(name, value) for name, value in query if name != carrier.key]
            query.append((carrier.key, key))
        elif carrier.mechanism == "path":
            segments[carrier.key] = (plan.safety.idempotency or "idempotency_key", key)
        else:
            body = _set_pointer(body, carrier.pointer or (carrier.key,), key)
            has_body = True
    content = None
    if has_body:
        content_type = plan.content_type
        if plan.form:
            try:
                content, content_type = encode_form(content_type, body)
            except FormError as exc:
                raise BuildError(field=exc.field) from None
        else:
            content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        headers.append(("content-type", content_type))
    path = render_path(template, segments)
    url = base_url.rstrip("/") + path
    if query:
        url += "?" + urlencode(query)
    check_target(url, base_url, path)
    return WireRequest(
        method=plan.method,
        url=url,
        path=path,
        query=tuple(query),
        headers=tuple(headers),
        body=body,
        has_body=has_body,
        content=content,
    )


def with_credential(request: WireRequest, credential: Credential, base_url: str) -> WireRequest:
    """``request`` with the credential's headers and query parameters merged in (replacing same names)."""
    if not credential.headers and not credential.query:
        return request
    names = {name.lower() for name, _ in credential.headers}
    headers = tuple((n, v) for n, v in request.headers if n.lower() not in names) + credential.headers
    query = request.query
    url = request.url
    if credential.query:
        replaced = {name for name, _ in credential.query}
        query = tuple((n, v) for n, v in query if n not in replaced) + credential.query
        url = base_url.rstrip("/") + request.path + "?" + urlencode(query)
    return replace(request, headers=headers, query=query, url=url)


def dry_run_plan(plan: OperationPlan, request: WireRequest, *, key_present: bool, retry_enabled: bool) -> JSONObject:
    """The dry-run plan (original-core §5.8) with credential-bearing headers and query values redacted."""
    secret = set(_SECRET_HEADERS)
    secret_query: set[str] = set()
    for carrier in plan.auth_carriers:
        if carrier.in_ == "query":
            secret_query.add(carrier.name)
        else:
            secret.add(carrier.name.lower())
    headers = {name: (REDACTED if name.lower() in secret else value) for name, value in request.headers}
    url = request.url
    if secret_query and any(name in secret_query for name, _ in request.query):
        shown = [(n, REDACTED if n in secret_query else v) for n, v in request.query]
        url = url.split("?", 1)[0] + "?" + urlencode(shown)
    out: JSONObject = {"operation": plan.op.id, "method": request.method, "url": url, "headers": headers}
    if request.has_body:
        out["body"] = request.body
    out["idempotencyKeyPresent"] = key_present
    out["retryPlan"] = {
        "enabled": retry_enabled,
        "maxAttempts": plan.op.retries.max_attempts if retry_enabled else 1,
    }
    out["confirmationRequired"] = plan.op.confirmation.required
    return out
