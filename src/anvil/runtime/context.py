"""What an execution runs with: frozen runtime settings and per-call options.

:class:`RuntimeContext` is built once (by the CLI or the server, from flags and the environment) and
passed in; nothing below ``anvil.cli`` reads the process environment. :class:`CallOptions` carries what differs
per call (dry run, confirmation, the caller's key, the verified identity, a trace id).
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import field
from typing import TYPE_CHECKING, Final, Literal

import anyio

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.air.hosts import host_list
from anvil.runtime.token_cache import TokenCache

if TYPE_CHECKING:  # a served gateway never loads httpx (cold start); tests and `anvil run` do
    import httpx

    from anvil.ledger.base import Ledger
    from anvil.runtime.audit import AuditSink
    from anvil.runtime.tracing import Tracer
    from anvil.runtime.upstream import UpstreamClient

__all__ = [
    "DEFAULT_DERIVED_KEY_WINDOW_SECONDS",
    "DEFAULT_TIMEOUT_MS",
    "MAX_RESPONSE_BYTES",
    "CallOptions",
    "Env",
    "RuntimeContext",
    "UpstreamAnswer",
    "normalize_env",
    "parse_allowed_hosts",
]

Env = Literal["dev", "staging", "prod"]
DEFAULT_TIMEOUT_MS: Final = 20_000
#: How long a result stored under a derived (request-fingerprint) key replays: the retry window (5 min).
DEFAULT_DERIVED_KEY_WINDOW_SECONDS: Final = 300
#: Response bodies larger than this are refused (8 MiB).
MAX_RESPONSE_BYTES: Final = 8 * 1024 * 1024


def normalize_env(value: str | None) -> Env:
    """``ANVIL_ENV``: exactly ``dev`` or ``staging``; anything else (unset, a typo, ``Dev``) is ``prod``."""
    if value == "dev":
        return "dev"
    if value == "staging":
        return "staging"
    return "prod"


def parse_allowed_hosts(value: str | None, variable: str = "ANVIL_ALLOWED_HOSTS") -> tuple[str, ...]:
    """``ANVIL_ALLOWED_HOSTS`` (or ``variable``): a comma list of hosts, trimmed and lower-cased, empty
    entries dropped (:func:`anvil.air.hosts.host_list`).

    Raises:
        ValueError: an entry is not a host name or IP address (the message names it).
    """
    return host_list(value, variable)


@dataclass(frozen=True, slots=True, kw_only=True)
class UpstreamAnswer:
    """What :attr:`RuntimeContext.on_upstream_answered` receives: the final 2xx answer, before the ledger completes."""

    operation_id: str
    trace_id: str
    status: int
    attempts: int
    reserved: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeContext:
    """Frozen runtime settings, shared by every call.

    Attributes:
        service_id: the AIR service id (part of the ledger scope; must not be blank).
        base_url: the upstream base URL the operation paths are joined to.
        client: the injected HTTP client: an ``httpx.AsyncClient`` or an
            :class:`~anvil.runtime.upstream.UpstreamClient` such as the pooled
            :class:`~anvil.runtime.connections.PooledUpstream` (redirects are never followed).
        env: ``dev``, ``staging`` or ``prod`` (see :func:`normalize_env`).
        allowed_hosts: upstream hosts allowed (a host or any subdomain of it); empty allows any host
            only in ``dev``.
        timeout_ms: per-attempt upstream deadline, 100-30000 ms.
        auth_profile: the deployment credential profile (``ANVIL_AUTH_PROFILE``).
        credentials: variable name -> value for credential resolution (the CLI passes the process
            environment's ``ANVIL_*`` variables, ``ANVIL_CREDENTIAL_HOSTS`` included).
        ledger: the idempotency ledger, or None (then required-key writes are refused outside dev).
        audit: where one JSON line per call goes, or None.
        retries: False forces one attempt for every operation.
        rng, sleep, clock: randomness for jitter, the async sleep, wall-clock seconds (test seams).
        on_upstream_answered: awaited after a write's final 2xx answer is read and before the ledger
            completes; an exception from it is treated as a completion failure (the reservation is kept).
        max_response_bytes: response bodies above this are refused.
        derived_key_window_seconds: how long a result stored under a derived key replays (a repeated
            identical write after it runs again, under a new reservation and so a new upstream key:
            :func:`anvil.runtime.keys.reservation_key`); explicit caller keys keep the ledger's retention.
        tokens: the OAuth2 client-credentials tokens this context obtained (:mod:`anvil.runtime.oauth`),
            shared by every call made with it.
        server_urls: an operation's own server URL (as :func:`anvil.air.servers.resolve_server` gives
            it) -> the URL its calls go to, for the servers an operator re-pointed; any other operation
            server is called at its own URL, and an operation without one at ``base_url``.
        tracer: where spans go (:mod:`anvil.runtime.tracing`), or None: nothing is traced.
        propagate_trace: send each upstream attempt a W3C ``traceparent`` naming its span (the bundle's
            ``service.propagate_trace``; only with a tracer).
    """

    service_id: str
    base_url: str
    client: httpx.AsyncClient | UpstreamClient
    env: Env = "prod"
    allowed_hosts: tuple[str, ...] = ()
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    auth_profile: str = "default"
    credentials: Mapping[str, str] = field(default_factory=dict, repr=False)
    ledger: Ledger | None = None
    audit: AuditSink | None = None
    retries: bool = True
    rng: Callable[[], float] = random.random
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep
    clock: Callable[[], float] = time.time
    on_upstream_answered: Callable[[UpstreamAnswer], Awaitable[None]] | None = None
    max_response_bytes: int = MAX_RESPONSE_BYTES
    derived_key_window_seconds: int = DEFAULT_DERIVED_KEY_WINDOW_SECONDS
    tokens: TokenCache = field(default_factory=TokenCache, repr=False, compare=False)
    server_urls: Mapping[str, str] = field(default_factory=dict)
    tracer: Tracer | None = field(default=None, repr=False, compare=False)
    propagate_trace: bool = False

    def upstream_url(self, server: str | None) -> str:
        """The base URL a call goes to: ``base_url``, or for an operation with its own ``server`` that
        server (re-pointed when the operator named it in :attr:`server_urls`)."""
        if server is None:
            return self.base_url
        return self.server_urls.get(server, server)


@dataclass(frozen=True, slots=True, kw_only=True)
class CallOptions:
    """Per-call options.

    Attributes:
        dry_run: run the pre-flight gates and return the request plan; touch neither ledger nor upstream.
        confirm: the caller confirmed (``--confirm``); the op's ``confirm`` input counts as well.
        idempotency_key: an explicit key (``--idempotency-key``, ``_meta.idempotency_key``).
        identity: the verified inbound identity's claims, or None for an anonymous caller.
        trace_id: a trace id to use instead of the bound call's (:func:`~anvil.runtime.tracing.current_trace_id`).
        staged_for: on a staged call, the staged operation's id (recorded in the audit line).
        ledger_id: the caller's key as given to the gateway, recorded as is in the audit line even
            when it was not forwarded; defaults to the explicit key this call carries.
        gates_started: when the serving layer began validating the arguments (epoch ns), so a traced
            call's ``anvil.gates`` span covers that validation too; None: the gates span starts here.
    """

    dry_run: bool = False
    confirm: bool = False
    idempotency_key: str | None = None
    identity: Mapping[str, JSONValue] | None = None
    trace_id: str | None = None
    staged_for: str | None = None
    ledger_id: str | None = None
    gates_started: int | None = None
