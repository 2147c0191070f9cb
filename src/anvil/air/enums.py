"""AIR enumerations (original-core §1.4), as Literal types plus their value tuples."""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = [
    "ACTIONS",
    "AUTH_TYPES",
    "EFFECT_CLASSES",
    "ERROR_CODES",
    "IDEMPOTENCY_MODES",
    "KEYED_MODES",
    "LIST_EFFECT_CLASS",
    "READ_ACTIONS",
    "RETRY_CONDITIONS",
    "RISK_LEVELS",
    "STATES",
    "Action",
    "AuthPrincipal",
    "AuthType",
    "Backoff",
    "EffectClass",
    "EffectKind",
    "ErrorCode",
    "IdempotencyMechanism",
    "IdempotencyMode",
    "KeyDerivation",
    "ListEffectClass",
    "LookupBy",
    "OperationState",
    "ParamLocation",
    "RetryBasis",
    "RetryCondition",
    "RetryMode",
    "RiskLevel",
    "SecretSource",
]

EffectKind = Literal["read", "mutation"]
Action = Literal[
    "list", "get", "search", "export", "simulate", "validate", "poll",
    "create", "update", "replace", "delete", "send", "execute", "approve", "cancel", "reserve", "other",
]  # fmt: skip
RiskLevel = Literal["none", "low", "medium", "high", "financial", "destructive"]
IdempotencyMode = Literal["natural", "key_supported", "client_id", "required", "none"]
IdempotencyMechanism = Literal["header", "query", "body", "path", "none"]
KeyDerivation = Literal["request_fingerprint", "client_supplied", "none"]
RetryMode = Literal["safe", "none"]
RetryBasis = Literal[
    "read_safe", "natural_idempotent", "idempotency_key", "ledger_guarded", "transport_only", "unproven"
]
Backoff = Literal["exponential_jitter", "exponential", "fixed", "none"]
RetryCondition = Literal[
    "timeout", "connection_reset", "dns_failure",
    "http_408", "http_429", "http_500", "http_502", "http_503", "http_504",
    "grpc_unavailable", "grpc_deadline_exceeded", "soap_transport_fault",
]  # fmt: skip
OperationState = Literal["generated", "review_required", "approved", "deprecated", "blocked"]
AuthType = Literal[
    "none", "api_key", "basic", "oauth2_client_credentials", "oauth2_authorization_code",
    "oauth2_on_behalf_of", "jwt_bearer", "mtls", "custom_header", "workload_identity", "composite",
]  # fmt: skip
AuthPrincipal = Literal["anonymous", "service", "end_user", "delegated", "impersonation"]
SecretSource = Literal["none", "env", "secret_manager", "workload_identity", "vault"]
ParamLocation = Literal["path", "query", "header", "cookie", "body"]
EffectClass = Literal["read", "reversible", "compensable", "irreversible"]
LookupBy = Literal["idempotency_key", "id"]
ErrorCode = Literal[
    "validation_error", "auth_required", "permission_denied", "not_found", "conflict", "rate_limited",
    "upstream_timeout", "upstream_unavailable", "unsafe_retry_blocked", "confirmation_required",
    "idempotency_required", "idempotency_ledger_unavailable", "schema_mismatch", "unsupported_operation",
    "policy_denied", "unknown_upstream_error",
]  # fmt: skip

ACTIONS: Final[tuple[str, ...]] = get_args(Action)
READ_ACTIONS: Final[tuple[str, ...]] = ("list", "get", "search", "export", "simulate", "validate", "poll")
RISK_LEVELS: Final[tuple[str, ...]] = get_args(RiskLevel)
IDEMPOTENCY_MODES: Final[tuple[str, ...]] = get_args(IdempotencyMode)
KEYED_MODES: Final[tuple[str, ...]] = ("required", "key_supported")
RETRY_CONDITIONS: Final[tuple[str, ...]] = get_args(RetryCondition)
STATES: Final[tuple[str, ...]] = get_args(OperationState)
AUTH_TYPES: Final[tuple[str, ...]] = get_args(AuthType)
EFFECT_CLASSES: Final[tuple[str, ...]] = get_args(EffectClass)
ERROR_CODES: Final[tuple[str, ...]] = get_args(ErrorCode)
#: Which listed tools carry their effect class: AIR records only the non-default ``all``.
ListEffectClass = Literal["all"]
#: The manifest's ``service.list_effect_class`` values (``declared`` is the default, ADR-0030 §4).
LIST_EFFECT_CLASS: Final[tuple[str, ...]] = ("declared", *get_args(ListEffectClass))
