"""compile_source: a loaded spec (+ manifest) -> one AIR document and its diagnostics (original-core §3.5).

Step order: service id, version, display name, servers; normalize; collision repair; the manifest's
auth scheme choices, service auth defaults and the manifest overlay (collision repair again when
names moved; composite auth blocked again); input schemas; validation (then input schemas again,
since validation can require confirmation); effect contracts (on the validated operations); name
critique; capabilities; workflows and capability reviews; service auth; disclosure measurement; a
final AIR round trip. A bad spec never raises out of :func:`compile_source`: a broken operation is a
diagnostic, and a stage that fails unexpectedly is an ``internal_error`` diagnostic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final, TypeVar

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.codec import SERVICE_ID_PATTERN, document_json, load_document
from anvil.air.inputs import assemble_input_schema
from anvil.air.model import NO_AUTH, DisclosureBudget, Document, Operation, Server, Service, Source
from anvil.air.naming import resolve_name_collisions, snake
from anvil.air.token_counter import TokenCounter
from anvil.compiler.auth import group_selected, server_base_url
from anvil.compiler.auth_choice import choose_auth_schemes, service_auth_without_choice
from anvil.compiler.capabilities import discover_capabilities
from anvil.compiler.disclosure import measure_disclosure
from anvil.compiler.effects import check_effects
from anvil.compiler.inputs import disambiguate_inputs
from anvil.compiler.normalize import Normalized, normalize_document, servers_from
from anvil.compiler.original_view import OriginalSchemas, original_view
from anvil.compiler.overlay import ManifestApplication, apply_manifest, apply_service_defaults
from anvil.compiler.patterns import pattern_findings
from anvil.compiler.schemas import RefCloser, SchemaMaterializer
from anvil.compiler.validate import block, critique_names, validate_operations
from anvil.compiler.workflows import build_workflows
from anvil.diagnostics import Diagnostic, diagnostic
from anvil.errors import AnvilError
from anvil.load.result import LoadResult

if TYPE_CHECKING:
    from anvil.compiler.manifest.model import Manifest

__all__ = ["CompileResult", "compile_source", "derive_service_id"]

T = TypeVar("T")
_DEFAULT_SERVICE: Final = "service"
_COMPOSITE_NOTE: Final = "Blocked: the source requires several auth schemes at once; a manifest cannot remove a factor."
_CONTESTED_SCHEME_NOTE: Final = "Blocked: manifest entries disagree on auth.scheme; state one value."


@dataclass(frozen=True, slots=True)
class CompileResult:
    """The compiled AIR document and every diagnostic, in pipeline order (load diagnostics first),
    and the manifest :func:`anvil.compiler.build` parsed (None when none was given or it did not parse)."""

    document: Document
    diagnostics: tuple[Diagnostic, ...]
    manifest: Manifest | None = None
    #: The JSON of ``document.operations`` the compile's round trip wrote, for ``air.json`` to be
    #: written from without serializing them again (read it, do not change it); None when not kept.
    operations_json: list[Any] | None = None


def _slug(text: str) -> str:
    """A best-effort valid service id from arbitrary text (empty when nothing usable remains)."""
    value = re.sub(r"^[^a-z]+", "", snake(text))[:64].rstrip("_-")
    return value if SERVICE_ID_PATTERN.match(value) else ""


def derive_service_id(given: str | None, manifest_name: str | None, title: str | None) -> tuple[str, list[Diagnostic]]:
    """The service id: ``--service``, else manifest ``service.name``, else snake(info.title).

    An invalid given or manifest id is a ``cli/invalid_service_id`` error; compilation goes on with
    a slug made from it (or ``service``) so the rest of the spec is still checked.
    """
    for label, value in (("--service", given), ("manifest service.name", manifest_name)):
        if value is None:
            continue
        if SERVICE_ID_PATTERN.match(value):
            return value, []
        problem = diagnostic(
            "cli/invalid_service_id",
            f"{label} {value!r} is not a valid service id (lowercase letters, digits, '_' or '-', 1-64 "
            "characters, starting with a letter and ending with a letter or digit).",
            hint="Pass --service with a slug such as 'payments' or 'payments-api'.",
        )
        return _slug(value) or _DEFAULT_SERVICE, [problem]
    return _slug(title or "") or _DEFAULT_SERVICE, []


def _internal(stage: str, exc: BaseException) -> Diagnostic:
    if isinstance(exc, RecursionError):
        return _too_deep(f"compile stage {stage!r}")
    return diagnostic("internal_error", f"compile stage {stage!r} failed: {type(exc).__name__}: {exc}")


def _too_deep(where: str) -> Diagnostic:
    return diagnostic(
        "source/too_deep",
        f"{where}: the spec's schemas nest too deeply to compile once their references are followed",
        hint="flatten the deepest schemas, or break a long chain of references with a recursive one",
    )


def _servers(document: JSONObject) -> tuple[Server, ...]:
    return servers_from(document.get("servers"))


def _with_schemas(ops: Sequence[Operation], found: list[Diagnostic]) -> tuple[Operation, ...]:
    out: list[Operation] = []
    for op in ops:
        try:
            out.append(replace(op, input=replace(op.input, schema=assemble_input_schema(op))))
        except Exception as exc:  # a schema that cannot be assembled blocks its operation, never the compile
            found.append(
                diagnostic("operation_malformed", f"Operation '{op.id}': input schema failed ({exc}).", operation=op.id)
            )
            out.append(block(op, "Blocked: the input schema could not be assembled."))
    return tuple(out)


def _names(ops: Sequence[Operation]) -> list[tuple[str, str, str, str]]:
    return [(op.id, op.canonical_name, op.cli.command, op.mcp.tool_name) for op in ops]


class _Run:
    """One compile: the diagnostics in pipeline order, the manifest application, and a stage guard."""

    def __init__(self) -> None:
        self.found: list[Diagnostic] = []
        self.application: ManifestApplication | None = None
        #: operation indexes whose auth the manifest chose: their source auth findings are settled
        self.chosen_auth: frozenset[int] = frozenset()
        #: operation indexes two manifest entries choose different schemes for (blocked again after overlays)
        self.contested_auth: frozenset[int] = frozenset()

    def guard(self, stage: str, fallback: T, step: Callable[[], T]) -> T:
        try:
            return step()
        except Exception as exc:  # a failing stage is a diagnostic, never a traceback
            self.found.append(_internal(stage, exc))
            return fallback


def compile_source(
    loaded: LoadResult,
    manifest: Manifest | None,
    *,
    service_id: str | None,
    source_uri: str | None = None,
    counter: TokenCounter | None = None,
) -> CompileResult:
    """Compile a loaded spec and an optional parsed manifest into AIR.

    Args:
        loaded: what :func:`anvil.load.spec.load_spec` returned (its diagnostics come first).
        manifest: the parsed manifest, or None.
        service_id: the ``--service`` value, if given.
        source_uri: the spec path as given to compile (recorded in ``service.source.uri``).
        counter: counts the disclosure figures' tokens (:func:`anvil.compiler.build` starts its helper
            process before loading the spec); in this process when omitted.

    Returns:
        The document and every diagnostic; the document's ``diagnostics`` hold the same list in AIR shape.
        A spec whose schemas nest past what the stages walk (each file is bounded at load, a chain of
        references is not) compiles to no operation with ``source/too_deep``.
    """
    try:
        return _compile(loaded, manifest, service_id=service_id, source_uri=source_uri, counter=counter)
    except RecursionError:
        refused = replace(loaded, document=None, diagnostics=(*loaded.diagnostics, _too_deep("compile")))
        return _compile(refused, None, service_id=service_id, source_uri=source_uri)


def _compile(
    loaded: LoadResult,
    manifest: Manifest | None,
    *,
    service_id: str | None,
    source_uri: str | None,
    counter: TokenCounter | None = None,
) -> CompileResult:
    run = _Run()
    run.found.extend(loaded.diagnostics)
    spec: JSONObject = loaded.document if isinstance(loaded.document, dict) else {}
    info: JSONObject = spec["info"] if isinstance(spec.get("info"), dict) else {}
    title = info.get("title") if isinstance(info.get("title"), str) else None
    service_manifest = manifest.service if manifest is not None else None
    sid, problems = derive_service_id(service_id, service_manifest.name if service_manifest else None, title)
    run.found.extend(problems)
    version = str(info.get("version")) if info.get("version") is not None else "0.0.0"
    environment = service_manifest.environment if service_manifest else None
    if environment:
        version = f"{version}-{environment}"
    source = Source(
        kind=loaded.kind,
        uri=source_uri or loaded.uri or None,
        snapshot_id=loaded.snapshot_id or None,
        source_hash=loaded.source_hash or None,
        entrypoint=loaded.entrypoint or None,
    )
    service = Service(
        id=sid,
        version=version,
        display_name=(service_manifest.display_name if service_manifest else None) or title or sid,
        owner=service_manifest.owner if service_manifest else None,
        environment=environment or None,
        source=source,
        servers=_servers(spec),
        # Recorded only when it differs from the default, so AIR without it stays the original's.
        list_effect_class="all" if service_manifest and service_manifest.list_effect_class == "all" else None,
        propagate_trace=True if service_manifest and service_manifest.propagate_trace else None,
    )
    materializer = SchemaMaterializer(spec)
    normalized = normalize_document(spec, sid, kind=loaded.kind, materializer=materializer)
    ops, renames = resolve_name_collisions(normalized.operations)
    ops, applied = _apply_manifest(run, ops, manifest, sid, normalized, spec)
    ops, repaired = _repair_again(ops, manifest is not None)
    ops = _reblock(ops, normalized.composite, _COMPOSITE_NOTE)
    ops = _reblock(ops, run.contested_auth, _CONTESTED_SCHEME_NOTE)
    named, (ops, renamed_inputs) = ops, disambiguate_inputs(ops)
    # The original publishes colliding inputs under one name; its disclosure figures measure that.
    collided = {before.id: before for before, after in zip(named, ops, strict=True) if before != after}
    # Pagination is inferred for reads only; a manifest that makes an operation a mutation drops it.
    ops = tuple(replace(op, pagination=None) if op.pagination and op.effect.kind != "read" else op for op in ops)
    for index, item in normalized.diagnostics:  # normalize findings carry the final id of their operation
        if index in run.chosen_auth and item.code.startswith("auth/"):
            continue  # the manifest chose this operation's scheme; auth/scheme_chosen reports it
        run.found.append(replace(item, operation=ops[index].id) if index is not None and index < len(ops) else item)
    run.found[:] = group_selected(run.found)  # said once per selected scheme, with the count
    run.found.extend(renames)
    run.found.extend(applied)
    run.found.extend(repaired)
    run.found.extend(renamed_inputs)
    ops = _with_schemas(ops, run.found)
    closer = RefCloser(spec)
    document = Document(
        service=service,
        operations=_closed_outputs(ops, closer),
        disclosure=_disclosure_budget(manifest),
        schemas=closer.components(),
    )
    validated, validation = validate_operations(document.operations, service_servers=document.service.servers)
    run.found.extend(validation)
    document = replace(document, operations=_with_schemas(validated, run.found))
    # Effect contracts are judged after validation, so they see final states and confirmations
    # (a follow-up target that validation blocked is a target callers will be refused).
    document = _effects(run, document)
    validated = document.operations
    run.found.extend(critique_names(validated))
    run.found.extend(pattern_findings(validated, document.schemas))
    stamped, capabilities = discover_capabilities(sid, validated)
    document = replace(document, operations=stamped, capabilities=capabilities)
    document = _workflows(run, document, manifest)
    service_auth = next((op.auth for op in document.operations if op.auth.type != "none"), NO_AUTH)
    document = replace(document, service=replace(document.service, auth=service_auth))
    document = _disclosure(run, document, spec, collided, counter)
    document, operations_json = _round_trip(run, document)
    document = replace(document, diagnostics=tuple(d.to_air() for d in run.found))
    return CompileResult(document=document, diagnostics=tuple(run.found), operations_json=operations_json)


def _apply_manifest(
    run: _Run,
    ops: tuple[Operation, ...],
    manifest: Manifest | None,
    sid: str,
    normalized: Normalized,
    spec: JSONObject,
) -> tuple[tuple[Operation, ...], list[Diagnostic]]:
    """Auth scheme choices, service auth defaults, then the manifest overlay (all owned by the manifest stage)."""
    found: list[Diagnostic] = []
    if manifest is None:
        return ops, found
    components = spec.get("components")
    schemes = components.get("securitySchemes") if isinstance(components, dict) else None

    def scheme_choices() -> tuple[Operation, ...]:
        result = choose_auth_schemes(ops, manifest, normalized.security, schemes, server_base_url(spec.get("servers")))
        found.extend(result.diagnostics)
        run.chosen_auth = result.chosen
        run.contested_auth = result.contested
        return result.operations

    ops = run.guard("auth scheme choices", ops, scheme_choices)
    # An operation whose scheme the manifest chose no longer has alternatives left unmodeled.
    unmodeled = frozenset(ops[i].id for i in normalized.alternatives - run.chosen_auth if i < len(ops))
    defaults = service_auth_without_choice(manifest)

    def service_defaults() -> tuple[Operation, ...]:
        result, diagnostics = apply_service_defaults(ops, defaults, alternatives_unmodeled=unmodeled)
        found.extend(diagnostics)
        return tuple(result)

    ops = run.guard("service auth defaults", ops, service_defaults)

    def overlay() -> tuple[Operation, ...]:
        application = apply_manifest(ops, manifest, service_id=sid, dropped=normalized.dropped)
        run.application = application
        found.extend(application.diagnostics)
        return tuple(application.operations)

    return run.guard("manifest overlay", ops, overlay), found


def _repair_again(ops: tuple[Operation, ...], moved: bool) -> tuple[tuple[Operation, ...], list[Diagnostic]]:
    if not moved:
        return ops, []
    surfaces = _names(ops)
    if len({n[0] for n in surfaces}) == len(ops) and len({n[2] for n in surfaces}) == len(ops):
        if len({n[3] for n in surfaces}) == len(ops):
            return ops, []
    repaired, found = resolve_name_collisions(ops)
    return repaired, found


def _reblock(ops: tuple[Operation, ...], indexes: frozenset[int], note: str) -> tuple[Operation, ...]:
    """Block ``indexes`` again after the overlay: no approval lifts what a manifest cannot settle."""
    if not indexes:
        return ops
    return tuple(block(op, note) if i in indexes and op.state != "blocked" else op for i, op in enumerate(ops))


def _closed_outputs(ops: tuple[Operation, ...], closer: RefCloser) -> tuple[Operation, ...]:
    """Each operation's answer schema with its references closed (:class:`RefCloser`)."""
    out: list[Operation] = []
    for op in ops:
        schema = op.output.schema
        closed = closer.close(schema) if isinstance(schema, dict) else schema
        out.append(op if closed == schema else replace(op, output=replace(op.output, schema=closed)))
    return tuple(out)


def _effects(run: _Run, document: Document) -> Document:
    def step() -> Document:
        checked, diagnostics = check_effects(document, run.application)
        run.found.extend(diagnostics)
        assert isinstance(checked, Document)
        return replace(checked, operations=_with_schemas(checked.operations, run.found))

    result: Document = run.guard("effect contracts", document, step)
    return result


def _workflows(run: _Run, document: Document, manifest: Manifest | None) -> Document:
    if manifest is None:
        return document

    def step() -> Document:
        built, diagnostics = build_workflows(document, manifest)
        run.found.extend(diagnostics)
        result: Document = built
        return result

    result: Document = run.guard("workflows", document, step)
    return result


def _disclosure_budget(manifest: Manifest | None) -> DisclosureBudget | None:
    """The manifest's ``disclosure:`` block in AIR, defaults filled in (None when not stated)."""
    stated = manifest.disclosure if manifest is not None else None
    if stated is None:
        return None
    budget = DisclosureBudget()
    if stated.tool_budget_tokens is not None:
        budget = replace(budget, tool_budget_tokens=stated.tool_budget_tokens)
    if stated.output_schema_percent is not None:
        budget = replace(budget, output_schema_percent=stated.output_schema_percent)
    if stated.pinned:
        budget = replace(budget, pinned=tuple(dict.fromkeys(stated.pinned)))
    return budget


def _disclosure(
    run: _Run, document: Document, spec: JSONObject, collided: dict[str, Operation], counter: TokenCounter | None
) -> Document:
    schemas = OriginalSchemas(spec)

    def step() -> Document:
        measured, diagnostics = measure_disclosure(
            document, lambda op: original_view(op, spec, schemas, collided.get(op.id)), counter=counter
        )
        run.found.extend(diagnostics)
        return measured

    result: Document = run.guard("disclosure measurement", document, step)
    return result


def _round_trip(run: _Run, document: Document) -> tuple[Document, list[Any] | None]:
    """The document as AIR loads it (defaults applied), and its operations' JSON when it loads unchanged;
    if loading refuses it, that is an internal error.

    When loading gives an equal document, ``document`` itself is kept, so what was worked out for its
    operations (their published tools, measured during disclosure) is found again by identity, and the
    operations' JSON written here is theirs (``air.json`` is written from it).
    """
    try:
        written = document_json(document)
        loaded = load_document(written)
    except AnvilError as exc:
        run.found.append(_internal("final AIR load", exc))
        return document, None
    return (document, written["operations"]) if loaded == document else (loaded, None)
