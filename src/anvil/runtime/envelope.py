"""The error envelope and its code table (original-core §5.7, §6.5).

Every refusal and failure the executor returns is one :class:`ErrorEnvelope`. Messages are written
by us: never raw upstream prose, transport error text, backend detail, keys or credentials.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.model import ErrorSpec, Operation

__all__ = [
    "CODE_TABLE",
    "CodeInfo",
    "ErrorEnvelope",
    "code_for_status",
    "map_upstream_error",
    "observed_domain_code",
]


@dataclass(frozen=True, slots=True)
class CodeInfo:
    """How an envelope code behaves: retryable by default, generated-CLI exit code, REST status."""

    retryable: bool
    exit_code: int
    http_status: int


#: The 16-code taxonomy. ``idempotency_ledger_unavailable`` is retryable only while the upstream is untouched.
CODE_TABLE: Final[dict[str, CodeInfo]] = {
    "validation_error": CodeInfo(False, 2, 400),
    "schema_mismatch": CodeInfo(False, 2, 502),
    "confirmation_required": CodeInfo(False, 3, 428),
    "idempotency_required": CodeInfo(False, 3, 428),
    "auth_required": CodeInfo(False, 4, 401),
    "permission_denied": CodeInfo(False, 4, 403),
    "policy_denied": CodeInfo(False, 5, 403),
    "unsafe_retry_blocked": CodeInfo(False, 5, 409),
    "idempotency_ledger_unavailable": CodeInfo(False, 5, 503),
    "unsupported_operation": CodeInfo(False, 5, 422),
    "not_found": CodeInfo(False, 6, 404),
    "conflict": CodeInfo(False, 6, 409),
    "rate_limited": CodeInfo(True, 7, 429),
    "upstream_timeout": CodeInfo(True, 7, 504),
    "upstream_unavailable": CodeInfo(True, 7, 502),
    "unknown_upstream_error": CodeInfo(False, 7, 502),
}

_STATUS_CODES: Final[dict[int, str]] = {
    400: "validation_error",
    401: "auth_required",
    403: "permission_denied",
    404: "not_found",
    408: "upstream_timeout",
    409: "conflict",
    410: "not_found",
    422: "validation_error",
    429: "rate_limited",
    502: "upstream_unavailable",
    503: "upstream_unavailable",
    504: "upstream_timeout",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorEnvelope:
    """One error as clients see it: ``{"error": {...}}`` with absent parts omitted."""

    code: str
    message: str
    retryable: bool
    safe_to_retry: bool
    operation: str
    trace_id: str
    upstream: Mapping[str, JSONValue] | None = None
    required_flags: tuple[str, ...] | None = None
    details: Mapping[str, JSONValue] | None = None

    def to_json(self) -> JSONObject:
        """The envelope as JSON: ``{"error": {code, message, retryable, safe_to_retry, ...}}``."""
        error: JSONObject = {
            "code": self.code,
            "message": self.message,
            "retryable": self.retryable,
            "safe_to_retry": self.safe_to_retry,
            "operation": self.operation,
            "trace_id": self.trace_id,
        }
        if self.upstream:
            error["upstream"] = dict(self.upstream)
        if self.required_flags:
            error["required_flags"] = list(self.required_flags)
        if self.details:
            error["details"] = dict(self.details)
        return {"error": error}

    @property
    def exit_code(self) -> int:
        """The generated CLI's exit code for this envelope."""
        return CODE_TABLE[self.code].exit_code if self.code in CODE_TABLE else 7

    @property
    def http_status(self) -> int:
        """The REST route's status for this envelope."""
        return CODE_TABLE[self.code].http_status if self.code in CODE_TABLE else 502


def code_for_status(status: int) -> str:
    """The envelope code for a terminal upstream status with no declared error spec."""
    found = _STATUS_CODES.get(status)
    if found is not None:
        return found
    if status >= 500:
        return "unknown_upstream_error"
    if status >= 400:
        return "validation_error"
    return "unknown_upstream_error"


def observed_domain_code(body: bytes) -> str | None:
    """The upstream's own error code: ``code``, ``error.code`` or the first ``errors[].code`` (strings only)."""
    try:
        data = json.loads(body) if body else None
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth: no code to read
        return None
    if not isinstance(data, dict):
        return None
    candidates: list[JSONValue] = [data.get("code")]
    error = data.get("error")
    if isinstance(error, dict):
        candidates.append(error.get("code"))
    errors = data.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        candidates.append(errors[0].get("code"))
    for candidate in candidates:
        if isinstance(candidate, str) and candidate:
            return candidate
    return None


def _declared(op: Operation, status: int, domain: str | None) -> ErrorSpec | None:
    fallback = None
    for spec in op.errors:
        upstream = spec.upstream
        if upstream is None or upstream.http_status != status:
            continue
        if upstream.code is not None and upstream.code == domain:
            return spec
        if upstream.code is None and fallback is None:
            fallback = spec
    return fallback


def map_upstream_error(
    op: Operation,
    *,
    status: int,
    body: bytes,
    request_id: str | None,
    trace_id: str,
    retry_safe: bool,
    details: Mapping[str, JSONValue] | None = None,
) -> ErrorEnvelope:
    """Map a terminal non-2xx answer to an envelope (declared error specs first, then the status table).

    ``retry_safe`` is whether the operation may be retried at all; ``safe_to_retry`` is that AND the
    code's retryability, unless a declared spec says otherwise.
    """
    domain = observed_domain_code(body)
    spec = _declared(op, status, domain)
    code = spec.code if spec is not None else code_for_status(status)
    retryable = CODE_TABLE[code].retryable
    if spec is not None and spec.retryable is not None:
        retryable = spec.retryable
    safe = retry_safe and retryable
    if spec is not None and spec.safe_to_retry is not None:
        safe = spec.safe_to_retry and retry_safe
    upstream: dict[str, JSONValue] = {"status": status}
    if request_id:
        upstream["request_id"] = request_id
    if (
        spec is not None
        and spec.upstream is not None
        and spec.upstream.code is not None
        and spec.upstream.code == domain
    ):
        upstream["code"] = domain
    merged: dict[str, JSONValue] = {}
    if spec is not None and spec.recovery is not None:
        merged["recovery_action"] = spec.recovery.action
        if spec.recovery.field_path is not None:
            merged["field_path"] = spec.recovery.field_path
    merged.update(details or {})
    message = spec.message if spec is not None and spec.message else f"Upstream returned {status} for {op.id}."
    return ErrorEnvelope(
        code=code,
        message=message,
        retryable=retryable,
        safe_to_retry=safe,
        operation=op.id,
        trace_id=trace_id,
        upstream=upstream,
        details=merged or None,
    )
