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
the backend's reason. ``service`` is the AIR service id for one bundle, else the list of every
bundle's. Probe answers are cached briefly (successes ``cache_seconds``, failures at most one second)
and concurrent probes share one read, so a flood of probes cannot flood the store. Neither route is
authenticated: orchestrator probes carry no token.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Final

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from anvil._types import JSONObject
from anvil.air.canonical import hash_canonical
from anvil.air.codec import document_json
from anvil.air.model import Document
from anvil.ledger.base import Ledger

__all__ = [
    "NOT_READY_CODE",
    "READY_PATH",
    "ReadinessProbe",
    "artifact_hash",
    "durable_required",
    "health_body",
    "readyz_route",
]

READY_PATH: Final = "/readyz"
#: The one code a 503 from ``/readyz`` carries.
NOT_READY_CODE: Final = "ledger_unavailable"
_FAILURE_CACHE_SECONDS: Final = 1.0
_NO_STORE: Final = {"cache-control": "no-store"}


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
    """

    def __init__(
        self,
        ledger: Ledger | None,
        *,
        required: bool,
        cache_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ledger = ledger
        self.required = required
        self._cache_seconds = max(0.0, cache_seconds)
        self._clock = clock
        self._lock = anyio.Lock()
        self._answer: bool | None = None
        self._until = float("-inf")

    async def ready(self) -> bool:
        """True when ready; never raises (a failing probe is not ready)."""
        ledger = self.ledger
        if ledger is None or not ledger.durable:
            return not self.required
        if self._answer is not None and self._clock() < self._until:
            return self._answer
        async with self._lock:
            if self._answer is not None and self._clock() < self._until:
                return self._answer
            try:
                answer = (await ledger.check_readiness()).ready
            except Exception:  # any fault of the store is "not ready"; the reason is never shown
                answer = False
            keep = self._cache_seconds if answer else min(self._cache_seconds, _FAILURE_CACHE_SECONDS)
            self._answer, self._until = answer, self._clock() + keep
            return answer


def readyz_route(probe: ReadinessProbe, service: str | list[str]) -> Route:
    """``/readyz``: 200 ``{ready: true, service}`` or 503 ``{ready: false, service, code: "ledger_unavailable"}``."""

    async def endpoint(request: Request) -> JSONResponse:
        if await probe.ready():
            return JSONResponse({"ready": True, "service": service}, headers=_NO_STORE)
        body = {"ready": False, "service": service, "code": NOT_READY_CODE}
        return JSONResponse(body, status_code=503, headers=_NO_STORE)

    return Route(READY_PATH, endpoint)
