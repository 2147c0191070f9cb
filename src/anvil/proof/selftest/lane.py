"""``anvil selftest``: a bundle proven over real MCP against a mock upstream (original-core §8.2, beyond it).

The bundle is served by a real ``anvil serve --stdio`` child process pointed at ``anvil mock`` (a child
process too) or at an operator's sandbox; every approved tool is driven through the MCP client
(:mod:`anvil.proof.selftest.checks`), then every declared effect contract is carried out and the state
it leaves read back (:mod:`anvil.proof.selftest.effects`).

The report ``selftest.report.json`` (root-level, excluded from the bundle hash it carries)::

    {schemaVersion: 1, bundle, upstream: "anvil mock"|"operator sandbox", startedAt,
     checks: [{id, operationId?, status: pass|fail|skipped, detail, difference?}],
     identity: {delegatedOperations, virtualWiring, proof, liveIdpReadiness, detail},
     summary: {pass, fail, skipped}, passed, bundleHash}

It passes with no fail and at least one pass. A bundle that approves no operation starts no process:
its record holds no check, ``passed: false`` and ``nothingToProve: {reason, operationsApproved: 0}``
(:func:`anvil.proof.scope.nothing_to_prove_marker`), and its verdict is ``skipped``, not a failure.
Apart from ``startedAt`` it is deterministic: example values are numbered per run, the mock's ids are
sequential, and no port, path or trace id is written.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from typing import Final, Literal

import httpx

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.credential_names import auth_profile
from anvil.air.model import Document, Operation
from anvil.air.servers import repoint_all
from anvil.air.values import CannotMake, stopping_when
from anvil.bundle.hash import bundle_hash
from anvil.bundle.read import read_bundle
from anvil.client import AnvilClient
from anvil.proof.processes import mock_process
from anvil.proof.record import utc_now, write_record
from anvil.proof.scope import LaneScope, incomplete_marker, nothing_to_prove_marker, select_operations
from anvil.proof.selftest.checks import Driver, closing_checks, operation_checks, surface_check
from anvil.proof.selftest.effects import EffectProofs
from anvil.proof.selftest.support import Check, Example, Wire

__all__ = [
    "PLACEHOLDER_CREDENTIAL",
    "RECORD_FILE",
    "SelftestOptions",
    "SelftestReport",
    "Verdict",
    "credential_variables",
    "run_selftest",
    "summary_line",
]

RECORD_FILE: Final = "selftest.report.json"
#: A selftest's verdict: ``skipped`` when the bundle approves no operation (nothing to prove).
Verdict = Literal["passed", "failed", "skipped"]
#: The credential a mock upstream is given when the operator set none (the mock checks no credential).
PLACEHOLDER_CREDENTIAL: Final = "anvil-selftest-placeholder"
_DELEGATED: Final = frozenset({"end_user", "delegated", "impersonation"})


@dataclass(frozen=True, slots=True, kw_only=True)
class SelftestOptions:
    """How to run the selftest.

    Attributes:
        upstream: the operator's sandbox base URL; None starts ``anvil mock`` for the bundle.
        env: the environment the child processes start from (no ``ANVIL_*`` settings but credentials).
        python: the interpreter for the children (default: this one).
        timeout: the bound, in seconds, on each MCP call and on each child's start.
        seed: the mock's ``--seed``.
    """

    upstream: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    python: str | None = None
    timeout: float = 30.0
    seed: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SelftestReport:
    """The selftest's result and where its record was written."""

    record: JSONObject
    checks: tuple[Check, ...]
    path: Path | None

    @property
    def passed(self) -> bool:
        """No fail and at least one pass."""
        return bool(self.record["passed"])

    @property
    def verdict(self) -> Verdict:
        """``passed``, ``failed``, or ``skipped`` when the bundle approves no operation (nothing to prove)."""
        if self.passed:
            return "passed"
        return "skipped" if isinstance(self.record.get("nothingToProve"), dict) else "failed"


def credential_variables(document: Document, profile: str = "default") -> tuple[str, ...]:
    """Every credential variable the approved operations read under ``profile``."""
    from anvil.runtime.credentials import credential_profile, expected_env

    names: list[str] = []
    for op in document.operations:
        if op.is_approved and op.auth.type != "none":
            names.extend(n for n in expected_env(op.auth, credential_profile(profile, op.auth)) if n not in names)
    return tuple(names)


def _server_env(document: Document, options: SelftestOptions, url: str) -> dict[str, str]:
    env = dict(options.env)
    env.update({"ANVIL_ENV": "dev", "ANVIL_BASE_URL": url, "ANVIL_LEDGER": "memory:"})
    # The lane checks the whole surface and compares whole answers with the mock's state: every tool
    # listed (flat) and no answer cut to the response budget or paged by it.
    env.update({"ANVIL_DISCLOSURE": "flat", "ANVIL_RESULT_TOKEN_BUDGET": "0"})
    env.update(repoint_all(document, url))  # an operation's own server is the sandbox too
    for name in credential_variables(document, auth_profile(env)):
        env.setdefault(name, PLACEHOLDER_CREDENTIAL)
    return env


def _identity(document: Document, sandbox: bool) -> JSONObject:
    delegated = sorted(op.id for op in document.operations if op.is_approved and op.auth.principal in _DELEGATED)
    return {
        "delegatedOperations": delegated,
        "virtualWiring": False,
        "proof": "operator-sandbox" if sandbox else "loopback-mock",
        "liveIdpReadiness": "unverified",
        "detail": "Upstream credentials are the operator's (or a placeholder the mock accepts); no identity "
        "provider was contacted.",
    }


def _summary(checks: tuple[Check, ...]) -> JSONObject:
    return {status: sum(1 for c in checks if c.status == status) for status in ("pass", "fail", "skipped")}


async def _drive(
    document: Document, bundle: Path, options: SelftestOptions, url: str, scope: LaneScope
) -> tuple[list[Check], int]:
    """Every check, operation by operation; also how many selected operations ran to the end."""
    selected = select_operations(document.operations, scope.operations)
    finished = 0
    async with httpx.AsyncClient(base_url=url, timeout=options.timeout) as http:
        wire = Wire(http)
        await wire.detect()
        client = AnvilClient.stdio(
            bundle, env=_server_env(document, options, url), python=options.python, timeout=options.timeout
        )
        async with client:
            listed = {str(tool["name"]): tool for tool in await client.list_tools()}
            driver = Driver(
                client=client,
                wire=wire,
                document=document,
                example=Example(document),
                listed=listed,
                selected=selected,
            )
            checks = [surface_check(driver)]
            proofs = EffectProofs(driver)
            scope.begin(len(selected))
            done: list[Operation] = []
            for op in selected:
                if scope.should_stop():
                    break
                scope.step("selftest", op)
                try:
                    with stopping_when(scope.should_stop):  # the time cap and a signal hold while values are made
                        found = await operation_checks(driver, op)
                        found.extend(await proofs.of(op))
                except CannotMake:
                    if scope.should_stop():
                        break  # stopped while a value was being made: the operation in flight is not counted
                    raise
                checks.extend(found)
                done.append(op)
            finished = len(done)
            checks.extend(await closing_checks(driver, done, checks))
            await wire.clear_faults()
    return checks, finished


async def run_selftest(
    bundle: Path, options: SelftestOptions, *, write: bool = True, scope: LaneScope | None = None
) -> SelftestReport:
    """Run the selftest on ``bundle`` and (by default) write ``selftest.report.json`` at its root.

    ``scope`` selects operations, prints progress, stops early and bounds the children's start
    (default: every approved operation, silently, :attr:`SelftestOptions.timeout` to start); a run
    that covers less is written marked ``incomplete``.

    Raises:
        BundleError: the bundle cannot be read or hashed, or the record cannot be written.
        ConfigError: a child process does not start.
        GatewayUnavailable: the served gateway stops answering.
    """
    scope = scope or LaneScope(startup_timeout_s=options.timeout)
    document = read_bundle(bundle)
    digest = bundle_hash(bundle)
    started = utc_now()
    sandbox = options.upstream is not None
    approved = sum(1 for op in document.operations if op.is_approved)
    vacant = nothing_to_prove_marker(approved)
    checks: list[Check]
    if vacant is not None:  # nothing to serve or drive: no process is started
        checks, finished = [], 0
    elif options.upstream is not None:
        checks, finished = await _drive(document, bundle, options, options.upstream.rstrip("/"), scope)
    else:
        async with mock_process(
            bundle,
            env=options.env,
            seed=options.seed,
            python=options.python or sys.executable,
            timeout=scope.startup_timeout_s,
        ) as mock:
            checks, finished = await _drive(document, bundle, options, mock.url, scope)
    selected = len(select_operations(document.operations, scope.operations))
    incomplete = incomplete_marker(scope, selected=selected, approved=approved, finished=finished)
    frozen = tuple(checks)
    summary = _summary(frozen)
    record: JSONObject = {
        "schemaVersion": 1,
        "bundle": bundle.resolve().name,
        "upstream": "operator sandbox" if sandbox else "anvil mock",
        "startedAt": started,
        "checks": [check.to_json() for check in frozen],
        "identity": _identity(document, sandbox),
        "summary": summary,
        "passed": summary["fail"] == 0 and summary["pass"] >= 1,
        "bundleHash": digest,
        **({"incomplete": incomplete} if incomplete is not None else {}),
        **({"nothingToProve": vacant} if vacant is not None else {}),
    }
    path = write_record(bundle, RECORD_FILE, record) if write else None
    return SelftestReport(record=record, checks=frozen, path=path)


def summary_line(report: SelftestReport) -> str:
    """``PASSED — selftest <bundle>: N pass, 0 fail, M skipped``, ``SKIPPED — ...: nothing to prove: ...`` or
    ``FAILED — ...`` naming the first failures."""
    summary = report.record["summary"]
    counts = f"{summary['pass']} pass, {summary['fail']} fail, {summary['skipped']} skipped"
    name = report.record["bundle"]
    if report.passed:
        return f"PASSED — selftest {name}: {counts}"
    if report.verdict == "skipped":
        return f"SKIPPED — selftest {name}: {report.record['nothingToProve']['reason']}"
    failed = [c for c in report.checks if c.status == "fail"]
    if not failed:
        return f"FAILED — selftest {name}: {counts} (nothing passed)"
    first = "; ".join(f"{c.id} {c.operation or ''}".strip() + f": {c.detail}" for c in failed[:3])
    return f"FAILED — selftest {name}: {counts}. {first}"
