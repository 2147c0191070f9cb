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


def _not_json(value: Any) -> Any:
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def json_file(value: Any) -> bytes:
    """Pretty JSON (2-space indent, key order kept, raw non-ASCII) plus one trailing newline.

    Byte-identical to :func:`anvil.air.canonical.pretty_json`. A bundle holds megabytes of pretty JSON
    and the standard library only uses its C encoder for compact output, so values orjson writes the
    same way as JavaScript go through orjson (most of them: AIR holds few floats) and the rest through
    the hand-written encoder below; ``tests/bundle/test_encoding.py`` holds both to one answer.
    """
    if _orjson_safe(value):
        try:
            return orjson.dumps(value, default=_not_json, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
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
