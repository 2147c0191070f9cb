"""How a published output schema states an answer: the node rules :func:`answer_node` applies.

Kept apart from :mod:`anvil.air.value_check` (which loads the RE2 pattern engine) because the listing
path publishes output schemas and must not load the call path's pattern machinery.
"""

from __future__ import annotations

from typing import Final

from anvil._types import JSONObject

__all__ = ["COMPOSITIONS", "answer_node"]

#: The schema keywords that compose branches.
COMPOSITIONS: Final = ("allOf", "anyOf", "oneOf")


def answer_node(node: JSONObject) -> JSONObject:
    """One schema node as a published output schema states it (the node itself when nothing changes).

    An answer's schema describes what the API sends, and specs compose it loosely: a ``oneOf`` whose
    branches overlap (two open objects, or two alike) admits no answer when read as "exactly one",
    and an ``additionalProperties: false`` beside ``allOf``/``oneOf``/``anyOf`` refuses every property
    the branches declare (the spec means the composed object's own). So ``oneOf`` is stated as
    ``anyOf`` (beside an ``anyOf`` of its own: both, under ``allOf``) and such an
    ``additionalProperties: false`` is left out: an answer the API sends in any of the shapes its spec
    names is accepted, and never one that fits none of them.
    """
    composed = any(isinstance(node.get(key), list) for key in COMPOSITIONS)
    if not composed or ("oneOf" not in node and node.get("additionalProperties") is not False):
        return node
    out = {k: v for k, v in node.items() if k != "oneOf" and not (k == "additionalProperties" and v is False)}
    one = node.get("oneOf")
    if isinstance(one, list):
        if "anyOf" in out:
            every = out.get("allOf")
            out["allOf"] = [*(every if isinstance(every, list) else []), {"anyOf": one}]
        else:
            out["anyOf"] = one
    return out
