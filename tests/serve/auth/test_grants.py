"""Grants: parsing, globs, the five-step decision, refusal envelopes and tools/list narrowing (gateway §1.7)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anvil.air.model import Document
from anvil.codes import code_info
from anvil.serve.auth.grants import (
    Glob,
    GrantDecision,
    GrantError,
    GrantTarget,
    decide,
    grant_json,
    names_tried,
    parse_grants,
    refusal_envelope,
    visible,
)
from anvil.serve.auth.naming import fleet_tool_name, fold_bundle_id

FIXTURES = Path(__file__).parent.parent / "fixtures" / "auth"
READ_LIST = GrantTarget("github.issues.list", "github", True, False)
CREATE_LABEL = GrantTarget("github.labels.create", "github", False, False)
CREATE_ISSUE = GrantTarget("github.issues.create", "github", False, True)


def entry(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"connector": "github", "operations": ["issues.*"], "mode": "read"}
    base.update(overrides)
    return {key: value for key, value in base.items() if value is not ...}


# --- parsing ---------------------------------------------------------------------------------------


def test_parsing_keeps_known_keys_and_drops_unknown_ones() -> None:
    grants = parse_grants([entry(account="work", confirm="allow", note="ignored", extra={"x": 1})])
    assert grant_json(grants) == [
        {"connector": "github", "operations": ["issues.*"], "mode": "read", "account": "work", "confirm": "allow"}
    ]


def test_an_empty_list_is_a_valid_grant_that_allows_nothing() -> None:
    assert parse_grants([]) == ()
    assert decide((), "github", READ_LIST).allowed is False


def test_the_fixture_grant_file_parses() -> None:
    grants = parse_grants(json.loads((FIXTURES / "grants.json").read_text(encoding="utf-8")))
    assert [g.connector for g in grants] == ["github", "github", "tracker"]


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"connector": "github"}, id="not-a-list"),
        pytest.param("github:read", id="string"),
        pytest.param([entry()] * 65, id="more-than-64-entries"),
        pytest.param(["github"], id="non-object-entry"),
        pytest.param([entry(connector=...)], id="missing-connector"),
        pytest.param([entry(connector="git hub")], id="connector-with-space"),
        pytest.param([entry(connector="")], id="empty-connector"),
        pytest.param([entry(connector="g" * 65)], id="connector-too-long"),
        pytest.param([entry(connector=7)], id="connector-not-string"),
        pytest.param([entry(operations=...)], id="missing-operations"),
        pytest.param([entry(operations=[])], id="empty-operations"),
        pytest.param([entry(operations="issues.*")], id="operations-not-a-list"),
        pytest.param([entry(operations=["*"] * 257)], id="more-than-256-globs"),
        pytest.param([entry(operations=[3])], id="non-string-glob"),
        pytest.param([entry(operations=[""])], id="empty-glob"),
        pytest.param([entry(operations=["a" * 257])], id="glob-too-long"),
        pytest.param([entry(mode="admin")], id="mode-admin"),
        pytest.param([entry(mode=...)], id="missing-mode"),
        pytest.param([entry(account="a b")], id="account-with-space"),
        pytest.param([entry(account="a" * 129)], id="account-too-long"),
        pytest.param([entry(account=None)], id="account-null"),
        pytest.param([entry(confirm=True)], id="confirm-true"),
        pytest.param([entry(confirm="yes")], id="confirm-yes"),
        pytest.param([entry(confirm=None)], id="confirm-null"),
        pytest.param([entry(), entry(mode="root")], id="one-bad-entry-spoils-the-grant"),
    ],
)
def test_a_grant_breaking_any_rule_is_invalid_as_a_whole(value: Any) -> None:
    with pytest.raises(GrantError) as caught:
        parse_grants(value)
    assert caught.value.code == "grant/invalid"
    assert code_info("grant/invalid").kind == "error"


def test_limits_are_inclusive() -> None:
    grants = parse_grants([entry(connector="c" * 64, operations=["a" * 256] * 256, account="a" * 128)] * 64)
    assert len(grants) == 64


# --- globs -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "name", "expected"),
    [
        ("*", "github.issues.list", True),
        ("*", "", True),
        ("issues.*", "issues.list", True),
        ("issues.*", "pulls.list", False),
        ("issues.*", "issues.", True),
        ("issues.lis?", "issues.list", True),
        ("issues.lis?", "issues.lis", False),
        ("issues.lis?", "issues.lists", False),
        ("issues.list", "issuesXlist", False),
        ("a+b", "aab", False),
        ("a+b", "a+b", True),
        ("[ab]", "a", False),
        ("*.list", "github.issues.list", True),
        ("*issues*", "github.issues.list", True),
        ("g*i*s*t", "github.issues.list", True),
        ("g*z*t", "github.issues.list", False),
        ("**", "x", True),
        ("?*?", "x", False),
        ("?*?", "xy", True),
        ("a*?b", "axb", True),
        ("a*?b", "ab", False),
        ("*a*a*a*a*a*a*a*a*a*a*b", "a" * 200, False),
    ],
)
def test_globs_match_the_whole_string_with_star_and_question_mark(glob: str, name: str, expected: bool) -> None:
    assert Glob(glob).matches(name) is expected


def test_both_the_short_and_the_service_prefixed_glob_match_the_air_id() -> None:
    grants = parse_grants([entry(operations=["issues.*"]), entry(operations=["github.issues.*"])])
    assert decide(grants[:1], "github", READ_LIST).allowed
    assert decide(grants[1:], "github", READ_LIST).allowed


def test_names_tried_are_the_id_and_the_id_without_its_service_prefix() -> None:
    assert names_tried("github.issues.list", "github") == ("github.issues.list", "issues.list")
    assert names_tried("github.issues.list", "tracker") == ("github.issues.list",)
    assert names_tried("githubx.issues.list", "github") == ("githubx.issues.list",)


# --- the decision, step by step --------------------------------------------------------------------


def test_step_5_a_read_under_a_read_entry_is_allowed_with_its_account() -> None:
    decision = decide(parse_grants([entry(account="work")]), "github", READ_LIST)
    assert decision.allowed and decision.code is None and decision.envelope_code is None
    assert decision.rule is not None and decision.rule["index"] == 0
    assert decision.account == "work"
    assert decision.verdict == "allowed"


def test_step_5_an_entry_without_an_account_resolves_to_default() -> None:
    assert decide(parse_grants([entry()]), "github", READ_LIST).account == "default"


def test_step_1_a_connector_with_no_entry_is_denied_without_a_rule() -> None:
    decision = decide(parse_grants([entry(connector="tracker", operations=["*"])]), "github", READ_LIST)
    assert (decision.allowed, decision.code, decision.envelope_code) == (False, "policy/grant_denied", "policy_denied")
    assert decision.rule is None and decision.account is None
    assert "'github'" in decision.message
    assert decision.verdict == "denied"


def test_step_2_no_glob_naming_the_operation_is_denied_without_a_rule() -> None:
    decision = decide(parse_grants([entry(operations=["pulls.*"])]), "github", READ_LIST)
    assert (decision.code, decision.rule) == ("policy/grant_denied", None)
    assert "github.issues.list" in decision.message


def test_step_3_a_mutation_under_a_read_entry_is_denied_naming_the_first_entry() -> None:
    grants = parse_grants([entry(operations=["*"], account="work"), entry(operations=["labels.*"])])
    decision = decide(grants, "github", CREATE_LABEL)
    assert decision.code == "policy/grant_denied"
    assert decision.rule == {"index": 0, "connector": "github", "operations": ["*"], "mode": "read", "account": "work"}
    assert decision.account == "work"


def test_a_mutation_without_confirmation_under_a_write_entry_is_allowed() -> None:
    decision = decide(parse_grants([entry(operations=["*"], mode="write")]), "github", CREATE_LABEL)
    assert decision.allowed and decision.account == "default"


def test_step_4_a_gated_mutation_without_confirm_allow_needs_confirmation() -> None:
    grants = parse_grants([entry(operations=["issues.*"], mode="write")])
    decision = decide(grants, "github", CREATE_ISSUE)
    assert (decision.allowed, decision.code, decision.envelope_code) == (
        False,
        "policy/grant_confirmation_required",
        "confirmation_required",
    )
    assert decision.rule is not None and decision.rule["index"] == 0
    assert decision.verdict == "confirmation_required"


def test_step_4_a_later_entry_with_confirm_allow_allows_the_gated_mutation() -> None:
    grants = parse_grants(
        [
            entry(operations=["issues.*"], mode="write"),
            entry(operations=["issues.create"], mode="write", confirm="allow", account="bot"),
        ]
    )
    decision = decide(grants, "github", CREATE_ISSUE)
    assert decision.allowed
    assert decision.rule is not None and decision.rule["index"] == 1 and decision.rule["confirm"] == "allow"
    assert decision.account == "bot"


def test_the_first_allowing_entry_wins() -> None:
    grants = parse_grants([entry(account="one"), entry(account="two")])
    assert decide(grants, "github", READ_LIST).account == "one"


def test_a_decision_over_a_compiled_operation_uses_its_effect_and_confirmation(github: Document) -> None:
    create = github.operation("github.issues.create")
    comment = github.operation("github.comments.create")
    assert create is not None and comment is not None
    write = parse_grants([entry(operations=["*"], mode="write")])
    assert decide(write, "github", create, service_id="github").code == "policy/grant_confirmation_required"
    assert decide(write, "github", comment).allowed


# --- refusal envelopes -----------------------------------------------------------------------------


def test_a_denial_envelope_carries_the_rule_and_is_never_retryable() -> None:
    decision = decide(parse_grants([entry(operations=["*"])]), "github", CREATE_LABEL)
    envelope = refusal_envelope(decision, "local:ada", "github", "github.labels.create", "trace_1")
    assert envelope.to_json() == {
        "error": {
            "code": "policy_denied",
            "message": decision.message,
            "retryable": False,
            "safe_to_retry": False,
            "operation": "github.labels.create",
            "trace_id": "trace_1",
            "details": {
                "code": "policy/grant_denied",
                "connector": "github",
                "principalId": "local:ada",
                "rule": {"index": 0, "connector": "github", "operations": ["*"], "mode": "read"},
            },
        }
    }
    assert envelope.http_status == 403


def test_a_denial_without_a_named_entry_has_a_null_rule() -> None:
    decision = decide((), "tracker", GrantTarget("tracker.tickets.list", "tracker", True, False))
    envelope = refusal_envelope(decision, "local:ada", "tracker", "tracker.tickets.list", "trace_2").to_json()
    assert envelope["error"]["details"]["rule"] is None
    assert envelope["error"]["details"]["code"] == "policy/grant_denied"


def test_a_confirmation_refusal_envelope_is_confirmation_required() -> None:
    decision = decide(parse_grants([entry(operations=["*"], mode="write")]), "github", CREATE_ISSUE)
    envelope = refusal_envelope(decision, "local:ada", "github", "github.issues.create", "trace_3")
    error = envelope.to_json()["error"]
    assert error["code"] == "confirmation_required"
    assert error["details"]["code"] == "policy/grant_confirmation_required"
    assert (error["retryable"], error["safe_to_retry"]) == (False, False)
    assert code_info("policy/grant_confirmation_required").kind == "detail"
    assert code_info("policy/grant_denied").kind == "detail"


def test_an_allowing_decision_has_no_refusal_envelope() -> None:
    decision = GrantDecision(allowed=True, code=None, envelope_code=None, message="ok")
    with pytest.raises(ValueError):
        refusal_envelope(decision, "p", "github", "github.issues.list", "trace_4")


# --- tools/list narrowing --------------------------------------------------------------------------


def test_a_read_grant_shows_only_the_granted_reads(github: Document) -> None:
    grants = parse_grants([entry(operations=["issues.list"])])
    shown = [op.mcp.tool_name for op in github.operations if visible(grants, "github", op, service_id="github")]
    assert shown == ["github_list_issue"]


def test_a_write_grant_hides_mutations_that_need_confirmation(github: Document) -> None:
    grants = parse_grants([entry(operations=["comments.*", "issues.create"], mode="write")])
    shown = {op.id for op in github.operations if visible(grants, "github", op)}
    assert shown == {"github.comments.list", "github.comments.create"}


def test_without_a_grant_every_tool_is_shown_and_workflows_need_a_named_connector(github: Document) -> None:
    assert all(visible(None, "github", op) for op in github.operations)
    grants = parse_grants([entry(connector="tracker", operations=["*"])])
    assert visible(grants, "tracker", None) is True
    assert visible(grants, "github", None) is False


# --- connector names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bundle_id", "connector"),
    [
        ("github", "github"),
        ("payments/v2", "payments_v2"),
        ("team//github!!", "team_github"),
        ("/svc/", "svc"),
        ("svc!!", "svc"),
        ("___", "bundle"),
        ("", "bundle"),
        ("a-b_c", "a-b_c"),
    ],
)
def test_bundle_ids_fold_to_connector_ids(bundle_id: str, connector: str) -> None:
    assert fold_bundle_id(bundle_id) == connector


def test_fleet_tool_names_join_the_connector_and_tool_with_two_underscores() -> None:
    assert fleet_tool_name("payments/v2", "list_orders") == "payments_v2__list_orders"
