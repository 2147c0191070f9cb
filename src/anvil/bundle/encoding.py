"""Byte encodings every emitter shares, so every generated file follows the determinism rules.

UTF-8, ``\\n`` line endings, exactly one trailing newline, JSON as ``JSON.stringify(v, null, 2)``
writes it (original-core §1.17, §4.5).
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

__all__ = ["json_file", "text_file", "yaml_scalar"]

_encode_string = json.encoder.encode_basestring  # the C escaper when available
_OPTIONS = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
#: The integers orjson writes itself; any other is handed to it as written text.
_MIN_INT, _MAX_INT = -(1 << 63), (1 << 64) - 1
_UNSUPPORTED: Any = object()


def _number(value: int | float) -> str:
    if isinstance(value, int):
        return int.__repr__(value)
    if value.is_integer() and abs(value) < 1e21:
        return int.__repr__(int(value))  # JSON.stringify writes 1.0 as 1
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is True or key is False:
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, int | float):
        return _number(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")


def _pretty(value: Any, indent: str, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_encode_string(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int | float):
        out.append(_number(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = indent + "  "
        separator = "{\n"
        for key, item in value.items():
            out.append(separator)
            out.append(inner)
            out.append(_encode_string(_key(key)))
            out.append(": ")
            _pretty(item, inner, out)
            separator = ",\n"
        out.append("\n" + indent + "}")
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        inner = indent + "  "
        separator = "[\n"
        for item in value:
            out.append(separator)
            out.append(inner)
            _pretty(item, inner, out)
            separator = ",\n"
        out.append("\n" + indent + "]")
    else:
        raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def _orjson_safe(value: Any) -> bool:
    """True when ``orjson`` writes ``value`` exactly as ``JSON.stringify(v, null, 2)`` does: only string
    keys, no integral or exponent-form floats (JavaScript writes ``1.0`` as ``1``), only plain JSON
    types. Integers past 64 bits and lone surrogates make orjson raise, which :func:`json_file` catches."""
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return False
            pending.extend(item.values())
        elif kind is list or kind is tuple:
            pending.extend(item)
        elif kind is float:
            if item.is_integer() or "e" in float.__repr__(item) or item != item:
                return False
        elif kind is not str and kind is not int and kind is not bool and item is not None:
            return False
    return True


def _orjson_ready(value: Any) -> Any:
    """``value`` with what orjson would write differently from :func:`_pretty` given as written text
    (``orjson.Fragment``: floats, integers past 64 bits) and non-string keys as :func:`_key` writes
    them; containers are copied only where something changed. ``_UNSUPPORTED`` for a value of another
    type, or keys that collide once written (the hand-written encoder writes both)."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is dict:
        changed = False
        items = []
        for key, item in value.items():
            ready = _orjson_ready(item)
            if ready is _UNSUPPORTED:
                return _UNSUPPORTED
            if type(key) is not str:
                try:
                    key = _key(key)
                except TypeError:
                    return _UNSUPPORTED
                changed = True
            elif ready is not item:
                changed = True
            items.append((key, ready))
        if not changed:
            return value
        written = dict(items)
        return written if len(written) == len(items) else _UNSUPPORTED
    if kind is list or kind is tuple:
        copied: list[Any] | None = None
        for index, item in enumerate(value):
            ready = _orjson_ready(item)
            if ready is _UNSUPPORTED:
                return _UNSUPPORTED
            if ready is not item:
                copied = list(value) if copied is None else copied
                copied[index] = ready
        return value if copied is None else copied
    if kind is int:
        return value if _MIN_INT <= value <= _MAX_INT else orjson.Fragment(int.__repr__(value))
    if kind is float:
        return orjson.Fragment(_number(value))
    return _UNSUPPORTED


def _not_json(value: Any) -> Any:
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def json_file(value: Any) -> bytes:
    """Pretty JSON (2-space indent, key order kept, raw non-ASCII) plus one trailing newline.

    Byte-identical to :func:`anvil.air.canonical.pretty_json`. A bundle holds megabytes of pretty JSON
    and the standard library only uses its C encoder for compact output, so values orjson writes the
    same way as JavaScript go through orjson (most of them: AIR holds few floats) and the rest through
    the hand-written encoder below; ``tests/bundle/test_encoding.py`` holds both to one answer. A value
    with floats or huge integers (an AIR document with examples) still goes through orjson, those
    numbers written by the hand-written encoder's rules (:func:`_orjson_ready`).
    """
    ready = value if _orjson_safe(value) else _orjson_ready(value)
    if ready is not _UNSUPPORTED:
        try:
            return orjson.dumps(ready, default=_not_json, option=_OPTIONS)
        except (TypeError, orjson.JSONEncodeError):
            pass
    return _hand_json_file(value)


def _hand_json_file(value: Any) -> bytes:
    out: list[str] = []
    _pretty(value, "", out)
    out.append("\n")
    return "".join(out).encode("utf-8")


def text_file(text: str) -> bytes:
    """Text normalized to ``\\n`` endings with exactly one trailing newline, as UTF-8."""
    body = text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    return (body + "\n").encode("utf-8")


_PLAIN_SCALAR_UNSAFE = set(":#{}[],&*!|>'\"%@`")
_YAML_WORDS = frozenset({"true", "false", "null", "yes", "no", "on", "off", "~", "y", "n"})


def yaml_scalar(text: str) -> str:
    """``text`` as a one-line YAML scalar for front matter: plain when safe, else double-quoted.

    A JSON string literal is a valid YAML double-quoted scalar, so quoting reuses the JSON encoder.
    """
    one_line = " ".join(text.split())
    if (
        one_line
        and one_line == text
        and not (_PLAIN_SCALAR_UNSAFE & set(one_line))
        and one_line[0] not in "-?"
        and one_line.lower() not in _YAML_WORDS
        and not one_line[0].isdigit()
    ):
        return one_line
    return json.dumps(one_line, ensure_ascii=False)
