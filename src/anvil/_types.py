"""Shared type aliases."""

from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["JSONObject", "JSONValue"]

#: Any value that survives ``json.dumps``/``json.loads`` unchanged.
JSONValue: TypeAlias = Any
#: A JSON object with string keys (a parsed spec node, a JSON Schema, a mapping).
JSONObject: TypeAlias = dict[str, Any]
