"""The manifest's auth scheme choice: serve operations through one scheme their spec offers.

A spec often offers alternatives (``[{basicAuth: []}, {OAuth2: [...]}, {}]``) the compiler will not
choose between by itself, or only a scheme the runtime cannot execute (an end-user
``authorizationCode`` flow). The reviewer chooses in the manifest: ``auth.scheme`` (service-wide) or
``operations.<key>.auth.scheme`` names one of ``components.securitySchemes``, and every operation
that offers that scheme on its own (as one of its ``security`` alternatives) gets the auth it would
get if the spec offered only that scheme. Choosing among what the spec offers loosens nothing; what
goes beyond it is explicit:

* a scheme the spec does not declare is ``manifest/auth_scheme_unknown``; a scheme an operation entry
  names that its operation does not offer is ``manifest/auth_scheme_not_offered``, naming the ones it
  does (service-wide, an operation that does not offer the scheme keeps its declared auth);
* serving a scheme as another ``type`` than the spec's (a static bearer token for an
  ``authorizationCode`` flow whose tokens the operator obtains out of band), or, in an operation
  entry, a declared scheme its operation does not offer, is a reviewed override: it needs
  ``override: true`` and a ``reason``, is reported as an ``auth/override`` warning and leaves a review
  note on each operation; a different ``type`` without the marker is
  ``manifest/auth_override_unmarked`` and nothing of the block is applied;
* a scheme that appears only together with others (one requirement naming several schemes) is never
  chosen, not even by override: that would drop a factor the upstream checks;
* service-wide, a choice never reaches an operation that does not offer the scheme (an anonymous one
  stays anonymous): that is one operation entry's reviewed decision.

Each choice reports, as ``auth/scheme_chosen``, how many operations it serves and which of them its
choice unblocked.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import field, replace
from typing import Final

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.air.enums import OperationState
from anvil.air.model import Operation, auth_type_label
from anvil.compiler.auth import AuthIssue, offered_schemes, resolve_auth, resolve_scheme
from anvil.compiler.manifest.apply import OperationIndex
from anvil.compiler.manifest.auth import (
    AuthFields,
    apply_auth_fields,
    auth_coherence_issues,
    enriched_claim,
    with_claim,
)
from anvil.compiler.manifest.model import AuthManifest, Location, Manifest
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = ["SchemeChoices", "choose_auth_schemes", "service_auth_without_choice"]

_SHOWN_IDS: Final = 5
_BEARER_HINT: Final = (
    "If the operator obtains its tokens out of band, serve it as a static bearer token: type: bearer, "
    "override: true and a reason."
)


@dataclass(frozen=True, slots=True)
class SchemeChoices:
    """The operations after every scheme choice, the diagnostics, the indexes whose auth was chosen,
    and those two manifest entries choose differently for (blocked; the caller blocks them again once
    the overlay has applied approvals)."""

    operations: tuple[Operation, ...]
    diagnostics: tuple[Diagnostic, ...]
    chosen: frozenset[int]
    contested: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class _Choice:
    """One ``auth`` block that names a scheme: the service's (``label`` ``auth``) or an entry's."""

    label: str
    auth: AuthManifest
    service: bool

    @property
    def scheme(self) -> str:
        return self.auth.scheme or ""

    @property
    def key(self) -> tuple[str | None, ...]:
        """What two entries naming one operation must agree on."""
        auth = self.auth
        return (auth.scheme, auth.type, str(bool(auth.override)), auth.reason)


@dataclass(slots=True)
class _Tally:
    """What one choice did, for its ``auth/scheme_chosen`` info (operation ids in discovery order)."""

    served: list[str] = field(default_factory=list)
    types: dict[str, None] = field(default_factory=dict)  # the auth types served, in order
    unblocked: list[str] = field(default_factory=list)
    blocked: dict[str, str] = field(default_factory=dict)  # id -> why it stays blocked
    overridden: list[str] = field(default_factory=list)
    not_offered: int = 0
    end_user: bool = False


def service_auth_without_choice(manifest: Manifest) -> Manifest:
    """``manifest`` with the service ``auth.type`` removed when the block chooses a scheme.

    With a scheme, ``type`` says how that scheme is served; it is not also a default for the
    operations the spec leaves anonymous.
    """
    auth = manifest.auth
    if auth is None or auth.scheme is None or auth.type is None:
        return manifest
    return replace(manifest, auth=replace(auth, type=None))


def _diag(
    code: str, message: str, where: Location | None, *, operation: str | None = None, hint: str | None = None
) -> Diagnostic:
    return diagnostic(
        code,
        message,
        operation=operation,
        file=where.file if where else None,
        line=where.line if where else None,
        column=where.column if where else None,
        hint=hint,
    )


def _choices(
    operations: Sequence[Operation], manifest: Manifest, found: list[Diagnostic]
) -> tuple[dict[int, _Choice], set[int]]:
    """Which choice applies to which operation index (an entry's before the service's), and the
    indexes two entries contest (blocked, nothing chosen)."""
    index = OperationIndex(operations)
    position = {op.id: i for i, op in enumerate(operations)}
    by_op: dict[int, _Choice] = {}
    contested: set[int] = set()
    for entry in manifest.operations:
        if entry.auth is None or entry.auth.scheme is None:
            continue
        matches = index.match(entry.key)
        if len(matches) != 1:
            continue  # the overlay reports a key naming no operation, or several
        at = position[matches[0]]
        choice = _Choice(f"operations.{entry.key}.auth", entry.auth, service=False)
        earlier = by_op.get(at)
        if earlier is not None and earlier.key != choice.key and at not in contested:
            contested.add(at)
            found.append(
                _diag(
                    "overlay/conflict",
                    f"Contested auth.scheme on '{operations[at].id}': {earlier.scheme!r} ({earlier.label}) vs "
                    f"{choice.scheme!r} ({choice.label}); the operation is blocked.",
                    choice.auth.location,
                    operation=operations[at].id,
                    hint="Choose its scheme in one manifest entry.",
                )
            )
        by_op.setdefault(at, choice)
    service = manifest.auth
    if service is not None and service.scheme is not None:
        everyone = _Choice("auth", service, service=True)
        for at in range(len(operations)):
            by_op.setdefault(at, everyone)
    for at in contested:
        del by_op[at]
    return by_op, contested


def _offered_text(offered: dict[str, tuple[str, ...]], requirements: JSONValue) -> str:
    together = [
        "+".join(str(name) for name in requirement)
        for requirement in (requirements if isinstance(requirements, list) else [])
        if isinstance(requirement, dict) and len(requirement) > 1
    ]
    parts = [*offered, *(f"{names} (together)" for names in together)]
    return ", ".join(parts) if parts else "no credential (the operation is anonymous)"


def _only_composite(requirements: JSONValue) -> bool:
    """True when every credentialed alternative needs several schemes at once."""
    alternatives = [r for r in requirements if isinstance(r, dict) and r] if isinstance(requirements, list) else []
    return bool(alternatives) and all(len(r) > 1 for r in alternatives)


class _Chooser:
    def __init__(self, schemes: JSONValue, base_url: str | None) -> None:
        self.table = schemes if isinstance(schemes, dict) else {}
        self.base_url = base_url
        self.found: list[Diagnostic] = []
        self.refused: set[str] = set()

    def valid(self, choice: _Choice) -> bool:
        """Checks that hold for the whole block (reported once): a declared scheme, a marked type change."""
        if choice.label in self.refused:
            return False
        where = choice.auth.location
        problem: Diagnostic | None = None
        if choice.scheme not in self.table:
            declared = sorted(str(name) for name in self.table)
            close = difflib.get_close_matches(choice.scheme, declared, n=1, cutoff=0.6)
            problem = _diag(
                "manifest/auth_scheme_unknown",
                f"{choice.label}.scheme {choice.scheme!r} is not a security scheme of the spec "
                f"(it declares: {', '.join(declared) or 'none'}); nothing was applied.",
                where,
                hint=f"Did you mean '{close[0]}'?" if close else "Name one of components.securitySchemes.",
            )
        else:
            own = resolve_scheme(choice.scheme, self.table, (), self.base_url).auth.type
            if choice.auth.type is not None and choice.auth.type != own and not choice.auth.override:
                problem = _diag(
                    "manifest/auth_override_unmarked",
                    f"{choice.label}: the spec's scheme {choice.scheme!r} is {own}; serving it as "
                    f"{choice.auth.type} overrides the spec; nothing was applied.",
                    where,
                    hint="Mark a reviewed override with override: true and a reason, or remove type.",
                )
        if problem is not None:
            self.refused.add(choice.label)
            self.found.append(problem)
            return False
        return True

    def apply(self, op: Operation, requirements: JSONValue, choice: _Choice, tally: _Tally) -> Operation:
        """``op`` served through ``choice`` (or unchanged, counted or reported, when it may not be)."""
        offered = offered_schemes(requirements)
        override = bool(choice.auth.override)
        if choice.scheme not in offered:
            if choice.service:  # service-wide, a choice serves only the operations that offer it
                tally.not_offered += 1
                return op
            if not override or _only_composite(requirements):
                self._not_offered(op, requirements, offered, choice)
                return op
        resolution = resolve_scheme(choice.scheme, self.table, offered.get(choice.scheme, ()), self.base_url)
        auth, issues = resolution.auth, resolution.issues
        retyped = choice.auth.type is not None and choice.auth.type != auth.type
        if retyped:
            # A reviewed type change replaces how the spec's scheme is executed, and so its findings.
            auth, issues = apply_auth_fields(auth, AuthFields(type=choice.auth.type)), ()
        overriding = retyped or choice.scheme not in offered
        was_blocked = op.state == "blocked" or bool(auth_coherence_issues(op.auth))
        incoherent = auth_coherence_issues(auth)
        notes = self._notes(op, requirements, issues, incoherent)
        if overriding:
            notes.append(
                f"Auth override (reviewed): scheme {choice.scheme} served as {auth_type_label(auth.type)}: "
                f"{(choice.auth.reason or '').strip().rstrip('.')}."
            )
            tally.overridden.append(op.id)
        blocks = any(issue.blocks for issue in issues) or bool(incoherent)
        state: OperationState = "blocked" if blocks else "review_required" if issues or overriding else "generated"
        out = with_claim(replace(op, auth=auth, state=state, review_notes=tuple(notes)), enriched_claim(op.id))
        tally.served.append(op.id)
        tally.types[auth.type] = None
        if blocks:
            first = next((issue.message for issue in issues if issue.blocks), None)
            tally.blocked.setdefault(op.id, first or incoherent[0])
            tally.end_user = tally.end_user or auth.type == "oauth2_authorization_code"
        elif was_blocked:
            tally.unblocked.append(op.id)
        return out

    def _notes(
        self, op: Operation, requirements: JSONValue, issues: Sequence[AuthIssue], incoherent: Sequence[str]
    ) -> list[str]:
        """The review notes with the source auth findings replaced by the chosen scheme's."""
        prefix = f"{(op.source_ref.method or '').upper()} {op.source_ref.path}: "
        stale = {prefix + issue.message for issue in resolve_auth(requirements, self.table, self.base_url).issues}
        notes = [note for note in op.review_notes if note not in stale]
        notes.extend(prefix + issue.message for issue in issues)
        notes.extend(f"Auth contract blocked: {issue}." for issue in incoherent)
        return list(dict.fromkeys(notes))

    def _not_offered(
        self, op: Operation, requirements: JSONValue, offered: dict[str, tuple[str, ...]], choice: _Choice
    ) -> None:
        factor = _only_composite(requirements)
        why = (
            "every alternative needs several schemes at once and a manifest cannot remove a factor"
            if factor
            else "serving a scheme the spec does not offer is a reviewed override"
        )
        self.found.append(
            _diag(
                "manifest/auth_scheme_not_offered",
                f"{choice.label}.scheme {choice.scheme!r}: '{op.id}' does not offer it ({why}); it offers "
                f"{_offered_text(offered, requirements)}; nothing was applied.",
                choice.auth.location,
                operation=op.id,
                hint=None if factor else "Choose one it offers, or mark an override: override: true and a reason.",
            )
        )


def _shown(ids: Sequence[str]) -> str:
    head = ", ".join(ids[:_SHOWN_IDS])
    return head + (f" and {len(ids) - _SHOWN_IDS} more" if len(ids) > _SHOWN_IDS else "")


def _outcome(service: bool, tally: _Tally) -> list[str]:
    """What the choice did to the blocked state of the operations it serves, as message parts."""
    reason = next(iter(tally.blocked.values()), "")
    if not service:
        if tally.unblocked:
            return ["it was blocked by its declared auth and no longer is"]
        return [f"it remains blocked ({reason})"] if tally.blocked else ["it was not blocked by its auth"]
    parts = [
        f"it unblocked {len(tally.unblocked)} ({_shown(tally.unblocked)})" if tally.unblocked else "it unblocked none"
    ]
    if tally.blocked:
        parts.append(f"{len(tally.blocked)} remain blocked ({reason})")
    return parts


def _report(choice: _Choice, tally: _Tally, found: list[Diagnostic]) -> None:
    """The ``auth/scheme_chosen`` info (and ``auth/override`` warning) of one choice."""
    where = choice.auth.location
    operation = tally.served[0] if not choice.service and tally.served else None
    if choice.service and not tally.served:
        found.append(
            _diag(
                "manifest/auth_scheme_not_offered",
                f"auth.scheme {choice.scheme!r} (service-wide) is offered by no operation on its own; nothing "
                "was applied.",
                where,
                hint="Choose a scheme the operations offer, or mark an override: override: true and a reason.",
            )
        )
        return
    if not tally.served:
        return
    kinds = "/".join(auth_type_label(kind) for kind in tally.types)
    count = len(tally.served)
    subject = f"{count} operation{'s' if count != 1 else ''}" if choice.service else f"'{tally.served[0]}'"
    parts = [f"{subject} {'are' if choice.service and count != 1 else 'is'} served through it as {kinds}"]
    parts.extend(_outcome(choice.service, tally))
    if tally.not_offered:
        parts.append(f"{tally.not_offered} do not offer it and keep their declared auth")
    found.append(
        _diag(
            "auth/scheme_chosen",
            f"{choice.label}.scheme {choice.scheme!r}{' (service-wide)' if choice.service else ''}: "
            + "; ".join(parts)
            + ".",
            where,
            operation=operation,
            hint=_BEARER_HINT if tally.end_user else None,
        )
    )
    if tally.overridden:
        found.append(
            _diag(
                "auth/override",
                f"{choice.label}: reviewed override of the spec's auth: scheme {choice.scheme!r} served as {kinds} "
                f"for {_shown(tally.overridden)}; reason: {choice.auth.reason}",
                where,
                operation=operation,
                hint="The operations are served unlike the spec says; keep the reason current.",
            )
        )


def choose_auth_schemes(
    operations: Sequence[Operation],
    manifest: Manifest,
    security: Sequence[JSONValue],
    schemes: JSONValue,
    base_url: str | None = None,
) -> SchemeChoices:
    """Apply the manifest's ``auth.scheme`` choices (service-wide, then per operation entry).

    Args:
        operations: the normalized operations (in discovery order, names repaired).
        manifest: the parsed manifest.
        security: each operation's effective source ``security`` list, by index.
        schemes: ``components.securitySchemes``.
        base_url: the absolute server URL a relative OAuth2 ``tokenUrl`` resolves against.

    Returns:
        The operations in order, the diagnostics, and the indexes whose auth a choice replaced.
    """
    found: list[Diagnostic] = []
    by_op, contested = _choices(operations, manifest, found)
    if not by_op:
        return SchemeChoices(tuple(operations), tuple(found), frozenset(), frozenset(contested))
    chooser = _Chooser(schemes, base_url)
    out = list(operations)
    tallies: dict[str, tuple[_Choice, _Tally]] = {}
    chosen: set[int] = set()
    for at in sorted(by_op):
        choice = by_op[at]
        if not chooser.valid(choice):
            continue
        _, tally = tallies.setdefault(choice.label, (choice, _Tally()))
        requirements = security[at] if at < len(security) else None
        out[at] = chooser.apply(operations[at], requirements, choice, tally)
        if out[at] is not operations[at]:
            chosen.add(at)
    found.extend(chooser.found)
    ordered = sorted(tallies.values(), key=lambda item: (not item[0].service, item[0].label))
    for choice, tally in ordered:
        _report(choice, tally, found)
    return SchemeChoices(tuple(out), tuple(found), frozenset(chosen), frozenset(contested))
