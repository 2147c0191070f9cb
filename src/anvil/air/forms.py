"""Form request bodies: ``application/x-www-form-urlencoded`` and ``multipart/form-data`` on the wire.

A form body is a flat list of named text values, so an AIR body object is flattened one way, shared by
the runtime (which encodes) and the mock upstream (which decodes):

* each top-level field is one pair; ``null`` fields are left out;
* a string is sent as is, a boolean as ``true``/``false``, a number as JavaScript writes it;
* an array repeats its field once per item (the form style's default, ``explode: true``);
* an object (or an object inside an array) is sent as its compact JSON text (in a multipart body its
  part says ``Content-Type: application/json``).

A multipart body's boundary is derived from the whole body (``anvil-`` + 32 hex of the sha256 of every
part, names and values), so the same input always gives the same bytes: the wire request MCP, REST and
``anvil run`` send for one call is identical, a dry run shows it, and a retried write (the same arguments
and key) sends what it sent the first time. No value can end its part: a value holding the boundary would
have to hold a digest of itself. Each part is scanned once for it (a digest that does occur is derived
again, salted, which no input can arrange), so encoding is linear in the body; a boundary derived from the
field names alone could be forged into a value, and chaining it while it occurred cost time quadratic in
a caller's value (1 MiB stalled the loop for 4.7 s). An idempotency key carried in a form body is one more
top-level field, exactly as in a JSON body.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from email.message import EmailMessage
from email.parser import BytesParser
from email.policy import HTTP
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
    boundary = _boundary(parts)
    marker = b"--" + boundary.encode("ascii")
    content = b"".join(marker + b"\r\n" + part + b"\r\n" for part in parts) + marker + b"--\r\n"
    return content, f"{MULTIPART}; boundary={boundary}"


def _boundary(parts: list[bytes]) -> str:
    """A boundary no part holds, derived from every part (one pass to derive, one to check)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    salt = 0
    while True:
        salted = digest.copy()
        salted.update(salt.to_bytes(8, "big"))
        boundary = "anvil-" + salted.hexdigest()[:32]
        needle = boundary.encode("ascii")
        if not any(needle in part for part in parts):
            return boundary
        salt += 1  # a part holding a digest of itself: no input can arrange it


def decode_form(raw: bytes, content_type: str) -> dict[str, list[str]] | None:
    """The fields of a form body as text (each name with its values, in order), or None when the bytes
    are not a form of ``content_type`` (not UTF-8, or a multipart body without its boundary)."""
    fields: dict[str, list[str]] = {}
    try:
        if _media(content_type) == FORM_URLENCODED:
            for name, value in parse_qsl(raw.decode("utf-8"), keep_blank_values=True, errors="strict"):
                fields.setdefault(name, []).append(value)
            return fields
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
