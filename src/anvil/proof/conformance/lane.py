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

import hashlib
import re
import sys
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import anyio
import httpx

from anvil._types import JSONObject
from anvil.air.carrier import resolve_carrier
from anvil.air.inputs import safety_keys
from anvil.air.model import Document, Operation
from anvil.air.servers import repoint_all
from anvil.air.values import stopping_when
from anvil.bundle.example import example_input, example_input_or_reason
from anvil.bundle.hash import bundle_hash
from anvil.bundle.read import read_bundle
from anvil.client import AnvilClient
from anvil.errors import ConfigError
from anvil.proof.conformance.static import divergence, skill_claim_check, surface_agreement_check, surface_views
from anvil.proof.conformance.surfaces import (
    KEY_PLACEHOLDER,
    SURFACES,
    Answer,
    CliWorker,
    Driver,
    Upstream,
    wire_requests,
)
from anvil.proof.records import timestamp
from anvil.proof.scope import LaneScope, incomplete_marker, select_operations
from anvil.proof.skill import read_reference
from anvil.runtime.credentials import credential_profile, expected_env

__all__ = ["CHECK_IDS", "CONFORMANCE_FILE", "child_environment", "conformance", "conformance_key", "summarize"]

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


Observation = tuple[Answer, list[JSONObject]]


def conformance_key(op: Operation, surface: str, kind: str) -> str:
    """The caller's key for one observation: distinct per surface and kind (they share one gateway and
    its ledger), at most 25 characters whatever the operation's name, so a carrier that bounds its key
    (Plaid's body ``idempotency_key``, at most 50) takes every surface's key alike."""
    return f"cf-{surface}-{kind}-{hashlib.sha256(op.id.encode()).hexdigest()[:12]}"


def _arguments(op: Operation) -> JSONObject:
    keys = safety_keys(op)
    return {k: v for k, v in example_input(op).items() if k not in (keys.idempotency, keys.confirm)}


class _Lane:
    """Calls made in order against one mock: each call starts from a reset mock and reads its own wire."""

    def __init__(self, driver: Driver, upstream: Upstream, observed: dict[tuple[str, str, str], Observation]) -> None:
        self.driver = driver
        self.upstream = upstream
        self.observed = observed

    async def observe(self, surface: str, op: Operation, kind: str) -> None:
        """Make the ``gate`` (no confirmation) or ``call`` observation of ``op`` on ``surface``."""
        await self.upstream.reset()
        key = conformance_key(op, surface, kind) if safety_keys(op).idempotency else None
        confirm = safety_keys(op).confirm if kind == "call" and op.confirmation.required else None
        try:
            with anyio.fail_after(_CALL_TIMEOUT_S):
                answer = await self.driver.call(
                    surface, op, _arguments(op), key=key, confirm=confirm, upstream_url=self.upstream.url
                )
        except TimeoutError:
            answer = Answer(ok=False, code=f"no answer within {_CALL_TIMEOUT_S:g} s")
        self.observed[(op.id, surface, kind)] = (answer, wire_requests(await self.upstream.requests(), op, key))

    async def run(self, surfaces: tuple[str, ...], op: Operation) -> None:
        """Observe ``op`` on each of ``surfaces``: its gate (when it confirms), then its call."""
        for surface in surfaces:
            if op.confirmation.required:
                await self.observe(surface, op, "gate")
            await self.observe(surface, op, "call")


def _gate_check(op: Operation, observed: dict[tuple[str, str, str], Observation]) -> JSONObject:
    divergences: list[JSONObject] = []
    for surface in SURFACES:
        answer, wire = observed[(op.id, surface, "gate")]
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
    return {**base, "status": "pass", "detail": "every surface refuses without confirmation, with zero wire requests"}


def _agreement_checks(op: Operation, observed: dict[tuple[str, str, str], Observation]) -> list[JSONObject]:
    answers = {surface: observed[(op.id, surface, "call")][0].to_json() for surface in SURFACES}
    wires = {surface: observed[(op.id, surface, "call")][1] for surface in SURFACES}
    air_divergences = [d for surface in SURFACES for d in _air_divergences(op, wires[surface], surface)]
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
        answer_check.update(status="fail", detail="the surfaces answered differently", divergences=answer_divergences)
    else:
        reference = answers[SURFACES[0]]
        what = "the same data" if reference["ok"] else f"the same error ({reference['code']})"
        answer_check.update(status="pass", detail=f"every surface answered {what}")
    return [wire_check, answer_check]


async def _conformance(
    directory: Path, doc: Document, env: dict[str, str], scope: LaneScope
) -> tuple[list[JSONObject], list[str], list[Operation]]:
    from anvil.proof.processes import mock_process, url_process

    reference = read_reference(directory)
    selected = select_operations(doc.operations, scope.operations)
    observed: dict[tuple[str, str, str], Observation] = {}
    finished: list[Operation] = []
    startup = scope.startup_timeout_s
    async with AsyncExitStack() as stack:
        # One mock behind the served gateway (MCP and REST), and one for the CLI's calls.
        mocks = [await stack.enter_async_context(mock_process(directory, env=env, timeout=startup)) for _ in range(2)]
        # The lane compares whole surfaces: every tool listed (flat) and every answer whole (no budget cut
        # and no budget-sized pages, which the CLI's direct calls do not make).
        command = [sys.executable, "-m", "anvil", "serve", str(directory), "--http", "127.0.0.1:0"]
        command += ["--disclosure", "flat", "--result-token-budget", "0"]
        served = await stack.enter_async_context(
            url_process(
                [*command, "--base-url", mocks[0].url],
                env={**env, **repoint_all(doc, mocks[0].url)},  # an operation's own server is the mock too
                what="anvil serve",
                timeout=startup,
            )
        )
        http = await stack.enter_async_context(httpx.AsyncClient(timeout=_CALL_TIMEOUT_S))
        mcp = await stack.enter_async_context(AnvilClient.http(served.url, timeout=_CALL_TIMEOUT_S))
        cli = CliWorker({**env, **repoint_all(doc, mocks[1].url)})
        stack.push_async_callback(cli.aclose)
        live = await mcp.list_tools()
        views = surface_views(directory, doc, live, reference)
        checks = [surface_agreement_check(views, doc, reference)]
        checks += [skill_claim_check(op, reference) for op in selected]
        driver = Driver(
            bundle=directory, mcp=mcp, http=http, rest_url=served.url.removesuffix("/mcp"), env=env, cli=cli
        )
        served_lane, cli_lane = (_Lane(driver, Upstream(mock.url, http), observed) for mock in mocks)
        scope.begin(len(selected))
        unmade: dict[str, str] = {}
        for op in selected:
            if scope.should_stop():
                break
            scope.step("conformance", op)
            with stopping_when(scope.should_stop):  # the time cap and a signal hold while it is being made
                _example, reason = example_input_or_reason(op)
            if reason is not None and scope.should_stop():
                break  # stopped while the example was being made: no finding about the operation
            if reason is not None:  # every surface would refuse the same invalid input: nothing to compare
                unmade[op.id] = reason
                finished.append(op)
                continue
            async with anyio.create_task_group() as group:  # the CLI's call runs beside MCP and REST
                group.start_soon(served_lane.run, ("mcp", "rest"), op)
                group.start_soon(cli_lane.run, ("cli",), op)
            finished.append(op)
    for op in finished:
        if op.id in unmade:
            checks += _unmade_checks(op, unmade[op.id])
            continue
        checks += _agreement_checks(op, observed)
        if op.confirmation.required:
            checks.append(_gate_check(op, observed))
    return checks, ["mcp", "rest", "cli", "skill"], finished


def _unmade_checks(op: Operation, reason: str) -> list[JSONObject]:
    """One ``skipped`` check per live comparison of an operation no valid example input exists for."""
    ids = ["wire-agreement", "answer-agreement"] + (["gate-agreement"] if op.confirmation.required else [])
    base: JSONObject = {"operationId": op.id, "surfaces": list(SURFACES), "status": "skipped", "detail": reason}
    return [{"id": check_id, **base} for check_id in ids]


def summarize(checks: list[JSONObject]) -> dict[str, int]:
    """``{pass, fail, skipped}`` over ``checks``."""
    return {status: sum(1 for check in checks if check["status"] == status) for status in ("pass", "fail", "skipped")}


def conformance(
    directory: Path,
    *,
    environ: Mapping[str, str],
    clock: Callable[[], datetime] | None = None,
    scope: LaneScope | None = None,
) -> dict[str, Any]:
    """Run the hermetic conformance lane on ``directory`` and return its record (not written).

    Args:
        directory: The bundle directory.
        environ: The caller's environment; only what a child needs to run Python is passed on.
        clock: The wall clock for ``startedAt`` (a test seam).
        scope: Which operations run, progress lines, when to stop and the children's start-up bound
            (default: every approved operation, silently); a run that covers less is marked ``incomplete``.

    Raises:
        BundleError: ``bundle/invalid`` when the bundle cannot be read.
        ConfigError: ``config/invalid`` when the mock or the gateway does not start or stops answering.
    """
    doc = read_bundle(directory)
    digest = bundle_hash(directory)
    started = timestamp(clock)
    env = child_environment(doc, environ)
    scope = scope or LaneScope()
    try:
        checks, surfaces, finished = anyio.run(_conformance, directory, doc, env, scope)
    except httpx.HTTPError as exc:  # the mock stopped answering its control routes mid-run
        raise ConfigError("config/invalid", f"anvil mock stopped answering: {type(exc).__name__}") from None
    delegated = sum(1 for op in doc.operations if op.is_approved and op.auth.principal in ("delegated", "end_user"))
    approved = sum(1 for op in doc.operations if op.is_approved)
    selected = len(select_operations(doc.operations, scope.operations))
    incomplete = incomplete_marker(scope, selected=selected, approved=approved, finished=len(finished))
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
        **({"incomplete": incomplete} if incomplete is not None else {}),
    }
