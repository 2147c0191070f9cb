"""Auth from the manifest: op-level auth fields (§2.3), coherence (§1.11) and service defaults (§2.2).

An auth contract the runtime cannot execute, or whose fields contradict each other, blocks the
operation with the note ``Auth contract blocked: <issue>.`` and an ``auth/incoherent`` warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields as dataclass_fields, replace
from typing import Final, cast

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.carrier import COMPOSITE_FACTOR_TYPES, factor_carrier_clash
from anvil.air.enums import AuthPrincipal, AuthType, SecretSource
from anvil.air.model import ApiKeyCarrier, Auth, AuthCarrier, AuthProvider, Claim, Delegation, Evidence, Operation
from anvil.compiler.manifest.model import AuthManifest, Manifest, ProviderManifest
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = [
    "AuthFields",
    "apply_auth_fields",
    "apply_service_defaults",
    "auth_coherence_issues",
    "auth_defaults",
    "block_incoherent_auth",
    "carrier_json",
    "enriched_claim",
    "provider_json",
    "with_claim",
]

_BEARER_TYPES: Final = frozenset(
    {"oauth2_client_credentials", "oauth2_authorization_code", "oauth2_on_behalf_of", "jwt_bearer", "workload_identity"}
)
_UNEXECUTABLE: Final = ("oauth2_authorization_code", "mtls", "custom_header")
_LEGACY_OAUTH2_NOTE: Final = (
    "Legacy service auth type oauth2 is ambiguous; select jwt_bearer, oauth2_client_credentials, "
    "oauth2_on_behalf_of, or authorization-code explicitly."
)
_REMODEL_NOTE: Final = (
    "End-user authorization-code remodeled to on-behalf-of (RFC 8693 per-caller token exchange). "
    "Review the delegation contract and approve before exposure."
)


def auth_defaults(auth_type: str) -> tuple[AuthPrincipal, SecretSource]:
    """The principal and secret source the classifier gives an auth type."""
    if auth_type == "none":
        return "anonymous", "none"
    if auth_type == "workload_identity":
        return "service", "workload_identity"
    if auth_type == "oauth2_on_behalf_of":
        return "delegated", "env"
    if auth_type == "oauth2_authorization_code":
        return "end_user", "env"
    return "service", "env"


def _carrier_issue(auth: Auth) -> str | None:
    carrier, kind = auth.carrier, auth.type
    if carrier is None:
        return None
    is_authorization = carrier.in_ == "header" and carrier.name.lower() == "authorization"
    scheme = (carrier.scheme or "").lower()
    if kind == "api_key":
        return "an api_key carrier cannot declare a scheme" if carrier.scheme else None
    if kind == "basic":
        ok = is_authorization and scheme == "basic"
        return None if ok else "basic auth must travel in the Authorization header with scheme Basic"
    if kind in _BEARER_TYPES:
        ok = is_authorization and scheme == "bearer"
        return None if ok else f"{kind} must travel in the Authorization header with scheme Bearer"
    return f"{kind} auth cannot declare a carrier"


def _composite_issues(auth: Auth) -> list[str]:
    """Why a composite cannot be executed: no factors, mechanics of its own, or a factor that is not static
    material in a wire slot of its own (each factor is checked as if it were alone, too)."""
    factors = auth.factors or ()
    if not factors:
        return ["composite auth takes its factors from the spec's security requirement"]
    issues: list[str] = []
    if auth.provider is not None or auth.issuer is not None:
        issues.append("composite auth cannot declare provider mechanics or an issuer (each factor has its own)")
    for number, factor in enumerate(factors, start=1):
        label = f"composite factor {number} ({factor.type})"
        if factor.type not in COMPOSITE_FACTOR_TYPES:
            issues.append(f"{label} is not static material a composite can carry")
            continue
        issues.extend(f"{label}: {issue}" for issue in auth_coherence_issues(factor))
    clash = factor_carrier_clash(factors)
    if clash is not None:
        first, second, carrier = clash
        issues.append(f"composite factors {first + 1} and {second + 1} both travel in {carrier.in_} {carrier.name}")
    return issues


def auth_coherence_issues(auth: Auth) -> list[str]:
    """Why ``auth`` cannot be executed as declared (empty when it can), as sentence fragments.

    A composite is checked factor by factor (:func:`_composite_issues`); any other type has no factors.
    """
    issues: list[str] = []
    if auth.type == "composite":
        issues.extend(_composite_issues(auth))
    elif auth.factors is not None:
        issues.append(f"{auth.type} auth cannot declare composite factors")
    kind, grant = auth.type, auth.provider.grant if auth.provider else None
    if kind == "none":
        if auth.principal != "anonymous" or auth.secret_source != "none":
            issues.append("auth type none must use anonymous authority and no secret source")
        if auth.provider is not None or auth.issuer is not None:
            issues.append("auth type none cannot declare provider mechanics or an issuer")
    elif kind == "oauth2_on_behalf_of":
        if auth.principal not in ("delegated", "impersonation"):
            issues.append("on-behalf-of auth must declare delegated or impersonation authority")
        if grant is not None and grant != "token_exchange":
            issues.append("on-behalf-of auth cannot use a non-token-exchange grant")
    elif kind == "oauth2_authorization_code":
        if auth.principal != "end_user":
            issues.append("authorization-code auth must declare end_user authority")
    elif auth.principal != "service":
        issues.append(f"{kind} uses a shared runtime credential and must declare service authority")
    expected = {
        "oauth2_client_credentials": "client_credentials",
        "oauth2_on_behalf_of": "token_exchange",
        "jwt_bearer": "jwt_bearer",
    }.get(kind)
    if grant is not None and expected is None:
        issues.append(f"{kind} cannot declare OAuth grant {grant}")
    elif grant is not None and grant != expected and kind != "oauth2_on_behalf_of":
        issues.append(f"{kind} cannot use the {grant} grant")
    if auth.provider is not None and auth.provider.api_key is not None and kind != "api_key":
        issues.append(f"{kind} cannot declare API-key carrier mechanics")
    if kind == "api_key" and auth.provider is not None and replace(auth.provider, api_key=None) != AuthProvider():
        issues.append("api_key cannot declare token-acquisition provider mechanics")
    if kind == "workload_identity" and auth.secret_source != "workload_identity":
        issues.append("workload_identity auth must use the workload_identity secret source")
    if kind != "none" and auth.secret_source == "none":
        issues.append(f"{kind} cannot use secret source none")
    carrier = _carrier_issue(auth)
    if carrier is not None:
        issues.append(carrier)
    if kind in _UNEXECUTABLE:
        issues.append(f"{kind} is not executable by the current runtime")
    return issues


def block_incoherent_auth(op: Operation) -> tuple[Operation, list[Diagnostic]]:
    """Block ``op`` when its auth contract is incoherent or not executable (note + ``auth/incoherent``)."""
    issues = auth_coherence_issues(op.auth)
    if not issues:
        return op, []
    notes = list(op.review_notes)
    for issue in issues:
        note = f"Auth contract blocked: {issue}."
        if note not in notes:
            notes.append(note)
    warning = diagnostic(
        "auth/incoherent",
        f"Operation '{op.id}' is blocked: its auth contract " + "; ".join(issues) + ".",
        operation=op.id,
        hint="Fix the operation's auth (or the service-wide auth) in the manifest.",
    )
    return replace(op, state="blocked", review_notes=tuple(notes)), [warning]


def enriched_claim(op_id: str) -> Claim:
    """The evidence a manifest-touched operation carries (original-core §1.13)."""
    return Claim(
        subject=op_id,
        predicate="enriched",
        source="spec",
        method="anvil-manifest",
        confidence=0.95,
        review="accepted",
    )


def with_claim(op: Operation, claim: Claim) -> Operation:
    """``op`` with ``claim`` appended to its evidence (once: an identical claim is not repeated)."""
    if claim in op.evidence.claims:
        return op
    return replace(op, evidence=Evidence(claims=(*op.evidence.claims, claim)))


# --- op-level auth fields ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthFields:
    """Resolved op-level auth predicates; None means "not stated"."""

    type: str | None = None
    credential_profile: str | None = None
    principal: str | None = None
    issuer: str | None = None
    audience: str | None = None
    carrier: JSONObject | None = None
    secret_source: str | None = None
    tenant: str | None = None
    actor: str | None = None
    subject: str | None = None
    provider: JSONObject | None = None

    @property
    def stated(self) -> bool:
        """True when any field is stated."""
        return any(getattr(self, item.name) is not None for item in dataclass_fields(self))

    @classmethod
    def of(cls, auth: AuthManifest) -> AuthFields:
        """The fields a manifest auth block states (``scopes`` is handled separately)."""
        return cls(
            type=auth.type,
            credential_profile=auth.credential_profile,
            principal=auth.principal,
            issuer=auth.issuer,
            audience=auth.audience,
            carrier=carrier_json(auth),
            secret_source=auth.secret_source,
            tenant=auth.tenant,
            actor=auth.actor,
            subject=auth.subject,
            provider=provider_json(auth.provider),
        )


def carrier_json(auth: AuthManifest) -> JSONObject | None:
    """A manifest carrier as JSON ``{in, name, scheme?}``."""
    if auth.carrier is None:
        return None
    out: JSONObject = {"in": auth.carrier.in_, "name": auth.carrier.name}
    if auth.carrier.scheme is not None:
        out["scheme"] = auth.carrier.scheme
    return out


def provider_json(provider: ProviderManifest | None) -> JSONObject | None:
    """A manifest provider as JSON in manifest spelling (``token_endpoint``, ``api_key: {in, name}``)."""
    if provider is None:
        return None
    out: JSONObject = {}
    for name in ("token_endpoint", "grant", "client_auth", "resource", "subject_token_type", "requested_token_type"):
        value = getattr(provider, name)
        if value is not None:
            out[name] = value
    if provider.api_key is not None:
        out["api_key"] = {"in": provider.api_key.in_, "name": provider.api_key.name}
    return out


def _provider_from_json(data: JSONObject, base: AuthProvider | None) -> AuthProvider:
    api_key = data.get("api_key")
    current = base or AuthProvider()
    return AuthProvider(
        token_endpoint=data.get("token_endpoint", current.token_endpoint),
        grant=data.get("grant", current.grant),
        client_auth=data.get("client_auth", current.client_auth),
        resource=data.get("resource", current.resource),
        subject_token_type=data.get("subject_token_type", current.subject_token_type),
        requested_token_type=data.get("requested_token_type", current.requested_token_type),
        api_key=ApiKeyCarrier(in_=api_key["in"], name=api_key["name"]) if api_key else current.api_key,
    )


def _provider_after_type_change(current: AuthProvider | None, auth_type: str) -> AuthProvider | None:
    """Keep only the provider fields that make sense for the new type's grant."""
    c = current or AuthProvider()
    if auth_type == "oauth2_client_credentials":
        return AuthProvider(
            token_endpoint=c.token_endpoint, client_auth=c.client_auth, resource=c.resource, grant="client_credentials"
        )
    if auth_type == "oauth2_on_behalf_of":
        return replace(c, api_key=None, grant="token_exchange")
    if auth_type == "oauth2_authorization_code":
        return AuthProvider(token_endpoint=c.token_endpoint) if c.token_endpoint else None
    if auth_type == "api_key":
        return AuthProvider(api_key=c.api_key) if c.api_key else None
    if auth_type == "jwt_bearer" and c.grant == "jwt_bearer":
        return AuthProvider(
            token_endpoint=c.token_endpoint, client_auth=c.client_auth, resource=c.resource, grant=c.grant
        )
    return None


def apply_auth_fields(auth: Auth, fields: AuthFields) -> Auth:
    """Apply op-level auth fields (§2.3, last paragraph) to ``auth``.

    A type change resets principal and secret source to the type's defaults (unless stated), keeps
    only the provider fields that fit the new grant, and clears issuer and carrier (and audience,
    delegation and tenant when the new type is ``none``).
    """
    out = auth
    if fields.type is not None:
        principal, secret = auth_defaults(fields.type)
        out = replace(
            out,
            type=cast(AuthType, fields.type),
            principal=cast(AuthPrincipal, fields.principal or principal),
            secret_source=cast(SecretSource, fields.secret_source or secret),
        )
        if fields.type != auth.type:
            # A composite's factors come from the spec's requirement: another type drops them, and a type
            # changed to composite has none (incoherent, blocked).
            out = replace(
                out,
                provider=_provider_after_type_change(auth.provider, fields.type),
                issuer=None,
                carrier=None,
                factors=None,
            )
            if fields.type == "none":
                out = replace(out, audience=None, delegation=None, tenant=None)
            elif fields.type != "oauth2_on_behalf_of":
                out = replace(out, delegation=None)
    changes: dict[str, JSONValue] = {
        "credential_profile": fields.credential_profile,
        "principal": fields.principal,
        "issuer": fields.issuer,
        "audience": fields.audience,
        "secret_source": fields.secret_source,
        "tenant": fields.tenant,
    }
    out = replace(out, **{key: value for key, value in changes.items() if value is not None})
    if fields.carrier is not None:
        carrier = fields.carrier
        out = replace(out, carrier=AuthCarrier(in_=carrier["in"], name=carrier["name"], scheme=carrier.get("scheme")))
    if fields.actor is not None or fields.subject is not None:
        out = replace(out, delegation=Delegation(actor=fields.actor, subject=fields.subject))
    if fields.provider is not None:
        out = replace(out, provider=_provider_from_json(fields.provider, out.provider))
    return out


# --- service-wide defaults (§2.2) ----------------------------------------------------------------------


def _touched(op: Operation, auth: Auth) -> tuple[Operation, list[Diagnostic]]:
    changed = with_claim(replace(op, auth=auth), enriched_claim(op.id))
    return block_incoherent_auth(changed)


def _note(op: Operation, note: str) -> Operation:
    return op if note in op.review_notes else replace(op, review_notes=(*op.review_notes, note))


def _gap_fill(op: Operation, service: AuthManifest) -> AuthFields:
    current = op.auth.provider or AuthProvider()
    provider = provider_json(service.provider) or {}
    missing = {key: value for key, value in provider.items() if getattr(current, key) is None}
    return AuthFields(
        credential_profile=service.credential_profile if op.auth.credential_profile is None else None,
        principal=service.principal,
        secret_source=service.secret_source,
        issuer=service.issuer if op.auth.issuer is None else None,
        audience=service.audience,
        carrier=carrier_json(service) if op.auth.carrier is None else None,
        tenant=service.tenant,
        actor=service.actor,
        subject=service.subject,
        provider=missing or None,
    )


def _one(op: Operation, service: AuthManifest, ambiguous: bool) -> tuple[Operation, list[Diagnostic]]:
    kind = service.type
    if kind == "oauth2":
        if op.auth.type != "none" and not ambiguous:
            return op, []
        out, found = (
            (op, []) if ambiguous else _touched(op, apply_auth_fields(op.auth, AuthFields(type="custom_header")))
        )
        error = diagnostic(
            "auth/service_oauth2_ambiguous", f"Operation '{op.id}': {_LEGACY_OAUTH2_NOTE}", operation=op.id
        )
        return _note(out, _LEGACY_OAUTH2_NOTE), [error, *found]
    stated = replace(AuthFields.of(service), type=None)
    if kind is not None and op.auth.type == "none":
        return _touched(op, apply_auth_fields(op.auth, replace(stated, type=kind)))
    if kind == "oauth2_on_behalf_of" and op.auth.type == "oauth2_authorization_code":
        was_blocked = op.state == "blocked"
        kept = tuple(note for note in op.review_notes if "oauth2_on_behalf_of" not in note)
        out, found = _touched(replace(op, review_notes=kept), apply_auth_fields(op.auth, replace(stated, type=kind)))
        if was_blocked and not found:
            out = replace(out, state="review_required")
        info = diagnostic("auth/end_user_flow_remodeled", f"Operation '{op.id}': {_REMODEL_NOTE}", operation=op.id)
        return _note(out, _REMODEL_NOTE), [info, *found]
    if kind is not None and kind != op.auth.type:
        info = diagnostic(
            "auth/service_default_not_applied",
            f"Operation '{op.id}': service auth default {kind} did not override the source-declared "
            f"{op.auth.type} contract.",
            operation=op.id,
            hint="To serve it through one of the schemes its spec offers, choose it with auth.scheme.",
        )
        return op, [info]
    fields = _gap_fill(op, service)
    if not fields.stated:
        return op, []
    return _touched(op, apply_auth_fields(op.auth, fields))


def apply_service_defaults(
    operations: Sequence[Operation],
    manifest: Manifest | None,
    *,
    alternatives_unmodeled: frozenset[str] = frozenset(),
) -> tuple[tuple[Operation, ...], list[Diagnostic]]:
    """Apply the manifest's service-wide ``auth`` (§2.2) to every operation.

    ``alternatives_unmodeled`` names operations whose source offered auth alternatives the compiler
    would not choose between; the legacy ``oauth2`` type cannot choose for them either (an error).

    Returns:
        The operations (in order) and the diagnostics.
    """
    if manifest is None or manifest.auth is None:
        return tuple(operations), []
    service = manifest.auth
    scopes = service.scopes or ()
    out: list[Operation] = []
    found: list[Diagnostic] = []
    for op in operations:
        next_op, diagnostics = _one(op, service, op.id in alternatives_unmodeled and service.type == "oauth2")
        if next_op.auth.type != "none" and not next_op.auth.scopes and scopes:
            next_op = replace(next_op, auth=replace(next_op.auth, scopes=tuple(scopes)))
        out.append(next_op)
        found.extend(diagnostics)
    return tuple(out), found
