"""One tool call's answer, independent of the transport, and its MCP ``CallToolResult`` wire form.

The MCP server sends :meth:`CallResult.to_wire`; a REST route can answer from the same value (data or
envelope, status from the envelope code, the report as a header) without parsing text back.

Wire shapes (original-core §5.6, with compact text):

* success: ``content[0]`` = the data as compact JSON text (``separators=(",", ":")``, non-ASCII kept;
  the original indents by two spaces, which costs an agent about a fifth more tokens for nothing),
  ``structuredContent`` = the data when it is an object, else ``{"result": data}``; when the tool
  publishes an ``outputSchema`` the schema decides (an object response is the data, anything else is
  wrapped), and :func:`conform` checks the value against it first, since a stock client refuses a
  result that does not validate;
* dry run: ``content[0]`` = the plan as compact JSON text, ``structuredContent`` = the plan;
* error: ``content`` = the envelope as compact JSON text, ``isError``, and no ``structuredContent``
  (original-core §5.6 item 7): the TypeScript SDK's client (MCP Inspector's) validates
  ``structuredContent`` against the ``outputSchema`` even on an error, so an envelope there would turn
  every refusal into a client-side schema failure that hides the code. An envelope is never cut.

A success or dry run over the response budget (:mod:`anvil.serve.responses`) has its data (plan) cut
to the budget, so ``content[0]`` still parses as JSON and ``structuredContent`` carries the same cut
view, and more content follows it (:attr:`CallResult.notes`): a text block beginning ``[truncated:``,
then a ``resource_link`` to the whole answer when it was kept; a list answer that holds exactly the
upstream's maximum page and no continuation is followed by a text block beginning ``[page cap:``.

``_meta.effect`` carries the report when there is one; ``_meta["anvil/truncated"]`` and
``_meta["anvil/page_cap"]`` carry the marker's and the notice's facts as JSON.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Literal

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.tools import OutputProjection
from anvil.runtime.envelope import ErrorEnvelope
from anvil.runtime.tracing import current_trace_id
from anvil.serve.mcp.validation import Check, Unsure, compile_fast

__all__ = ["CallResult", "OutputCheck", "ResultKind", "conform"]

ResultKind = Literal["success", "error", "dry_run"]


def _text(value: JSONValue) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class CallResult:
    """What a tool call produced.

    Attributes:
        kind: ``success``, ``error`` or ``dry_run``.
        data: the upstream's answer on success.
        envelope: the error on ``error``.
        plan: the request plan on ``dry_run``.
        report: the ``_meta.effect`` report, or None (dry runs, refused ``_meta``, failed staged calls).
        status: the upstream (or replayed) HTTP status on success.
        structured: the ``structuredContent`` when it is not the data's own shape (a projected or cut view).
        text: the text of ``content[0]`` when it was worked out already (the compact JSON of the data or plan).
        notes: content blocks after the answer's text: the truncation marker, the whole answer's
            ``resource_link``, the page-cap notice.
        meta: ``_meta`` keys beside ``effect`` (``anvil/truncated``, ``anvil/page_cap``).
    """

    kind: ResultKind
    data: JSONValue = None
    envelope: ErrorEnvelope | None = None
    plan: JSONObject | None = None
    report: JSONObject | None = None
    status: int | None = None
    structured: JSONObject | None = None
    text: str | None = None
    notes: tuple[JSONObject, ...] = ()
    meta: JSONObject | None = None

    @property
    def is_error(self) -> bool:
        """True for an error result."""
        return self.kind == "error"

    def to_wire(self) -> JSONObject:
        """The ``CallToolResult`` as a wire dict (``structuredContent``, ``isError``, ``_meta``)."""
        out: JSONObject
        if self.kind == "dry_run":
            # The plan is structured too: a tool with an output schema lists the plan as one of its shapes.
            text = self.text if self.text is not None else _text(self.plan)
            out = {"content": [{"type": "text", "text": text}, *self.notes], "structuredContent": self.plan}
        elif self.envelope is not None:
            body = self.envelope.to_json()
            out = {"content": [{"type": "text", "text": _text(body)}], "isError": True}
        else:
            data = self.data
            structured = self.structured
            if structured is None:
                structured = data if isinstance(data, dict) else {"result": data}
            text = self.text if self.text is not None else _text(data)
            out = {"content": [{"type": "text", "text": text}, *self.notes], "structuredContent": structured}
        meta: JSONObject = {}
        if self.report is not None:
            meta["effect"] = self.report
        if self.meta and self.envelope is None:
            meta.update(self.meta)
        if meta:
            out["_meta"] = meta
        return out


class OutputCheck:
    """A tool's published output schema, compiled lazily, and how its answers are shaped."""

    __slots__ = ("_compiled", "_fast", "_validator", "projection")

    def __init__(self, projection: OutputProjection) -> None:
        self.projection = projection
        self._validator: Any = None
        self._fast: Check | None = None
        self._compiled = False

    def shape(self, data: JSONValue) -> JSONValue:
        """The ``structuredContent`` value for ``data`` (wrapped when the response is not an object)."""
        return {"result": data} if self.projection.wrap else data

    def valid(self, value: JSONValue) -> bool:
        """True when ``value`` validates against the published schema (what a stock client checks).

        Patterns are matched in linear time, all of one answer's texts on one work budget
        (:mod:`anvil.air.patterns`): an answer too large to check against its patterns does not validate.
        """
        from anvil.air.patterns import pattern_budget  # RE2 loads with the first answer checked (cold start)

        with pattern_budget():
            return self._valid(value)

    def _valid(self, value: JSONValue) -> bool:
        if not self._compiled:
            self._fast = compile_fast(self.projection.schema, strict_integer=False)
            self._compiled = True
        if self._fast is not None:
            try:
                return self._fast(value)  # the compiled check: what is_valid answers (serve/mcp/validation.py)
            except (Unsure, RecursionError):
                pass
        if self._validator is None:
            # jsonschema only when the compiled check cannot answer (imported then: it is slow to import).
            from referencing import Registry

            from anvil.air.patterns import linear_validator

            # An empty registry, as the official client uses: references resolve inside the schema only.
            self._validator = linear_validator()(self.projection.schema, registry=Registry())
        return bool(self._validator.is_valid(value))


def conform(result: CallResult, check: OutputCheck | None, operation: str) -> CallResult:
    """A success shaped by the tool's output schema, or ``schema_mismatch`` when the answer breaks it.

    The mismatch keeps the effect report (a write that landed still says so) and the upstream status;
    the data itself stays out of the envelope, since it did not match what the tool promised.
    """
    if result.kind != "success" or check is None:
        return result
    structured = check.shape(result.data)
    if isinstance(structured, dict) and check.valid(structured):
        return replace(result, structured=structured)
    envelope = ErrorEnvelope(
        code="schema_mismatch",
        message=(
            "The upstream answered, but its response does not match the tool's published output schema; "
            "for a write, the effect report says what happened."
        ),
        retryable=False,
        safe_to_retry=False,
        operation=operation,
        trace_id=current_trace_id(),
        upstream={"status": result.status} if result.status is not None else None,
    )
    return CallResult(kind="error", envelope=envelope, report=result.report, status=result.status)
