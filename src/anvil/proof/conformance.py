"""``anvil conformance``: MCP, REST, the CLI and the skill agree, and so do their gates (original-core §8.3).

Hermetic: it starts ``anvil mock`` on the bundle (loopback, ephemeral port) and a real ``anvil serve``
process pointed at it, then, per approved operation, sends the same input through MCP, REST and
``anvil run``, resetting the mock before each call so every surface meets the same state:

* ``surface-agreement``: ids, commands and tool names agree on the live ``tools/list``, ``tools.json``,
  the runtime manifest, the CLI catalog, the skill reference and AIR (a documented non-approved
  operation is a leak);
* ``skill-claim`` per operation: the reference's ``- Semantics:`` flags and ``- Undo:`` line equal the
  AIR posture;
* ``wire-agreement`` per operation: the three surfaces put the identical request on the wire (the
  caller's key normalized), and it is the one AIR describes (method, path template, key carrier);
* ``answer-agreement`` per operation: the three surfaces answer the same data, or the same error code;
* ``gate-agreement`` per confirming operation: without confirmation every surface refuses with
  ``confirmation_required`` and nothing reaches the wire.

A failing check carries ``divergences[{path, between[2], left, right}]``. The record is
``conformance.report.json``; apart from ``startedAt`` it is a pure function of the bundle.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import anyio
import httpx

from anvil._types import JSONObject
from anvil.air.carrier import resolve_carrier
from anvil.air.inputs import safety_keys
from anvil.air.model import Document, Operation
from anvil.bundle.example import example_input
from anvil.bundle.hash import bundle_hash
from anvil.bundle.read import read_bundle
from anvil.client import AnvilClient
from anvil.proof.conformance_skill import read_reference
from anvil.proof.conformance_static import divergence, skill_claim_check, surface_agreement_check, surface_views
from anvil.proof.conformance_surfaces import KEY_PLACEHOLDER, SURFACES, Answer, Driver, Upstream, wire_requests
from anvil.proof.records import timestamp
from anvil.runtime.credentials import credential_profile, expected_env

__all__ = ["CHECK_IDS", "CONFORMANCE_FILE", "child_environment", "conformance", "summarize"]

CONFORMANCE_FILE: Final = "conformance.report.json"
#: Every conformance check id (a public contract).
CHECK_IDS: Final[tuple[str, ...]] = (
    "surface-agreement",
    "skill-claim",
    "wire-agreement",
    "answer-agreement",
    "gate-agreement",
)
_TOKEN: Final = "conformance-token"
_PARAM: Final = re.compile(r"\{[^/{}]+\}")
_CALL_TIMEOUT_S: Final = 60.0
#: Variables a child process needs to run Python at all; nothing else of the caller's leaks in.
_PASSTHROUGH: Final = ("PATH", "HOME", "LANG", "LC_ALL", "SYSTEMROOT", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV")


def child_environment(doc: Document, base: Mapping[str, str]) -> dict[str, str]:
    """The hermetic environment of the mock, the gateway and ``anvil run``: dev mode, an in-memory
    ledger, loopback only, and a placeholder credential for every variable the bundle names."""
    env = {name: base[name] for name in _PASSTHROUGH if name in base}
    env.update({"ANVIL_ENV": "dev", "ANVIL_LEDGER": "memory:", "ANVIL_ALLOWED_HOSTS": "127.0.0.1"})
    for op in doc.operations:
        if op.is_approved and op.auth.type != "none":
            env.update(dict.fromkeys(expected_env(op.auth, credential_profile("default", op.auth)), _TOKEN))
    return env


def _template(op: Operation) -> re.Pattern[str] | None:
    path = op.source_ref.path
    if not path:
        return None
    parts = _PARAM.split(path)
    return re.compile("^" + "[^/]+".join(re.escape(part) for part in parts) + "$")


def _air_divergences(op: Operation, wire: list[JSONObject], surface: str) -> list[JSONObject]:
    """Where ``surface``'s wire request is not the one AIR describes."""
    if len(wire) != 1:
        return [divergence("wire.requests", surface, "air", len(wire), 1)]
    request = wire[0]
    out = []
    method = (op.source_ref.method or "").upper()
    if request.get("method") != method:
        out.append(divergence("wire.method", surface, "air", request.get("method"), method))
    pattern = _template(op)
    if pattern is not None and not pattern.match(str(request.get("path"))):
        out.append(divergence("wire.path", surface, "air", request.get("path"), op.source_ref.path))
    binding = resolve_carrier(op).binding
    if binding is not None and binding.mechanism == "header":
        headers = request.get("headers") or {}
        found = next((v for k, v in headers.items() if k.lower() == binding.key.lower()), None)
        if found != KEY_PLACEHOLDER:
            out.append(divergence(f"wire.headers.{binding.key.lower()}", surface, "air", found, KEY_PLACEHOLDER))
    return out


def _compare(path: str, values: dict[str, Any]) -> list[JSONObject]:
    first = SURFACES[0]
    return [
        divergence(path, first, surface, values[first], values[surface])
        for surface in SURFACES[1:]
        if values[surface] != values[first]
    ]


class _Run:
    """One conformance run over a served bundle."""

    def __init__(self, doc: Document, driver: Driver, upstream: Upstream) -> None:
        self.doc = doc
        self.driver = driver
        self.upstream = upstream
        self.calls = 0

    def _key(self, op: Operation, surface: str) -> str | None:
        if safety_keys(op).idempotency is None:
            return None
        self.calls += 1
        return f"conformance-{surface}-{self.calls}"

    def _arguments(self, op: Operation) -> JSONObject:
        keys = safety_keys(op)
        return {k: v for k, v in example_input(op).items() if k not in (keys.idempotency, keys.confirm)}

    async def _observe(self, surface: str, op: Operation, *, confirm: bool) -> tuple[Answer, list[JSONObject]]:
        await self.upstream.reset()
        key = self._key(op, surface)
        confirm_input = safety_keys(op).confirm if confirm else None
        with anyio.fail_after(_CALL_TIMEOUT_S):
            answer = await self.driver.call(surface, op, self._arguments(op), key=key, confirm=confirm_input)
        return answer, wire_requests(await self.upstream.requests(), op, key)

    async def gate(self, op: Operation) -> JSONObject:
        divergences: list[JSONObject] = []
        for surface in SURFACES:
            answer, wire = await self._observe(surface, op, confirm=False)
            if answer.ok or answer.code != "confirmation_required":
                divergences.append(divergence("answer.code", surface, "air", answer.code, "confirmation_required"))
            if wire:
                divergences.append(divergence("wire.requests", surface, "air", len(wire), 0))
        base: JSONObject = {"id": "gate-agreement", "operationId": op.id, "surfaces": list(SURFACES)}
        if divergences:
            return {
                **base,
                "status": "fail",
                "detail": "a surface did not refuse before the wire",
                "divergences": divergences,
            }
        return {
            **base,
            "status": "pass",
            "detail": "every surface refuses without confirmation, with zero wire requests",
        }

    async def agreement(self, op: Operation) -> list[JSONObject]:
        answers: dict[str, Any] = {}
        wires: dict[str, Any] = {}
        air_divergences: list[JSONObject] = []
        for surface in SURFACES:
            answer, wire = await self._observe(surface, op, confirm=op.confirmation.required)
            answers[surface], wires[surface] = answer.to_json(), wire
            air_divergences += _air_divergences(op, wire, surface)
        wire_divergences = _compare("wire", wires) + air_divergences
        answer_divergences = _compare("answer", answers)
        first = wires[SURFACES[0]][0] if wires[SURFACES[0]] else {}
        shown = f"{first.get('method')} {first.get('path')}" if first else "no request"
        base: JSONObject = {"operationId": op.id, "surfaces": list(SURFACES)}
        wire_check: JSONObject = {**base, "id": "wire-agreement"}
        if wire_divergences:
            wire_check.update(status="fail", detail="the surfaces' wire requests differ", divergences=wire_divergences)
        else:
            wire_check.update(status="pass", detail=f"{shown} — identical on every surface and matches the contract")
        answer_check: JSONObject = {**base, "id": "answer-agreement"}
        if answer_divergences:
            answer_check.update(
                status="fail", detail="the surfaces answered differently", divergences=answer_divergences
            )
        else:
            what = "the same data" if answers[SURFACES[0]]["ok"] else f"the same error ({answers[SURFACES[0]]['code']})"
            answer_check.update(status="pass", detail=f"every surface answered {what}")
        return [wire_check, answer_check]


async def _conformance(directory: Path, doc: Document, env: dict[str, str]) -> tuple[list[JSONObject], list[str]]:
    from anvil.proof.processes import mock_process, url_process

    reference = read_reference(directory)
    approved = [op for op in doc.operations if op.is_approved]
    async with mock_process(directory, env=env) as mock:
        command = [sys.executable, "-m", "anvil", "serve", str(directory), "--http", "127.0.0.1:0"]
        command += ["--base-url", mock.url]
        async with url_process(command, env=env, what="anvil serve") as served:
            rest_url = served.url.removesuffix("/mcp")
            async with (
                httpx.AsyncClient(timeout=_CALL_TIMEOUT_S) as http,
                AnvilClient.http(served.url, timeout=_CALL_TIMEOUT_S) as mcp,
            ):
                live = await mcp.list_tools()
                views = surface_views(directory, doc, live, reference)
                checks = [surface_agreement_check(views, doc, reference)]
                checks += [skill_claim_check(op, reference) for op in approved]
                driver = Driver(bundle=directory, mcp=mcp, http=http, rest_url=rest_url, upstream_url=mock.url, env=env)
                run = _Run(doc, driver, Upstream(mock.url, http))
                for op in approved:
                    checks += await run.agreement(op)
                    if op.confirmation.required:
                        checks.append(await run.gate(op))
    return checks, ["mcp", "rest", "cli", "skill"]


def summarize(checks: list[JSONObject]) -> dict[str, int]:
    """``{pass, fail, skipped}`` over ``checks``."""
    return {status: sum(1 for check in checks if check["status"] == status) for status in ("pass", "fail", "skipped")}


def conformance(
    directory: Path, *, environ: Mapping[str, str], clock: Callable[[], datetime] | None = None
) -> dict[str, Any]:
    """Run the hermetic conformance lane on ``directory`` and return its record (not written).

    Args:
        directory: The bundle directory.
        environ: The caller's environment; only what a child needs to run Python is passed on.
        clock: The wall clock for ``startedAt`` (a test seam).

    Raises:
        BundleError: ``bundle/invalid`` when the bundle cannot be read.
        ConfigError: ``config/invalid`` when the mock or the gateway does not start.
    """
    doc = read_bundle(directory)
    digest = bundle_hash(directory)
    started = timestamp(clock)
    env = child_environment(doc, environ)
    checks, surfaces = anyio.run(_conformance, directory, doc, env)
    delegated = sum(1 for op in doc.operations if op.is_approved and op.auth.principal in ("delegated", "end_user"))
    return {
        "schemaVersion": 1,
        "bundle": directory.name,
        "startedAt": started,
        "surfaces": surfaces,
        "checks": checks,
        "identity": {
            "delegatedOperations": delegated,
            "virtualWiring": False,
            "proof": "none",
            "liveIdpReadiness": "unverified",
            "detail": "hermetic: placeholder credentials against anvil mock; identity needs `--live`",
        },
        "summary": summarize(checks),
        "bundleHash": digest,
    }
