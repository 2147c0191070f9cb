"""The policy-overlay model of original-core §2.10: assertions, origins, authority and digests.

An overlay is a set of assertions from one origin. Each assertion targets an operation (by any
spelling a manifest key takes), a capability or the service, names a predicate, and says how it
bears on it (``set``, ``restrict``, ``remove`` or ``assert``) with a JSON value. Resolution lives in
:mod:`anvil.compiler.overlay`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Final, Literal

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.air.canonical import canonical_json, hash_canonical
from anvil.compiler.manifest.model import Location

__all__ = [
    "KIND_RELIABILITY",
    "ORIGIN_AUTHORITY",
    "ORIGIN_RELIABILITY",
    "Assertion",
    "AssertionOperation",
    "Authority",
    "ConflictSide",
    "EvidenceArtifact",
    "Origin",
    "PolicyOverlay",
    "Scope",
    "SemanticConflict",
    "Target",
    "authority_for",
    "make_overlay",
    "overlay_digest",
]

Origin = Literal["operator", "manifest", "gateway", "investigation", "observed_traffic"]
AssertionOperation = Literal["set", "restrict", "remove", "assert"]
Scope = Literal["service", "operation", "capability"]
Authority = Literal["authoritative", "corroborating", "insufficient"]

#: Rank of an origin when two ``set`` assertions disagree.
ORIGIN_AUTHORITY: Final[Mapping[str, int]] = {
    "operator": 100,
    "manifest": 90,
    "gateway": 80,
    "investigation": 50,
    "observed_traffic": 40,
}
#: Default evidence reliability of an origin (by the evidence kind it stands for, §1.13).
ORIGIN_RELIABILITY: Final[Mapping[str, float]] = {
    "operator": 0.7,
    "manifest": 0.7,
    "gateway": 0.9,
    "investigation": 0.4,
    "observed_traffic": 0.95,
}
KIND_RELIABILITY: Final[Mapping[str, float]] = {
    "recorded_traffic": 0.95, "source_impl": 0.9, "test_fixture": 0.85, "spec": 0.7, "postman": 0.6,
    "incident": 0.6, "doc_example": 0.5, "inferred": 0.4, "generated_mock": 0.3,
}  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """What an assertion is about: an operation (by any manifest-key spelling), a capability or the service."""

    scope: Scope = "operation"
    ref: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Assertion:
    """One statement of an overlay. ``value`` is JSON; ``location`` points at the manifest text."""

    target: Target
    predicate: str
    operation: AssertionOperation = "set"
    value: JSONValue = None
    evidence_refs: tuple[str, ...] = ()
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceArtifact:
    """Evidence an assertion may cite (its ``reliability`` overrides the kind's default)."""

    id: str
    kind: str
    ref: str | None = None
    note: str | None = None
    reliability: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyOverlay:
    """A set of assertions from one origin (schema version 1)."""

    id: str
    origin: Origin
    assertions: tuple[Assertion, ...] = ()
    evidence: tuple[EvidenceArtifact, ...] = ()
    digest: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConflictSide:
    """One value contending for a contested predicate."""

    value: JSONValue
    origins: tuple[str, ...]
    operation: str
    authority: int
    evidence_reliability: float
    evidence_refs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SemanticConflict:
    """Equally authoritative overlays disagree on a safety predicate of one operation."""

    target: Target
    predicate: str
    sides: tuple[ConflictSide, ...]
    allowed_resolutions: tuple[str, ...]
    message: str
    safety_sensitive: bool = True


# --- digests ---------------------------------------------------------------------------------------------


def _assertion_json(item: Assertion) -> dict[str, JSONValue]:
    return {
        "target": {"scope": item.target.scope, "ref": item.target.ref},
        "predicate": item.predicate,
        "operation": item.operation,
        "value": item.value,
        "evidenceRefs": sorted(set(item.evidence_refs)),
    }


def overlay_digest(origin: str, assertions: Sequence[Assertion], evidence: Sequence[EvidenceArtifact] = ()) -> str:
    """The content digest of an overlay (original-core §1.17): sorted, de-duplicated, hashed."""
    unique: dict[str, tuple[str, dict[str, JSONValue]]] = {}
    for item in assertions:
        body = _assertion_json(item)
        order = canonical_json([item.target.scope, item.target.ref, item.predicate, item.operation, item.value])
        unique[canonical_json(body)] = (order, body)
    ordered = [body for _order, body in sorted(unique.values(), key=lambda pair: pair[0])]
    artifacts = []
    for e in sorted(evidence, key=lambda e: e.id):
        fields = (("id", e.id), ("kind", e.kind), ("ref", e.ref), ("note", e.note), ("reliability", e.reliability))
        artifacts.append({k: v for k, v in fields if v is not None})
    return hash_canonical({"origin": origin, "assertions": ordered, "evidence": artifacts})


def make_overlay(
    origin: Origin,
    assertions: Sequence[Assertion],
    *,
    evidence: Sequence[EvidenceArtifact] = (),
    overlay_id: str | None = None,
) -> PolicyOverlay:
    """An overlay stamped with its digest; the id defaults to ``overlay_<origin>_<digest[:12]>``."""
    digest = overlay_digest(origin, assertions, evidence)
    return PolicyOverlay(
        id=overlay_id or f"overlay_{origin}_{digest[:12]}",
        origin=origin,
        assertions=tuple(assertions),
        evidence=tuple(evidence),
        digest=digest,
    )


def authority_for(origin: str, predicate: str) -> Authority:
    """How far ``origin`` can prove ``predicate``: only an authoritative origin may loosen it."""
    if origin in ("operator", "manifest"):
        return "authoritative"
    if origin == "gateway":
        if predicate == "auth.scopes":
            return "authoritative"
        return "corroborating" if predicate == "idempotency.mode" else "insufficient"
    return "insufficient"
