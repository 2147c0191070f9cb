"""Reading an operation's effect contract (ADR-0030): its class, its declaration, its follow-ups.

Shared by the compiler (checks), the bundle (surfaces) and the gateway (``tools/list`` metadata and
the ``_meta.effect`` report). An operation that declares nothing reads as the worst case a caller
must assume: ``read`` for a read, ``irreversible`` for anything else.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Literal

from anvil._types import JSONObject
from anvil.air.carrier import resolve_carrier
from anvil.air.codec import to_json
from anvil.air.enums import KEYED_MODES, EffectClass
from anvil.air.model import Effect, Operation

__all__ = [
    "FOLLOW_UP_PLACES",
    "FollowUpPlace",
    "FollowUpRef",
    "declared_contract",
    "effect_class_of",
    "follow_up_refs",
    "forwards_idempotency_key",
    "reversible_for_class",
]

FollowUpPlace = Literal["inverse", "compensate", "lookup", "draft", "draft.promote", "draft.discard"]
#: Where an effect contract names another operation, in the order checks and reports visit them.
FOLLOW_UP_PLACES: Final[tuple[FollowUpPlace, ...]] = (
    "inverse",
    "compensate",
    "lookup",
    "draft",
    "draft.promote",
    "draft.discard",
)


def effect_class_of(op: Operation) -> EffectClass:
    """The effect class ``op`` has: the declared one, else ``read`` for a read, else ``irreversible``."""
    if op.effect.class_ is not None:
        return op.effect.class_
    return "read" if op.effect.kind == "read" else "irreversible"


def reversible_for_class(effect_class: EffectClass) -> bool:
    """The descriptive ``reversible`` flag a class implies (``read``/``reversible`` -> True)."""
    return effect_class in ("read", "reversible")


def declared_contract(op: Operation) -> JSONObject | None:
    """The ``anvil/effect_contract`` value ``tools/list`` publishes, or None when nothing is declared.

    Returns ``{"class", "inverse"?, "compensate"?, "lookup"?, "draft"?}`` with every piece in its AIR
    JSON shape verbatim (``deadline.withinMs``, operations as AIR ids, mappings unresolved).
    """
    effect = op.effect
    if not effect.declares_contract:
        return None
    out: JSONObject = {"class": effect_class_of(op)}
    for key in ("inverse", "compensate", "lookup", "draft"):
        piece = getattr(effect, key)
        if piece is not None:
            out[key] = to_json(piece)
    return out


def forwards_idempotency_key(op: Operation) -> bool:
    """True when ``op`` sends an idempotency key upstream: a keyed mode whose carrier resolves."""
    if op.idempotency.mode not in KEYED_MODES:
        return False
    return resolve_carrier(op).binding is not None


@dataclass(frozen=True, slots=True)
class FollowUpRef:
    """One place an effect contract names an operation: ``place`` and the (pinned) ``operation``."""

    place: FollowUpPlace
    operation: str


def follow_up_refs(effect: Effect) -> Iterator[FollowUpRef]:
    """Every operation reference in ``effect``, in :data:`FOLLOW_UP_PLACES` order."""
    if effect.inverse is not None:
        yield FollowUpRef("inverse", effect.inverse.operation)
    if effect.compensate is not None:
        yield FollowUpRef("compensate", effect.compensate.operation)
    if effect.lookup is not None:
        yield FollowUpRef("lookup", effect.lookup.operation)
    if effect.draft is not None:
        yield FollowUpRef("draft", effect.draft.operation)
        if effect.draft.promote is not None:
            yield FollowUpRef("draft.promote", effect.draft.promote.operation)
        if effect.draft.discard is not None:
            yield FollowUpRef("draft.discard", effect.draft.discard.operation)
