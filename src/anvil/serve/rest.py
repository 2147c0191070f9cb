"""``POST /call/<tool>``: one tool call over plain HTTP, for callers that do not speak MCP (ADR-0030 §8).

Request: ``Authorization`` exactly as ``/mcp`` (checked by the listener's middleware before this
route runs); ``content-type: application/json``; body ``{"arguments": {...}, "stage": true?}`` (both
optional; at most the configured limit, 64 KiB by default); the ``Idempotency-Key`` header is the
caller's key (``_meta.idempotency_key``), ``stage: true`` is ``_meta.stage``.

The call goes straight to the caller's composition (:meth:`anvil.serve.fleet.Composition.call`), the
same code path as ``tools/call`` over ``/mcp``: same grant gate, gates, ledger and audit line, and no
per-request composition.

Checks, in order (original-gateway §2.7): method (405 ``method_not_allowed``), media type (415
``unsupported_media_type``), tool-name pattern ``^[A-Za-z0-9_.-]{1,128}$`` (404 ``not_found``), body
size (413 ``request_too_large``), body is a JSON object (400 ``validation_error``), ``arguments`` an
object, ``stage`` a boolean, at most one ``Idempotency-Key`` (400 ``validation_error``), then the tool
is mounted for this caller (404 ``not_found``; a tool hidden by the caller's grant is mounted and
answers the grant refusal). These refusals have the short body ``{"error": {"code", "message"}}``.

Answer: 200 with the response data (a dry run: its plan), or ``{"error": <envelope>}`` with the
status of its code: 400 validation, 401 auth, 403 policy/permission, 404 not found, 409 conflict and
unsafe retry, 422 unsupported, 428 confirmation/idempotency required, 429 rate limited, 502 schema
mismatch and upstream failures, 503 ledger unavailable, 504 upstream timeout (any other code 502).
Whenever the call carries a ``_meta.effect`` report, it rides in ``X-Anvil-Effect`` as compact JSON
with every character from U+007F up written as a lower-case ``\\uXXXX`` escape (so the header is
printable ASCII and parses back to the original strings). The header is at most
:data:`MAX_EFFECT_HEADER` bytes: a report that does not fit is replaced there by
``{"class", "operation", "truncated": true, "report": "body"}`` (plus ``replayed`` when set) and the
full report travels in the body instead: ``{"result": <data>, "_meta": {"effect": <report>}}`` for a
success, ``{"error": <envelope>, "_meta": {"effect": <report>}}`` for an error. An answer the ledger
replayed (nothing new happened upstream) also has ``X-Anvil-Replayed: true``. Every answer has
``content-type: application/json`` and ``cache-control: no-store``.

The response budget (:mod:`anvil.serve.responses`) holds here too: over it, the body is the cut data
(a dry run: the cut plan), still JSON, and ``X-Anvil-Truncated`` carries the marker's facts, encoded
as ``X-Anvil-Effect`` is: what was served of what, how to get the rest, and under ``answer`` the URI
of the whole answer kept for this caller (``anvil://answer/<id>``, read with MCP ``resources/read``;
no ``Link`` header, whose URI a generic HTTP client would try to follow), or null. A marker over
:data:`MAX_EFFECT_HEADER` bytes keeps its first cut and drops its hints (``"hints": "omitted"``). A
list answer at the upstream's page cap has ``X-Anvil-Page-Cap`` (the notice's facts). An error is
never cut.

The body parser is strict, and every malformed body is a 400 ``validation_error``: UTF-8 only (no
BOM, no UTF-16/32), no duplicate object keys, no lone surrogate escapes, no ``NaN``/``Infinity`` or
number that overflows to one, integers inside the 64-bit range, and at most :data:`MAX_BODY_DEPTH`
levels of nesting.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from anvil._types import JSONObject, JSONValue
from anvil.serve.mcp.http import listener_error
from anvil.serve.mcp.provider import ToolProvider, UnknownTool
from anvil.serve.mcp.results import CallResult

__all__ = [
    "CALL_PATH",
    "DEFAULT_BODY_LIMIT",
    "EFFECT_HEADER",
    "MAX_BODY_DEPTH",
    "MAX_EFFECT_HEADER",
    "PAGE_CAP_HEADER",
    "REPLAYED_HEADER",
    "TRUNCATED_HEADER",
    "BodyError",
    "call_route",
    "effect_header",
    "parse_body",
    "rest_status",
]

CALL_PATH: Final = "/call/{tool:path}"
#: The REST body limit unless configured (``--rest-body-limit`` / ``ANVIL_REST_BODY_LIMIT``).
DEFAULT_BODY_LIMIT: Final = 64 * 1024
EFFECT_HEADER: Final = "x-anvil-effect"
REPLAYED_HEADER: Final = "x-anvil-replayed"
#: The marker of an answer cut to the response budget (JSON, printable ASCII).
TRUNCATED_HEADER: Final = "x-anvil-truncated"
#: The notice of a list answer at the upstream's page cap (JSON, printable ASCII).
PAGE_CAP_HEADER: Final = "x-anvil-page-cap"
#: Marker keys dropped from an ``X-Anvil-Truncated`` over :data:`MAX_EFFECT_HEADER` bytes.
_HINTS: Final = ("continue", "next_page", "page_size", "projection")
#: The largest ``X-Anvil-Effect`` value; a larger report travels in the body (common clients cap
#: a header line at 8-16 KiB for the whole head).
MAX_EFFECT_HEADER: Final = 4096
#: The deepest nesting a body may have (arrays and objects).
MAX_BODY_DEPTH: Final = 64
_SURROGATE_ESCAPE: Final = re.compile(r"\\u[dD][89a-fA-F]")
_LONG_DIGITS: Final = re.compile(r"\d{19}")
_BIG_EXPONENT: Final = re.compile(r"[eE][+-]?\d{3}")
_CONTAINERS: Final = (dict, list)
_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1
_TOOL: Final = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_NO_STORE: Final = {"cache-control": "no-store"}
_ANY_METHOD: Final = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def effect_header(report: JSONObject) -> str:
    """The ``X-Anvil-Effect`` value: compact JSON, every character from U+007F up as ``\\uXXXX``."""
    return json.dumps(report, ensure_ascii=True, separators=(",", ":")).replace("\x7f", "\\u007f")


def rest_status(result: CallResult) -> int:
    """The HTTP status of a call's answer: 200 unless it is an error, then its code's status."""
    if result.envelope is None:
        return 200
    return result.envelope.http_status


def _media_type_ok(request: Request) -> bool:
    content_type = request.headers.get("content-type", "")
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


async def _body(request: Request, limit: int) -> bytes | None:
    """The body, or None when it is larger than ``limit`` (checked on content-length first)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        return None
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            return None
    return bytes(data)


class BodyError(ValueError):
    """A body the route refuses; the message names the rule broken (never the body's content)."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise BodyError("duplicate object key")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise BodyError(f"{name} is not a JSON number")


def _depth_ok(body: JSONObject, text: str) -> bool:
    """True when ``body`` nests at most :data:`MAX_BODY_DEPTH` levels (only containers are visited, and
    only when the text has that many brackets at all)."""
    if text.count("[") + text.count("{") <= MAX_BODY_DEPTH:
        return True
    level: list[Any] = [body]
    for _ in range(MAX_BODY_DEPTH):  # one level per pass; the body came from json, so exact types
        level = [
            child
            for node in level
            for child in (node.values() if type(node) is dict else node)
            if type(child) in _CONTAINERS
        ]
        if not level:
            return True
    return False


def _check(body: JSONObject, text: str) -> None:
    """Sendable strings (no lone surrogate) and numbers in range, in one walk without recursion.

    The text says whether a check can fail at all (a surrogate needs a ``\\uD8xx`` escape, an integer
    out of range or a float overflow a long digit run or a large exponent), so an ordinary body is
    never walked.
    """
    strings = _SURROGATE_ESCAPE.search(text) is not None
    if not strings and _LONG_DIGITS.search(text) is None and _BIG_EXPONENT.search(text) is None:
        return
    pending: list[Any] = [body]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise BodyError("a string holds a lone surrogate") from None
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int):
            if not _INT_MIN <= item <= _INT_MAX:
                raise BodyError("an integer is out of range")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise BodyError("a number is out of range")
        elif isinstance(item, dict):
            if strings:
                pending.extend(item)
            pending.extend(item.values())
        else:
            pending.extend(item)


def parse_body(data: bytes) -> JSONObject:
    """The body as a JSON object, parsed strictly (see the module docstring).

    Raises:
        BodyError: the body is not UTF-8, not JSON, not an object, or breaks one of the rules.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BodyError("the body is not UTF-8") from None
    if text.startswith("\ufeff"):
        raise BodyError("the body starts with a byte order mark")
    try:
        body = json.loads(text, object_pairs_hook=_object, parse_constant=_constant)
    except BodyError:
        raise
    except RecursionError:
        raise BodyError(f"the body nests deeper than {MAX_BODY_DEPTH} levels") from None
    except ValueError:  # also an integer literal of more than 4300 digits
        raise BodyError("the body is not JSON") from None
    if not isinstance(body, dict):
        raise BodyError("the body is not a JSON object")
    if not _depth_ok(body, text):
        raise BodyError(f"the body nests deeper than {MAX_BODY_DEPTH} levels")
    _check(body, text)
    return body


def _fitted(report: JSONObject) -> tuple[str, bool]:
    """The header value for ``report`` and whether the full report fits in it."""
    full = effect_header(report)
    if len(full) <= MAX_EFFECT_HEADER:
        return full, True
    stub: JSONObject = {"class": report.get("class"), "operation": report.get("operation")}
    if report.get("replayed") is True:
        stub["replayed"] = True
    stub.update(truncated=True, report="body")
    shown = effect_header(stub)
    if len(shown) > MAX_EFFECT_HEADER:
        shown = effect_header({"truncated": True, "report": "body"})
    return shown, False


def _marker_header(marker: JSONObject) -> str:
    """The ``X-Anvil-Truncated`` value: the marker, its first cut only and no hints when it is too long."""
    full = effect_header(marker)
    if len(full) <= MAX_EFFECT_HEADER:
        return full
    short = {key: value for key, value in marker.items() if key not in _HINTS}
    short["cuts"] = marker.get("cuts", [])[:1]
    short["hints"] = "omitted"
    return effect_header(short)


def _answer(result: CallResult) -> Response:
    from anvil.serve.responses import PAGE_CAP_META, TRUNCATED_META  # loaded with the first call, not at start

    headers = dict(_NO_STORE)
    report = result.report
    fits = True
    if report is not None:
        headers[EFFECT_HEADER], fits = _fitted(report)
        if report.get("replayed") is True:
            headers[REPLAYED_HEADER] = "true"
    extra = result.meta or {}
    if isinstance(extra.get(TRUNCATED_META), dict) and result.envelope is None:
        headers[TRUNCATED_HEADER] = _marker_header(extra[TRUNCATED_META])
    if isinstance(extra.get(PAGE_CAP_META), dict) and result.envelope is None:
        headers[PAGE_CAP_HEADER] = effect_header(extra[PAGE_CAP_META])
    if result.kind == "dry_run":
        return JSONResponse(result.plan, headers=headers)
    if result.envelope is not None:
        body: JSONObject = result.envelope.to_json()
        if not fits:
            body = {**body, "_meta": {"effect": report}}
        return JSONResponse(body, status_code=result.envelope.http_status, headers=headers)
    if not fits:
        return JSONResponse({"result": result.data, "_meta": {"effect": report}}, headers=headers)
    return JSONResponse(result.data, headers=headers)


def call_route(select: Callable[[Request], ToolProvider | None], *, body_limit: int = DEFAULT_BODY_LIMIT) -> Route:
    """The ``/call/<tool>`` route.

    Args:
        select: The caller's composition for a request (set by the auth middleware); None refuses
            the request (a listener misconfiguration, answered 500 ``internal_error``).
        body_limit: The largest body accepted, in bytes.
    """

    async def endpoint(request: Request) -> Response:
        if request.method != "POST":
            return listener_error(405, "method_not_allowed", "Use POST.", {"allow": "POST"})
        if not _media_type_ok(request):
            return listener_error(415, "unsupported_media_type", "Send the body as application/json.")
        tool = request.path_params.get("tool", "")
        if not isinstance(tool, str) or not _TOOL.match(tool):
            return listener_error(404, "not_found", "No such tool.")
        data = await _body(request, body_limit)
        if data is None:
            return listener_error(413, "request_too_large", f"The body is larger than {body_limit} bytes.")
        try:
            body = parse_body(data)
        except BodyError as exc:
            return listener_error(400, "validation_error", f"Expected a JSON object body: {exc}.")
        arguments: JSONValue = body.get("arguments", {})
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return listener_error(400, "validation_error", "'arguments' must be a JSON object.")
        stage = body.get("stage")
        if stage is not None and not isinstance(stage, bool):
            return listener_error(400, "validation_error", "'stage' must be a boolean.")
        keys = request.headers.getlist("idempotency-key")
        if len(keys) > 1:
            return listener_error(400, "validation_error", "Send one Idempotency-Key header.")
        meta: dict[str, Any] = {}
        if keys and keys[0]:
            meta["idempotency_key"] = keys[0]
        if stage:
            meta["stage"] = True
        provider = select(request)
        if provider is None:
            return listener_error(500, "internal_error", "The request reached the route without a caller.")
        try:
            result = await provider.call(tool, arguments, meta or None)
        except UnknownTool as unknown:  # a proxy naming a tool nobody can dial: as a direct call to it
            return listener_error(404, "not_found", f"No tool '{unknown.name[:256]}'.")
        except Exception:  # the provider never raises for bad input; anything else is ours
            return listener_error(500, "internal_error", "The call failed unexpectedly.")
        if result is None:
            return listener_error(404, "not_found", f"No tool '{tool}'.")
        return _answer(result)

    return Route(CALL_PATH, endpoint, methods=_ANY_METHOD)  # the route answers 405 itself, in its check order
