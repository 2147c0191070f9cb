"""Caller controls in a ``tools/call``: ``_meta.idempotency_key`` and ``_meta.stage`` (ADR-0030 §5, §7).

Only those two keys are read. Everything else in ``_meta`` (a progress token, the reserved
``io.modelcontextprotocol/*`` keys a 2026-era client sends) is ignored: never echoed, never refused.
A ``_meta`` that is not an object reads as empty.

The caller's key is its ledger id. It is forwarded into the operation's own idempotency input only
when the operation sends a key upstream (a keyed mode whose carrier resolves): inventing a header the
upstream ignores would claim a protection that does not exist. Either way the executor records it
(hashed) in the audit line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue

__all__ = [
    "IDEMPOTENCY_KEY_META",
    "STAGE_META",
    "CallerControls",
    "ControlError",
    "KeyConflict",
    "forward_key",
    "read_controls",
]

IDEMPOTENCY_KEY_META: Final = "idempotency_key"
STAGE_META: Final = "stage"


@dataclass(frozen=True, slots=True)
class CallerControls:
    """What the caller asked for in ``_meta``: its ledger id (the key) and whether to stage."""

    idempotency_key: str | None = None
    stage: bool = False


@dataclass(frozen=True, slots=True)
class ControlError:
    """A malformed control (``effect/invalid_meta``): ``message`` says which one."""

    message: str


@dataclass(frozen=True, slots=True)
class KeyConflict:
    """The arguments already hold a different key in ``field`` (``effect/idempotency_key_conflict``)."""

    field: str


_NONE: Final = CallerControls()


def read_controls(meta: Mapping[str, Any] | None) -> CallerControls | ControlError:
    """Read the caller controls from a request's ``_meta``.

    ``idempotency_key``, when present, must be a non-empty string (its format is the executor's to
    check when it is forwarded); ``stage``, when present, a boolean (``false`` means not staged).
    """
    if not isinstance(meta, Mapping) or not meta:
        return _NONE
    key: JSONValue = None
    if IDEMPOTENCY_KEY_META in meta:
        key = meta[IDEMPOTENCY_KEY_META]
        if not isinstance(key, str) or not key:
            return ControlError("_meta.idempotency_key must be a non-empty string.")
    stage = False
    if STAGE_META in meta:
        stage = meta[STAGE_META]
        if not isinstance(stage, bool):
            return ControlError("_meta.stage must be a boolean.")
    if key is None and not stage:
        return _NONE
    return CallerControls(idempotency_key=key, stage=stage)


def forward_key(arguments: JSONObject, key: str | None, key_input: str | None) -> JSONObject | KeyConflict:
    """``arguments`` with the caller's key written into the operation's idempotency input.

    Args:
        arguments: The call's arguments (not mutated).
        key: The caller's ``_meta.idempotency_key``, if any.
        key_input: The operation's idempotency input name when it sends a key upstream, else None
            (then the key is not forwarded and ``arguments`` come back unchanged).

    Returns:
        The arguments to execute with, or a :class:`KeyConflict` when the arguments already carry a
        different key. The same key in both places is fine; an empty or null one is replaced.
    """
    if key is None or key_input is None:
        return arguments
    present = arguments.get(key_input)
    if present not in (None, "") and present != key:
        return KeyConflict(key_input)
    if present == key:
        return arguments
    return {**arguments, key_input: key}
