"""Effect-contract checks (ADR-0030 §3): prove every declared undo callable, or serve without one.

:func:`check_effects` runs after the manifest is applied and input schemas are attached, before
validation. It pins follow-up references to AIR ids, checks every operation that declares any of
``class``, ``inverse``, ``compensate``, ``lookup`` or ``draft`` against the operations it names and
their schemas, and reports each finding as an ``effect/*`` diagnostic. An operation whose contract
has an error falls back to the worst case a caller must assume: ``irreversible`` (or ``read``) with
every follow-up removed, a review note, and (for a mutation) confirmation tightened to required.

All checks read the document as it was given, so the result does not depend on operation order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.effects import effect_class_of, forwards_idempotency_key, reversible_for_class
from anvil.air.enums import KEYED_MODES, EffectClass, EffectKind
from anvil.air.inputs import assemble_input_schema, safety_keys
from anvil.air.model import Confirmation, Deadline, Document, Draft, Effect, Operation
from anvil.air.paths import (
    ROOTS,
    Const,
    PathError,
    PathRoot,
    Segment,
    check_schema_path,
    json_type_of,
    parse_path,
    parse_source,
    types_fit,
)
from anvil.codes import Severity
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = ["DRAFT_CONFIRM_REASON", "REJECTED_REASON", "check_effects", "pin_effect_references"]

#: The confirmation reason a rejected mutation gets when it had none.
REJECTED_REASON: Final = (
    "Its effect contract was rejected, so this action is served as irreversible: it cannot be undone."
)
#: The confirmation reason an operation gets when its draft form needs confirmation and it had none.
DRAFT_CONFIRM_REASON: Final = (
    "Its draft form needs confirmation, and a staged call can confirm the draft only through this input."
)


# --- reference pinning --------------------------------------------------------------------------------


def pin_effect_references(operations: Sequence[Operation]) -> tuple[Operation, ...]:
    """Rewrite every follow-up reference to an AIR id.

    A reference may be spelled as the AIR id, the canonical name or the source ``operationId``. An exact
    AIR id wins; otherwise a reference matching exactly one operation by any of the three is rewritten;
    zero or several matches are left as written (the checks report them ``effect/operation_missing``).
    """
    ids = {op.id for op in operations}

    def pin(ref: str) -> str:
        if ref in ids:
            return ref
        matches = [op.id for op in operations if ref in (op.canonical_name, op.source_ref.operation_id)]
        return matches[0] if len(matches) == 1 else ref

    out: list[Operation] = []
    for op in operations:
        e = op.effect
        if not e.declares_contract:
            out.append(op)
            continue
        inverse = replace(e.inverse, operation=pin(e.inverse.operation)) if e.inverse else None
        compensate = replace(e.compensate, operation=pin(e.compensate.operation)) if e.compensate else None
        lookup = replace(e.lookup, operation=pin(e.lookup.operation)) if e.lookup else None
        draft = e.draft
        if draft is not None:
            draft = replace(
                draft,
                operation=pin(draft.operation),
                promote=replace(draft.promote, operation=pin(draft.promote.operation)) if draft.promote else None,
                discard=replace(draft.discard, operation=pin(draft.discard.operation)) if draft.discard else None,
            )
        effect = replace(e, inverse=inverse, compensate=compensate, lookup=lookup, draft=draft)
        out.append(op if effect == e else replace(op, effect=effect))
    return tuple(out)


# --- the checks ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Where:
    """Where diagnostics of one operation point: the manifest ``effect:`` block, when known.

    ``positions`` maps a dotted path inside the block (``"inverse.arguments.comment_id"``) to the
    position of its value, so a finding about one entry points at that entry.
    """

    file: str | None = None
    line: int | None = None
    column: int | None = None
    positions: Mapping[str, tuple[str, int, int]] = field(default_factory=dict)

    def at(self, entry: str | None) -> tuple[str | None, int | None, int | None]:
        """The position of ``entry`` (or of its nearest written parent), else of the block."""
        while entry:
            found = self.positions.get(entry)
            if found is not None:
                return found
            entry = entry.rpartition(".")[0]
        return self.file, self.line, self.column


@dataclass(slots=True)
class _Checker:
    """Checks one operation's contract against the (unchanged) document; collects its findings."""

    op: Operation
    by_id: Mapping[str, Operation]
    schemas: Mapping[str, JSONValue]
    where: _Where
    explicit_reversible: bool
    findings: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [item for item in self.findings if item.severity == "error"]

    def flag(self, code: str, message: str, *, at: str | None = None, severity: Severity | None = None) -> None:
        """Record a finding; ``at`` is the dotted path of the offending entry inside the ``effect:`` block."""
        file, line, column = self.where.at(at)
        self.findings.append(
            diagnostic(
                code,
                f"Operation '{self.op.id}' {message}",
                severity=severity,
                file=file,
                line=line,
                column=column,
                operation=self.op.id,
            )
        )

    # -- class ----------------------------------------------------------------------------------------

    def check_class(self) -> None:
        e, op = self.op.effect, self.op
        effect_class = effect_class_of(op)
        if e.kind == "read" and effect_class != "read":
            self.flag("effect/class_on_read", f"is a read but declares effect class '{effect_class}'.", at="class")
        if e.kind == "mutation" and effect_class == "read":
            self.flag(
                "effect/read_class_on_mutation",
                "is a mutation and cannot declare effect class 'read'; reclassify it with side_effect: read.",
                at="class",
            )
        if e.class_ is not None and self.explicit_reversible and e.reversible != reversible_for_class(e.class_):
            self.flag(
                "effect/class_conflicts_reversible",
                f"declares effect class '{e.class_}' but reversible: {str(e.reversible).lower()}.",
                at="class",
            )
        if effect_class == "reversible" and e.inverse is None:
            self.flag("effect/reversible_without_inverse", "is declared reversible but names no inverse.", at="class")
        if effect_class == "compensable" and e.compensate is None:
            self.flag(
                "effect/compensable_without_compensate",
                "is declared compensable but names no compensation.",
                at="class",
            )
        if e.inverse is not None and effect_class != "reversible":
            self.flag(
                "effect/inverse_on_non_reversible",
                f"names an inverse but its effect class is '{effect_class}'; only a reversible effect has one.",
                at="inverse",
            )
        if e.compensate is not None and effect_class not in ("compensable", "reversible"):
            self.flag(
                "effect/compensate_on_class",
                f"names a compensation but its effect class is '{effect_class}'.",
                at="compensate",
            )
        if e.lookup is not None and effect_class == "read":
            self.flag("effect/lookup_on_read", "is a read: there is no effect to look up.", at="lookup")
        if e.draft is not None and effect_class == "read":
            self.flag("effect/draft_on_read", "is a read: it has no draft form.", at="draft")

    # -- targets and mappings ------------------------------------------------------------------------------

    def target(self, place: str, ref: str, want: EffectKind) -> Operation | None:
        found = self.by_id.get(ref)
        if found is None:
            self.flag(
                "effect/operation_missing",
                f"{place} names '{ref}', which is not an operation of this service.",
                at=f"{place}.operation",
            )
            return None
        # A draft may be the operation itself called with a draft flag; nothing else may name itself.
        if found.id == self.op.id and place != "draft":
            self.flag("effect/operation_self", f"{place} names the operation itself.", at=f"{place}.operation")
            return None
        if found.effect.kind != want:
            code = "effect/lookup_not_read" if want == "read" else "effect/follow_up_is_read"
            self.flag(
                code,
                f"{place} names '{found.id}', which is a {found.effect.kind}; it must be a {want}.",
                at=f"{place}.operation",
            )
        if self.op.state == "approved" and found.state != "approved":
            self.flag(
                "effect/operation_not_approved",
                f"{place} names '{found.id}', which is not approved: callers will be refused it until it is.",
                at=f"{place}.operation",
            )
        return found

    def check_mapping(
        self,
        place: str,
        target: Operation,
        mapping: Mapping[str, JSONValue],
        roots: tuple[PathRoot, ...],
        request: JSONObject | None,
        response: JSONObject | None,
    ) -> None:
        target_schema = _input_schema(target)
        properties = target_schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        controls = _safety_controls(target)
        for argument, raw in mapping.items():
            entry = f"{place}.arguments.{argument}"
            if argument in controls:
                self.flag(
                    "effect/mapping_sets_safety_control",
                    f"{place} maps '{argument}', a safety control of '{target.id}'; the caller decides "
                    "confirmation and keys, never the contract.",
                    at=entry,
                )
                continue
            if argument not in properties:
                self.flag(
                    "effect/mapping_unknown_argument",
                    f"{place} maps '{argument}', which '{target.id}' does not take.",
                    at=entry,
                )
                continue
            source = parse_source(raw)
            if isinstance(source, PathError):
                self.flag("effect/path_invalid", f"{place}.{argument}: {source.message}.", at=entry)
                continue
            if isinstance(source, Const):
                source_types: frozenset[str] | None = frozenset((json_type_of(source.value),))
            elif source.root not in roots:
                self.flag(
                    "effect/path_root_not_allowed",
                    f"{place}.{argument} reads '{source.root}', but this mapping may read only {', '.join(roots)}.",
                    at=entry,
                )
                continue
            elif source.root == "idempotency_key":
                source_types = frozenset(("string",))
            else:
                schema = request if source.root == "request" else response
                source_types = self.check_path(
                    f"{place}.{argument}", str(raw), source.root, source.segments, schema, at=entry
                )
            target_types = check_schema_path(properties[argument], (), self.schemas, root=target_schema).types
            if source_types is not None and target_types is not None and not types_fit(source_types, target_types):
                self.flag(
                    "effect/mapping_type_mismatch",
                    f"{place}.{argument} gives a {'/'.join(sorted(source_types))} value, but '{target.id}' "
                    f"takes {'/'.join(sorted(target_types))}.",
                    at=entry,
                )
        required = target_schema.get("required")
        for name in required if isinstance(required, list) else ():
            if not isinstance(name, str) or name in controls:
                continue
            if name not in mapping:
                self.flag(
                    "effect/mapping_missing_required",
                    f"{place} does not supply '{name}', which '{target.id}' requires.",
                    at=f"{place}.arguments",
                )
                continue
            source = parse_source(mapping[name])
            if not isinstance(source, Const | PathError) and source.optional:
                self.flag(
                    "effect/mapping_required_optional",
                    f"{place} supplies '{name}', which '{target.id}' requires, from an optional path "
                    f"('{mapping[name]}').",
                    at=f"{place}.arguments.{name}",
                )

    def check_path(
        self,
        place: str,
        written: str,
        root: PathRoot,
        segments: tuple[Segment, ...],
        schema: JSONObject | None,
        *,
        at: str | None = None,
    ) -> frozenset[str] | None:
        """Check a request/response path against its schema; the JSON types declared there, if any.

        ``at`` is the manifest entry the path is written in (default: ``place``).
        """
        at = at or place
        lookup = check_schema_path(schema, segments, self.schemas)
        if lookup.status == "missing":
            self.flag(
                "effect/path_unresolved", f"{place}: '{written}' names nothing the {root} schema declares.", at=at
            )
        elif lookup.status == "unverified":
            self.flag(
                "effect/path_unverified",
                f"{place}: '{written}' could not be checked against the {root} schema; a call whose {root} "
                "lacks it gets no follow-up.",
                at=at,
            )
        return lookup.types

    def check_deadline(self, place: str, deadline: Deadline | None) -> None:
        if deadline is None:
            return
        if (deadline.within_ms is None) == (deadline.at is None):
            self.flag(
                "effect/deadline_shape",
                f"{place}.deadline needs exactly one of within_ms or at.",
                at=f"{place}.deadline",
            )
            return
        if deadline.within_ms is not None:
            if deadline.within_ms <= 0:
                self.flag(
                    "effect/deadline_shape",
                    f"{place}.deadline.within_ms must be a positive integer.",
                    at=f"{place}.deadline.within_ms",
                )
            return
        path = parse_path(deadline.at)
        if isinstance(path, PathError) or path.root != "response":
            self.flag(
                "effect/deadline_path",
                f"{place}.deadline.at must be a response path: '{deadline.at}'.",
                at=f"{place}.deadline.at",
            )
            return
        self.check_path(f"{place}.deadline.at", str(deadline.at), path.root, path.segments, _output_schema(self.op))

    # -- the whole contract ----------------------------------------------------------------------------------

    def run(self) -> None:
        op, e = self.op, self.op.effect
        self.check_class()
        request = _input_schema(op)
        response = _output_schema(op)
        for place, undo in (("inverse", e.inverse), ("compensate", e.compensate)):
            if undo is None:
                continue
            found = self.target(place, undo.operation, "mutation")
            if found is not None:
                self.check_mapping(place, found, undo.arguments, ("request", "response"), request, response)
            self.check_deadline(place, undo.deadline)
        if e.lookup is not None:
            by_key = e.lookup.by == "idempotency_key"
            found = self.target("lookup", e.lookup.operation, "read")
            if by_key and not forwards_idempotency_key(op):
                self.flag(
                    "effect/lookup_without_idempotency_key",
                    "looks its effect up by idempotency key but sends no key upstream; declare its idempotency "
                    "carrier, or look it up by id.",
                    at="lookup.by",
                )
            if by_key and "idempotency_key" not in e.lookup.arguments.values():
                self.flag(
                    "effect/lookup_key_unused",
                    "looks its effect up by idempotency key, but no lookup argument reads idempotency_key.",
                    at="lookup.by",
                )
            if found is not None:
                # A lookup by key exists to replace a lost answer, so it cannot read that answer.
                roots: tuple[PathRoot, ...] = ("request", "idempotency_key") if by_key else ROOTS
                self.check_mapping("lookup", found, e.lookup.arguments, roots, request, response)
        if e.draft is not None:
            self.check_draft(e.draft, request)

    def check_draft(self, draft: Draft, request: JSONObject | None) -> None:
        draft_op = self.target("draft", draft.operation, "mutation")
        if draft_op is not None:
            self.check_mapping("draft", draft_op, draft.arguments, ("request",), request, None)
        handle = parse_path(draft.handle)
        if isinstance(handle, PathError) or handle.root != "response":
            self.flag(
                "effect/draft_handle",
                f"draft.handle must be a response path into the draft's answer: '{draft.handle}'.",
                at="draft.handle",
            )
        elif draft_op is not None:
            self.check_path("draft.handle", draft.handle, handle.root, handle.segments, _output_schema(draft_op))
        draft_response = _output_schema(draft_op) if draft_op is not None else None
        for place, call in (("draft.promote", draft.promote), ("draft.discard", draft.discard)):
            if call is None:
                continue
            found = self.target(place, call.operation, "mutation")
            if found is not None:
                self.check_mapping(place, found, call.arguments, ("request", "response"), request, draft_response)


# --- entry point -------------------------------------------------------------------------------------------


def check_effects(document: Document, application: object | None = None) -> tuple[Document, list[Diagnostic]]:
    """Check every effect contract in ``document``; pure.

    Args:
        document: The AIR after the manifest is applied and input schemas are attached.
        application: The manifest application (``anvil.compiler.overlay.ManifestApplication``) or None.
            Read by attribute, each optional: ``explicit_reversible`` (AIR ids whose own manifest entry
            set ``reversible``), ``effect_locations`` (AIR id -> file, line, column of the ``effect:``
            block), ``effect_positions`` (AIR id -> dotted entry inside that block -> file, line,
            column; a finding about one entry points at it) and ``manifest_file``.

    Returns:
        The document with references pinned, ``reversible`` following each declared class, rejected
        contracts replaced by their fallback and draft confirmation tightened; and the ``effect/*``
        diagnostics in operation order.
    """
    explicit = _explicit_reversible(application)
    locations = getattr(application, "effect_locations", None) or {}
    positions = getattr(application, "effect_positions", None) or {}
    manifest_file = getattr(application, "manifest_file", None)
    operations = _follow_class(pin_effect_references(document.operations), explicit)
    by_id = {op.id: op for op in operations}
    diagnostics: list[Diagnostic] = []
    out: list[Operation] = []
    for op in operations:
        if not op.effect.declares_contract:
            out.append(op)
            continue
        checker = _Checker(
            op=op,
            by_id=by_id,
            schemas=document.schemas,
            where=_where(locations.get(op.id), manifest_file, positions.get(op.id)),
            explicit_reversible=explicit is None or op.id in explicit,
        )
        checker.run()
        errors = checker.errors
        if errors:
            op = _fall_back(op, len(errors), errors[0].message)
        else:
            draft_op = by_id.get(op.effect.draft.operation) if op.effect.draft else None
            if draft_op is not None and draft_op.confirmation.required and not op.confirmation.required:
                checker.flag(
                    "effect/confirmation_for_draft",
                    f"has a draft form ('{draft_op.id}') that needs confirmation, so it now requires confirmation "
                    "itself: a staged call can confirm the draft only through its own confirm input.",
                    at="draft.operation",
                )
                op = _require_confirmation(op, DRAFT_CONFIRM_REASON)
        diagnostics.extend(checker.findings)
        out.append(op)
    return replace(document, operations=tuple(out)), diagnostics


def _explicit_reversible(application: object | None) -> frozenset[str] | None:
    """AIR ids whose manifest entry set ``reversible``; None when unknown (every disagreement is explicit)."""
    if application is None:
        return None
    found = getattr(application, "explicit_reversible", None)
    return frozenset(found) if found is not None else frozenset()


def _follow_class(operations: tuple[Operation, ...], explicit: frozenset[str] | None) -> tuple[Operation, ...]:
    """Set ``reversible`` from a declared class unless the operation's own manifest entry set it."""
    if explicit is None:
        return operations
    out = []
    for op in operations:
        e = op.effect
        if e.class_ is not None and op.id not in explicit and e.reversible != reversible_for_class(e.class_):
            op = replace(op, effect=replace(e, reversible=reversible_for_class(e.class_)))
        out.append(op)
    return tuple(out)


def _where(location: object, manifest_file: object, positions: object = None) -> _Where:
    spots: dict[str, tuple[str, int, int]] = {}
    if isinstance(positions, Mapping):
        for entry, spot in positions.items():
            if isinstance(entry, str) and isinstance(spot, tuple) and len(spot) == 3:
                spots[entry] = (str(spot[0]), int(spot[1]), int(spot[2]))
    if isinstance(location, tuple) and len(location) == 3:
        file, line, column = location
        return _Where(str(file), int(line), int(column), spots)
    return _Where(manifest_file if isinstance(manifest_file, str) else None, positions=spots)


def _fall_back(op: Operation, error_count: int, first_error: str) -> Operation:
    """Serve ``op`` as the worst case: no follow-ups, a review note, and a confirmed mutation."""
    safe: EffectClass = "read" if op.effect.kind == "read" else "irreversible"
    effect = Effect(
        kind=op.effect.kind,
        action=op.effect.action,
        resource=op.effect.resource,
        risk=op.effect.risk,
        reversible=reversible_for_class(safe),
        class_=safe,
    )
    note = (
        f"Effect contract rejected ({error_count} error(s)); served as {safe} with no undo until it is fixed: "
        f"{first_error}"
    )
    notes = op.review_notes if note in op.review_notes else (*op.review_notes, note)
    op = replace(op, effect=effect, review_notes=notes)
    # Confirmation was classified while the contract still promised an undo: an irreversible write confirms.
    return op if op.effect.kind == "read" else _require_confirmation(op, REJECTED_REASON)


def _require_confirmation(op: Operation, reason: str) -> Operation:
    """Make ``op`` require confirmation (keeping its risk and reason) and republish its input schema."""
    if op.confirmation.required:
        return op
    confirmation: Confirmation = replace(
        op.confirmation,
        required=True,
        risk=op.confirmation.risk or op.effect.risk,
        reason=op.confirmation.reason or reason,
    )
    op = replace(op, confirmation=confirmation)
    if op.input.schema is not None:
        op = replace(op, input=replace(op.input, schema=assemble_input_schema(op)))
    return op


def _input_schema(op: Operation) -> JSONObject:
    return op.input.schema if op.input.schema is not None else assemble_input_schema(op)


def _output_schema(op: Operation) -> JSONObject | None:
    if op.output.schema is not None:
        return op.output.schema
    ref = op.output.schema_ref
    if ref:
        return {"$ref": ref if ref.startswith("#") else f"#/components/schemas/{ref}"}
    return None


def _safety_controls(op: Operation) -> frozenset[str]:
    """The caller-owned inputs of ``op`` a contract may not set: confirm (when required) and the key."""
    keys = safety_keys(op)
    out = set()
    if keys.confirm is not None and op.confirmation.required:
        out.add(keys.confirm)
    if keys.idempotency is not None and op.idempotency.mode in KEYED_MODES:
        out.add(keys.idempotency)
    return frozenset(out)
