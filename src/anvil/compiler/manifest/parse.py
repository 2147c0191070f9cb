"""Reading ``anvil.yaml`` (original-core §2): strict validation with file, line and column.

The manifest is composed with PyYAML's safe loader so every node keeps its position, then checked by
a hand-written schema (:mod:`anvil.compiler.manifest.schema`). Unlike the original (whose schema
ignored unknown keys), every unknown key, wrong type and value outside its enum or range is a
diagnostic, and so is anything that looks like a secret. Invalid pieces are left out of the returned
:class:`Manifest`; a file that cannot be read or parsed returns ``None``.

Decisions worth knowing:

* ``query_templates`` (top level) and ``query_policy``/``query_schema``/``async_contract`` (per
  operation) are features this implementation does not support, so they are *rejected* with
  ``manifest/unknown_key`` and a hint rather than silently ignored.
* An explicit YAML ``null`` means "not stated", except as an argument source, where it is an error.
* ``retries.only_on`` accepts ``429`` or ``"429"``; every entry must name a known retry condition.
* Lists are all-or-nothing: one invalid item leaves the whole list out (positions stay aligned).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import yaml

from anvil._types import JSONObject
from anvil.air.codec import MAX_OUTPUT_SCHEMA_PERCENT, MAX_TOOL_BUDGET_TOKENS
from anvil.air.enums import (
    ACTIONS,
    AUTH_TYPES,
    EFFECT_CLASSES,
    LIST_EFFECT_CLASS,
    RETRY_CONDITIONS,
    RISK_LEVELS,
    STATES,
)
from anvil.air.hosts import is_host, normalize_host
from anvil.compiler.manifest.model import (
    ApiKeyManifest,
    AuthManifest,
    CapabilityReview,
    CarrierManifest,
    ConfirmationManifest,
    DeadlineManifest,
    DisclosureManifest,
    DraftManifest,
    EffectManifest,
    FollowUpManifest,
    IdempotencyManifest,
    Location,
    LookupManifest,
    Manifest,
    NameManifest,
    OperationManifest,
    ProviderManifest,
    RetriesManifest,
    ServiceManifest,
    StepCallManifest,
    WorkflowManifest,
    WorkflowStepManifest,
)
from anvil.compiler.manifest.schema import (
    INVALID,
    Path as NodePath,
    Spec,
    Walker,
    flag,
    integer,
    mapping,
    obj,
    one_of,
    path_text,
    seq,
    source,
    text,
)
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = [
    "Location",
    "Manifest",
    "OperationManifest",
    "load_manifest",
    "normalize_retry_condition",
    "parse_manifest",
]

_RETRY_ALIASES = {
    "timeout": "timeout",
    "connection_reset": "connection_reset",
    "dns_failure": "dns_failure",
    "unavailable": "grpc_unavailable",
    "deadline_exceeded": "grpc_deadline_exceeded",
    "soap_transport_fault": "soap_transport_fault",
}


def normalize_retry_condition(entry: object) -> str | None:
    """Normalize one ``only_on`` entry (§2.5) to an AIR retry condition, or None when unknown.

    ``"429"`` → ``http_429``, ``unavailable`` → ``grpc_unavailable``, ``HTTP_503`` → ``http_503``.
    """
    if not isinstance(entry, str):
        return None
    lower = entry.strip().lower()
    candidate = _RETRY_ALIASES.get(lower)
    if candidate is None:
        candidate = f"http_{lower}" if re.fullmatch(r"\d{3}", lower) else lower
    return candidate if candidate in RETRY_CONDITIONS else None


def _host_entry(entry: object) -> str | None:
    """One ``credential_hosts`` entry, lower-cased, or None when it is no host name or IP address."""
    if not isinstance(entry, str):
        return None
    host = normalize_host(entry)
    return host if is_host(host) else None


# --- the schema --------------------------------------------------------------------------------------

_URL = r"https?://\S+"
_PROFILE = r"[a-z](?:[a-z0-9_]{0,62}[a-z0-9])?"
_SERVICE_ID = r"[a-z](?:[a-z0-9_-]{0,62}[a-z0-9])?"
_NAME = text(min_len=1)
_TOKEN_TYPES = ("access_token", "jwt", "id_token")

_CARRIER = obj({"in": one_of(("header", "query")), "name": _NAME, "scheme": _NAME}, required=("in", "name"))
_PROVIDER = obj(
    {
        "token_endpoint": text(pattern=_URL, describe="an http(s) URL"),
        "grant": one_of(("token_exchange", "client_credentials", "jwt_bearer")),
        "client_auth": one_of(("client_secret_basic", "client_secret_post", "private_key_jwt")),
        "resource": _NAME,
        "subject_token_type": one_of(_TOKEN_TYPES),
        "requested_token_type": one_of(_TOKEN_TYPES),
        "api_key": obj({"in": one_of(("header", "query")), "name": _NAME}, required=("in", "name")),
    }
)
_AUTH_FIELDS: dict[str, Spec] = {
    "scheme": text(min_len=1, describe="a name under the spec's components.securitySchemes"),
    "override": flag(),
    "reason": _NAME,
    "credential_profile": text(pattern=_PROFILE, describe="a lowercase slug of at most 64 characters"),
    "principal": one_of(("anonymous", "service", "end_user", "delegated", "impersonation")),
    "issuer": text(pattern=_URL, describe="an http(s) URL"),
    "audience": _NAME,
    "carrier": _CARRIER,
    "secret_source": one_of(("none", "env", "secret_manager", "workload_identity", "vault")),
    "tenant": _NAME,
    "actor": _NAME,
    "subject": _NAME,
    "provider": _PROVIDER,
}
#: ``bearer`` is the manifest's spelling of a static bearer token, AIR type ``jwt_bearer``.
_TYPE_ALIASES: Final = {"bearer": "jwt_bearer"}
_SERVICE_AUTH = obj({"type": one_of((*AUTH_TYPES, "oauth2", *_TYPE_ALIASES)), "scopes": seq(_NAME), **_AUTH_FIELDS})
_OPERATION_AUTH = obj(
    {"type": one_of((*AUTH_TYPES, *_TYPE_ALIASES)), **_AUTH_FIELDS},
    refuse={"scopes": "Scopes are service-wide: set them under the top-level auth.scopes."},
)

_ARGUMENTS = mapping(source())
_DEADLINE = obj({"within_ms": integer(1), "at": _NAME})
_FOLLOW_UP = obj({"operation": _NAME, "arguments": _ARGUMENTS, "deadline": _DEADLINE}, required=("operation",))
_LOOKUP = obj(
    {"operation": _NAME, "by": one_of(("idempotency_key", "id")), "arguments": _ARGUMENTS},
    required=("operation", "by"),
)
_STEP_CALL = obj({"operation": _NAME, "arguments": _ARGUMENTS}, required=("operation",))
_DRAFT = obj(
    {"operation": _NAME, "arguments": _ARGUMENTS, "handle": _NAME, "promote": _STEP_CALL, "discard": _STEP_CALL},
    required=("operation", "handle", "promote"),
)
_EFFECT = obj(
    {
        "class": one_of(EFFECT_CLASSES),
        "inverse": _FOLLOW_UP,
        "compensate": _FOLLOW_UP,
        "lookup": _LOOKUP,
        "draft": _DRAFT,
    }
)
_UNSUPPORTED_OPERATION_KEYS = {
    "query_policy": "Query surfaces are not supported by Anvil for Python; remove query_policy.",
    "query_schema": "Query surfaces are not supported by Anvil for Python; remove query_schema.",
    "async_contract": "Async contracts are not supported by Anvil for Python; remove async_contract.",
}
_OPERATION = obj(
    {
        "side_effect": one_of(("read", "mutation")),
        "risk": one_of(RISK_LEVELS),
        "reversible": flag(),
        "action": one_of(ACTIONS),
        "display_name": _NAME,
        "description": text(),
        "name": obj({"resource": _NAME, "verb": _NAME}),
        "auth": _OPERATION_AUTH,
        "idempotency": obj(
            {
                "strategy": one_of(("natural", "required_request_key", "key_supported", "client_id", "none")),
                "key_location": one_of(("header", "query", "body", "path")),
                "header": _NAME,
                "parameter": _NAME,
                "field": _NAME,
            }
        ),
        "confirmation": obj(
            {"required": flag(), "risk": one_of(RISK_LEVELS), "reason": _NAME, "human_approval": flag()}
        ),
        "retries": obj(
            {
                "enabled": flag(),
                "only_on": seq(
                    text(
                        min_len=1, numeric=True, describe="timeout, connection_reset, dns_failure, 429, http_503, ..."
                    ),
                    convert=normalize_retry_condition,
                ),
                "max_attempts": integer(1, 5),
            }
        ),
        "state": one_of(STATES),
        "effect": _EFFECT,
        "inputs": mapping(
            text(pattern=r"^[a-z][a-z0-9_]{0,63}$", describe="a public input name (lowercase snake_case)")
        ),
        "credential_hosts": seq(text(min_len=1, describe="a host name or IP address"), convert=_host_entry),
    },
    refuse=_UNSUPPORTED_OPERATION_KEYS,
)
_WORKFLOW_STEP = obj(
    {"operation": _NAME, "description": text(), "optional": flag(), "bindings": mapping(text())},
    required=("operation",),
)
_WORKFLOW = obj(
    {
        "display_name": _NAME,
        "description": text(),
        "capability": _NAME,
        "intent_examples": seq(_NAME),
        "human_approval": flag(),
        "rollback": text(),
        "state": one_of(STATES),
        "steps": seq(_WORKFLOW_STEP),
    }
)
_CAPABILITY = obj(
    {"state": one_of(("approved", "rejected")), "note": text(), "allow_large": flag()},
    required=("state",),
)
_TOP = obj(
    {
        "service": obj(
            {
                "name": text(pattern=_SERVICE_ID, describe="a service id (lowercase slug, 1-64 characters)"),
                "display_name": _NAME,
                "owner": _NAME,
                "environment": _NAME,
                "deployment_namespace": text(
                    pattern=r"[a-z][a-z0-9-]{0,127}",
                    describe="a deployment namespace (1-128 lowercase letters, digits and '-', starting with a letter)",
                ),
                "list_effect_class": one_of(LIST_EFFECT_CLASS),
                "propagate_trace": flag(),
            },
            refuse={"auth": "Service-wide auth is the top-level auth: block (auth.scheme, auth.type, ...)."},
        ),
        "auth": _SERVICE_AUTH,
        "disclosure": obj(
            {
                "tool_budget_tokens": integer(1, MAX_TOOL_BUDGET_TOKENS),
                "output_schema_percent": integer(0, MAX_OUTPUT_SCHEMA_PERCENT),
                "pinned": seq(
                    text(
                        min_len=1,
                        pattern=r"^[A-Za-z0-9_.*?\-]{1,256}$",
                        describe="an operation id, tool name or glob (letters, digits, '_', '.', '-', '*', '?')",
                    )
                ),
            }
        ),
        "operations": mapping(_OPERATION),
        "workflows": mapping(_WORKFLOW),
        "capabilities": mapping(_CAPABILITY),
    },
    refuse={"query_templates": "Query templates are not supported by Anvil for Python; remove the block."},
)


# libyaml's composer keeps positions too and is several times faster; fall back when it is absent.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# --- entry points --------------------------------------------------------------------------------------


def load_manifest(path: Path, *, max_file_bytes: int | None = None) -> tuple[Manifest | None, list[Diagnostic]]:
    """Read and validate the manifest at ``path``: a regular file of at most ``max_file_bytes`` (64 MiB).

    Diagnostics name the file as given (a relative path stays relative; an absolute one is reduced
    to its file name so no absolute path reaches generated output).

    Returns:
        The manifest (None when the file is missing, unreadable or not YAML) and its diagnostics.
    """
    from anvil.load.files import DEFAULT_MAX_FILE_BYTES, read_bounded

    shown = path.name if path.is_absolute() else path.as_posix()
    raw = read_bounded(path, DEFAULT_MAX_FILE_BYTES if max_file_bytes is None else max_file_bytes)
    if not isinstance(raw, bytes):
        reason = raw.reason
        return None, [
            diagnostic(
                "manifest/not_found",
                f"The manifest {shown} cannot be read: {reason}.",
                file=shown,
                line=1,
                column=1,
                hint="Check the --manifest path.",
            )
        ]
    try:
        decoded = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, [
            diagnostic(
                "manifest/parse_error",
                f"The manifest {shown} is not UTF-8 text.",
                file=shown,
                line=line,
                column=column,
            )
        ]
    return parse_manifest(decoded, shown)


def parse_manifest(text: str, file: str) -> tuple[Manifest | None, list[Diagnostic]]:
    """Validate manifest ``text``; ``file`` is the name diagnostics carry.

    Returns:
        The manifest without its invalid pieces (None when ``text`` is not YAML or its top level is
        not a mapping) and the diagnostics, in file order.
    """
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        problem = exc.problem or exc.context or "invalid YAML"
        return None, [
            diagnostic(
                "manifest/parse_error",
                f"The manifest is not valid YAML: {problem}.",
                file=file,
                line=line,
                column=column,
            )
        ]
    except yaml.YAMLError as exc:
        return None, [
            diagnostic("manifest/parse_error", f"The manifest is not valid YAML: {exc}.", file=file, line=1, column=1)
        ]
    if node is None:
        return Manifest(file=file), []
    walker = Walker(file)
    data = walker.walk(node, _TOP, ())
    if data is None:
        return Manifest(file=file), _ordered(walker.diagnostics)
    if data is INVALID:
        return None, _ordered(walker.diagnostics)
    manifest = _Builder(walker).manifest(data)
    return manifest, _ordered(walker.diagnostics)


def _ordered(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    return sorted(diagnostics, key=lambda d: (d.line or 0, d.column or 0, d.code))


# --- plain data -> model --------------------------------------------------------------------------------


class _Builder:
    """Turns the walker's validated plain data into the frozen model, attaching positions."""

    def __init__(self, walker: Walker) -> None:
        self._walker = walker

    def _key(self, path: NodePath) -> Location:
        return self._walker.keys.get(path) or self._walker.values.get(path) or Location(self._walker.file, 1, 1)

    def manifest(self, data: Mapping[str, Any]) -> Manifest:
        service = data.get("service") or {}
        operations = tuple(self._operation(key, entry) for key, entry in (data.get("operations") or {}).items())
        workflows = tuple(self._workflow(key, entry) for key, entry in (data.get("workflows") or {}).items())
        reviews = (self._review(key, entry) for key, entry in (data.get("capabilities") or {}).items())
        return Manifest(
            file=self._walker.file,
            service=ServiceManifest(**service),
            auth=self._auth(("auth",), data["auth"]) if "auth" in data else None,
            disclosure=_disclosure(data["disclosure"]) if "disclosure" in data else None,
            operations=operations,
            workflows=workflows,
            capabilities=tuple(review for review in reviews if review is not None),
        )

    def _operation(self, key: str, entry: Mapping[str, Any]) -> OperationManifest:
        path: NodePath = ("operations", key)
        retries = entry.get("retries")
        idempotency = entry.get("idempotency") or {}
        location = idempotency.get("key_location")
        needed = {"header": "header", "query": "parameter", "path": "parameter", "body": "field"}.get(location or "")
        if needed is not None and needed not in idempotency:
            where = self._key((*path, "idempotency", "key_location"))
            self._walker.diagnostics.append(
                diagnostic(
                    "manifest/wrong_type",
                    f"operations.{key}.idempotency: key_location {location} needs '{needed}' to name the key.",
                    file=where.file,
                    line=where.line,
                    column=where.column,
                    hint=f"Add idempotency.{needed}.",
                )
            )
        return OperationManifest(
            key=key,
            location=self._key(path),
            side_effect=entry.get("side_effect"),
            risk=entry.get("risk"),
            reversible=entry.get("reversible"),
            action=entry.get("action"),
            display_name=entry.get("display_name"),
            description=entry.get("description"),
            name=NameManifest(**entry["name"]) if "name" in entry else None,
            inputs=dict(entry["inputs"]) if entry.get("inputs") else None,
            auth=self._auth((*path, "auth"), entry["auth"]) if "auth" in entry else None,
            idempotency=IdempotencyManifest(**entry["idempotency"]) if "idempotency" in entry else None,
            confirmation=ConfirmationManifest(**entry["confirmation"]) if "confirmation" in entry else None,
            retries=(
                RetriesManifest(
                    enabled=retries.get("enabled"),
                    only_on=tuple(retries["only_on"]) if "only_on" in retries else None,
                    max_attempts=retries.get("max_attempts"),
                )
                if retries is not None
                else None
            ),
            state=entry.get("state"),
            effect=self._effect((*path, "effect"), entry["effect"]) if "effect" in entry else None,
            credential_hosts=tuple(dict.fromkeys(entry["credential_hosts"])) if "credential_hosts" in entry else None,
        )

    def _auth(self, path: NodePath, data: Mapping[str, Any]) -> AuthManifest:
        """An auth block; an override without a scheme or a reason, or a reason without an override,
        is reported and left out (so nothing not offered by the spec is applied unreviewed)."""
        fields = dict(data)
        problem, where = None, "override"
        if fields.get("override") is True and fields.get("scheme") is None:
            problem = "override: true overrides the auth of a chosen scheme; name the scheme with scheme"
        elif fields.get("override") is True and not str(fields.get("reason") or "").strip():
            problem = "override: true needs a non-empty reason saying why the spec's auth is overridden"
        elif "reason" in fields and fields.get("override") is not True:
            problem, where = "reason explains an override; set override: true or remove reason", "reason"
        if problem is not None:
            spot = self._key((*path, where))
            self._walker.diagnostics.append(
                diagnostic(
                    "manifest/wrong_type",
                    f"{path_text(path)}: {problem}.",
                    file=spot.file,
                    line=spot.line,
                    column=spot.column,
                )
            )
            fields.pop("override", None)
            fields.pop("reason", None)
        location = self._key((*path, "scheme")) if "scheme" in fields else self._key(path)
        return replace(_auth(fields), location=location)

    def _effect(self, path: NodePath, block: Mapping[str, Any]) -> EffectManifest:
        positions = {
            ".".join(str(part) for part in where[len(path) :]): location
            for where, location in self._walker.values.items()
            if len(where) > len(path) and where[: len(path)] == path
        }
        draft = block.get("draft")
        return EffectManifest(
            class_=block.get("class"),
            inverse=_follow_up(block["inverse"]) if "inverse" in block else None,
            compensate=_follow_up(block["compensate"]) if "compensate" in block else None,
            lookup=(
                LookupManifest(
                    operation=block["lookup"]["operation"],
                    by=block["lookup"]["by"],
                    arguments=_arguments(block["lookup"]),
                )
                if "lookup" in block
                else None
            ),
            draft=(
                DraftManifest(
                    operation=draft["operation"],
                    arguments=_arguments(draft),
                    handle=draft["handle"],
                    promote=_step_call(draft["promote"]),
                    discard=_step_call(draft["discard"]) if "discard" in draft else None,
                )
                if draft is not None
                else None
            ),
            location=self._key(path),
            positions=positions,
        )

    def _workflow(self, key: str, entry: Mapping[str, Any]) -> WorkflowManifest:
        path: NodePath = ("workflows", key)
        steps = tuple(
            WorkflowStepManifest(
                operation=step["operation"],
                location=self._key((*path, "steps", index)),
                description=step.get("description"),
                optional=step.get("optional", False),
                bindings=dict(step.get("bindings") or {}),
            )
            for index, step in enumerate(entry.get("steps") or ())
        )
        return WorkflowManifest(
            key=key,
            location=self._key(path),
            display_name=entry.get("display_name"),
            description=entry.get("description"),
            capability=entry.get("capability"),
            intent_examples=tuple(entry.get("intent_examples") or ()),
            human_approval=entry.get("human_approval"),
            rollback=entry.get("rollback"),
            state=entry.get("state"),
            steps=steps,
        )

    def _review(self, key: str, entry: Mapping[str, Any]) -> CapabilityReview | None:
        path: NodePath = ("capabilities", key)
        allow_large = entry.get("allow_large")
        problem = None
        if allow_large is not None and entry["state"] != "approved":
            problem = "allow_large is valid only for an approved capability review"
        elif allow_large is True and not (entry.get("note") or "").strip():
            problem = "allow_large: true needs a non-empty note saying why the budget is waived"
        if problem is not None:
            where = self._key((*path, "allow_large"))
            self._walker.diagnostics.append(
                diagnostic(
                    "manifest/wrong_type",
                    f"capabilities.{key}: {problem}.",
                    file=where.file,
                    line=where.line,
                    column=where.column,
                )
            )
            return None
        return CapabilityReview(
            capability_id=key,
            location=self._key(path),
            state=entry["state"],
            note=entry.get("note"),
            allow_large=allow_large,
        )


def _auth(data: Mapping[str, Any]) -> AuthManifest:
    carrier = data.get("carrier")
    provider = data.get("provider")
    kind = data.get("type")
    return AuthManifest(
        type=_TYPE_ALIASES.get(kind, kind) if isinstance(kind, str) else None,
        scheme=data.get("scheme"),
        override=data.get("override"),
        reason=data.get("reason"),
        scopes=tuple(data["scopes"]) if "scopes" in data else None,
        credential_profile=data.get("credential_profile"),
        principal=data.get("principal"),
        issuer=data.get("issuer"),
        audience=data.get("audience"),
        carrier=CarrierManifest(in_=carrier["in"], name=carrier["name"], scheme=carrier.get("scheme"))
        if carrier
        else None,
        secret_source=data.get("secret_source"),
        tenant=data.get("tenant"),
        actor=data.get("actor"),
        subject=data.get("subject"),
        provider=_provider(provider) if provider is not None else None,
    )


def _provider(data: Mapping[str, Any]) -> ProviderManifest:
    api_key = data.get("api_key")
    fields = {key: value for key, value in data.items() if key != "api_key"}
    return ProviderManifest(
        **fields,
        api_key=ApiKeyManifest(in_=api_key["in"], name=api_key["name"]) if api_key is not None else None,
    )


def _arguments(data: Mapping[str, Any]) -> JSONObject:
    return dict(data.get("arguments") or {})


def _follow_up(data: Mapping[str, Any]) -> FollowUpManifest:
    deadline = data.get("deadline")
    return FollowUpManifest(
        operation=data["operation"],
        arguments=_arguments(data),
        deadline=DeadlineManifest(**deadline) if deadline is not None else None,
    )


def _step_call(data: Mapping[str, Any]) -> StepCallManifest:
    return StepCallManifest(operation=data["operation"], arguments=_arguments(data))


def _disclosure(data: Mapping[str, Any]) -> DisclosureManifest:
    pinned = data.get("pinned")
    return DisclosureManifest(**{**data, "pinned": tuple(pinned) if pinned is not None else None})
