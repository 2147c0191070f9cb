"""The AIR model: frozen dataclasses, serialized in declaration order (original-core §1).

Field names are Python snake case; :mod:`anvil.air.codec` writes them in camel case (or the name in
``metadata["json"]``) and omits optional fields whose value is ``None``. Free-form JSON (JSON Schemas,
argument mappings, examples) is kept as plain ``dict``/``list`` values and must be treated as
immutable. Change a node with :func:`dataclasses.replace`.
"""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any, Final, Literal

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.enums import (
    Action,
    AuthPrincipal,
    AuthType,
    Backoff,
    EffectClass,
    EffectKind,
    ErrorCode,
    IdempotencyMechanism,
    IdempotencyMode,
    KeyDerivation,
    ListEffectClass,
    LookupBy,
    OperationState,
    ParamLocation,
    RetryBasis,
    RetryCondition,
    RetryMode,
    RiskLevel,
    SecretSource,
)

__all__ = [
    "ANVIL_VERSION",
    "ApiKeyCarrier",
    "Auth",
    "AuthCarrier",
    "AuthProvider",
    "BodyField",
    "Capability",
    "Claim",
    "ClaimRelation",
    "Cli",
    "Confirmation",
    "Deadline",
    "Delegation",
    "DisclosureBudget",
    "DisclosureCost",
    "Document",
    "Draft",
    "Effect",
    "ErrorSpec",
    "ErrorUpstream",
    "Evidence",
    "FollowUp",
    "Idempotency",
    "Input",
    "Lookup",
    "Mcp",
    "Operation",
    "Output",
    "Pagination",
    "Param",
    "Recovery",
    "RequestBody",
    "RetryPolicy",
    "Server",
    "Service",
    "Skill",
    "Source",
    "SourceOrigin",
    "SourceRef",
    "StepCall",
    "Workflow",
    "WorkflowStep",
    "auth_label",
    "auth_type_label",
    "credential_parts",
]

ANVIL_VERSION = "0.1.0"
#: The ``_<32 hex>`` a compiled credential profile ends in (the scheme name's hash).
_PROFILE_HASH: Final = re.compile(r"_[0-9a-f]{32}$")


def _json(name: str) -> Any:
    """Field metadata naming the JSON key explicitly (for keywords and odd spellings)."""
    return {"json": name}


# --- service ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceOrigin:
    """Where an imported source snapshot was taken from (the original writes it; we keep it)."""

    kind: str
    uri: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """Where the AIR came from. ``uri`` is the path as given to compile (never made absolute)."""

    kind: str
    uri: str | None = None
    snapshot_id: str | None = None
    source_hash: str | None = None
    origin: SourceOrigin | None = None
    entrypoint: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthCarrier:
    """Where a credential travels on the wire."""

    in_: str = field(metadata=_json("in"))
    name: str
    scheme: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiKeyCarrier:
    """Where an API key travels: ``in`` (header, query or cookie) under ``name``."""

    in_: str = field(metadata=_json("in"))
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthProvider:
    """How a credential is obtained from a token endpoint (grant, client authentication, exchanged token types)."""

    token_endpoint: str | None = None
    grant: str | None = None
    client_auth: str | None = None
    resource: str | None = None
    subject_token_type: str | None = None
    requested_token_type: str | None = None
    api_key: ApiKeyCarrier | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Delegation:
    """On whose behalf a delegated call acts: the actor and the subject."""

    actor: str | None = None
    subject: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Auth:
    """An operation's (or the service's) auth requirement (original-core §1.11).

    A ``composite`` auth is one OpenAPI security requirement naming several schemes at once (AND): its
    ``factors`` are each scheme resolved as if alone, in requirement order, and every call sends every
    factor's credential. ``factors`` is None on every other type (so the codec omits it).
    """

    type: AuthType = "none"
    scopes: tuple[str, ...] = ()
    credential_profile: str | None = None
    principal: AuthPrincipal = "service"
    issuer: str | None = None
    audience: str | None = None
    carrier: AuthCarrier | None = None
    secret_source: SecretSource = "env"
    delegation: Delegation | None = None
    tenant: str | None = None
    provider: AuthProvider | None = None
    factors: tuple[Auth, ...] | None = None


NO_AUTH = Auth(type="none", principal="anonymous", secret_source="none")


def auth_label(auth: Auth) -> str:
    """How listings show ``auth``: its type; a composite with its factors, each by its credential profile's
    stem (the snake-cased scheme name), e.g. ``composite (client_id + secret + plaid_version)``."""
    if auth.type != "composite":
        return auth.type
    stems = [_PROFILE_HASH.sub("", part.credential_profile or "") or part.type for part in credential_parts(auth)]
    return f"composite ({' + '.join(stems)})" if stems else "composite (no factors)"


#: How an auth type reads to a person where the AIR name misleads: ``jwt_bearer`` is AIR's name for
#: any static bearer token (the manifest's ``type: bearer``, an ``http bearer`` scheme), not a JWT grant.
_TYPE_WORDS: Final = {"jwt_bearer": "bearer (AIR type jwt_bearer)"}


def auth_type_label(kind: str) -> str:
    """``kind`` as messages written for a person say it: ``bearer (AIR type jwt_bearer)`` for a static
    bearer token, every other type as its AIR name."""
    return _TYPE_WORDS.get(kind, kind)


def credential_parts(auth: Auth) -> tuple[Auth, ...]:
    """The auths whose credentials a call sends: a composite's factors (none when it has none), else
    ``auth`` itself. Every place that reads, lists, carries or masks a credential goes through this."""
    if auth.type == "composite":
        return auth.factors or ()
    return (auth,)


@dataclass(frozen=True, slots=True, kw_only=True)
class Server:
    """A server URL template; ``variables`` (``{name: {default, enum?, description?}}``, kept as the spec
    declares them, omitted when it declares none) fill its ``{name}`` placeholders (see
    :mod:`anvil.air.servers`)."""

    url: str
    description: str | None = None
    variables: JSONObject | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Service:
    """The service an AIR document describes: id, version, names, source, auth, servers and service-wide settings."""

    id: str
    version: str
    display_name: str
    owner: str | None = None
    environment: str | None = None
    source: Source = field(default_factory=lambda: Source(kind="openapi"))
    auth: Auth = NO_AUTH
    servers: tuple[Server, ...] = ()
    #: Which listed tools carry ``anvil/effect_class``: None (ADR-0030 §4: only those that declare an
    #: effect contract) or ``all`` (the manifest's ``service.list_effect_class: all``).
    list_effect_class: ListEffectClass | None = None
    #: True when each upstream attempt carries a W3C ``traceparent`` naming its span (the manifest's
    #: ``service.propagate_trace: true``; only for hosts inside the operator's own estate). None: not sent.
    propagate_trace: bool | None = None


# --- effect and its contract (ADR-0030) -----------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Deadline:
    """Exactly one of ``within_ms`` (from the answer) or ``at`` (a ``response.*`` path)."""

    within_ms: int | None = None
    at: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FollowUp:
    """An inverse or compensating call: target AIR id and argument mapping (target input -> source)."""

    operation: str
    arguments: JSONObject = field(default_factory=dict)
    deadline: Deadline | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StepCall:
    """A draft's promote/discard call."""

    operation: str
    arguments: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Lookup:
    """How to find out what a write did (ADR-0030 ``effect.lookup``): the read, matched by what, with what."""

    operation: str
    by: LookupBy
    arguments: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Draft:
    """A write's staged form (ADR-0030 ``effect.draft``): the draft operation, arguments, handle, promote, discard."""

    operation: str
    arguments: JSONObject = field(default_factory=dict)
    handle: str = ""
    promote: StepCall | None = None
    discard: StepCall | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Effect:
    """The safety core. ``kind`` drives retries, confirmation and the ledger; the rest describes."""

    kind: EffectKind
    action: Action = "other"
    resource: str | None = None
    risk: RiskLevel = "low"
    reversible: bool = True
    class_: EffectClass | None = field(default=None, metadata=_json("class"))
    inverse: FollowUp | None = None
    compensate: FollowUp | None = None
    lookup: Lookup | None = None
    draft: Draft | None = None

    @property
    def declares_contract(self) -> bool:
        """True when any ADR-0030 field is declared."""
        return any(v is not None for v in (self.class_, self.inverse, self.compensate, self.lookup, self.draft))


# --- inputs and outputs -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Param:
    """A wire parameter. ``name`` is the wire name and is never rewritten."""

    name: str
    agent_name: str | None = None
    aliases: tuple[str, ...] | None = None
    in_: ParamLocation = field(metadata=_json("in"))
    required: bool = False
    schema: JSONObject = field(default_factory=lambda: {"type": "string"})
    description: str | None = None
    example: JSONValue = None
    inferred: bool = False
    cli_flag: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BodyField:
    """One top-level field of a request body, as the agent names it (aliases, requiredness, schema)."""

    name: str
    agent_name: str | None = None
    aliases: tuple[str, ...] | None = None
    required: bool = False
    schema: JSONObject = field(default_factory=dict)
    description: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestBody:
    """The request body: media type, requiredness, schema, how it is projected to inputs, and its fields."""

    content_type: str = "application/json"
    required: bool = False
    schema: JSONObject = field(default_factory=dict)
    projection: str = "whole"
    fields: tuple[BodyField, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Input:
    """What a call takes: its parameters, request body and the merged input schema."""

    params: tuple[Param, ...] = ()
    body: RequestBody | None = None
    schema: JSONObject | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Output:
    """What a call answers: the response schema (or its reference), a description and the agent projection."""

    schema_ref: str | None = None
    schema: JSONObject | None = None
    description: str | None = None
    agent_projection: JSONValue = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorUpstream:
    """The upstream HTTP status and error code an :class:`ErrorSpec` maps."""

    http_status: int | None = None
    code: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Recovery:
    """What a caller does about an error: the action and the field it concerns."""

    action: str
    field_path: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorSpec:
    """One error the operation can answer: its code, the upstream status or code it maps, and how to recover."""

    code: ErrorCode
    upstream: ErrorUpstream | None = None
    message: str | None = None
    retryable: bool | None = None
    safe_to_retry: bool | None = None
    recovery: Recovery | None = None


# --- safety postures ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Idempotency:
    """How a call is made safe to repeat: the mode, the mechanism, the key input and how a key is derived."""

    mode: IdempotencyMode
    mechanism: IdempotencyMechanism = "none"
    key: str | None = None
    key_derivation: KeyDerivation = "none"


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """When and how often a call is retried: mode, basis, attempts, backoff, delays and the conditions retried on."""

    mode: RetryMode
    basis: RetryBasis = "unproven"
    max_attempts: int = 1
    backoff: Backoff = "none"
    base_delay_ms: int = 200
    max_delay_ms: int = 20000
    retry_on: tuple[RetryCondition, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Confirmation:
    """Whether a call needs the caller's explicit ``confirm``, at what risk, why, and whether a human approves."""

    required: bool = False
    risk: RiskLevel | None = None
    reason: str | None = None
    human_approval: bool | None = None


# --- surfaces, provenance and evidence ---------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceRef:
    """Where a node comes from in the source spec (file, method and path, operation id, JSON pointer)."""

    kind: str = "openapi"
    path: str | None = None
    method: str | None = None
    operation_id: str | None = None
    pointer: str | None = None
    uri: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Cli:
    """The operation's generated CLI command and its aliases."""

    command: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Mcp:
    """The operation's MCP tool name."""

    tool_name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Skill:
    """What the operation is for, in examples of what an agent is asked (the skill package's intents)."""

    intent_examples: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimRelation:
    """How a claim bears on another (``supports``, ``contradicts``, ``supersedes``)."""

    type: str
    target: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """One piece of evidence for a predicate (original-core §1.13).

    We write the fields up to ``confidence``; the rest exist so an ``air.json`` written by the
    original (``sourceRef``, ``reliability``, ``relation``...) loads and keeps them.
    """

    id: str | None = None
    subject: str
    predicate: str
    value: JSONValue = None
    source: str
    source_ref: JSONValue = None
    source_revision: str | None = None
    method: str | None = None
    confidence: float
    reliability: float | None = None
    timestamp: str | None = None
    relation: ClaimRelation | None = None
    review: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """The claims recorded about an operation or workflow."""

    claims: tuple[Claim, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Pagination:
    """How a read pages (original-core §1.3, §3.4): the continuation input and where items and the next token are."""

    style: Literal["cursor", "page", "offset", "link"]
    cursor_param: str | None = None
    next_field: str | None = None
    items_field: str | None = None
    page_size_param: str | None = None
    max_page_size: int | None = None
    default_page_size: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DisclosureBudget:
    """What one listed tool may cost an agent (the manifest's ``disclosure:``; see :mod:`anvil.air.surface`).

    Attributes:
        tool_budget_tokens: the whole tool, in estimated tokens (``chars/4``).
        output_schema_percent: how much its ``outputSchema`` may add to the rest of the tool, in percent
            of the rest's bytes.
        pinned: operation ids, ids without the service, tool names or globs of them (``*`` any run, ``?``
            one character) whose tools stay listed when the served surface is searched or laddered
            (``anvil serve --disclosure``); None when none are pinned.
    """

    tool_budget_tokens: int = 1200
    output_schema_percent: int = 20
    pinned: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DisclosureCost:
    """What publishing and answering an operation costs in tokens (original-core §3.7)."""

    tool_tokens: int
    response_item_tokens: int = 0
    response_tokens: int = 0
    chars_per_token: float = 4
    estimator: str
    seed: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation:
    """One source operation, compiled (original-core §1.3)."""

    id: str
    canonical_name: str
    display_name: str
    description: str = ""
    tags: tuple[str, ...] = ()
    source_ref: SourceRef = field(default_factory=SourceRef)
    effect: Effect
    input: Input = field(default_factory=Input)
    output: Output = field(default_factory=Output)
    errors: tuple[ErrorSpec, ...] = ()
    idempotency: Idempotency
    retries: RetryPolicy
    confirmation: Confirmation = field(default_factory=Confirmation)
    auth: Auth = NO_AUTH
    #: The operation's own servers (its own ``servers``, else its path item's), when they differ from the
    #: service's; absent (the common case, and every AIR the original writes) it uses the service's.
    servers: tuple[Server, ...] | None = None
    #: Hosts a reviewer consented to receive the operation's credential besides the service's own
    #: (the manifest's ``credential_hosts``); absent (every AIR written before it) means none.
    credential_hosts: tuple[str, ...] | None = None
    pagination: Pagination | None = None
    disclosure_cost: DisclosureCost | None = None
    streaming: bool = False
    long_running: bool = False
    async_contract: JSONObject | None = None
    archetype: str | None = None
    deprecated: bool = False
    cli: Cli
    mcp: Mcp
    skill: Skill = field(default_factory=Skill)
    state: OperationState = "generated"
    review_notes: tuple[str, ...] = ()
    evidence: Evidence = field(default_factory=Evidence)
    capability_id: str | None = None
    query_template: JSONObject | None = None
    query_policy: JSONObject | None = None
    query_schema: JSONObject | None = None

    @property
    def is_read(self) -> bool:
        return self.effect.kind == "read"

    @property
    def is_approved(self) -> bool:
        return self.state == "approved"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowStep:
    """One step of a :class:`Workflow`: the operation, whether it is optional, and its argument bindings."""

    operation_id: str
    description: str = ""
    optional: bool = False
    bindings: JSONObject = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Workflow:
    """A documented sequence of operations (parsed from the manifest), with its steps, approval and rollback."""

    id: str
    capability_id: str
    display_name: str
    description: str = ""
    intent_examples: tuple[str, ...] = ()
    steps: tuple[WorkflowStep, ...] = ()
    human_approval: bool = False
    rollback_strategy: str | None = None
    state: OperationState = "generated"
    evidence: Evidence = field(default_factory=Evidence)


@dataclass(frozen=True, slots=True, kw_only=True)
class Capability:
    """A discovered grouping of operations (original-core §1.15), with its review (§2.8).

    ``allow_large`` is True when an approved review with a note waives the per-tool disclosure budget for
    the capability's tools (``allowLarge`` in AIR, so the waiver is part of the contract; absent otherwise).
    """

    id: str
    display_name: str
    description: str = ""
    source: str = "resource"
    resources: tuple[str, ...] = ()
    operation_ids: tuple[str, ...] = ()
    workflow_ids: tuple[str, ...] = ()
    intent_examples: tuple[str, ...] = ()
    state: OperationState = "generated"
    lifecycle: str = "proposed"
    review_note: str | None = None
    allow_large: bool | None = None
    evidence: Evidence = field(default_factory=Evidence)


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """A whole AIR document (original-core §1.1). ``diagnostics`` holds AIR-shaped dicts.

    ``disclosure`` is the manifest's ``disclosure:`` block, what one listed tool may cost an agent (None:
    the defaults); the tool surface cuts an output schema that does not fit it.
    """

    anvil_version: str = ANVIL_VERSION
    service: Service
    operations: tuple[Operation, ...] = ()
    capabilities: tuple[Capability, ...] = ()
    workflows: tuple[Workflow, ...] = ()
    disclosure: DisclosureBudget | None = None
    schemas: JSONObject = field(default_factory=dict)
    diagnostics: tuple[JSONObject, ...] = ()

    def operation(self, op_id: str) -> Operation | None:
        """The operation with AIR id ``op_id``, if any."""
        for op in self.operations:
            if op.id == op_id:
                return op
        return None
