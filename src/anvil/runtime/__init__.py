"""The runtime: execute a compiled operation against its upstream, with the ledger guarding writes.

The names below are loaded on first use (PEP 562): importing one submodule (``anvil.runtime.audit``,
``anvil.runtime.credentials``) must not load the executor and its upstream, OAuth and request modules,
which a served gateway needs only from its first call on (cold start).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from anvil.runtime.audit import AuditSink, FileAuditSink, MemoryAuditSink, StreamAuditSink
    from anvil.runtime.context import CallOptions, RuntimeContext, UpstreamAnswer, normalize_env, parse_allowed_hosts
    from anvil.runtime.envelope import ErrorEnvelope
    from anvil.runtime.executor import execute
    from anvil.runtime.outcome import ExecutionRecord, Outcome

__all__ = [
    "AuditSink",
    "CallOptions",
    "ErrorEnvelope",
    "ExecutionRecord",
    "FileAuditSink",
    "MemoryAuditSink",
    "Outcome",
    "RuntimeContext",
    "StreamAuditSink",
    "UpstreamAnswer",
    "execute",
    "normalize_env",
    "parse_allowed_hosts",
]

#: Each exported name -> the submodule defining it.
_HOMES: Final = {
    "AuditSink": "audit",
    "FileAuditSink": "audit",
    "MemoryAuditSink": "audit",
    "StreamAuditSink": "audit",
    "CallOptions": "context",
    "RuntimeContext": "context",
    "UpstreamAnswer": "context",
    "normalize_env": "context",
    "parse_allowed_hosts": "context",
    "ErrorEnvelope": "envelope",
    "execute": "executor",
    "ExecutionRecord": "outcome",
    "Outcome": "outcome",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
