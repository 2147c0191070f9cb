"""Policy overlays (original-core §2.10) and applying the manifest through them.

The manifest's ``operations`` block is one :class:`PolicyOverlay` (origin ``manifest``, authority 90,
authoritative); other overlays (operator, gateway, investigation, observed traffic) resolve together
with it, per (operation, predicate), in a way that does not depend on the order they are given:

1. candidates are the ``set`` assertions (else the ``assert`` ones), grouped by value and ranked by
   origin authority, then evidence reliability, then value;
2. a tie on a *safety* predicate is a :class:`SemanticConflict`: the predicate stays unapplied, the
   operation is blocked and ``overlay/conflict`` is reported; on any other predicate the leader wins
   (``overlay/resolved_by_order``);
3. ``restrict`` moves toward the safer pole and always applies;
4. loosening a safety predicate needs an authoritative origin, else ``overlay/loosen_refused``;
5. ``auth.scopes`` combines: authoritative ``set`` replaces, other ``set`` only adds, ``restrict``
   unions, ``remove`` only from authoritative origins.

The ``effect:`` block travels as ONE safety predicate, ``effectContract``, whose value is the whole
block. Key matching differs from the original on purpose: a key naming no operation is the error
``manifest/unknown_operation``, and a key naming several is ``manifest/ambiguous_operation`` (the
entry then applies to none of them).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.air.canonical import canonical_json
from anvil.air.enums import RISK_LEVELS
from anvil.air.model import Operation
from anvil.compiler.manifest.apply import (
    SAFETY_PREDICATES,
    OperationIndex,
    apply_effect_contract,
    apply_values,
    base_value,
    entry_assertions,
    heuristic_read,
)
from anvil.compiler.manifest.auth import apply_service_defaults
from anvil.compiler.manifest.model import Location, Manifest
from anvil.compiler.manifest.policy import (
    KIND_RELIABILITY,
    ORIGIN_AUTHORITY,
    ORIGIN_RELIABILITY,
    Assertion,
    ConflictSide,
    EvidenceArtifact,
    Origin,
    PolicyOverlay,
    SemanticConflict,
    Target,
    authority_for,
    make_overlay,
    overlay_digest,
)
from anvil.compiler.normalize import Dropped
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = [
    "ORIGIN_AUTHORITY",
    "Assertion",
    "ConflictSide",
    "EvidenceArtifact",
    "ManifestApplication",
    "Origin",
    "PolicyOverlay",
    "Resolution",
    "SemanticConflict",
    "Target",
    "apply_manifest",
    "apply_service_defaults",
    "authority_for",
    "make_overlay",
    "manifest_overlay",
    "overlay_digest",
    "resolve_overlays",
]

_STATE_EXPOSURE: Final = {"approved": 0, "generated": 1, "review_required": 2, "deprecated": 3, "blocked": 4}


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    """Resolved overlays: per-operation predicate values, scopes, conflicts and what decided each value."""

    values: Mapping[str, Mapping[str, JSONValue]]
    scopes: Mapping[str, tuple[str, ...]]
    conflicts: tuple[SemanticConflict, ...]
    blocked: frozenset[str]
    diagnostics: tuple[Diagnostic, ...]
    winners: Mapping[tuple[str, str], tuple[Assertion, ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestApplication:
    """What :func:`apply_manifest` produced.

    ``explicit_reversible``: AIR ids whose own manifest entry stated ``reversible``.
    ``effect_locations``: AIR id → (file, line, column) of the ``effect:`` block applied to it.
    ``effect_positions``: AIR id → dotted path inside that block → (file, line, column).
    """

    operations: tuple[Operation, ...]
    diagnostics: tuple[Diagnostic, ...]
    explicit_reversible: frozenset[str]
    effect_locations: dict[str, tuple[str, int, int]]
    manifest_file: str
    effect_positions: dict[str, dict[str, tuple[str, int, int]]] = field(default_factory=dict)
    conflicts: tuple[SemanticConflict, ...] = ()
    blocked_operation_ids: tuple[str, ...] = ()
    applied_overlays: tuple[tuple[str, str, str], ...] = ()


# --- the manifest overlay ---------------------------------------------------------------------------


def manifest_overlay(manifest: Manifest) -> PolicyOverlay:
    """The manifest's ``operations`` block as one ``set``-only overlay of origin ``manifest``."""
    assertions = [
        Assertion(target=Target(ref=entry.key), predicate=predicate, value=value, location=where)
        for entry in manifest.operations
        for predicate, value, where in entry_assertions(entry)
    ]
    return make_overlay("manifest", assertions)


# --- resolution --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tagged:
    assertion: Assertion
    origin: str
    reliability: float


@dataclass(frozen=True, slots=True)
class _Group:
    key: str
    value: JSONValue
    authority: int
    reliability: float
    members: tuple[_Tagged, ...]


def _safer(predicate: str, a: JSONValue, b: JSONValue) -> tuple[bool, JSONValue]:
    """(has a pole, the safer of ``a`` and ``b``)."""
    if predicate in ("confirmation.required", "confirmation.human_approval"):
        return True, a is True or b is True
    if predicate == "effect.reversible":
        return True, not (a is False or b is False)
    if predicate == "retries.mode":
        return True, "none" if "none" in (a, b) else "safe"
    if predicate == "effect.kind":
        return True, "mutation" if "mutation" in (a, b) else "read"
    if predicate == "idempotency.mode":
        return True, "none" if "none" in (a, b) else max(str(a), str(b))
    if predicate == "state":
        return True, max((str(a), str(b)), key=lambda s: (_STATE_EXPOSURE.get(s, 5), s))
    if predicate == "effect.risk":
        return True, max((str(a), str(b)), key=lambda s: (RISK_LEVELS.index(s) if s in RISK_LEVELS else -1, s))
    if predicate == "retries.maxAttempts" and isinstance(a, int) and isinstance(b, int):
        return True, min(a, b)
    if predicate == "credentialHosts" and isinstance(a, list) and isinstance(b, list):
        return True, [host for host in a if host in b]
    return False, b


def _loosens(predicate: str, base: JSONValue, value: JSONValue) -> bool:
    loosens: bool = False
    if predicate in ("confirmation.required", "confirmation.human_approval"):
        loosens = base is True and value is False
    elif predicate == "effect.reversible":
        loosens = base is False and value is True
    elif predicate == "retries.mode":
        loosens = base == "none" and value == "safe"
    elif predicate == "effect.kind":
        loosens = base == "mutation" and value == "read"
    elif predicate == "idempotency.mode":
        loosens = base == "none" and value != "none"
    elif predicate == "state":
        loosens = (value == "approved" and base != "approved") or (base == "blocked" and value != "blocked")
    elif predicate == "credentialHosts" and isinstance(value, list):
        # Sending the credential to a host the spec named is a consent only an authoritative origin gives.
        loosens = any(host not in (base if isinstance(base, list) else []) for host in value)
    elif predicate == "effectContract" and isinstance(value, dict):
        # Declaring an undo is a claim about the upstream only an authoritative origin may make.
        loosens = value.get("class") in ("reversible", "compensable") or "inverse" in value or "compensate" in value
    return loosens


def _groups(tagged: Sequence[_Tagged]) -> list[_Group]:
    by_value: dict[str, list[_Tagged]] = {}
    for item in tagged:
        by_value.setdefault(canonical_json(item.assertion.value), []).append(item)
    groups = [
        _Group(
            key=key,
            value=members[0].assertion.value,
            authority=max(ORIGIN_AUTHORITY.get(m.origin, 0) for m in members),
            reliability=max(m.reliability for m in members),
            members=tuple(members),
        )
        for key, members in by_value.items()
    ]
    return sorted(groups, key=lambda g: (-g.authority, -g.reliability, g.key))


def _where(members: Sequence[_Tagged]) -> Location | None:
    spots = sorted((m.assertion.location for m in members if m.assertion.location), key=lambda w: (w.line, w.column))
    return spots[0] if spots else None


def _diag(code: str, message: str, op_id: str, where: Location | None, hint: str | None = None) -> Diagnostic:
    return diagnostic(
        code,
        message,
        operation=op_id,
        file=where.file if where else None,
        line=where.line if where else None,
        column=where.column if where else None,
        hint=hint,
    )


@dataclass(slots=True)
class _Resolver:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    conflicts: list[SemanticConflict] = field(default_factory=list)

    def scalar(
        self, op: Operation, predicate: str, tagged: Sequence[_Tagged]
    ) -> tuple[bool, JSONValue, tuple[_Tagged, ...]]:
        """(resolved, value, the assertions behind it) for one scalar predicate, or a conflict."""
        safety = predicate in SAFETY_PREDICATES
        base = base_value(op, predicate)
        sets = [t for t in tagged if t.assertion.operation == "set"]
        asserts = [t for t in tagged if t.assertion.operation == "assert"]
        restricts = [t for t in tagged if t.assertion.operation == "restrict"]
        poled = [t for t in restricts if _safer(predicate, base, t.assertion.value)[0]]
        primary = sets or asserts or [t for t in restricts if t not in poled]
        value: JSONValue = None
        behind: tuple[_Tagged, ...] = ()
        if primary:
            groups = _groups(primary)
            top = groups[0]
            runner = groups[1] if len(groups) > 1 else None
            tied = runner is not None and (
                runner.authority == top.authority if sets else runner.reliability >= top.reliability
            )
            if tied and safety:
                self._conflict(op, predicate, [g for g in groups if g.authority == top.authority or not sets])
                return False, None, ()
            if tied:
                self.diagnostics.append(
                    _diag(
                        "overlay/resolved_by_order",
                        f"Overlays gave '{op.id}' competing values for {predicate}; {canonical_json(top.value)} "
                        "was picked deterministically.",
                        op.id,
                        _where(top.members),
                    )
                )
            value, behind = top.value, top.members
        if poled:
            value = base if not behind else value
            for item in sorted(poled, key=lambda t: canonical_json(t.assertion.value)):
                value = _safer(predicate, value, item.assertion.value)[1]
            behind = (*behind, *poled)
        if not behind:
            return False, None, ()
        if safety and _loosens(predicate, base, value):
            if not any(authority_for(t.origin, predicate) == "authoritative" for t in behind):
                self.diagnostics.append(
                    _diag(
                        "overlay/loosen_refused",
                        f"Refused to loosen {predicate} on '{op.id}' from {canonical_json(base)} to "
                        f"{canonical_json(value)}: no authoritative origin states it.",
                        op.id,
                        _where(behind),
                        hint="Only the manifest or an operator overlay may loosen a safety predicate.",
                    )
                )
                return False, None, ()
        return True, value, behind

    def _conflict(self, op: Operation, predicate: str, groups: Sequence[_Group]) -> None:
        sides = tuple(
            ConflictSide(
                value=g.value,
                origins=tuple(sorted({m.origin for m in g.members})),
                operation=g.members[0].assertion.operation,
                authority=g.authority,
                evidence_reliability=g.reliability,
                evidence_refs=tuple(sorted({r for m in g.members for r in m.assertion.evidence_refs})),
            )
            for g in groups
        )
        shown = " vs ".join(f"{canonical_json(s.value)} ({'/'.join(s.origins)})" for s in sides)
        message = f"Contested {predicate} on '{op.id}': {shown}; the operation is blocked."
        resolutions = ("set", "block", "escalate") if predicate == "retries.mode" else ("set", "escalate")
        self.conflicts.append(
            SemanticConflict(
                target=Target(ref=op.id),
                predicate=predicate,
                sides=sides,
                allowed_resolutions=resolutions,
                message=message,
            )
        )
        members = [m for g in groups for m in g.members]
        self.diagnostics.append(
            _diag(
                "overlay/conflict",
                message,
                op.id,
                _where(members),
                hint="State one value for it (one manifest entry per operation, or one authoritative overlay).",
            )
        )

    def scopes(self, op: Operation, tagged: Sequence[_Tagged]) -> tuple[str, ...]:
        """``auth.scopes`` per rule 5 of §2.10."""
        required = set(op.auth.scopes)
        authoritative_sets = [
            t
            for t in tagged
            if t.assertion.operation == "set" and authority_for(t.origin, "auth.scopes") == "authoritative"
        ]
        if authoritative_sets:
            required = {s for t in authoritative_sets for s in _strings(t.assertion.value)}
        for item in tagged:
            kind = item.assertion.operation
            values = _strings(item.assertion.value)
            if kind == "set" and item not in authoritative_sets:
                dropped = sorted(set(op.auth.scopes) - set(values))
                if dropped:
                    self._refuse_scopes(op, item, f"cannot drop scope(s) {', '.join(dropped)}")
                required |= set(values)
            elif kind == "restrict":
                required |= set(values)
        for item in tagged:
            if item.assertion.operation != "remove":
                continue
            if authority_for(item.origin, "auth.scopes") != "authoritative":
                self._refuse_scopes(op, item, f"cannot remove scope(s) {', '.join(_strings(item.assertion.value))}")
                continue
            required -= set(_strings(item.assertion.value))
        return tuple(sorted(required))

    def _refuse_scopes(self, op: Operation, item: _Tagged, what: str) -> None:
        self.diagnostics.append(
            _diag(
                "overlay/loosen_refused",
                f"Overlay origin {item.origin} {what} on '{op.id}': it is not authoritative for auth.scopes.",
                op.id,
                item.assertion.location,
            )
        )


def _strings(value: JSONValue) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _reliability(overlay: PolicyOverlay, item: Assertion) -> float:
    default = ORIGIN_RELIABILITY.get(overlay.origin, 0.5)
    cited = [e for e in overlay.evidence if e.id in item.evidence_refs]
    if not cited:
        return default
    return max(e.reliability if e.reliability is not None else KIND_RELIABILITY.get(e.kind, default) for e in cited)


def _targets(target: Target, operations: Sequence[Operation], index: OperationIndex, service_id: str) -> list[str]:
    if target.scope == "service":
        return [op.id for op in operations] if target.ref in (service_id, "*") else []
    if target.scope == "capability":
        return [op.id for op in operations if op.capability_id is not None and op.capability_id == target.ref]
    matches = index.match(target.ref)
    return list(matches) if len(matches) == 1 else []


def resolve_overlays(
    operations: Sequence[Operation], overlays: Sequence[PolicyOverlay], *, service_id: str
) -> Resolution:
    """Resolve every overlay against ``operations`` (independent of overlay and assertion order)."""
    resolver = _Resolver()
    values: dict[str, dict[str, JSONValue]] = {}
    scopes: dict[str, tuple[str, ...]] = {}
    winners: dict[tuple[str, str], tuple[Assertion, ...]] = {}
    blocked: set[str] = set()
    index = OperationIndex(operations)
    targeted: dict[str, dict[str, list[_Tagged]]] = {}
    for overlay in overlays:
        for item in overlay.assertions:
            tagged = _Tagged(item, overlay.origin, _reliability(overlay, item))
            for op_id in _targets(item.target, operations, index, service_id):
                targeted.setdefault(op_id, {}).setdefault(item.predicate, []).append(tagged)
    for op in operations:
        by_predicate = targeted.get(op.id, {})
        for predicate in sorted(by_predicate):
            group = by_predicate[predicate]
            if predicate == "auth.scopes":
                scopes[op.id] = resolver.scopes(op, group)
                continue
            before = len(resolver.conflicts)
            ok, value, behind = resolver.scalar(op, predicate, group)
            if len(resolver.conflicts) > before:
                blocked.add(op.id)
            if ok:
                values.setdefault(op.id, {})[predicate] = value
                winners[(op.id, predicate)] = tuple(t.assertion for t in behind)
    return Resolution(
        values=values,
        scopes=scopes,
        conflicts=tuple(resolver.conflicts),
        blocked=frozenset(blocked),
        diagnostics=tuple(resolver.diagnostics),
        winners=winners,
    )


# --- the manifest -------------------------------------------------------------------------------------------


def _key_diagnostics(
    operations: Sequence[Operation], manifest: Manifest, dropped: Sequence[Dropped] = ()
) -> list[Diagnostic]:
    names = sorted({n for op in operations for n in (op.id, op.canonical_name, op.source_ref.operation_id) if n})
    index = OperationIndex(operations)
    found: list[Diagnostic] = []
    for entry in manifest.operations:
        matches = index.match(entry.key)
        where = entry.location
        skipped = next((d for d in dropped if entry.key in d.names), None) if not matches else None
        if skipped is not None:
            found.append(
                diagnostic(
                    "manifest/operation_not_compiled",
                    f"The manifest entry '{entry.key}' names {skipped.method.upper()} {skipped.path}, which is "
                    f"not compiled into a tool ({skipped.reason}); the entry is ignored.",
                    file=where.file,
                    line=where.line,
                    column=where.column,
                    hint="Remove the entry, or leave it: nothing is served for that operation.",
                )
            )
        elif not matches:
            close = difflib.get_close_matches(entry.key, names, n=1, cutoff=0.6)
            found.append(
                diagnostic(
                    "manifest/unknown_operation",
                    f"The manifest entry '{entry.key}' names no operation; nothing was applied.",
                    file=where.file,
                    line=where.line,
                    column=where.column,
                    hint=f"Did you mean '{close[0]}'?" if close else "Use an AIR id, canonical name or operationId.",
                )
            )
        elif len(matches) > 1:
            found.append(
                diagnostic(
                    "manifest/ambiguous_operation",
                    f"The manifest entry '{entry.key}' names several operations ({', '.join(sorted(matches))}); "
                    "nothing was applied.",
                    file=where.file,
                    line=where.line,
                    column=where.column,
                    hint="Use the AIR id of the one you mean.",
                )
            )
    return found


def _heuristic_reads(operations: Sequence[Operation], resolution: Resolution) -> list[Diagnostic]:
    """A warning for every approved operation that is a read only by the name heuristic: its HTTP
    method changes state and nobody stated ``side_effect: read``, so it would run unledgered and retried."""
    found: list[Diagnostic] = []
    for op in operations:
        if not op.is_approved or not heuristic_read(op) or "effect.kind" in resolution.values.get(op.id, {}):
            continue
        method = (op.source_ref.method or "").upper()
        found.append(
            diagnostic(
                "manifest/heuristic_read_approved",
                f"{op.id} ({method} {op.source_ref.path}) is approved as a read only because its name says "
                "search or query; it gets no ledger, is retried and is listed readOnlyHint.",
                operation=op.id,
                hint="State side_effect: read if it truly changes nothing, or side_effect: mutation.",
            )
        )
    return found


def apply_manifest(
    operations: tuple[Operation, ...],
    manifest: Manifest,
    *,
    service_id: str,
    overlays: Sequence[PolicyOverlay] = (),
    dropped: Sequence[Dropped] = (),
) -> ManifestApplication:
    """Apply the manifest's operation entries (and any other ``overlays``) to ``operations``.

    Returns:
        The operations in their original order, with every diagnostic of key matching, overlay
        resolution and auth coherence, the ids whose entry stated ``reversible``, and where each
        applied ``effect:`` block stands in the manifest.
    """
    found = _key_diagnostics(operations, manifest, dropped)
    all_overlays = (manifest_overlay(manifest), *overlays)
    resolution = resolve_overlays(operations, all_overlays, service_id=service_id)
    found.extend(resolution.diagnostics)
    first: list[Operation] = []
    for op in operations:
        values = resolution.values.get(op.id, {})
        out, diagnostics = apply_values(op, values, service_id=service_id)
        found.extend(diagnostics)
        if op.id in resolution.scopes:
            out = replace(out, auth=replace(out.auth, scopes=resolution.scopes[op.id]))
        if op.id in resolution.blocked:
            contested = sorted(c.predicate for c in resolution.conflicts if c.target.ref == op.id)
            note = f"Blocked: overlays disagree on {', '.join(contested)}; state one value."
            notes = out.review_notes if note in out.review_notes else (*out.review_notes, note)
            out = replace(out, state="blocked", review_notes=notes)
        first.append(out)
    explicit = frozenset(op_id for op_id, values in resolution.values.items() if "effect.reversible" in values)
    final: list[Operation] = []
    locations: dict[str, tuple[str, int, int]] = {}
    positions: dict[str, dict[str, tuple[str, int, int]]] = {}
    pinned = OperationIndex(first)
    for op in first:
        block = resolution.values.get(op.id, {}).get("effectContract")
        if not isinstance(block, dict):
            final.append(op)
            continue
        final.append(apply_effect_contract(op, block, pinned, explicit_reversible=op.id in explicit))
        behind = sorted(
            (a for a in resolution.winners.get((op.id, "effectContract"), ()) if a.location is not None),
            key=lambda a: (a.location.line, a.location.column) if a.location else (0, 0),
        )
        if behind and behind[0].location is not None:
            locations[op.id] = behind[0].location.as_tuple()
            entry = manifest.operation(behind[0].target.ref)
            if entry is not None and entry.effect is not None:
                positions[op.id] = {path: spot.as_tuple() for path, spot in entry.effect.positions.items()}
    found.extend(_heuristic_reads(final, resolution))
    return ManifestApplication(
        operations=tuple(final),
        diagnostics=tuple(found),
        explicit_reversible=explicit,
        effect_locations=locations,
        manifest_file=manifest.file,
        effect_positions=positions,
        conflicts=resolution.conflicts,
        blocked_operation_ids=tuple(sorted(resolution.blocked)),
        applied_overlays=tuple((o.id, o.digest, o.origin) for o in all_overlays if o.assertions),
    )
