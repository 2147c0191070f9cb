"""Normalize (original-core §3.3): one AIR operation per source path × method.

Methods are visited in the order get, put, post, delete, patch, head; paths in document order. Each
operation is built on its own, so a malformed one becomes an ``operation_malformed`` warning and the
rest still compile. Diagnostics are returned with the index of the operation they concern, because
the operation's id is final only after collision repair.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any, Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.carrier import is_json_media_type
from anvil.air.enums import EffectKind, ErrorCode, OperationState, ParamLocation
from anvil.air.model import (
    BodyField,
    Claim,
    Cli,
    ErrorSpec,
    ErrorUpstream,
    Evidence,
    Input,
    Mcp,
    Operation,
    Output,
    Param,
    RequestBody,
    Server,
    SourceRef,
)
from anvil.air.naming import derive_names, snake
from anvil.compiler.auth import resolve_auth, server_base_url
from anvil.compiler.classify import archetype_for, classify_operation, confirmation_for, retry_policy_for
from anvil.compiler.pagination import infer_pagination
from anvil.compiler.schemas import SchemaMaterializer
from anvil.diagnostics import Diagnostic, diagnostic

__all__ = [
    "METHODS",
    "UNCOMPILED_METHODS",
    "Dropped",
    "Normalized",
    "normalize_document",
    "pointer_of",
    "projected_fields",
    "servers_from",
]

METHODS: Final = ("get", "put", "post", "delete", "patch", "head")
#: Path-item methods that are not compiled into tools, and why (each gets ``operation_not_compiled``).
UNCOMPILED_METHODS: Final[dict[str, str]] = {
    "options": "an OPTIONS operation says what a resource allows (CORS preflight, discovery); no agent acts with it",
    "trace": "a TRACE operation echoes the request back for diagnostics; no agent acts with it",
    "query": "the QUERY method (OpenAPI 3.2) is not compiled yet",
}
_IGNORED_HEADERS: Final = frozenset({"accept", "content-type", "authorization"})
_LOCATIONS: Final = frozenset({"path", "query", "header", "cookie", "body"})
_SCALARS: Final = frozenset({"string", "integer", "number", "boolean"})
_VARIABLE_KEYS: Final = ("default", "enum", "description")
_COMPOSITORS: Final = ("oneOf", "anyOf", "allOf", "not")
_ERROR_TABLE: Final[dict[int, ErrorCode]] = {
    400: "validation_error",
    401: "auth_required",
    403: "permission_denied",
    404: "not_found",
    409: "conflict",
    422: "validation_error",
    429: "rate_limited",
    500: "unknown_upstream_error",
    502: "upstream_unavailable",
    503: "upstream_unavailable",
    504: "upstream_timeout",
}


@dataclass(frozen=True, slots=True)
class Dropped:
    """An operation of the spec that is not compiled into a tool: where it is, and why not."""

    method: str
    path: str
    operation_id: str | None
    reason: str

    @property
    def names(self) -> tuple[str, ...]:
        """The names a manifest entry may use for it: operationId (as written and snake_case), ``METHOD /path``."""
        names = [f"{self.method.upper()} {self.path}", f"{self.method} {self.path}"]
        if self.operation_id:
            names += [self.operation_id, snake(self.operation_id)]
        return tuple(dict.fromkeys(name for name in names if name))


@dataclass(frozen=True, slots=True)
class Normalized:
    """Normalized operations (discovery order) and diagnostics keyed by operation index (None: none).

    ``composite`` holds the indexes of operations whose source auth needs several schemes at once;
    they are blocked again after overlays (a manifest cannot remove a factor).
    ``alternatives`` holds the indexes whose auth alternatives did not resolve to one principal.
    ``security`` holds each operation's effective source ``security`` list (its own, else the
    document's), so a manifest's scheme choice is checked against what the spec offers.
    """

    operations: tuple[Operation, ...]
    diagnostics: tuple[tuple[int | None, Diagnostic], ...]
    composite: frozenset[int] = field(default_factory=frozenset)
    alternatives: frozenset[int] = field(default_factory=frozenset)
    dropped: tuple[Dropped, ...] = ()
    security: tuple[JSONValue, ...] = ()


def _variables(value: JSONValue) -> JSONObject | None:
    """A server's variables as declared (``default``, ``enum``, ``description`` of each), None when none."""
    if not isinstance(value, dict):
        return None
    out: JSONObject = {}
    for name, spec in value.items():
        if isinstance(name, str) and isinstance(spec, dict):
            out[name] = {key: spec[key] for key in _VARIABLE_KEYS if key in spec}
    return out or None


def servers_from(value: JSONValue) -> tuple[Server, ...]:
    """The servers of a ``servers`` list (entries without a string ``url`` are left out)."""
    out: list[Server] = []
    for item in value if isinstance(value, list) else ():
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            description = item.get("description")
            out.append(
                Server(
                    url=item["url"],
                    description=description if isinstance(description, str) else None,
                    variables=_variables(item.get("variables")),
                )
            )
    return tuple(out)


def pointer_of(path: str, method: str | None = None) -> str:
    """The JSON pointer of a path item (or one of its operations)."""
    escaped = path.replace("~", "~0").replace("/", "~1")
    return f"/paths/{escaped}" + (f"/{method}" if method else "")


class _Builder:
    def __init__(self, document: JSONObject, service_id: str, kind: str, materializer: SchemaMaterializer) -> None:
        self.document = document
        self.service_id = service_id
        self.kind = kind
        self.schemas = materializer
        components = document.get("components")
        self.security_schemes = components.get("securitySchemes") if isinstance(components, dict) else None
        self.base_url = server_base_url(document.get("servers"))
        self.servers = servers_from(document.get("servers"))
        self.found: list[tuple[int | None, Diagnostic]] = []
        self.composite: set[int] = set()
        self.alternatives: set[int] = set()
        self.security: dict[int, JSONValue] = {}

    def note(self, index: int | None, code: str, message: str, pointer: str) -> None:
        self.found.append((index, diagnostic(code, message, pointer=pointer)))

    # --- parameters -----------------------------------------------------------------------------------

    def params(self, path_level: JSONValue, op_level: JSONValue, index: int, where: str) -> tuple[Param, ...]:
        merged: dict[tuple[str, str], JSONObject] = {}
        for group in (path_level, op_level):
            if not isinstance(group, list):
                continue
            for raw in group:
                param = self.schemas.resolve(raw)
                if not isinstance(param, dict):
                    continue
                name, location = param.get("name"), param.get("in")
                if not isinstance(name, str) or location not in _LOCATIONS:
                    continue
                key = (name, str(location))
                merged.pop(key, None)  # the operation's own declaration wins (and takes its place)
                merged[key] = param
        out: list[Param] = []
        for (name, location), param in merged.items():
            if location == "header" and name.lower() in _IGNORED_HEADERS:
                self.note(index, "header_param_ignored", f"{where}: header parameter {name!r} is runtime-owned.", where)
                continue
            out.append(self.param(name, location, param))
        return tuple(out)

    def param(self, name: str, location: str, param: JSONObject) -> Param:
        raw_schema = param.get("schema")
        if raw_schema is None and isinstance(param.get("content"), dict):
            media = next(iter(param["content"].values()), None)
            raw_schema = media.get("schema") if isinstance(media, dict) else None
        schema = self.schemas.materialize(raw_schema) if raw_schema is not None else {"type": "string"}
        description = param.get("description")
        loc: ParamLocation = location  # type: ignore[assignment]  # checked against _LOCATIONS
        return Param(
            name=name,
            in_=loc,
            required=location == "path" or param.get("required") is True,
            schema=schema,
            description=description if isinstance(description, str) and description else None,
            example=param.get("example"),
        )

    # --- request body ---------------------------------------------------------------------------------

    def body(self, raw: JSONValue) -> RequestBody | None:
        body = self.schemas.resolve(raw)
        if not isinstance(body, dict):
            return None
        content = body.get("content")
        if not isinstance(content, dict) or not content:
            return None
        media_types = [key for key in content if isinstance(key, str)]
        if not media_types:
            return None
        chosen = next((m for m in media_types if m.split(";")[0].strip().lower() == "application/json"), media_types[0])
        media = content[chosen]
        raw_schema = media.get("schema") if isinstance(media, dict) else None
        schema = self.schemas.materialize(raw_schema) if raw_schema is not None else {}
        fields = projected_fields(schema)
        return RequestBody(
            content_type=chosen,
            required=body.get("required") is True,
            schema=schema,
            projection="fields" if fields is not None else "whole",
            fields=fields or (),
        )

    def own_servers(self, item: JSONObject, raw: JSONObject) -> tuple[Server, ...] | None:
        """The operation's own servers (its ``servers``, else its path item's), None when it has none or
        they are the service's (the same first URL, with no other variables)."""
        servers = servers_from(raw["servers"] if "servers" in raw else item.get("servers"))
        if not servers:
            return None
        main = self.servers[0] if self.servers else None
        if main is not None and servers[0].url == main.url and servers[0].variables in (None, main.variables):
            return None
        return servers

    # --- responses ------------------------------------------------------------------------------------

    def responses(self, raw: JSONValue) -> tuple[Output, tuple[ErrorSpec, ...], bool, bool]:
        """(output, errors, long running, streaming)."""
        responses = raw if isinstance(raw, dict) else {}
        by_status = {str(status): status for status in responses}
        output = Output()
        long_running = streaming = False
        for status in ("200", "201", "202"):
            if status not in by_status:
                continue
            response = self.schemas.resolve(responses[by_status[status]])
            if not isinstance(response, dict):
                break
            output, streaming = _output(response)
            # A 202 among the answers says the work may finish later, even beside a 200 or 201.
            long_running = "202" in by_status or _has_header(response, "operation-location")
            break
        errors: list[ErrorSpec] = []
        for status_text, status in by_status.items():
            if not status_text.isdigit() or int(status_text) not in _ERROR_TABLE:
                continue
            response = self.schemas.resolve(responses[status])
            message = response.get("description") if isinstance(response, dict) else None
            errors.append(
                ErrorSpec(
                    code=_ERROR_TABLE[int(status_text)],
                    upstream=ErrorUpstream(http_status=int(status_text)),
                    message=message if isinstance(message, str) and message else None,
                )
            )
        return output, tuple(errors), long_running, streaming

    # --- one operation --------------------------------------------------------------------------------

    def operation(self, path: str, method: str, item: JSONObject, raw: JSONObject, index: int) -> Operation:
        where = pointer_of(path, method)
        op_id = raw.get("operationId") if isinstance(raw.get("operationId"), str) else None
        summary = raw.get("summary") if isinstance(raw.get("summary"), str) else None
        description = raw.get("description") if isinstance(raw.get("description"), str) else None
        hint = raw.get("x-anvil-effect")
        forced: EffectKind | None = hint if hint in ("read", "mutation") else None
        classification = classify_operation(
            method=method, path=path, operation_id=op_id, summary=summary, forced_kind=forced
        )
        effect = classification.effect
        names = derive_names(
            self.service_id,
            path,
            method,
            op_id,
            summary,
            search_read=effect.kind == "read" and method == "post",
        )
        effect = replace(effect, resource=names.effect_resource or None)
        idempotency = classification.idempotency
        claims = [
            Claim(subject=names.id, predicate="exists", value=True, source="spec", confidence=0.7),
            _kind_claim(names.id, effect.kind, forced),
        ]
        if raw.get("x-idempotent") is True and idempotency.mode == "none":
            idempotency = replace(idempotency, mode="natural")
            claims.append(
                Claim(subject=names.id, predicate="idempotency.mode", value="natural", source="spec", confidence=0.8)
            )
        params = self.params(item.get("parameters"), raw.get("parameters"), index, where)
        body = self.body(raw.get("requestBody"))
        output, errors, long_running, streaming = self.responses(raw.get("responses"))
        if long_running:
            claims.append(Claim(subject=names.id, predicate="longRunning", value=True, source="spec", confidence=0.8))
        claims.append(
            Claim(
                subject=names.id,
                predicate="name.quality",
                value=names.confidence,
                source="inferred",
                method="naming",
                confidence=names.confidence,
                note=", ".join(names.reasons) or None,
            )
        )
        security = raw["security"] if "security" in raw else self.document.get("security")
        self.security[index] = security
        resolution = resolve_auth(security, self.security_schemes, self.base_url)
        notes: list[str] = []
        for issue in resolution.issues:
            message = f"{method.upper()} {path}: {issue.message}"
            notes.append(message)
            self.note(index, issue.code, message, where)
            if issue.code == "auth/composite_unmodeled":
                self.composite.add(index)
            if issue.code == "auth/alternatives_unmodeled":
                self.alternatives.add(index)
        state: OperationState = (
            "blocked" if resolution.blocked else "review_required" if resolution.issues else "generated"
        )
        tags = (
            tuple(tag for tag in raw.get("tags") or () if isinstance(tag, str))
            if isinstance(raw.get("tags"), list)
            else ()
        )
        op = Operation(
            id=names.id,
            canonical_name=names.canonical_name,
            display_name=names.display_name,
            description=description or summary or "",
            tags=tags,
            source_ref=SourceRef(kind=self.kind, path=path, method=method, operation_id=op_id, pointer="#" + where),
            effect=effect,
            input=Input(params=params, body=body),
            output=output,
            errors=errors,
            idempotency=idempotency,
            retries=retry_policy_for(effect, idempotency),
            confirmation=confirmation_for(effect, idempotency),
            auth=resolution.auth,
            servers=self.own_servers(item, raw),
            streaming=streaming,
            long_running=long_running,
            deprecated=raw.get("deprecated") is True,
            cli=Cli(command=names.command),
            mcp=Mcp(tool_name=names.tool_name),
            state=state,
            review_notes=tuple(notes),
            evidence=Evidence(claims=tuple(claims)),
        )
        return replace(op, archetype=archetype_for(op), pagination=infer_pagination(op, self.schemas.resolve))


def _kind_claim(subject: str, kind: str, forced: EffectKind | None) -> Claim:
    if forced is not None:
        return Claim(
            subject=subject,
            predicate="effect.kind",
            value=kind,
            source="spec",
            method="protocol_adapter_assertion",
            confidence=0.9,
        )
    return Claim(
        subject=subject,
        predicate="effect.kind",
        value=kind,
        source="inferred",
        method="http_method_heuristic",
        confidence=0.5,
    )


def _scalar(schema: JSONValue) -> bool:
    if not isinstance(schema, dict) or "$ref" in schema or any(k in schema for k in _COMPOSITORS):
        return False
    if "enum" in schema or "const" in schema:
        return True
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind in _SCALARS
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        return bool(kinds) and all(k in _SCALARS for k in kinds)
    return False


def projected_fields(schema: JSONObject) -> tuple[BodyField, ...] | None:
    """The body fields when the body is a flat object of scalars (projection ``fields``), else None."""
    props = schema.get("properties")
    if schema.get("type") != "object" or not isinstance(props, dict) or not props:
        return None
    if any(k in schema for k in _COMPOSITORS) or not all(_scalar(value) for value in props.values()):
        return None
    required = schema["required"] if isinstance(schema.get("required"), list) else []
    return tuple(BodyField(name=name, required=name in required, schema=value) for name, value in props.items())


def _output(response: JSONObject) -> tuple[Output, bool]:
    description = response.get("description") if isinstance(response.get("description"), str) else None
    content = response.get("content")
    schema: Any = None
    streaming = False
    if isinstance(content, dict):
        streaming = any(isinstance(k, str) and k.startswith("text/event-stream") for k in content)
        for media_type, media in content.items():
            if isinstance(media_type, str) and is_json_media_type(media_type) and isinstance(media, dict):
                schema = media.get("schema")
                break
    if not isinstance(schema, dict):
        return Output(description=description or None), streaming
    ref = schema.get("$ref") if len(schema) == 1 else None
    return Output(
        schema_ref=ref if isinstance(ref, str) else None, schema=schema, description=description or None
    ), streaming


def _has_header(response: JSONObject, name: str) -> bool:
    headers = response.get("headers")
    return isinstance(headers, dict) and any(isinstance(k, str) and k.lower() == name for k in headers)


def normalize_document(
    document: JSONObject,
    service_id: str,
    *,
    kind: str = "openapi",
    materializer: SchemaMaterializer | None = None,
) -> Normalized:
    """Build one AIR operation per path × method of ``document`` (never raises for bad input).

    Args:
        document: the loaded OpenAPI-3-shaped document.
        service_id: the (valid) service id.
        kind: ``openapi`` or ``swagger`` (recorded in ``sourceRef.kind``).
        materializer: a shared schema materializer (one is made when omitted).

    Returns:
        The operations and diagnostics (normalize: ``header_param_ignored``, ``auth/*``,
        ``operation_malformed``).
    """
    builder = _Builder(document, service_id, kind, materializer or SchemaMaterializer(document))
    operations: list[Operation] = []
    dropped: list[Dropped] = []
    paths = document.get("paths")
    if not isinstance(paths, dict):
        return Normalized((), ())
    for path, raw_item in paths.items():
        if not isinstance(path, str):
            continue
        item = builder.schemas.resolve(raw_item)
        if not isinstance(item, dict):
            builder.note(None, "operation_malformed", f"path item {path!r} is not a mapping.", pointer_of(path))
            continue
        for method in METHODS:
            if method not in item:
                continue
            raw = item[method]
            where = pointer_of(path, method)
            if not isinstance(raw, dict):
                builder.note(None, "operation_malformed", f"{method.upper()} {path} is not a mapping; skipped.", where)
                continue
            index = len(operations)
            mark = len(builder.found)
            try:
                operations.append(builder.operation(path, method, item, raw, index))
            except Exception as exc:  # one broken operation must not stop the compile
                del builder.found[mark:]
                builder.composite.discard(index)
                builder.alternatives.discard(index)
                builder.security.pop(index, None)
                message = f"{method.upper()} {path} could not be compiled ({type(exc).__name__}); skipped."
                builder.note(None, "operation_malformed", message, where)
        for method, reason in UNCOMPILED_METHODS.items():
            raw = item.get(method)
            if isinstance(raw, dict):
                op_id = raw.get("operationId") if isinstance(raw.get("operationId"), str) else None
                dropped.append(Dropped(method=method, path=path, operation_id=op_id, reason=reason))
                label = f"{method.upper()} {path}" + (f" ({op_id})" if op_id else "")
                message = f"{label} is not compiled into a tool: {reason}."
                builder.note(None, "operation_not_compiled", message, pointer_of(path, method))
    return Normalized(
        tuple(operations),
        tuple(builder.found),
        frozenset(builder.composite),
        frozenset(builder.alternatives),
        tuple(dropped),
        tuple(builder.security.get(index) for index in range(len(operations))),
    )
