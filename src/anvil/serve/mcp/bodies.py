"""Request bodies read as the SDK reads them, without importing pydantic-core for the first requests.

The SDK's Streamable HTTP transport parses a POST body with ``pydantic_core.from_json``. Importing
pydantic-core costs a cold start about a twentieth of its instructions (its ``core_schema`` module and a
5 MB extension), and the first requests of a client (``initialize``, the notification, ``tools/list``)
come before anything else needs it. Until it is imported (the SDK imports it when it loads in the
background), :func:`read_body` reads a body with ``orjson`` and keeps that reading only where the two
parsers are known to agree: no float anywhere (orjson turns an integer beyond 64 bits into a float where
pydantic keeps it exact) and no container nested deeper than :data:`AGREED_DEPTH` (pydantic refuses past
200 levels, orjson past 1024). Anything else, and whatever orjson refuses (``NaN``, ``1e400``, which
pydantic reads), is read by pydantic-core itself, imported then. Otherwise both are strict RFC 8259
readers: the same strings (escapes and surrogate pairs decoded, invalid UTF-8 and lone surrogates
refused) and the last of duplicate keys.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Final

import orjson

__all__ = ["AGREED_DEPTH", "is_serialization_error", "is_validation_error", "read_body"]

#: The deepest nesting an orjson reading is kept at (pydantic-core reads up to 200 levels).
AGREED_DEPTH: Final = 100


def read_body(body: bytes) -> Any:
    """``body`` as ``pydantic_core.from_json(body)`` reads it.

    Raises:
        ValueError: ``body`` is not JSON (pydantic-core's refusal).
    """
    if "pydantic_core" not in sys.modules:
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            pass  # pydantic-core reads some of these (NaN, infinity) and refuses the rest itself
        else:
            if _agreed(message):
                return message
    core = importlib.import_module("pydantic_core")
    return core.from_json(body)


def _agreed(value: Any) -> bool:
    """True when pydantic-core reads the JSON orjson read as ``value`` the same way (module docstring)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float):
            return False
        if isinstance(item, dict | list):
            if depth >= AGREED_DEPTH:
                return False
            stack.extend((inner, depth + 1) for inner in (item.values() if isinstance(item, dict) else item))
    return True


def is_validation_error(exc: BaseException) -> bool:
    """Whether ``exc`` is pydantic-core's ``ValidationError`` (none can be while it is not imported)."""
    return _is_core_error(exc, "ValidationError")


def is_serialization_error(exc: BaseException) -> bool:
    """Whether ``exc`` is pydantic-core's ``PydanticSerializationError`` (none while it is not imported)."""
    return _is_core_error(exc, "PydanticSerializationError")


def _is_core_error(exc: BaseException, name: str) -> bool:
    # The SDK's loader thread may be importing pydantic-core right now: a class it has not defined yet has
    # no instance either.
    kind = getattr(sys.modules.get("pydantic_core"), name, None)
    return isinstance(kind, type) and isinstance(exc, kind)
