"""The runtime: execute a compiled operation against its upstream, with the ledger guarding writes."""

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
