"""The parsed manifest (``anvil.yaml``, original-core §2) as frozen values.

Field names follow the manifest's snake case. Every value is already validated: enums hold allowed
values, integers are in range, and an argument mapping's sources are strings (paths, not parsed here)
or ``{"const": <JSON>}``. ``None`` means "not stated". Operation entries, effect blocks, workflows
and capability reviews keep the source position of their key so later stages can locate findings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from anvil._dataclass import dataclass
from anvil._types import JSONObject

__all__ = [
    "ApiKeyManifest",
    "AuthManifest",
    "CapabilityReview",
    "CarrierManifest",
    "ConfirmationManifest",
    "DeadlineManifest",
    "DisclosureManifest",
    "DraftManifest",
    "EffectManifest",
    "FollowUpManifest",
    "IdempotencyManifest",
    "Location",
    "LookupManifest",
    "Manifest",
    "NameManifest",
    "OperationManifest",
    "ProviderManifest",
    "RetriesManifest",
    "ServiceManifest",
    "StepCallManifest",
    "WorkflowManifest",
    "WorkflowStepManifest",
]


@dataclass(frozen=True, slots=True)
class Location:
    """A position in the manifest file (1-based line and column)."""

    file: str
    line: int
    column: int

    def as_tuple(self) -> tuple[str, int, int]:
        """``(file, line, column)``."""
        return (self.file, self.line, self.column)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceManifest:
    """``service:``: identity and display metadata.

    ``deployment_namespace`` keys deployment resources and ledger coordinates (never the service id);
    ``anvil compile --deployment-namespace`` overrides it. ``list_effect_class`` says which listed tools
    carry their effect class in ``_meta``: ``declared`` (the default, ADR-0030 §4: only operations that
    declare an effect contract) or ``all`` (every tool, undeclared ones with their default class).
    ``propagate_trace: true`` sends each upstream attempt a W3C ``traceparent`` (default off: for hosts
    outside the operator's own estate a trace id is information they need not have).
    """

    name: str | None = None
    display_name: str | None = None
    owner: str | None = None
    environment: str | None = None
    deployment_namespace: str | None = None
    list_effect_class: str | None = None
    propagate_trace: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DisclosureManifest:
    """``disclosure:``: what one listed tool may cost an agent (AIR ``disclosure``; None: the default).

    ``tool_budget_tokens`` bounds the whole tool in estimated tokens (default 1200);
    ``output_schema_percent`` bounds what its ``outputSchema`` adds to the rest of it (default 20);
    ``pinned`` lists the operations (ids, ids without the service, tool names, or globs of them) whose
    tools stay listed when ``anvil serve`` searches or ladders the surface.
    """

    tool_budget_tokens: int | None = None
    output_schema_percent: int | None = None
    pinned: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CarrierManifest:
    """``auth.carrier``: where the credential travels."""

    in_: str
    name: str
    scheme: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKeyManifest:
    """``auth.provider.api_key``: an API key's carrier."""

    in_: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderManifest:
    """``auth.provider``: token-acquisition mechanics (never a secret)."""

    token_endpoint: str | None = None
    grant: str | None = None
    client_auth: str | None = None
    resource: str | None = None
    subject_token_type: str | None = None
    requested_token_type: str | None = None
    api_key: ApiKeyManifest | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthManifest:
    """Service-wide (§2.2) or operation-level (§2.3) auth. ``scopes`` is service-wide only.

    ``scheme`` chooses one of the spec's ``securitySchemes`` for the operations that offer it;
    ``override: true`` (with its ``reason``) is a reviewed override: the scheme may be one the
    operation does not offer, and ``type`` may serve it as another executable type. ``location`` is
    where the ``scheme`` key (else the block) stands.
    """

    type: str | None = None
    scheme: str | None = None
    override: bool | None = None
    reason: str | None = None
    scopes: tuple[str, ...] | None = None
    credential_profile: str | None = None
    principal: str | None = None
    issuer: str | None = None
    audience: str | None = None
    carrier: CarrierManifest | None = None
    secret_source: str | None = None
    tenant: str | None = None
    actor: str | None = None
    subject: str | None = None
    provider: ProviderManifest | None = None
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class NameManifest:
    """``name:``: re-home the routing names (the AIR id never changes)."""

    resource: str | None = None
    verb: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class IdempotencyManifest:
    """``idempotency:`` (§2.4); applied only when ``strategy`` is given."""

    strategy: str | None = None
    key_location: str | None = None
    header: str | None = None
    parameter: str | None = None
    field: str | None = None

    @property
    def key(self) -> str | None:
        """The key name for ``key_location`` (header, parameter or field), else the first one given."""
        by_location = {"header": self.header, "query": self.parameter, "path": self.parameter, "body": self.field}
        if self.key_location is not None:
            return by_location[self.key_location]
        return self.header or self.parameter or self.field


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmationManifest:
    """``confirmation:`` (§2.6)."""

    required: bool | None = None
    risk: str | None = None
    reason: str | None = None
    human_approval: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RetriesManifest:
    """``retries:`` (§2.5). ``only_on`` is already normalized to AIR retry conditions."""

    enabled: bool | None = None
    only_on: tuple[str, ...] | None = None
    max_attempts: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeadlineManifest:
    """``deadline:``; the shape rule (exactly one of the two) is the effect checker's."""

    within_ms: int | None = None
    at: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FollowUpManifest:
    """``inverse:`` / ``compensate:``. ``operation`` is the reference as written."""

    operation: str
    arguments: JSONObject = field(default_factory=dict)
    deadline: DeadlineManifest | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LookupManifest:
    """``lookup:``."""

    operation: str
    by: str
    arguments: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class StepCallManifest:
    """``draft.promote`` / ``draft.discard``."""

    operation: str
    arguments: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class DraftManifest:
    """``draft:``."""

    operation: str
    arguments: JSONObject = field(default_factory=dict)
    handle: str
    promote: StepCallManifest
    discard: StepCallManifest | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EffectManifest:
    """An operation's ``effect:`` block (ADR-0030; original-gateway §2.2).

    ``location`` is the ``effect:`` key; ``positions`` maps a dotted path inside the block
    (``"inverse"``, ``"inverse.arguments.comment_id"``, ``"draft.promote.operation"``) to its value's
    position, for diagnostics about one piece.
    """

    class_: str | None = None
    inverse: FollowUpManifest | None = None
    compensate: FollowUpManifest | None = None
    lookup: LookupManifest | None = None
    draft: DraftManifest | None = None
    location: Location | None = field(default=None, compare=False)
    positions: Mapping[str, Location] = field(default_factory=dict, compare=False)

    def to_json(self) -> JSONObject:
        """The block as JSON in manifest spelling (what the ``effectContract`` predicate carries)."""
        out: JSONObject = {}
        if self.class_ is not None:
            out["class"] = self.class_
        for name in ("inverse", "compensate"):
            follow: FollowUpManifest | None = getattr(self, name)
            if follow is not None:
                item: JSONObject = {"operation": follow.operation, "arguments": dict(follow.arguments)}
                if follow.deadline is not None:
                    item["deadline"] = {
                        k: v
                        for k, v in (("within_ms", follow.deadline.within_ms), ("at", follow.deadline.at))
                        if v is not None
                    }
                out[name] = item
        if self.lookup is not None:
            out["lookup"] = {
                "operation": self.lookup.operation,
                "by": self.lookup.by,
                "arguments": dict(self.lookup.arguments),
            }
        if self.draft is not None:
            draft: JSONObject = {
                "operation": self.draft.operation,
                "arguments": dict(self.draft.arguments),
                "handle": self.draft.handle,
                "promote": {"operation": self.draft.promote.operation, "arguments": dict(self.draft.promote.arguments)},
            }
            if self.draft.discard is not None:
                draft["discard"] = {
                    "operation": self.draft.discard.operation,
                    "arguments": dict(self.draft.discard.arguments),
                }
            out["draft"] = draft
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class OperationManifest:
    """One ``operations.<key>`` entry (§2.3). ``key`` is as written (id, canonical name or operationId)."""

    key: str
    location: Location
    side_effect: str | None = None
    risk: str | None = None
    reversible: bool | None = None
    action: str | None = None
    display_name: str | None = None
    description: str | None = None
    name: NameManifest | None = None
    auth: AuthManifest | None = None
    idempotency: IdempotencyManifest | None = None
    confirmation: ConfirmationManifest | None = None
    retries: RetriesManifest | None = None
    state: str | None = None
    effect: EffectManifest | None = None
    #: ``inputs:``: wire input (``StartTime<``, or ``body:id`` to pick a location) -> its public name
    inputs: Mapping[str, str] | None = None
    #: ``credential_hosts:``: hosts besides the service's the operation's credential may go to (its own
    #: server's), each a host name or IP address, lower-cased
    credential_hosts: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowStepManifest:
    """One workflow step; ``operation`` is the reference as written."""

    operation: str
    location: Location
    description: str | None = None
    optional: bool = False
    bindings: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowManifest:
    """One ``workflows.<key>`` entry (§2.7)."""

    key: str
    location: Location
    display_name: str | None = None
    description: str | None = None
    capability: str | None = None
    intent_examples: tuple[str, ...] = ()
    human_approval: bool | None = None
    rollback: str | None = None
    state: str | None = None
    steps: tuple[WorkflowStepManifest, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityReview:
    """One ``capabilities.<id>`` review (§2.8)."""

    capability_id: str
    location: Location
    state: str
    note: str | None = None
    allow_large: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Manifest:
    """A whole parsed manifest. Tuples keep the file's order."""

    file: str
    service: ServiceManifest = field(default_factory=ServiceManifest)
    auth: AuthManifest | None = None
    disclosure: DisclosureManifest | None = None
    operations: tuple[OperationManifest, ...] = ()
    workflows: tuple[WorkflowManifest, ...] = ()
    capabilities: tuple[CapabilityReview, ...] = ()

    def operation(self, key: str) -> OperationManifest | None:
        """The entry written under ``key``, if any."""
        for entry in self.operations:
            if entry.key == key:
                return entry
        return None
