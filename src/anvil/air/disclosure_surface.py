"""The tool surface AIR's ``disclosureCost`` is measured over (original-core §3.7), and the measurement.

The figure is a contract value: it sits in AIR and in the contract hash, so it must be the original's
for the same operation. The original measures its own reconstruction of the tool it publishes, as
compact JSON counted with o200k_base:

* ``name``, ``title``, ``description``, ``annotations`` and the ``anvil/*`` ``_meta`` keys of
  original-core §5.3/§5.5 (no effect-contract keys, no output schema);
* ``inputSchema`` as its SDK re-emits the assembled schema: ``$schema`` (2020-12), ``type``, the
  assembled ``properties`` with the two reserved arguments appended (``anvil_dry_run``,
  ``anvil_projection``, with the original's descriptions), ``required``, and
  ``additionalProperties: false``; the assembled schema's own title and description are not published.
  The idempotency key property carries the original's description (one sentence for a key the caller
  must send, another for one derived when omitted), where the served schema says the key's alphabet;
  so does a confirm property whose operation states no reason.
  The schemas in it are the original's compilation of the source (the compiler measures the operation
  :mod:`anvil.compiler.original_view` gives, not the one AIR stores).

So the figure describes the same bytes in both implementations; what ``anvil serve`` lists (its output
schemas, its effect keys) is measured separately by ``anvil certify`` (:mod:`anvil.proof.disclosure`).
"""

from __future__ import annotations

import json
import math
from typing import Final

from anvil._types import JSONObject
from anvil.air.enums import KEYED_MODES
from anvil.air.inputs import idempotency_key_required, safety_keys
from anvil.air.model import DisclosureCost, Operation
from anvil.air.tokens import ESTIMATOR, count_tokens
from anvil.air.tools import (
    PROJECTION_DESCRIPTION,
    operation_input_schema,
    tool_annotations,
    tool_description,
    tool_meta,
)

__all__ = [
    "FALLBACK_CHARS_PER_TOKEN",
    "measure_tool_surface",
    "measured_surface",
    "measured_surface_json",
    "surface_cost",
]

#: ``charsPerToken`` when nothing was counted (an empty surface), as in the original.
FALLBACK_CHARS_PER_TOKEN: Final = 4

_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
_DRY_RUN: Final[JSONObject] = {
    "description": "Preview the wire request without executing it (no upstream call).",
    "type": "boolean",
}
_PROJECTION: Final[JSONObject] = {"description": PROJECTION_DESCRIPTION, "type": "string"}
#: The original's descriptions of the idempotency key property: a key the caller must send, and one it may.
_KEY_REQUIRED: Final = (
    "Idempotency key. Required \u2014 repeating this operation with the same key is safe; a new key is a new operation."
)
_KEY_OPTIONAL: Final = (
    "Optional explicit idempotency key. When omitted, Anvil derives a deterministic request-fingerprint key; "
    "an explicit business-operation key is easier to audit and reuse deliberately."
)
#: The original's description of the confirm property when the operation states no reason.
_CONFIRM: Final = "Explicit confirmation. This operation has side effects and will not run without confirm=true."


def _described(properties: JSONObject, name: str | None, description: str) -> None:
    """Give the safety property ``name`` (when there is one) ``description``, last, where the original puts it."""
    found = properties.get(name) if name is not None else None
    if name is not None and isinstance(found, dict):
        kept = {key: value for key, value in found.items() if key != "description"}
        properties[name] = {**kept, "description": description}


def measured_surface(op: Operation) -> JSONObject:
    """The tool definition the disclosure figure of ``op`` is taken over (see the module docstring)."""
    source = operation_input_schema(op)
    properties = dict(source.get("properties") or {})
    keyed, confirmed = op.idempotency.mode in KEYED_MODES, op.confirmation.required
    if keyed or confirmed:
        names = safety_keys(op)
        if keyed:
            _described(properties, names.idempotency, _KEY_REQUIRED if idempotency_key_required(op) else _KEY_OPTIONAL)
        if confirmed and op.confirmation.reason is None:
            _described(properties, names.confirm, _CONFIRM)
    properties["anvil_dry_run"] = dict(_DRY_RUN)
    properties["anvil_projection"] = dict(_PROJECTION)
    required = source.get("required")
    return {
        "name": op.mcp.tool_name,
        "title": op.display_name,
        "description": tool_description(op),
        "inputSchema": {
            "$schema": _SCHEMA_DIALECT,
            "type": "object",
            "properties": properties,
            "required": list(required) if isinstance(required, list) else [],
            "additionalProperties": False,
        },
        "annotations": tool_annotations(op),
        "_meta": tool_meta(op),
    }


def measured_surface_json(op: Operation) -> str:
    """The exact text the figure counts: :func:`measured_surface` as compact JSON, non-ASCII as is."""
    return json.dumps(measured_surface(op), separators=(",", ":"), ensure_ascii=False)


def measure_tool_surface(op: Operation) -> DisclosureCost:
    """``op``'s ``disclosureCost``: o200k_base tokens of its surface; response figures 0 until measured."""
    text = measured_surface_json(op)
    return surface_cost(text, count_tokens(text))


def surface_cost(text: str, tokens: int) -> DisclosureCost:
    """The ``disclosureCost`` of a surface whose :func:`measured_surface_json` is ``text``, of ``tokens`` tokens."""
    chars = len(text.encode("utf-16-le", "surrogatepass")) // 2  # the original counts UTF-16 code units
    # Rounded half up to three places as the original rounds (Math.round), not half to even.
    ratio = math.floor(chars / tokens * 1000 + 0.5) / 1000 if tokens else FALLBACK_CHARS_PER_TOKEN
    return DisclosureCost(tool_tokens=tokens, chars_per_token=ratio, estimator=ESTIMATOR)
