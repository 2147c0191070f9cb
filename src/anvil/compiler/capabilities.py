"""Capability discovery (original-core §1.15): group operations by first tag, else resource, else service."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from anvil._dataclass import dataclass
from anvil.air.enums import OperationState
from anvil.air.model import Capability, Claim, Evidence, Operation
from anvil.air.naming import snake, split_words, title_case

__all__ = ["capability_state", "discover_capabilities"]

_CONFIDENCE: Final = {"tag": 0.9, "resource": 0.5, "service": 0.3}


@dataclass(frozen=True, slots=True)
class _Key:
    source: str
    key: str
    id: str


def _key_of(service_id: str, op: Operation) -> _Key:
    if op.tags and snake(op.tags[0]):
        return _Key("tag", op.tags[0], f"{service_id}.{snake(op.tags[0])}")
    if op.effect.resource and snake(op.effect.resource):
        return _Key("resource", op.effect.resource, f"{service_id}.{snake(op.effect.resource)}")
    return _Key("service", service_id, f"{service_id}.{snake(service_id)}")


def capability_state(states: Sequence[OperationState]) -> OperationState:
    """approved if any member is, blocked if all are, review_required if any is, else generated."""
    if "approved" in states:
        return "approved"
    if states and all(state == "blocked" for state in states):
        return "blocked"
    if "review_required" in states:
        return "review_required"
    return "generated"


def discover_capabilities(
    service_id: str, operations: Sequence[Operation]
) -> tuple[tuple[Operation, ...], tuple[Capability, ...]]:
    """Group operations into capabilities and stamp each operation's ``capability_id``.

    Returns:
        The operations (same order) with ``capability_id`` set, and the capabilities sorted by id.
    """
    members: dict[str, list[Operation]] = {}
    first_key: dict[str, _Key] = {}
    stamped: list[Operation] = []
    for op in operations:
        key = _key_of(service_id, op)
        members.setdefault(key.id, []).append(op)
        first_key.setdefault(key.id, key)
        stamped.append(replace(op, capability_id=key.id))
    capabilities = []
    for cap_id in sorted(members):
        key = first_key[cap_id]
        group = members[cap_id]
        title = title_case(key.key) or key.key
        noun = " ".join(split_words(key.key)) or key.key
        examples = [f"work with {noun}", f"manage {noun}"]
        for op in group:
            if op.skill.intent_examples:
                examples.append(op.skill.intent_examples[0])
                break
        capabilities.append(
            Capability(
                id=cap_id,
                display_name=title,
                description=f"{title} capability for {service_id}.",
                source=key.source,
                resources=tuple(sorted({op.effect.resource for op in group if op.effect.resource})),
                operation_ids=tuple(sorted(op.id for op in group)),
                intent_examples=tuple(examples),
                state=capability_state([op.state for op in group]),
                evidence=Evidence(
                    claims=(
                        Claim(
                            subject=cap_id,
                            predicate="exists",
                            value=True,
                            source="spec" if key.source == "tag" else "inferred",
                            method=f"{key.source}_grouping",
                            confidence=_CONFIDENCE[key.source],
                        ),
                    )
                ),
            )
        )
    return tuple(stamped), tuple(capabilities)
