"""Idempotency carrier resolution (original-core §1.8): where an idempotency key travels on the wire.

Shared by the compiler (validation, approval) and the runtime (key injection). Owned by the compiler
work; the signatures below are the contract the runtime builds against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from anvil._types import JSONObject
from anvil.air.model import Operation

__all__ = ["CarrierBinding", "CarrierResolution", "resolve_carrier"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CarrierBinding:
    """A resolved carrier.

    ``key``: the header name (manifest spelling), query/path parameter wire name, or body field name.
    ``pointer``: for body carriers, the path of object keys from the body root to the field.
    ``input_name``: the public input property of the modeled carrier param/field, when one is modeled
    (the executor reads the key from it and strips it from business input); None for an unmodeled header.
    ``schema``: the modeled carrier's JSON Schema, when modeled.
    """

    mechanism: Literal["header", "query", "path", "body"]
    key: str
    pointer: tuple[str, ...] | None = None
    input_name: str | None = None
    schema: JSONObject | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CarrierResolution:
    """``binding`` when the op's keyed mode resolves; ``issue`` (a sentence) when it cannot; both None
    for modes that use no carrier (natural, client_id, none)."""

    binding: CarrierBinding | None = None
    issue: str | None = None


def resolve_carrier(op: Operation) -> CarrierResolution:
    """Resolve ``op``'s idempotency carrier (keyed modes ``required``/``key_supported`` only)."""
    raise NotImplementedError("implemented by the compiler work (original-core §1.8)")
