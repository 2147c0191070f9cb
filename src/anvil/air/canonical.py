"""JS-compatible canonical JSON and sha256 hashing (original-core §1.17).

``canonical_json`` reproduces ``JSON.stringify`` of a value whose object keys were recursively sorted:
compact separators, raw (unescaped) non-ASCII, keys ordered by UTF-16 code units, integral floats
printed as integers and other numbers in JavaScript's shortest form. Array order is kept.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

__all__ = ["canonical_json", "hash_canonical", "js_number", "pretty_json", "sha256_hex"]

_encode_string = json.encoder.encode_basestring  # escapes strings as JSON.stringify does


def _utf16_key(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def js_number(value: float) -> str:
    """Format a number as JavaScript's ``Number.prototype.toString`` does (finite values only)."""
    if isinstance(value, bool):  # pragma: no cover - callers route bools elsewhere
        raise TypeError("bool is not a number")
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return "null"  # JSON.stringify writes NaN/Infinity as null
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    exp = int(exponent)
    if -7 < exp < 21:  # JS writes these positionally
        return format(value, "f").rstrip("0").rstrip(".")
    return f"{mantissa}e{'+' if exp > 0 else '-'}{abs(exp)}"


def _write(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_encode_string(value))
    elif isinstance(value, int | float):
        out.append(js_number(value))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key in sorted(value, key=_utf16_key):
            if not first:
                out.append(",")
            first = False
            out.append(_encode_string(key))
            out.append(":")
            _write(value[key], out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"not JSON-serializable: {type(value).__name__}")


def canonical_json(value: Any) -> str:
    """Key-sorted compact JSON text of ``value``, byte-compatible with the original's ``canonicalJson``."""
    out: list[str] = []
    _write(value, out)
    return "".join(out)


def sha256_hex(data: bytes | str) -> str:
    """Lowercase hex sha256 of bytes (or of a string's UTF-8)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def hash_canonical(value: Any) -> str:
    """sha256 hex of :func:`canonical_json` (``hashCanonical`` of the original)."""
    return sha256_hex(canonical_json(value))


def _js_floats(value: Any) -> Any:
    if isinstance(value, float) and not isinstance(value, bool) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _js_floats(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_js_floats(v) for v in value]
    return value


def pretty_json(value: Any) -> str:
    """Pretty JSON as ``JSON.stringify(v, null, 2)`` writes it, plus a trailing newline (key order kept)."""
    return json.dumps(_js_floats(value), indent=2, ensure_ascii=False) + "\n"
