"""Public inputs of an operation: safety keys, wire bindings and the assembled input schema (§1.6).

Shared by the compiler (schema assembly), the runtime (request building) and the gateway (tool
schemas). Owned by the compiler work; the signatures below are the contract others build against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from anvil._types import JSONObject
from anvil.air.model import Operation

__all__ = ["InputBinding", "SafetyKeys", "assemble_input_schema", "input_bindings", "safety_keys"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SafetyKeys:
    """Names of the caller-owned safety inputs: ``idempotency`` (``idempotency_key`` or its
    ``anvil_idempotency_key[_n]`` variant) when mode is required/key_supported, ``confirm`` (or
    ``anvil_confirm[_n]``) when confirmation is required; None when the op has no such input."""

    idempotency: str | None = None
    confirm: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InputBinding:
    """One business input: public property name -> wire coordinate.

    ``location`` is ``path|query|header|cookie`` for params, ``body_field`` for a projected body field
    (``wire_name`` is the body key), ``body`` for the whole body (``property`` is ``body``).
    """

    property: str
    location: Literal["path", "query", "header", "cookie", "body_field", "body"]
    wire_name: str
    required: bool
    schema: JSONObject


def safety_keys(op: Operation) -> SafetyKeys:
    """The safety input names of ``op`` (deterministic; avoids business input names)."""
    raise NotImplementedError


def input_bindings(op: Operation) -> tuple[InputBinding, ...]:
    """Business inputs of ``op`` in schema order (params, then body fields or ``body``)."""
    raise NotImplementedError


def assemble_input_schema(op: Operation) -> JSONObject:
    """The assembled input schema of original-core §1.6 (what ``op.input.schema`` stores)."""
    raise NotImplementedError
