"""Bounded retries (original-core §1.9, §6.4).

A call is retried only when its operation is retry-safe (policy mode ``safe`` and a read, a naturally
idempotent or client-id write, or a keyed write that carries a key; mode ``none`` never) and the
failure's condition is in ``retryOn``. The bounds are hard: at most 5 attempts, at most 20 s of
backoff across the whole call, at most 30 s per attempt. ``Retry-After`` can only lengthen a wait,
and one beyond the ceiling stops the loop instead of waiting.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final

from anvil.air.model import Operation, RetryPolicy

__all__ = [
    "MAX_ATTEMPTS",
    "MAX_ATTEMPT_TIMEOUT_MS",
    "MAX_BACKOFF_MS",
    "MIN_ATTEMPT_TIMEOUT_MS",
    "backoff_ms",
    "bounds_ok",
    "condition_for_status",
    "parse_retry_after",
    "retry_safe",
]

MAX_ATTEMPTS: Final = 5
#: Both the per-wait ceiling and the total backoff budget of one call.
MAX_BACKOFF_MS: Final = 20_000
MIN_ATTEMPT_TIMEOUT_MS: Final = 100
MAX_ATTEMPT_TIMEOUT_MS: Final = 30_000
_RETRYABLE_STATUSES: Final = frozenset({408, 429, 500, 502, 503, 504})
_DELTA: Final = re.compile(r"^\d+$")
_HTTP_DATES: Final = ("%a, %d %b %Y %H:%M:%S GMT", "%A, %d-%b-%y %H:%M:%S GMT", "%a %b %d %H:%M:%S %Y")


def _bounded_int(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def bounds_ok(policy: RetryPolicy) -> bool:
    """True when the policy is inside the hard bounds (1-5 attempts, delays 0-20000 ms)."""
    return (
        _bounded_int(policy.max_attempts, 1, MAX_ATTEMPTS)
        and _bounded_int(policy.base_delay_ms, 0, MAX_BACKOFF_MS)
        and _bounded_int(policy.max_delay_ms, 0, MAX_BACKOFF_MS)
    )


def retry_safe(op: Operation, *, key_present: bool) -> bool:
    """Whether ``op`` may be attempted more than once at all (never for idempotency mode ``none``)."""
    if op.retries.mode != "safe":
        return False
    if op.is_read:
        return True
    mode = op.idempotency.mode
    if mode in ("natural", "client_id"):
        return True
    if mode in ("required", "key_supported"):
        return key_present
    return False


def condition_for_status(status: int) -> str | None:
    """The retry condition an HTTP status raises (``http_503``), or None for a terminal status."""
    return f"http_{status}" if status in _RETRYABLE_STATUSES else None


def backoff_ms(policy: RetryPolicy, attempt: int, rng: Callable[[], float]) -> int:
    """The wait after failed attempt ``attempt`` (1-based), before any Retry-After."""
    base, ceiling = policy.base_delay_ms, policy.max_delay_ms
    if policy.backoff == "none":
        return 0
    if policy.backoff == "fixed":
        return min(base, ceiling)
    exponential = min(ceiling, base * (1 << max(attempt - 1, 0)))
    if policy.backoff == "exponential":
        return exponential
    return math.floor(rng() * exponential)


def parse_retry_after(value: str | None, now: float) -> int | None:
    """A ``Retry-After`` value in milliseconds: delta-seconds or one of the three HTTP-date forms.

    Parsed strictly; anything else, or a date in the past, is ignored (None).
    """
    if value is None:
        return None
    text = value.strip()
    if _DELTA.match(text):
        return int(text) * 1000
    for form in _HTTP_DATES:
        try:
            when = datetime.strptime(text, form).replace(tzinfo=UTC)
        except ValueError:
            continue
        delta = when.timestamp() - now
        return math.ceil(delta * 1000) if delta >= 0 else None
    return None
