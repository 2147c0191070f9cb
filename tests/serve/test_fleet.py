"""The fleet: discovery, prefixed names, start-up refusals, forwarding, grants and per-caller compositions.

Also home of :class:`Rig`, the two in-process upstreams (github-mini and payments mocks behind
``httpx.ASGITransport``) the other fleet, REST, listener, health, metrics and audit tests build on.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.writer import install_bundle
from anvil.errors import AnvilError, BundleError, UsageError
from anvil.ledger.base import Ledger
from anvil.ledger.registry import open_ledger
from anvil.runtime.audit import AuditSink, GatewayAuditSink, MemoryAuditSink, RecordSink
from anvil.runtime.context import RuntimeContext
from anvil.serve.auth.grants import parse_grants
from anvil.serve.auth.principals import ANONYMOUS, STATIC_ISSUER, Attribution, Principal
from anvil.serve.fleet import Composition, Fleet, FleetBundle, FleetError, bundle_argument, discover_bundles
from anvil.serve.gateway import Gateway
from anvil.serve.mcp.results import CallResult
from tests.serve.support import OWNER_REPO, PAYMENTS, TOKEN, mock_module, token_variable

pytestmark = pytest.mark.anyio

COMMENT = {**OWNER_REPO, "issue_number": 2, "body": "Looks good ✓"}
RELEASE = {**OWNER_REPO, "tag_name": "v1.0.0", "confirm": True}


def _load_payments_mock() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fleet_payments_mock", PAYMENTS / "mock_upstream.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


payments_mock = _load_payments_mock()


def principal(pid: str = "ada", grants: Any = None, **attribution: str) -> Principal:
    """A verified principal with an optional grant (a list of entry dicts)."""
    return Principal(
        id=pid,
        grants=None if grants is None else parse_grants(grants),
        attribution=Attribution(**attribution),
        issuer=STATIC_ISSUER,
        subject=pid,
        verified=True,
    )


def read_grant(connector: str = "github", operations: Sequence[str] = ("*",), **extra: Any) -> list[dict[str, Any]]:
    return [{"connector": connector, "operations": list(operations), "mode": "read", **extra}]


def write_grant(connector: str = "github", operations: Sequence[str] = ("*",), **extra: Any) -> list[dict[str, Any]]:
    return [{"connector": connector, "operations": list(operations), "mode": "write", **extra}]


class Rig:
    """The github-mini and payments mocks in-process, a shared ledger and audit sink, and fleets over them."""

    def __init__(
        self,
        github: Document,
        payments: Document,
        *,
        ledger: Ledger | None = None,
        audit: AuditSink | RecordSink | None = None,
        env: str = "dev",
    ) -> None:
        self.docs = {"github": github, "payments": payments}
        github_app, self.github_state = mock_module.create_app(token=TOKEN)
        self.payments_state = payments_mock.State()
        payments_app = payments_mock.create_app(self.payments_state)
        self.clients = {
            "github": httpx.AsyncClient(transport=httpx.ASGITransport(app=github_app)),
            "payments": httpx.AsyncClient(transport=httpx.ASGITransport(app=payments_app)),
        }
        self.ledger = ledger if ledger is not None else open_ledger("memory:")
        self.memory = MemoryAuditSink()
        self.audit = audit if audit is not None else GatewayAuditSink(self.memory)
        self.env = env

    def bundle(self, bundle_id: str, service: str | None = None) -> FleetBundle:
        """A bundle of the ``service`` document (default: the id's last segment) under ``bundle_id``."""
        name = service or bundle_id.rsplit("/", 1)[-1]
        doc = self.docs[name]
        context = RuntimeContext(
            service_id=doc.service.id,
            base_url=f"http://{name}.test",
            client=self.clients[name],
            env=self.env,  # type: ignore[arg-type]
            credentials={token_variable(doc): TOKEN},
            ledger=self.ledger,
            audit=self.audit,  # type: ignore[arg-type]
        )
        return FleetBundle(id=bundle_id, document=doc, context=context)

    def fleet(self, *ids: str, **kwargs: Any) -> Fleet:
        return Fleet([self.bundle(bundle_id) for bundle_id in ids or ("github", "payments")], **kwargs)

    @property
    def github_requests(self) -> list[dict[str, Any]]:
        return list(self.github_state.requests)

    def lines(self) -> list[dict[str, Any]]:
        """The gateway audit lines written so far (with the default sink)."""
        return self.memory.records()

    async def aclose(self) -> None:
        for client in self.clients.values():
            await client.aclose()


@pytest.fixture
async def rig(github: Document, payments: Document) -> AsyncIterator[Rig]:
    made = Rig(github, payments)
    yield made
    await made.aclose()


def error_of(result: CallResult | None) -> dict[str, Any]:
    assert result is not None and result.envelope is not None
    return dict(result.envelope.to_json()["error"])


def names(view: Composition | Fleet) -> list[str]:
    return [tool["name"] for tool in view.tools]


# --- discovery -------------------------------------------------------------------------------------


@pytest.fixture
def workspace(github: Document, payments: Document, tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    install_bundle(root / "github", emit_bundle(github))
    install_bundle(root / "team" / "payments", emit_bundle(payments))
    (root / ".hidden").mkdir()
    install_bundle(root / ".hidden" / "stage", emit_bundle(github))
    (root / "notes").mkdir()
    return root


def test_every_directory_holding_air_json_beneath_a_folder_is_a_bundle_named_by_its_relative_path(
    workspace: Path,
) -> None:
    found = discover_bundles([workspace])
    assert [(source.id, source.path) for source in found] == [
        ("github", workspace / "github"),
        ("team/payments", workspace / "team" / "payments"),
    ]


def test_a_bundle_directory_given_directly_is_named_by_its_directory(workspace: Path) -> None:
    found = discover_bundles([workspace / "team" / "payments", workspace / "github"])
    assert [source.id for source in found] == ["payments", "github"]


def test_a_bundle_directory_is_named_by_its_operator_else_by_its_service_id_when_it_can_be_read(
    github: Document, workspace: Path, tmp_path: Path
) -> None:
    install_bundle(tmp_path / "image" / "bundle", emit_bundle(github))  # as the generated image serves it
    served = tmp_path / "image" / "bundle"
    ids = {served: "github"}
    assert [s.id for s in discover_bundles([served], service_id=ids.__getitem__)] == ["github"]
    assert bundle_argument(f"gh={served}") == ("gh", served)
    assert [s.id for s in discover_bundles([bundle_argument(f"gh={served}")], service_id=ids.__getitem__)] == ["gh"]
    assert bundle_argument(str(served)) == (None, served)
    assert [s.id for s in discover_bundles([workspace], service_id=ids.__getitem__)] == ["github", "team/payments"]
    with pytest.raises(UsageError) as bad:
        bundle_argument(f"two words={served}")
    with pytest.raises(BundleError) as folder:
        discover_bundles([("ws", workspace)])
    assert (bad.value.code, folder.value.code) == ("cli/usage", "bundle/invalid")


def test_a_folder_without_bundles_and_a_bundle_given_twice_are_refused(workspace: Path) -> None:
    with pytest.raises(FleetError) as empty:
        discover_bundles([workspace / "notes"])
    with pytest.raises(FleetError) as twice:
        discover_bundles([workspace / "github", workspace])
    with pytest.raises(BundleError) as missing:
        discover_bundles([workspace / "nothing"])
    assert (empty.value.code, twice.value.code, missing.value.code) == (
        "fleet/no_bundles",
        "fleet/duplicate_bundle",
        "bundle/invalid",
    )


# --- composition -----------------------------------------------------------------------------------


async def test_start_up_refuses_no_bundles_duplicate_ids_and_colliding_tool_names(rig: Rig) -> None:
    refusals: list[str] = []
    for build in (
        lambda: Fleet([]),
        lambda: Fleet([rig.bundle("github"), rig.bundle("github")]),
        lambda: Fleet([rig.bundle("svc", "github"), rig.bundle("svc!!", "github")]),
    ):
        with pytest.raises(FleetError) as caught:
            build()
        refusals.append(caught.value.code)
    assert refusals == ["fleet/no_bundles", "fleet/duplicate_bundle", "fleet/tool_collision"]
    assert isinstance(caught.value, AnvilError) and "svc__github_list_issue" in caught.value.message


async def test_two_bundles_are_always_prefixed_with_their_folded_ids(rig: Rig) -> None:
    fleet = Fleet([rig.bundle("github"), rig.bundle("team/payments", "payments")])
    listed = names(fleet)
    assert "github__github_create_comment" in listed and "team_payments__payments_create_refund" in listed
    assert all(name.startswith(("github__", "team_payments__")) for name in listed)
    tool = next(t for t in fleet.tools if t["name"] == "team_payments__payments_get_customer")
    assert tool["_meta"]["anvil/fleet_bundle_id"] == "team/payments"
    assert tool["_meta"]["anvil/fleet_tool_name"] == "payments_get_customer"
    assert tool["_meta"]["anvil/operation_id"] == "payments.customers.get"
    release = next(t for t in fleet.tools if t["name"] == "github__github_create_release")
    assert release["_meta"]["effect"]["draft"] == "github__github_create_release"
    assert release["_meta"]["effect"]["lookup"] == "github__github_get_release"


async def test_one_bundle_without_a_grant_lists_and_answers_exactly_as_standalone_serving(
    rig: Rig, github: Document
) -> None:
    fleet = rig.fleet("github")
    standalone = Gateway(github, rig.bundle("github").context)
    assert json.dumps(fleet.tools) == json.dumps(standalone.tools)
    assert (fleet.server_name, fleet.version) == (standalone.server_name, standalone.version)
    through = await fleet.call("github_list_issue", OWNER_REPO)
    direct = await standalone.call("github_list_issue", OWNER_REPO)
    assert through is not None and direct is not None
    assert json.dumps(through.to_wire()) == json.dumps(direct.to_wire())


async def test_a_fleet_call_reports_the_undo_under_the_callers_wire_name_and_forwards_only_key_and_stage(
    rig: Rig,
) -> None:
    fleet = rig.fleet()
    meta = {"idempotency_key": "ledger-04", "progress_token": 7, "io.modelcontextprotocol/x": 1}
    created = await fleet.call("github__github_create_comment", COMMENT, meta)
    assert created is not None and created.report is not None
    assert created.report["idempotency_key"] == "ledger-04"
    undo = created.report["undo"]
    assert (undo["tool"], undo["arguments"]) == (
        "github__github_delete_comment",
        {"owner": "octo", "repo": "hello", "comment_id": 100},
    )
    assert [r.get("idempotency_key") for r in rig.github_requests if r["method"] == "POST"] == ["ledger-04"]
    undone = await fleet.call(undo["tool"], {**undo["arguments"], "confirm": True})
    assert undone is not None and undone.kind == "success"
    assert rig.github_state.comments == []


async def test_a_staged_call_through_the_fleet_names_promote_and_discard_by_wire_name(rig: Rig) -> None:
    fleet = rig.fleet()
    staged = await fleet.call("github__github_create_release", RELEASE, {"stage": True})
    assert staged is not None and staged.report is not None
    assert staged.report["staged"]["promote"]["tool"] == "github__github_update_release"
    assert staged.report["staged"]["discard"]["tool"] == "github__github_delete_release"
    assert staged.report["lookup"] is None


async def test_an_unknown_tool_is_not_mounted(rig: Rig) -> None:
    assert await rig.fleet().call("github__nope", {}) is None


# --- grants ----------------------------------------------------------------------------------------


async def test_a_granted_caller_of_a_single_bundle_dials_prefixed_names_narrowed_to_its_grant(rig: Rig) -> None:
    fleet = rig.fleet("github")
    view = fleet.compose(principal(grants=read_grant()))
    assert names(view) == [
        "github__github_list_issue",
        "github__github_get_issue",
        "github__github_list_comment",
        "github__github_get_release",
        "github__github_list_pull",
    ]
    assert "github__github_create_comment" in view.tool_names()
    assert "github_list_issue" in names(fleet.compose(principal()))


async def test_a_write_grant_hides_mutations_that_need_confirmation_unless_the_entry_allows_them(rig: Rig) -> None:
    fleet = rig.fleet()
    plain = names(fleet.compose(principal(grants=write_grant() + read_grant("payments"))))
    assert "github__github_create_comment" in plain and "github__github_create_issue" not in plain
    assert "payments__payments_get_customer" in plain and "payments__payments_create_refund" not in plain
    allowing = names(fleet.compose(principal(grants=write_grant(confirm="allow"))))
    assert "github__github_create_issue" in allowing and not any(n.startswith("payments__") for n in allowing)


@pytest.mark.parametrize(
    ("grant", "tool", "code", "detail", "rule_index"),
    [
        # step 1: no entry for the connector
        (read_grant("payments"), "github__github_list_issue", "policy_denied", "policy/grant_denied", None),
        # step 2: no glob names the operation
        (read_grant(operations=["pulls.*"]), "github__github_list_issue", "policy_denied", "policy/grant_denied", None),
        # step 3: the naming entry is read-only
        (read_grant(), "github__github_delete_comment", "policy_denied", "policy/grant_denied", 0),
        # step 4: a confirmation-gated mutation under an entry without confirm: allow
        (
            write_grant(),
            "github__github_create_issue",
            "confirmation_required",
            "policy/grant_confirmation_required",
            0,
        ),
    ],
)
async def test_each_step_of_the_decision_order_refuses_before_anything_runs(
    rig: Rig, grant: list[dict[str, Any]], tool: str, code: str, detail: str, rule_index: int | None
) -> None:
    view = rig.fleet("github").compose(principal(grants=grant, tenant="t1", turn="7"))
    result = await view.call(tool, {"bogus": True, "confirm": True}, {"idempotency_key": "k-1"})
    error = error_of(result)
    assert (error["code"], error["details"]["code"]) == (code, detail)
    assert (error["retryable"], error["safe_to_retry"]) == (False, False)
    assert error["details"]["connector"] == "github" and error["details"]["principalId"] == "ada"
    rule = error["details"]["rule"]
    assert (rule["index"] if rule is not None else None) == rule_index
    assert result is not None and result.report is not None and result.report["undo"] is None
    assert rig.github_requests == []
    [line] = rig.lines()
    expected_decision = "confirmation_required" if code == "confirmation_required" else "denied"
    assert (line["decision"], line["rule"], line["error_code"]) == (expected_decision, detail, code)
    assert (line["sub"], line["by_tenant"], line["by_turn"], line["connector"]) == ("ada", "t1", "7", "github")
    assert line["grant"] == rule and line["upstream_status"] is None
    assert line["ledger_id"] == "k-1"


async def test_step_5_an_allowed_call_runs_and_its_audit_line_names_the_entry_and_account(rig: Rig) -> None:
    grant = read_grant("payments") + read_grant(account="work")
    view = rig.fleet("github").compose(principal(grants=grant))
    result = await view.call("github__github_list_issue", OWNER_REPO)
    assert result is not None and result.kind == "success"
    [line] = rig.lines()
    assert (line["decision"], line["account"], line["rule"], line["upstream_status"]) == ("allowed", "work", None, 200)
    assert line["grant"] == {"index": 1, "connector": "github", "operations": ["*"], "mode": "read", "account": "work"}


async def test_a_staged_call_is_judged_on_its_draft_and_refused_without_a_report(rig: Rig) -> None:
    view = rig.fleet("github").compose(principal(grants=write_grant()))
    refused = await view.call("github__github_create_release", RELEASE, {"stage": True})
    assert error_of(refused)["details"]["code"] == "policy/grant_confirmation_required"
    assert refused is not None and refused.report is None
    [line] = rig.lines()
    assert (line["operation"], line["staged_for"]) == ("github.releases.create", "github.releases.create")


async def test_a_caller_without_a_grant_skips_the_gate_and_an_empty_grant_allows_nothing(rig: Rig) -> None:
    fleet = rig.fleet("github")
    assert names(fleet.compose(principal(grants=[]))) == []
    refused = await fleet.compose(principal(grants=[])).call("github__github_list_pull", OWNER_REPO)
    assert error_of(refused)["details"]["rule"] is None
    allowed = await fleet.compose(principal()).call("github_list_pull", OWNER_REPO)
    assert allowed is not None and allowed.kind == "success"


# --- callers ---------------------------------------------------------------------------------------


async def test_one_composition_per_caller_is_reused_and_the_cache_is_bounded(rig: Rig) -> None:
    fleet = rig.fleet(max_compositions=2)
    first = fleet.compose(principal("ada", grants=read_grant(), turn="1"))
    assert fleet.compose(principal("ada", grants=read_grant(), turn="1")) is first
    assert fleet.compose(principal("ada", grants=read_grant(), turn="2")) is not first
    fleet.compose(principal("bob"))
    assert fleet.cached_compositions == 2
    assert fleet.compose(principal("ada", grants=read_grant(), turn="1")) is not first
    assert fleet.compose(ANONYMOUS) is fleet.default


async def test_two_verified_callers_reusing_one_key_conflict_instead_of_reading_each_others_result(rig: Rig) -> None:
    fleet = rig.fleet()
    meta = {"idempotency_key": "shared-key"}
    first = await fleet.compose(principal("ada")).call("github__github_create_comment", COMMENT, meta)
    again = await fleet.compose(principal("ada")).call("github__github_create_comment", COMMENT, meta)
    other = await fleet.compose(principal("bob")).call("github__github_create_comment", COMMENT, meta)
    assert first is not None and again is not None and first.data == again.data
    assert error_of(other)["code"] == "conflict"
    assert len(rig.github_state.comments) == 1
