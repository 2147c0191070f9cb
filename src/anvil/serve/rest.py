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
printable ASCII and parses back to the original strings). Every answer has ``content-type:
application/json`` and ``cache-control: no-store``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from anvil._types import JSONObject, JSONValue
from anvil.serve.results import CallResult
from anvil.serve.server import ToolProvider

__all__ = [
    "CALL_PATH",
    "DEFAULT_BODY_LIMIT",
    "EFFECT_HEADER",
    "call_route",
    "effect_header",
    "listener_error",
    "rest_status",
]

CALL_PATH: Final = "/call/{tool:path}"
#: The REST body limit unless configured (``--rest-body-limit`` / ``ANVIL_REST_BODY_LIMIT``).
DEFAULT_BODY_LIMIT: Final = 64 * 1024
EFFECT_HEADER: Final = "x-anvil-effect"
_TOOL: Final = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_NO_STORE: Final = {"cache-control": "no-store"}
_ANY_METHOD: Final = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def listener_error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """A listener refusal: ``{"error": {"code", "message"}}`` with ``cache-control: no-store``."""
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=_NO_STORE | (headers or {})
    )


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


def _parse(data: bytes) -> JSONObject | None:
    try:
        body = json.loads(data)
    except (UnicodeDecodeError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def _answer(result: CallResult) -> Response:
    headers = dict(_NO_STORE)
    if result.report is not None:
        headers[EFFECT_HEADER] = effect_header(result.report)
    if result.kind == "dry_run":
        return JSONResponse(result.plan, headers=headers)
    if result.envelope is not None:
        return JSONResponse(result.envelope.to_json(), status_code=result.envelope.http_status, headers=headers)
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
        body = _parse(data)
        if body is None:
            return listener_error(400, "validation_error", "Expected a JSON object body.")
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
        except Exception:  # the provider never raises for bad input; anything else is ours
            return listener_error(500, "internal_error", "The call failed unexpectedly.")
        if result is None:
            return listener_error(404, "not_found", f"No tool '{tool}'.")
        return _answer(result)

    return Route(CALL_PATH, endpoint, methods=_ANY_METHOD)  # the route answers 405 itself, in its check order
