"""One tool call's answer, independent of the transport, and its MCP ``CallToolResult`` wire form.

The MCP server sends :meth:`CallResult.to_wire`; a REST route can answer from the same value (data or
envelope, status from the envelope code, the report as a header) without parsing text back.

Wire shapes (original-core §5.6):

* success: ``content`` = the data as 2-space-indented JSON text, ``structuredContent`` = the data when
  it is an object, else ``{"result": data}``;
* dry run: ``content`` = the plan as JSON text, nothing else;
* error: ``content`` = the envelope as JSON text, ``structuredContent`` = the envelope, ``isError``.

``_meta.effect`` carries the report when there is one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from anvil._types import JSONObject, JSONValue
from anvil.runtime.envelope import ErrorEnvelope

__all__ = ["CallResult", "ResultKind"]

ResultKind = Literal["success", "error", "dry_run"]


def _text(value: JSONValue) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


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
    """

    kind: ResultKind
    data: JSONValue = None
    envelope: ErrorEnvelope | None = None
    plan: JSONObject | None = None
    report: JSONObject | None = None
    status: int | None = None

    @property
    def is_error(self) -> bool:
        """True for an error result."""
        return self.kind == "error"

    def to_wire(self) -> JSONObject:
        """The ``CallToolResult`` as a wire dict (``structuredContent``, ``isError``, ``_meta``)."""
        if self.kind == "dry_run":
            return {"content": [{"type": "text", "text": _text(self.plan)}]}
        out: JSONObject
        if self.envelope is not None:
            body = self.envelope.to_json()
            out = {"content": [{"type": "text", "text": _text(body)}], "structuredContent": body, "isError": True}
        else:
            data = self.data
            structured = data if isinstance(data, dict) else {"result": data}
            out = {"content": [{"type": "text", "text": _text(data)}], "structuredContent": structured}
        if self.report is not None:
            out["_meta"] = {"effect": self.report}
        return out
