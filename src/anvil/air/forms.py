"""Form request bodies: ``application/x-www-form-urlencoded`` and ``multipart/form-data`` on the wire.

A form body is a flat list of named text values, so an AIR body object is flattened one way, shared by
the runtime (which encodes) and the mock upstream (which decodes):

* each top-level field is one pair; ``null`` fields are left out;
* a string is sent as is, a boolean as ``true``/``false``, a number as JavaScript writes it;
* an array repeats its field once per item (the form style's default, ``explode: true``);
* an object (or an object inside an array) is sent as its compact JSON text (in a multipart body its
  part says ``Content-Type: application/json``).

A multipart body's boundary is derived from its field names (``anvil-`` + 32 hex of their sha256), so
the same input always gives the same bytes: the wire request MCP, REST and ``anvil run`` send is
identical (a caller's key changes a value, never the boundary), a dry run shows it, and a retried write
sends what it sent the first time. No value can end its part: each part is scanned once for that name
boundary, and when a value holds it (only a value crafted to), the boundary gets a ``-<digits>`` suffix
no occurrence in the body is followed by, chosen from what that one pass saw. Encoding is linear in the
body; deriving the boundary again while it occurred was quadratic in a value built from the chain of
derivations (1 MiB stalled the loop for 4.7 s). An idempotency key carried in a form body is one more
top-level field, exactly as in a JSON body.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Final
from urllib.parse import parse_qsl, urlencode

from anvil._types import JSONValue
from anvil.air.canonical import js_number

__all__ = [
    "FORM_URLENCODED",
    "MULTIPART",
    "FormError",
    "decode_form",
    "encode_form",
    "form_pairs",
    "is_form_media_type",
]

FORM_URLENCODED: Final = "application/x-www-form-urlencoded"
MULTIPART: Final = "multipart/form-data"
_FORMS: Final = frozenset({FORM_URLENCODED, MULTIPART})
#: The digits after ``<boundary>-`` one occurrence is read for (the longest suffix a boundary gets).
_SUFFIX_DIGITS: Final = 13
#: What a multipart part's name escapes: quote and line breaks as the WHATWG form encoding does, so a name
#: can never end its header, and a backslash as a quoted-pair (RFC 7578 parsers unescape one).
_NAME_ESCAPES: Final = {'"': "%22", "\r": "%0D", "\n": "%0A", "\\": "\\\\"}


class FormError(ValueError):
    """A body that cannot be a form: it is not an object (``field`` is ``body``)."""

    def __init__(self, field: str = "body") -> None:
        super().__init__(field)
        self.field = field


def _media(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def is_form_media_type(content_type: str) -> bool:
    """True for ``application/x-www-form-urlencoded`` and ``multipart/form-data`` (parameters ignored)."""
    return _media(content_type) in _FORMS


def _text(value: JSONValue) -> tuple[str, bool]:
    """A value as form text, and whether it is JSON text (an object or a nested array)."""
    if isinstance(value, bool):
        return ("true" if value else "false"), False
    if isinstance(value, int | float):
        return js_number(value), False
    if isinstance(value, str):
        return value, False
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")), True


def form_pairs(body: JSONValue) -> list[tuple[str, str, bool]]:
    """The flattened ``(name, text, is_json)`` pairs of a form body, in field order (module docstring).

    Raises:
        FormError: ``body`` is not an object.
    """
    if not isinstance(body, Mapping):
        raise FormError()
    pairs: list[tuple[str, str, bool]] = []
    for name, value in body.items():
        items = value if isinstance(value, list) else [value]
        for item in items:
            if item is not None:
                text, is_json = _text(item)
                pairs.append((str(name), text, is_json))
    return pairs


def _part(name: str, text: str, is_json: bool) -> bytes:
    escaped = "".join(_NAME_ESCAPES.get(char, char) for char in name)
    head = f'Content-Disposition: form-data; name="{escaped}"\r\n'
    if is_json:
        head += "Content-Type: application/json\r\n"
    return head.encode("utf-8") + b"\r\n" + text.encode("utf-8")


def encode_form(content_type: str, body: JSONValue) -> tuple[bytes, str]:
    """The wire bytes of a form body and the ``content-type`` header that goes with them.

    Raises:
        FormError: ``body`` is not an object.
        UnicodeEncodeError: a value holds a lone surrogate.
    """
    pairs = form_pairs(body)
    if _media(content_type) == FORM_URLENCODED:
        return urlencode([(name, text) for name, text, _ in pairs]).encode("ascii"), content_type
    parts = [_part(name, text, is_json) for name, text, is_json in pairs]
    boundary = _boundary([name for name, _, _ in pairs], parts)
    marker = b"--" + boundary.encode("ascii")
    content = b"".join(marker + b"\r\n" + part + b"\r\n" for part in parts) + marker + b"--\r\n"
    return content, f"{MULTIPART}; boundary={boundary}"


def _boundary(names: list[str], parts: list[bytes]) -> str:
    """The field names' boundary, or, when a part holds it, that boundary with a suffix none holds.

    One pass finds every occurrence of the name boundary (none starts inside another: the ``n`` of
    ``anvil-`` is no hex digit) with the run of digits after a ``-`` that follows it. ``<boundary>-<d>``
    occurs in the body only where an occurrence is followed by ``-`` and a run starting with ``d``, so
    ``d`` longer than every run is absent by construction: zeros, one more than the longest run; past
    :data:`_SUFFIX_DIGITS` (where runs are cut), the least number of that length no cut run shows.
    """
    base = "anvil-" + hashlib.sha256("\0".join(names).encode("utf-8")).hexdigest()[:32]
    # a literal and an optional run of digits: linear, and findall keeps the per-occurrence work in C
    found = re.compile(re.escape(base.encode("ascii")) + rb"(?:-([0-9]{1,%d}))?" % _SUFFIX_DIGITS)
    runs = [run for part in parts for run in found.findall(part)]
    if not runs:
        return base
    longest = max(map(len, runs))
    if longest < _SUFFIX_DIGITS:
        return f"{base}-{'0' * (longest + 1)}"
    cut = {run for run in runs if len(run) == _SUFFIX_DIGITS}  # runs that may go on: their first digits
    suffix = 0
    while b"%0*d" % (_SUFFIX_DIGITS, suffix) in cut:  # at most one step per cut run
        suffix += 1
    return f"{base}-{suffix:0{_SUFFIX_DIGITS}d}"


def decode_form(raw: bytes, content_type: str) -> dict[str, list[str]] | None:
    """The fields of a form body as text (each name with its values, in order), or None when the bytes
    are not a form of ``content_type`` (not UTF-8, or a multipart body without its boundary)."""
    fields: dict[str, list[str]] = {}
    try:
        if _media(content_type) == FORM_URLENCODED:
            for name, value in parse_qsl(raw.decode("utf-8"), keep_blank_values=True, errors="strict"):
                fields.setdefault(name, []).append(value)
            return fields
        # Loaded here, not with the module: the email package's header machinery is a cold start's cost.
        from email.message import EmailMessage
        from email.parser import BytesParser
        from email.policy import HTTP

        head = b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n"
        message = BytesParser(policy=HTTP).parsebytes(head + raw)
        boundary = message.get_boundary() if isinstance(message, EmailMessage) else None
        if boundary is None:
            return None
        if not message.is_multipart():  # no part at all: only the closing delimiter is a form
            return fields if raw.strip() == b"--" + boundary.encode("latin-1") + b"--" else None
        for part in message.iter_parts():
            named: object = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            if isinstance(named, str) and isinstance(payload, bytes):
                fields.setdefault(named, []).append(payload.decode("utf-8"))
    except (UnicodeError, ValueError, TypeError):
        return None
    return fields
