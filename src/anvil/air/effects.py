"""Reading an operation's effect contract (ADR-0030): its class, its declaration, its follow-ups.

Shared by the compiler (checks), the bundle (surfaces) and the gateway (``tools/list`` metadata and
the ``_meta.effect`` report). An operation that declares nothing reads as the worst case a caller
must assume: ``read`` for a read, ``irreversible`` for anything else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final, Literal

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.carrier import resolve_carrier
from anvil.air.codec import to_json
from anvil.air.enums import KEYED_MODES, EffectClass
from anvil.air.model import Deadline, Effect, Operation

__all__ = [
    "FOLLOW_UP_PLACES",
    "DeclaredUndo",
    "FollowUpPlace",
    "FollowUpRef",
    "ToolOf",
    "UndoKind",
    "deadline_phrase",
    "declared_contract",
    "declared_undo",
    "effect_class_of",
    "effect_classification",
    "effect_listing_meta",
    "follow_up_refs",
    "forwards_idempotency_key",
    "reversible_for_class",
    "undo_sentence",
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


#: Maps an AIR operation id to the tool name a caller dials on a server, or None when it is not served.
ToolOf = Callable[[str], "str | None"]


def effect_classification(op: Operation, tool_of: ToolOf) -> JSONObject:
    """The ``effect`` key of a listed tool's ``_meta`` (declared or not; see :mod:`anvil.serve.mcp.listing`)."""
    effect = op.effect
    return {
        "class": effect_class_of(op),
        "deletion": effect.action == "delete" or effect.risk == "destructive",
        "draft": tool_of(effect.draft.operation) if effect.draft is not None else None,
        "lookup": tool_of(effect.lookup.operation) if effect.lookup is not None else None,
        "operation": op.id,
    }


def effect_listing_meta(op: Operation, tool_of: ToolOf) -> JSONObject:
    """The ``_meta`` keys ADR-0030 adds to a listed tool: the class, the contract when declared, ``effect``."""
    contract = declared_contract(op)
    meta: JSONObject = {"anvil/effect_class": effect_class_of(op)}
    if contract is not None:
        meta["anvil/effect_contract"] = contract
    meta["effect"] = effect_classification(op, tool_of)
    return meta


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


# --- what a surface says about undoing ----------------------------------------------------------------

UndoKind = Literal["inverse", "compensate"]
#: Largest unit first: a deadline is said in the largest unit it is an exact multiple of.
_UNITS: Final[tuple[tuple[int, str], ...]] = (
    (86_400_000, "day"),
    (3_600_000, "hour"),
    (60_000, "minute"),
    (1_000, "second"),
)


@dataclass(frozen=True, slots=True)
class DeclaredUndo:
    """The undo a contract declares: ``inverse`` for a reversible effect, ``compensate`` for a compensable one."""

    kind: UndoKind
    operation: str


def declared_undo(op: Operation) -> DeclaredUndo | None:
    """The follow-up that undoes ``op``'s effect, or None (a read, an irreversible write, nothing declared)."""
    effect, effect_class = op.effect, effect_class_of(op)
    if effect_class == "reversible" and effect.inverse is not None:
        return DeclaredUndo("inverse", effect.inverse.operation)
    if effect_class == "compensable" and effect.compensate is not None:
        return DeclaredUndo("compensate", effect.compensate.operation)
    return None


def deadline_phrase(deadline: Deadline | None) -> str:
    """`` within 1 hour``, `` within 1500 ms``, `` until the deadline the response gives``, or ``""``."""
    if deadline is None:
        return ""
    if deadline.within_ms is not None:
        for size, unit in _UNITS:
            if deadline.within_ms % size == 0:
                count = deadline.within_ms // size
                return f" within {count} {unit}{'' if count == 1 else 's'}"
        return f" within {deadline.within_ms} ms"
    return " until the deadline the response gives" if deadline.at is not None else ""


def undo_sentence(op: Operation, command_of: Callable[[str], str]) -> str:
    """What undoing ``op`` means, in one sentence naming follow-ups by ``command_of(AIR id)`` (ADR-0030 §9).

    ``command_of`` maps an operation id to the command a reader types (a CLI command in a bundle).
    """
    effect, effect_class = op.effect, effect_class_of(op)
    if effect_class == "read":
        return "Changes nothing."
    if effect_class == "reversible" and effect.inverse is not None:
        command = command_of(effect.inverse.operation)
        return f"This action can be undone with `{command}`{deadline_phrase(effect.inverse.deadline)}."
    if effect_class == "compensable" and effect.compensate is not None:
        command = command_of(effect.compensate.operation)
        return f"This action cannot be undone, but can be compensated with `{command}` (which leaves a trace)."
    if effect.draft is not None:
        command = command_of(effect.draft.operation)
        return (
            f"This action cannot be undone. It has a draft form (`{command}`) that can be reviewed before it is "
            "promoted."
        )
    return "This action cannot be undone."
