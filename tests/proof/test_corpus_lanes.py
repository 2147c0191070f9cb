"""The pipeline on real corpus specs, as a test of the tool.

``anvil init --approve all --propose-effects`` -> ``anvil compile`` -> certify, selftest, conformance
and simulate, on specs where it is quick (a subset of PagerDuty's, Slack's and Plaid's operations). A
lane may report that the API is unsafe or unsound as approved; each such report is listed below as a
:class:`Finding`, with why it is the API's. Anything else a lane fails or skips is a defect of the tool,
and fails this test; so does a listed finding that no longer occurs (the list stays true).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from anvil.cli import main
from anvil.proof.certify.lane import certify
from anvil.proof.conformance.lane import conformance
from anvil.proof.scope import LaneScope
from anvil.proof.selftest.lane import SelftestOptions, run_selftest
from anvil.proof.simulate.lane import simulate

_BUDGET = "contract.certification-core.static.tool_surface_within_disclosure_budget"
_LARGE_TOOLS = "a tool's schemas are over the 1,200-token disclosure budget: the API's inputs and answers are so large"


@dataclass(frozen=True, slots=True)
class Finding:
    """A lane's report that is about the API: ``check`` is a check id (a simulate cell's
    ``dimension/variant``, or ``skipped``), ``operation`` an id or a glob ("" for none)."""

    lane: str
    check: str
    operation: str
    why: str

    def covers(self, lane: str, check: str, operation: str) -> bool:
        return self.lane == lane and self.check == check and fnmatch.fnmatchcase(operation, self.operation)


@dataclass(frozen=True, slots=True)
class Run:
    service: str
    findings: tuple[Finding, ...]
    operations: tuple[str, ...] = ()
    init: tuple[str, ...] = ()


RUNS: dict[str, Run] = {
    "oai-petstore-expanded.yaml": Run(
        service="petx",
        findings=(
            Finding("selftest", "error-mapping", "", "the API documents its errors only as `default`, no status"),
            Finding("selftest", "key-forwarding", "", "no operation of the API takes an idempotency key"),
        ),
    ),
    "paypal-checkout-orders-v2.json": Run(
        service="paypal",
        # Its 8 tools list within the 20,000-token surface since the 5 order inputs are summarised
        # (134,000 o200k tokens whole, 13,500 listed).
        findings=(
            Finding("certify", _BUDGET, "", _LARGE_TOOLS),
            Finding("simulate", "disclosure/tool-surface", "paypal.*", _LARGE_TOOLS),
        ),
    ),
    "slack-web-api.json": Run(
        service="slack",
        # Slack offers only an end-user OAuth flow: served as a bearer token obtained out of band.
        init=("--auth-scheme", "slackAuth", "--auth-type", "bearer", "--auth-reason", "Tokens come from the app."),
        operations=("slack.pins.*", "slack.reactions.*", "slack.stars.*", "slack.reminders.*"),
        findings=(
            Finding(
                "certify",
                "semantic.sibling-descriptions-distinct",
                "",
                "the spec describes files.remote.info and files.remote.list in the same words",
            ),
            Finding("selftest", "error-mapping", "", "the API answers errors as 200 {ok: false}: none documented"),
            Finding("selftest", "key-forwarding", "", "no operation of the API takes an idempotency key"),
        ),
    ),
    "plaid.yml": Run(
        service="plaid",
        # Every call sends three API keys at once (a composite auth); the creates with a proposed undo
        # and their undo operations, proven through the mock's state (Plaid's reads are POSTs too).
        operations=(
            "plaid.create.create.*_direct",
            "plaid.create.create.audit_copy*",
            "plaid.create.create.authorization",
            "plaid.create.create.payment_profile",
            "plaid.create.create.refund",
            "plaid.create.create.relay",
            "plaid.create.create.rules",
            "plaid.create.create.third_party_token",
            "plaid.remove.create.*",
            "plaid.*.cancel",
            "plaid.recipient.get",  # a read that retries a 503
            "plaid.create.create.sandbox_transactions",  # the one operation that documents an error
        ),
        findings=(
            Finding("certify", _BUDGET, "", _LARGE_TOOLS),
            Finding("simulate", "disclosure/tool-surface", "plaid.*", _LARGE_TOOLS),
            # No key-forwarding skip: init proposes the body `idempotency_key` eleven Plaid writes declare.
        ),
    ),
    "pagerduty-rest.json": Run(
        service="pd",
        operations=(
            "pd.extensions.*",
            "pd.business_services.*",
            "pd.actions.*",
            "pd.invocations.*",
            "pd.runners.*",
            "pd.custom_fields.*.types",
            "pd.overrides.*",
            "pd.tags.*",
            "pd.memories.*",
        ),
        findings=(
            Finding("certify", _BUDGET, "", _LARGE_TOOLS),
            Finding("simulate", "disclosure/tool-surface", "pd.*", _LARGE_TOOLS),
            Finding("selftest", "key-forwarding", "", "no operation of the API takes an idempotency key"),
            # No finding on pd.invocations.*: the invocation's metadata.agent is oneOf four objects, two
            # alike, so no answer matches exactly one; its published schema states it as anyOf.
            # The runner body is oneOf two open objects with no required field (the discriminator
            # names a property neither has): every body matches both, none matches exactly one.
            *(
                Finding(lane, check, "pd.runners.replace", "the request schema's oneOf admits no body")
                for lane, check in (
                    ("selftest", "fidelity"),
                    ("conformance", "wire-agreement"),
                    ("conformance", "answer-agreement"),
                    ("simulate", "skipped"),
                )
            ),
        ),
    ),
}


def _non_passes(record: dict[str, Any], lane: str) -> list[tuple[str, str, str]]:
    """``(lane, check, operation)`` of every check or cell that did not pass."""
    if lane == "simulate":
        coverage = record["coverage"]
        cells = [
            (lane, f"{cell['dimension']}/{cell['variant']}", cell["operationId"])
            for cell in coverage["cells"]
            if not cell["ok"]
        ]
        return cells + [(lane, "skipped", item["operationId"]) for item in coverage["skipped"]]
    passed = "passed" if lane == "certify" else "pass"
    return [(lane, c["id"], c.get("operationId") or "") for c in record["checks"] if c["status"] != passed]


def _pipeline(corpus: Path, spec: str, run: Run, out: Path) -> tuple[list[tuple[str, str, str]], dict[str, Any]]:
    manifest, bundle = out / "anvil.yaml", out / run.service
    source = str(corpus / spec)
    init = ["init", source, "--service", run.service, "--out", str(manifest), "--approve", "all", "--propose-effects"]
    assert main([*init, *run.init]) == 0
    assert main(["compile", source, "--manifest", str(manifest), "--out", str(bundle)]) == 0
    environ = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
    scope = LaneScope(operations=run.operations)
    report = anyio.run(lambda: run_selftest(bundle, SelftestOptions(env=environ), write=False, scope=scope))
    selftest = report.record
    records = {
        "certify": certify(bundle),
        "selftest": selftest,
        "conformance": conformance(bundle, environ=environ, scope=LaneScope(operations=run.operations)),
        "simulate": simulate(bundle, scope=LaneScope(operations=run.operations)),
    }
    return [item for lane, record in records.items() for item in _non_passes(record, lane)], selftest


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("spec", sorted(RUNS))
def test_every_lane_report_on_a_corpus_spec_is_a_listed_finding_about_the_api(
    corpus: Path, tmp_path: Path, spec: str
) -> None:
    run = RUNS[spec]
    found, selftest = _pipeline(corpus, spec, run, tmp_path)
    unexplained = [item for item in found if not any(f.covers(*item) for f in run.findings)]
    assert unexplained == [], "the tool failed or skipped these (not the API)"
    stale = [f for f in run.findings if not any(f.covers(*item) for item in found)]
    assert stale == [], "these listed findings no longer occur"
    undo = [c for c in selftest["checks"] if c["id"] in ("effect-inverse", "effect-compensate")]
    proven = [c for c in undo if c["status"] == "pass" and c["basis"] in ("api-read", "mock-state")]
    assert len(proven) == len(undo), "every proposed undo is proven by state"
