"""Request text as the mock reads it: a parameter's or a form field's text typed by its schema.

A query parameter, and every field of a form body (``application/x-www-form-urlencoded``,
``multipart/form-data``), arrives as text; the mock reads it back as the value the schema declares
(``"5"`` as ``5`` for an integer, ``"true"`` as ``True``, an object's JSON text as the object, a
repeated form field of an array as its items), so a form body is stored, logged and read for its
idempotency key exactly as a JSON body is.
"""

from __future__ import annotations

import json
import re
from typing import Final

from anvil._types import JSONObject, JSONValue
from anvil.air.forms import decode_form
from anvil.proof.mock.schema import SchemaSet

__all__ = ["form_body", "typed_text"]

_INTEGER: Final = re.compile(r"-?\d{1,18}")
_NUMBER: Final = re.compile(r"-?\d{1,18}(\.\d{1,18})?([eE][-+]?\d{1,3})?")


def typed_text(schemas: SchemaSet, schema: JSONValue, text: str) -> JSONValue:
    """``text`` as the value ``schema`` declares; the text itself when it is not one."""
    kind = schemas.first_type(schema)
    if kind == "integer":
        return int(text) if _INTEGER.fullmatch(text) else text
    if kind == "number":
        return float(text) if _NUMBER.fullmatch(text) else text
    if kind == "boolean":
        return {"true": True, "false": False}.get(text, text)
    if kind == "object" or (kind is None and text.startswith("{")):  # an object, or one of a choice (anyOf)
        try:
            found: JSONValue = json.loads(text)
        except (ValueError, RecursionError):
            return text
        return found
    return text


def form_body(schemas: SchemaSet, body_schema: JSONValue, raw: bytes, content_type: str) -> JSONObject | None:
    """The fields of a form body typed by ``body_schema``'s properties, or None when ``raw`` is not that form."""
    fields = decode_form(raw, content_type)
    if fields is None:
        return None
    props = schemas.properties(body_schema)
    body: JSONObject = {}
    for name, texts in fields.items():
        schema = props.get(name)
        if schemas.first_type(schema) == "array":
            items = (schemas.deref(schema) or {}).get("items")
            body[name] = [typed_text(schemas, items, text) for text in texts]
        else:
            typed = [typed_text(schemas, schema, text) for text in texts]
            body[name] = typed[0] if len(typed) == 1 else typed
    return body
