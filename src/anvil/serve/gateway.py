"""The gateway: one AIR document served as tools, each call carried out under its effect contract.

:class:`Gateway` is transport-free. It is built once at start-up (tool table, listing, argument
validators, effect plans) and then answers ``list_tools`` and ``call`` for the MCP server
(:mod:`anvil.serve.mcp.server`) or any other front end (a REST route, a fleet composing several).

Handler order for a call (original-gateway §2.5.3, §2.5.5):

1. Read the caller controls in ``_meta`` (``effect/invalid_meta``).
2. Validate the arguments against the tool's schema (the safety controls are left to the gates).
3. Peel ``anvil_dry_run`` and ``anvil_projection``; check the projection (``projection/invalid``,
   :mod:`anvil.serve.projection`).
4. Staged (``_meta.stage: true``): the draft form (§7), see :meth:`Gateway.call`.
5. Forward the caller's key into the operation's idempotency input when it sends one upstream
   (``effect/idempotency_key_conflict`` when the arguments hold a different one).
6. ``execute`` with the caller's key as the audit ledger id (the executed input is bound for the audit
   line's ``input_sha256``, see :func:`anvil.runtime.audit.audit_input`).
7. The report, unless the outcome is a dry run.
8. A success is checked against the output schema, then narrowed to the projection's view, if any.
9. The answer (a success's data or view, a dry run's plan) is bounded by the response budget
   (:mod:`anvil.serve.responses`): cut, with a marker and a link to the whole answer, when over it.
   An error is never cut.

Before step 6, a read whose page size the caller left unset gets the largest page that fits the
budget, when the size of one item is known (:meth:`anvil.serve.responses.ResponseBudget.size_page`);
a write is never paged, so its idempotency fingerprint is the caller's request.

Refusals in steps 1-5 touch nothing and write no audit line. An unstaged refusal after step 1 carries
a failure report like any failed call; a staged call carries a report only when its draft succeeds.

The projection is not part of the executed input, so it is not in the idempotency fingerprint and the
ledger stores the whole answer: a replay under the same key with another projection (or none) is a
replay, and answers with its own view. A projection that fails on a successful answer is an error
(``validation_error``, ``details.code`` ``projection/failed``) that still carries the effect report,
since the write happened; it never falls back to the whole answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.effects import forwards_idempotency_key
from anvil.air.inputs import safety_keys
from anvil.air.model import Document, Operation
from anvil.air.surface import INPUT_SCHEMA_META, surface_of
from anvil.air.tools import DRY_RUN_ARGUMENT, PROJECTION_ARGUMENT, operation_input_schema, published_input_schema
from anvil.runtime.audit import audit_input
from anvil.runtime.context import CallOptions, RuntimeContext
from anvil.runtime.envelope import ErrorEnvelope
from anvil.runtime.tracing import current_trace_id
from anvil.serve.answer_store import AnswerKeeper, KeptAnswer, answer_owner
from anvil.serve.budget import DEFAULT_RESULT_TOKEN_BUDGET
from anvil.serve.controls import CallerControls, ControlError, KeyConflict, forward_key, read_controls
from anvil.serve.mcp.listing import served_tool_definition
from anvil.serve.mcp.resources import Resource, schema_resource
from anvil.serve.mcp.results import CallResult, OutputCheck, conform
from anvil.serve.mcp.validation import MAX_ARGUMENT_DEPTH, ArgumentCheck, call_schema, too_deep
from anvil.serve.pages import resolved_schema
from anvil.serve.report import EffectPlan, call_report, lookup_found, staged_report

if TYPE_CHECKING:
    from anvil.runtime.outcome import Outcome
    from anvil.serve.projection import Projection
    from anvil.serve.responses import ResponseBudget

__all__ = ["Gateway", "ServedTool"]


@dataclass(frozen=True, slots=True)
class ServedTool:
    """One served operation, with everything a call needs resolved once.

    Attributes:
        name: the tool name callers dial.
        op: the operation.
        definition: its ``tools/list`` entry.
        check: the argument validator.
        plan: the effect plan (for the report).
        key_input: the idempotency input the caller's key is forwarded into, or None (not sent).
        confirm_input: the operation's confirm input, or None.
        dry_run: True when ``anvil_dry_run`` is the reserved argument (not a business input).
        projection: True when ``anvil_projection`` is the reserved argument (not a business input).
        structured_view: True when the tool lists an ``outputSchema``: a projected answer's
            ``structuredContent`` is then ``{"anvil_projection": <expression>, "result": <view>}``, the
            shape that schema admits; otherwise it is the view (``{"result": <view>}`` when the view is
            not an object), as original-core §5.6 says.
        ignored: arguments accepted and dropped: a ``confirm`` on a tool that does not take one
            (ADR-0030 §6: a generic caller adds ``confirm`` to every follow-up).
        output: the check of the whole output schema, or None when the response declares none. It is
            the whole schema even when the listing publishes it cut to the tool budget
            (``_meta["anvil/output_schema"]``): the cut only accepts more, so a stock client accepts
            every answer that passes this check.
    """

    name: str
    op: Operation
    definition: JSONObject
    check: ArgumentCheck
    plan: EffectPlan
    key_input: str | None
    confirm_input: str | None
    dry_run: bool
    output: OutputCheck | None = None
    ignored: tuple[str, ...] = ()
    projection: bool = False
    structured_view: bool = False


#: ``confirm`` on a tool with no confirm input: accepted as a boolean and dropped (ADR-0030 §6).
IGNORED_CONFIRM: Final[dict[str, JSONObject]] = {"confirm": {"type": "boolean"}}


def _refusal(op: Operation, code: str, message: str, details: JSONObject | None = None) -> ErrorEnvelope:
    return ErrorEnvelope(
        code=code,
        message=message,
        retryable=False,
        safe_to_retry=False,
        operation=op.id,
        trace_id=current_trace_id(),
        details=details,
    )


def _sent_key(outcome: Outcome) -> str | None:
    """The key that went upstream for this call; a ledger replay echoes the key its first call sent."""
    return outcome.idempotency_key


class Gateway:
    """An AIR document served as tools under one runtime context."""

    def __init__(
        self,
        document: Document,
        context: RuntimeContext,
        *,
        include_unapproved: bool = False,
        tool_name: Callable[[Operation], str] | None = None,
        clock: Callable[[], float] | None = None,
        result_token_budget: int = DEFAULT_RESULT_TOKEN_BUDGET,
        keeper: AnswerKeeper | None = None,
    ) -> None:
        """Build the tool table, listing, validators and effect plans.

        Args:
            document: The AIR document.
            context: The runtime context every call executes under.
            include_unapproved: List operations that are not approved too (development only); the
                executor still refuses them, and no report names them as a follow-up.
            tool_name: How a served tool is named (default: ``op.mcp.tool_name``); a fleet passes its
                prefixed naming so listings and reports name what callers dial.
            clock: Wall-clock seconds for deadlines (default: the context's clock).
            result_token_budget: The response budget in o200k tokens (:mod:`anvil.serve.responses`);
                0 turns it off (answers are whole, pages unsized).
            keeper: Where the whole answers of cut calls are kept for their caller, or None.

        Raises:
            ValueError: ``result_token_budget`` is negative.
        """
        if result_token_budget < 0:
            raise ValueError("result_token_budget must be 0 (off) or a positive number of tokens")
        self.document = document
        self.result_token_budget = result_token_budget
        self._responses: ResponseBudget | None = None  # made by the first call that needs it (_response_budget)
        self.context = context
        self.keeper = keeper
        self._clock = clock or context.clock
        naming = tool_name or (lambda op: op.mcp.tool_name)
        listed = [op for op in document.operations if include_unapproved or op.is_approved]
        callable_names = {op.id: naming(op) for op in listed if op.is_approved}

        def tool_of(op_id: str) -> str | None:
            return callable_names.get(op_id)

        lookup_targets = {
            op.effect.lookup.operation
            for op in listed
            if op.effect.lookup is not None and op.effect.lookup.operation in callable_names
        }
        confirming = {op.id for op in listed if op.confirmation.required}  # their follow-ups need `confirm`
        surface = surface_of(document)  # every named schema projected once for the whole table
        every_class = document.service.list_effect_class == "all"
        tools: dict[str, ServedTool] = {}
        for op in listed:
            name = naming(op)
            if name in tools:
                continue  # duplicate_tool_name blocks such a document at compile time; keep the first
            keys = safety_keys(op)
            relaxed = [key for key in (keys.idempotency, keys.confirm) if key is not None]
            business = operation_input_schema(op).get("properties") or {}
            projection = surface.output(op)  # the whole schema: answers are checked against it
            ignored = {} if keys.confirm is not None or "confirm" in business else dict(IGNORED_CONFIRM)
            definition = served_tool_definition(op, tool_of, name=name, surface=surface, every_effect_class=every_class)
            tools[name] = ServedTool(
                name=name,
                op=op,
                definition=definition,
                check=ArgumentCheck(call_schema(published_input_schema(op), relaxed, ignored)),
                plan=EffectPlan.of(
                    op, tool_of, lookup_targets, confirming, resolved_schema(op.output.schema, document)
                ),
                key_input=keys.idempotency if forwards_idempotency_key(op) else None,
                confirm_input=keys.confirm,
                dry_run=DRY_RUN_ARGUMENT not in business,
                output=OutputCheck(projection) if projection is not None else None,
                ignored=tuple(ignored),
                projection=PROJECTION_ARGUMENT not in business,
                structured_view="outputSchema" in definition,
            )
        self._tools = tools
        self._by_operation = {tool.op.id: tool for tool in tools.values() if tool.op.is_approved}
        self.tools: tuple[JSONObject, ...] = tuple(tool.definition for tool in tools.values())
        # The whole input schema of each tool listed with a summary of it (the schema calls are checked against).
        self._schemas = {
            name: schema_resource(name, published_input_schema(tool.op))
            for name, tool in tools.items()
            if tool.definition["_meta"].get(INPUT_SCHEMA_META) == "summarised"
        }
        self._by_uri = {resource.uri: resource for resource in self._schemas.values()}

    @property
    def service_id(self) -> str:
        """The AIR service id."""
        return self.document.service.id

    @property
    def server_name(self) -> str:
        """The MCP server name, ``<serviceId>-tools``."""
        return f"{self.document.service.id}-tools"

    @property
    def version(self) -> str:
        """The service version (the MCP server version)."""
        return self.document.service.version

    def tool(self, name: str) -> ServedTool | None:
        """The served tool called ``name``, if any."""
        return self._tools.get(name)

    def tool_for(self, operation_id: str) -> ServedTool | None:
        """The directly callable (approved) tool serving ``operation_id``, if any."""
        return self._by_operation.get(operation_id)

    def input_schema(self, name: str) -> JSONObject | None:
        """The published input schema of tool ``name`` (None when not served)."""
        tool = self._tools.get(name)
        return tool.definition["inputSchema"] if tool is not None else None

    @property
    def resources(self) -> tuple[Resource, ...]:
        """The whole input schemas of the tools listed with a summary (``anvil://schema/<tool>``), in listing order.

        A fleet also serves its bundles' skill files.
        """
        return tuple(self._schemas.values())

    def resource(self, uri: str) -> Resource | None:
        """The resource at ``uri`` (a summarised tool's whole input schema), if any."""
        return self._by_uri.get(uri)

    def schema_resource(self, name: str) -> Resource | None:
        """Tool ``name``'s whole input schema as a resource, when its listing summarises it."""
        return self._schemas.get(name)

    async def read_answer(self, uri: str) -> KeptAnswer | None:
        """The whole answer kept at ``uri`` for an anonymous caller (a gateway serves one caller), if any.

        Raises:
            LedgerError: ``ledger/unavailable`` when the keeper's store cannot be read now.
        """
        return None if self.keeper is None else await self.keeper.read(uri, answer_owner(None))

    def _response_budget(self) -> ResponseBudget | None:
        """The response budget, None when it is off; made on first use (its module loads with the first call)."""
        if self._responses is None and self.result_token_budget:
            from anvil.serve.responses import ResponseBudget

            self._responses = ResponseBudget(self.result_token_budget, self.keeper, self.document)
        return self._responses

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _refused(
        self, tool: ServedTool, envelope: ErrorEnvelope, arguments: JSONObject, *, report: bool = True
    ) -> CallResult:
        shown = None
        if report:
            shown = call_report(
                tool.plan,
                succeeded=False,
                request=arguments,
                response=None,
                idempotency_key=None,
                answered_at_ms=self._now_ms(),
            )
        return CallResult(kind="error", envelope=envelope, report=shown)

    async def call(
        self,
        name: str,
        arguments: Mapping[str, JSONValue] | None,
        meta: Mapping[str, Any] | None = None,
        *,
        identity: Mapping[str, JSONValue] | None = None,
    ) -> CallResult | None:
        """Call tool ``name``; None when no such tool is served. Never raises for bad input.

        Args:
            name: The tool name.
            arguments: The call's arguments (None reads as empty).
            meta: The request's ``_meta`` (only ``idempotency_key`` and ``stage`` are read).
            identity: The verified caller's claims, or None for an anonymous caller.
        """
        tool = self._tools.get(name)
        if tool is None:
            return None
        args: JSONObject = dict(arguments) if arguments else {}
        controls = read_controls(meta)
        if isinstance(controls, ControlError):
            envelope = _refusal(tool.op, "validation_error", controls.message, {"code": "effect/invalid_meta"})
            return CallResult(kind="error", envelope=envelope)
        if too_deep(args):
            envelope = _refusal(
                tool.op,
                "validation_error",
                f"The arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels.",
                {"field": "arguments", "max_depth": MAX_ARGUMENT_DEPTH},
            )
            return CallResult(kind="error", envelope=envelope)
        tracer = self.context.tracer
        began = time.time_ns() if tracer is not None else None  # the gates span covers argument validation
        if tool.op.is_approved:
            violation = tool.check.check(args)
            if violation is not None:
                if tracer is not None:
                    refused = {"anvil.operation": tool.op.id}
                    tracer.start("anvil.gates", "internal", refused, started=began).end("validation_error")
                envelope = _refusal(tool.op, "validation_error", violation.message, violation.details)
                return self._refused(tool, envelope, args, report=not controls.stage)
        for name in tool.ignored:
            args.pop(name, None)
        dry_run = bool(args.pop(DRY_RUN_ARGUMENT, False)) if tool.dry_run else False
        projection: Projection | None = None
        if tool.projection and PROJECTION_ARGUMENT in args:
            from anvil.serve.projection import ProjectionRefusal, compile_projection

            compiled = compile_projection(args.pop(PROJECTION_ARGUMENT))
            if isinstance(compiled, ProjectionRefusal):
                envelope = _refusal(tool.op, "validation_error", compiled.message, compiled.details)
                return self._refused(tool, envelope, args, report=not controls.stage)
            projection = compiled
        if controls.stage:
            return await self._staged(tool, args, controls, dry_run, identity, projection)
        responses = self._response_budget()
        if responses is not None and tool.op.is_read and tool.op.is_approved:
            responses.size_page(tool.op, args)
        key = controls.idempotency_key
        forwarded = forward_key(args, key, tool.key_input)
        if isinstance(forwarded, KeyConflict):
            envelope = _refusal(
                tool.op,
                "validation_error",
                f"The call names two idempotency keys: '{forwarded.field}' and _meta.idempotency_key differ.",
                {"code": "effect/idempotency_key_conflict", "field": forwarded.field},
            )
            return self._refused(tool, envelope, args)
        options = CallOptions(dry_run=dry_run, ledger_id=key, identity=identity, gates_started=began)
        from anvil.runtime.executor import execute  # loaded by the first call, not at start-up (cold start)

        with audit_input(forwarded):
            outcome = await execute(tool.op, forwarded, self.context, options)
        if outcome.kind == "dry_run":
            planned = CallResult(kind="dry_run", plan=outcome.plan)
            return await self._bounded(tool, tool.op, planned, outcome.plan, forwarded, identity, projection)
        succeeded = outcome.kind == "success"
        found = (
            lookup_found(succeeded, outcome.data, outcome.code, tool.plan.lists) if tool.plan.answers_lookup else None
        )
        report = call_report(
            tool.plan,
            succeeded=succeeded,
            request=forwarded,
            response=outcome.data if succeeded else None,
            idempotency_key=_sent_key(outcome),
            answered_at_ms=self._now_ms(),
            found=found,
            replayed=outcome.replayed,
            replay_unavailable=outcome.replay_unavailable,
        )
        if succeeded:
            success = CallResult(kind="success", data=outcome.data, status=outcome.status, report=report)
            viewed = _viewed(tool, conform(success, tool.output, tool.op.id), projection)
            return await self._bounded(tool, tool.op, viewed, outcome.data, forwarded, identity, projection)
        return CallResult(kind="error", envelope=outcome.envelope, report=report)

    async def _bounded(
        self,
        tool: ServedTool,
        op: Operation,
        result: CallResult,
        answer: JSONValue,
        args: Mapping[str, JSONValue],
        identity: Mapping[str, JSONValue] | None,
        projection: Projection | None,
    ) -> CallResult:
        """``result`` within the response budget (step 9); as it is when the budget is off."""
        responses = self._response_budget()
        if responses is None:
            return result
        return await responses.bound(
            result,
            op=op,
            tool=tool.name,
            answer=answer,
            args=args,
            identity=identity,
            projection=projection.expression if projection is not None else None,
            shape=_cut_shape(tool, projection),
        )

    async def _staged(
        self,
        tool: ServedTool,
        args: JSONObject,
        controls: CallerControls,
        dry_run: bool,
        identity: Mapping[str, JSONValue] | None,
        projection: Projection | None = None,
    ) -> CallResult:
        """Perform the draft form of ``tool`` under its own gates (ADR-0030 §7, original-gateway §2.5.5)."""
        op, stage = tool.op, tool.plan.stage
        if stage is None:
            envelope = _refusal(
                op,
                "unsupported_operation",
                f"Operation '{op.id}' has no draft form, so it cannot be staged; nothing was called.",
                {"code": "effect/no_draft_form"},
            )
            return CallResult(kind="error", envelope=envelope)
        draft = tool if stage.draft_operation == op.id and op.is_approved else self.tool_for(stage.draft_operation)
        if draft is None:
            envelope = _refusal(
                op,
                "unsupported_operation",
                f"The draft form of '{op.id}' ({stage.draft_operation}) is not served here; nothing was called.",
                {"code": "effect/draft_unavailable", "draft_operation": stage.draft_operation},
            )
            return CallResult(kind="error", envelope=envelope)
        from anvil.air.paths import resolve_mapping

        mapping = resolve_mapping(stage.arguments, request=args)
        if mapping.arguments is None:
            envelope = _refusal(
                op,
                "validation_error",
                f"The draft form of '{op.id}' needs '{mapping.argument}' ({mapping.source}); nothing was called.",
                {"code": "effect/draft_argument_missing", "argument": mapping.argument},
            )
            return CallResult(kind="error", envelope=envelope)
        draft_args = mapping.arguments
        if draft.confirm_input is not None and tool.confirm_input is not None and args.get(tool.confirm_input) is True:
            draft_args[draft.confirm_input] = True
        key = controls.idempotency_key
        forwarded = forward_key(draft_args, key, draft.key_input)
        if isinstance(forwarded, KeyConflict):
            envelope = _refusal(
                op,
                "validation_error",
                f"The staged call names two idempotency keys in '{forwarded.field}'.",
                {"code": "effect/idempotency_key_conflict", "field": forwarded.field},
            )
            return CallResult(kind="error", envelope=envelope)
        violation = draft.check.check(forwarded)
        if violation is not None:
            details: JSONObject = {"code": "effect/draft_input_invalid", "draft_operation": draft.op.id}
            if violation.field is not None:
                details["field"] = violation.field
            where = violation.field or "arguments"
            message = f"The staged input does not fit {draft.op.id} at '{where}'; nothing was called."
            envelope = _refusal(op, "validation_error", message, details)
            return CallResult(kind="error", envelope=envelope)
        options = CallOptions(dry_run=dry_run, ledger_id=key, staged_for=op.id, identity=identity)
        from anvil.runtime.executor import execute

        with audit_input(forwarded):
            outcome = await execute(draft.op, forwarded, self.context, options)
        if outcome.kind == "dry_run":
            planned = CallResult(kind="dry_run", plan=outcome.plan)
            return await self._bounded(tool, draft.op, planned, outcome.plan, forwarded, identity, projection)
        if outcome.kind != "success":
            return CallResult(kind="error", envelope=outcome.envelope)
        report = staged_report(
            tool.plan,
            request=args,
            response=outcome.data,
            idempotency_key=_sent_key(outcome),
            replayed=outcome.replayed,
            replay_unavailable=outcome.replay_unavailable,
        )
        # The caller dialed ``tool``, so its client validates the answer against that tool's schema.
        staged = CallResult(kind="success", data=outcome.data, status=outcome.status, report=report)
        viewed = _viewed(tool, conform(staged, tool.output, op.id), projection)
        return await self._bounded(tool, draft.op, viewed, outcome.data, forwarded, identity, projection)


def _viewed(tool: ServedTool, result: CallResult, projection: Projection | None) -> CallResult:
    """``result`` narrowed to ``projection``'s view (a success only), or the error saying why it cannot be.

    The answer was checked against the tool's output schema first (a broken promise is
    ``schema_mismatch`` whatever the caller reads of it). The failure keeps the effect report and the
    upstream status, and never the answer.
    """
    if projection is None or result.kind != "success":
        return result
    from anvil.serve.projection import ProjectionFailed, failure_envelope

    try:
        view = projection.apply(result.data)
    except ProjectionFailed as failed:
        envelope = failure_envelope(tool.op.id, failed, current_trace_id(), result.status)
        return CallResult(kind="error", envelope=envelope, report=result.report, status=result.status)
    structured: JSONObject
    if tool.structured_view:
        structured = {PROJECTION_ARGUMENT: projection.expression, "result": view}
    else:
        structured = view if isinstance(view, dict) else {"result": view}
    return CallResult(kind="success", data=view, status=result.status, report=result.report, structured=structured)


def _cut_shape(tool: ServedTool, projection: Projection | None) -> Callable[[JSONValue], JSONObject]:
    """How a view cut to the response budget becomes ``structuredContent`` for ``tool``.

    As the whole answer would be shaped, when the tool publishes no ``outputSchema`` or the cut view
    still validates against it; else the projected shape the schema also admits, under the caller's
    expression or ``@`` (the answer itself, cut): a stock client validates ``structuredContent`` and
    must never refuse a cut answer.
    """

    def shape(view: JSONValue) -> JSONObject:
        if projection is not None and tool.structured_view:
            return {PROJECTION_ARGUMENT: projection.expression, "result": view}
        output = tool.output
        candidate = output.shape(view) if output is not None and projection is None else view
        if not isinstance(candidate, dict):
            candidate = {"result": view}
        if output is None or not tool.structured_view or output.valid(candidate):
            return candidate
        if tool.projection:
            return {PROJECTION_ARGUMENT: "@", "result": view}
        return candidate

    return shape
