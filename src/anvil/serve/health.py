"""Probes: ``/healthz`` (liveness) and ``/readyz`` (the idempotency ledger answers a live read).

``/healthz`` (original-ledger §2) always answers 200 once the process serves: ``{"status": "ok",
"service": "<serviceId>", "artifactHash": "<sha256>"}`` for one bundle; for a fleet ``{"status": "ok",
"service": [<serviceId>, ...], "fleet": true, "bundles": <n>, "artifactHashes": [<sha256>, ...]}``
(bundle order). ``artifactHash`` (:func:`artifact_hash`) is the sha256 of the canonical AIR the process
executes, so a live check (``anvil conformance --live``) can attest that a deployed gateway runs
exactly the local bundle before it trusts anything else it answers. It proves liveness only.

``/readyz`` (original-ledger §2, seed 001 §3) is 200 ``{"ready": true, "service": ...}`` only when
the ledger can carry the served writes:

* a durable ledger is *required* iff some served bundle has an approved mutation whose idempotency
  mode is ``required`` and the environment is not ``dev`` (:func:`durable_required`);
* no ledger, or a non-durable one (``memory:``): ready iff not required;
* a durable ledger (SQLite, Firestore, PostgreSQL) is always probed with
  :meth:`~anvil.ledger.base.Ledger.check_readiness`, a real, non-mutating data-plane read; ready iff
  it answers.

Otherwise 503 ``{"ready": false, "service": ..., "code": "ledger_unavailable"}``: the fixed code, never
the backend's reason. A listener also requires what it adds with :meth:`ReadinessProbe.require`: the
fleet listener requires the MCP SDK behind ``/mcp`` (:mod:`anvil.serve.mcp.deferred`), so while a
failed load leaves requests it answers unserved, ``/readyz`` is 503 with ``"code": "mcp_unavailable"``
(the ledger's code comes first when both fail). ``service`` is the AIR service id for one bundle, else the list of every
bundle's; a fleet's body adds ``bundles``: per bundle ``{"id", "service", "ready",
"durable_ledger_required"}`` (a bundle that needs no durable ledger is ready without one; a durable
ledger that fails makes every bundle unready, since they share it). Probe answers are cached briefly
(successes ``cache_seconds``, one second by default; failures at most one second) and concurrent probes
share one read, so a flood of probes cannot flood the store, and a store that stops answering turns
``/readyz`` to 503 within two seconds: every probe is bounded (:data:`PROBE_TIMEOUT_SECONDS`) even when
the store hangs or is locked. Neither route is authenticated: orchestrator probes carry no token.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Final

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.canonical import hash_canonical
from anvil.air.codec import document_json
from anvil.air.model import Document
from anvil.ledger.base import Ledger

__all__ = [
    "NOT_READY_CODE",
    "PROBE_TIMEOUT_SECONDS",
    "READY_PATH",
    "BundleReadiness",
    "ReadinessProbe",
    "artifact_hash",
    "durable_required",
    "health_body",
    "readyz_route",
]

READY_PATH: Final = "/readyz"
#: The one code a 503 from ``/readyz`` carries.
NOT_READY_CODE: Final = "ledger_unavailable"
#: The longest one probe of the store may take before it counts as not ready.
PROBE_TIMEOUT_SECONDS: Final = 1.8
_FAILURE_CACHE_SECONDS: Final = 1.0
_NO_STORE: Final = {"cache-control": "no-store"}


@dataclass(frozen=True, slots=True)
class BundleReadiness:
    """One fleet bundle as ``/readyz`` reports it: its id, its AIR service id, whether it needs a durable ledger."""

    id: str
    service: str
    durable_ledger_required: bool


def durable_required(documents: Iterable[Document], env: str) -> bool:
    """True when a durable ledger is required: ``env`` is not ``dev`` and some served document has an
    approved mutation whose idempotency mode is ``required``."""
    if env == "dev":
        return False
    return any(
        op.is_approved and not op.is_read and op.idempotency.mode == "required"
        for document in documents
        for op in document.operations
    )


def artifact_hash(document: Document) -> str:
    """The runtime artifact hash of a served document: sha256 of its canonical AIR JSON."""
    return hash_canonical(document_json(document))


def health_body(services: str | list[str], artifacts: list[str] | None = None) -> JSONObject:
    """The ``/healthz`` body for one service id, or for a fleet's list of them, with the bundles'
    :func:`artifact_hash` values when given (one per bundle, in bundle order)."""
    if isinstance(services, str):
        body: JSONObject = {"status": "ok", "service": services}
        if artifacts:
            body["artifactHash"] = artifacts[0]
        return body
    body = {"status": "ok", "service": list(services), "fleet": True, "bundles": len(services)}
    if artifacts is not None:
        body["artifactHashes"] = list(artifacts)
    return body


class ReadinessProbe:
    """Whether the listener is ready: the ledger rule of the module docstring, cached briefly.

    Args:
        ledger: The shared idempotency ledger, or None.
        required: Whether a durable ledger is required (:func:`durable_required`).
        cache_seconds: How long a successful probe is reused (0: probe on every request).
        clock: Monotonic seconds (a test seam).
        bundles: A fleet's bundles, reported one by one in the body (empty: one bundle, no detail).
    """

    def __init__(
        self,
        ledger: Ledger | None,
        *,
        required: bool,
        cache_seconds: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        bundles: Sequence[BundleReadiness] = (),
    ) -> None:
        self.ledger = ledger
        self.required = required
        self.bundles = tuple(bundles)
        self._cache_seconds = max(0.0, cache_seconds)
        self._clock = clock
        self._lock = anyio.Lock()
        self._answer: bool | None = None
        self._until = float("-inf")
        self._conditions: list[tuple[str, Callable[[], bool]]] = []

    def require(self, code: str, check: Callable[[], bool]) -> None:
        """Also require ``check()`` (cheap, never raising): while it is False, not ready with ``code``."""
        self._conditions.append((code, check))

    async def reason(self) -> str | None:
        """None when ready, else the code ``/readyz`` reports (the ledger's first); never raises."""
        if not await self._ledger_ready():
            return NOT_READY_CODE
        return next((code for code, check in self._conditions if not check()), None)

    async def ready(self) -> bool:
        """True when ready; never raises (a failing probe is not ready)."""
        return await self.reason() is None

    async def _ledger_ready(self) -> bool:
        ledger = self.ledger
        if ledger is None or not ledger.durable:
            return not self.required
        return await self._durable_ready(ledger)

    async def detail(self) -> list[JSONObject]:
        """Per bundle of a fleet: ``{"id", "service", "ready", "durable_ledger_required"}`` (a requirement
        added with :meth:`require` holds for every bundle)."""
        ledger = self.ledger
        durable = ledger is not None and ledger.durable
        shared = await self._durable_ready(ledger) if ledger is not None and durable else False
        required = all(check() for _, check in self._conditions)
        return [
            {
                "id": bundle.id,
                "service": bundle.service,
                "ready": required and (shared if durable else not bundle.durable_ledger_required),
                "durable_ledger_required": bundle.durable_ledger_required,
            }
            for bundle in self.bundles
        ]

    async def _durable_ready(self, ledger: Ledger) -> bool:
        if self._answer is not None and self._clock() < self._until:
            return self._answer
        async with self._lock:
            if self._answer is not None and self._clock() < self._until:
                return self._answer
            answer = False
            with anyio.move_on_after(PROBE_TIMEOUT_SECONDS):  # a hung store is not ready, in time
                try:
                    answer = (await ledger.check_readiness()).ready
                except Exception:  # any fault of the store is "not ready"; the reason is never shown
                    answer = False
            keep = self._cache_seconds if answer else min(self._cache_seconds, _FAILURE_CACHE_SECONDS)
            self._answer, self._until = answer, self._clock() + keep
            return answer


def readyz_route(probe: ReadinessProbe, service: str | list[str]) -> Route:
    """``/readyz``: 200 ``{ready: true, service}`` or 503 ``{ready: false, service, code}`` (the failing
    requirement's code: ``ledger_unavailable``, or one added with :meth:`ReadinessProbe.require`)."""

    async def endpoint(request: Request) -> JSONResponse:
        reason = await probe.reason()
        ready = reason is None
        body: JSONObject = {"ready": ready, "service": service}
        if reason is not None:
            body["code"] = reason
        if probe.bundles:
            body["bundles"] = list(await probe.detail())
        return JSONResponse(body, status_code=200 if ready else 503, headers=_NO_STORE)

    return Route(READY_PATH, endpoint)
