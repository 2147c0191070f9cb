"""``anvil run`` in direct mode: views, refusals before the wire, exit codes and the observed transcript."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anvil.bundle.read import read_bundle
from anvil.runtime.credentials import client_credentials_env, credential_profile, expected_env
from tests.cli.fixtures.upstreams import (
    REPO,
    LoopbackServer,
    Seen,
    anvil_run,
    echo_app,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REFUND = ("refunds", "create", "--payment-id", "pay_123", "--amount", "100", "--currency", "EUR")


@pytest.fixture(scope="module")
def echo() -> Iterator[tuple[str, list[Seen]]]:
    seen: list[Seen] = []
    server = LoopbackServer(echo_app(seen)).start()
    yield server.url, seen
    server.stop()


def _token_variable(bundle: Path) -> str:
    op = read_bundle(bundle).operation("payments.refunds.create")
    assert op is not None
    (name,) = expected_env(op.auth, credential_profile("default", op.auth))
    return name


def _client_variables(bundle: Path) -> tuple[str, str, str, str, str]:
    op = read_bundle(bundle).operation("payments.refunds.create")
    assert op is not None
    return client_credentials_env(credential_profile("default", op.auth))


def _dev(bundle: Path) -> dict[str, str]:
    return {"ANVIL_ENV": "dev", _token_variable(bundle): "tok-1"}


# --- views -------------------------------------------------------------------------------------


def test_the_policy_view_names_exactly_the_flags_a_refund_requires(payments: Path) -> None:
    ran = anvil_run(payments, "refunds", "create", "--policy")
    assert ran.code == 0
    view = ran.json()
    assert view["operation"] == "payments.refunds.create"
    assert view["required_flags"] == ["--confirm", "--idempotency-key"]
    assert view["idempotency"] == {
        "mode": "required",
        "mechanism": "header",
        "key": "Idempotency-Key",
        "key_derivation": "client_supplied",
        "explicit_key_required": True,
        "explicit_key_recommended": True,
    }
    assert view["effect"] == {"kind": "mutation", "action": "create", "risk": "financial", "reversible": False}
    assert view["retries"] == {"mode": "safe", "basis": "idempotency_key", "max_attempts": 3}
    assert view["confirmation"]["required"] is True
    assert view["auth"]["scopes"] == ["payments.write"]
    assert list(view) == [
        "operation", "state", "deprecated", "effect", "idempotency", "retries", "confirmation", "auth",
        "required_flags",
    ]  # fmt: skip


def test_the_policy_view_of_a_read_requires_no_flags_and_is_the_same_with_json(payments: Path) -> None:
    plain = anvil_run(payments, "customers", "get", "--policy")
    with_json = anvil_run(payments, "customers", "get", "--policy", "--json")
    assert plain.code == with_json.code == 0
    assert plain.json() == with_json.json()
    assert plain.json()["required_flags"] == []
    assert plain.json()["idempotency"]["explicit_key_recommended"] is False


def test_help_explains_inputs_safety_errors_and_a_complete_example(payments: Path) -> None:
    ran = anvil_run(payments, "refunds", "create", "--help")
    assert ran.code == 0
    text = ran.out
    assert text.startswith("Create a refund — payments.refunds.create")
    assert "--payment-id (required)  [path]" in text
    assert "--idempotency-key (required)" in text and "--confirm (required)" in text
    assert "Safety: Requires --confirm. Requires --idempotency-key. Transient failures are retried" in text
    assert "not_found (404)" in text
    example = text.split("Examples:\n", 1)[1].strip()
    assert "--idempotency-key create_refund-example-key --confirm" in example
    assert anvil_run(payments, "refunds", "create", "--explain").out == text


def test_schema_examples_and_errors_views_print_json(payments: Path) -> None:
    schema = anvil_run(payments, "refunds", "create", "--schema").json()
    assert schema["required"] == ["payment_id", "amount", "currency", "idempotency_key", "confirm"]
    examples = anvil_run(payments, "refunds", "create", "--examples").json()
    assert examples["idempotency_key"] == "create_refund-example-key" and examples["confirm"] is True
    errors = anvil_run(payments, "refunds", "create", "--errors").json()
    assert {"code": "not_found", "upstream_status": 404} in [
        {k: e[k] for k in ("code", "upstream_status")} for e in errors["errors"]
    ]
    assert errors["exit_codes"]["confirmation_required"] == 3


def test_a_valued_view_flag_sets_the_business_input_of_that_name(notes: Path, echo: tuple[str, list[Seen]]) -> None:
    url, seen = echo
    seen.clear()
    ran = anvil_run(notes, "notes", "get", "--note-id", "n1", "--schema", "v2", "--base-url", url)
    assert ran.code == 0, ran.err
    assert seen[-1].query == "schema=v2"


def test_a_word_tail_id_canonical_name_and_tool_name_all_find_the_operation(payments: Path) -> None:
    for words in (["refunds", "create"], ["payments", "refunds", "create"], ["create_refund"],
                  ["payments.refunds.create"], ["payments_create_refund"]):  # fmt: skip
        ran = anvil_run(payments, *words, "--policy")
        assert ran.code == 0, words
        assert ran.json()["operation"] == "payments.refunds.create"


def test_an_unknown_operation_exits_1_with_a_did_you_mean(payments: Path) -> None:
    ran = anvil_run(payments, "refund", "craete")
    assert ran.code == 1
    assert "cli/unknown_operation" in ran.err and "refunds create" in ran.err


def test_a_partial_match_lists_its_group_exit_0_with_help_else_1(payments: Path) -> None:
    listed = anvil_run(payments, "refunds", "--help")
    assert listed.code == 0 and "refunds create" in listed.out
    assert anvil_run(payments, "refunds").code == 1
    ambiguous = anvil_run(payments, "create")
    assert ambiguous.code == 1 and "capture create" in ambiguous.err and "refunds create" in ambiguous.err
    assert anvil_run(payments, "--help").code == 0


def test_an_operation_that_is_not_approved_is_refused_with_exit_5(tmp_path: Path) -> None:
    from anvil.cli.compile import compile_bundle

    out = tmp_path / "raw"
    assert compile_bundle(REPO / "examples/payments/openapi.yaml", out=out, service_id="payments", root=REPO).files
    ran = anvil_run(out, "customers", "get", "--customer-id", "cus_123")
    assert ran.code == 5
    assert ran.envelope()["code"] == "unsupported_operation"


def test_an_unreadable_bundle_exits_1_with_a_code(tmp_path: Path) -> None:
    ran = anvil_run(tmp_path / "nothing", "refunds", "create")
    assert ran.code == 1 and "bundle/invalid" in ran.err


def test_the_run_command_is_registered_in_the_anvil_cli(payments: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from anvil.cli import COMMANDS, main

    assert COMMANDS["run"][0] == "anvil.cli.run"
    assert main(["run", str(payments), "refunds", "create", "--policy"]) == 0
    assert json.loads(capsys.readouterr().out)["required_flags"] == ["--confirm", "--idempotency-key"]


# --- the observed transcript (original-core §7) ---------------------------------------------------


def test_a_refund_without_confirm_exits_3_and_sends_nothing(payments: Path, mock: tuple[str, Any]) -> None:
    url, state = mock
    ran = anvil_run(payments, *REFUND, "--base-url", url, env=_dev(payments))
    assert ran.code == 3
    error = ran.envelope()
    assert error["code"] == "confirmation_required"
    assert error["required_flags"] == ["--confirm", "--idempotency-key"]
    assert state.requests == []


def test_a_confirmed_refund_without_a_key_exits_3_idempotency_required(payments: Path, mock: tuple[str, Any]) -> None:
    url, state = mock
    ran = anvil_run(payments, *REFUND, "--confirm", "--base-url", url, env=_dev(payments))
    assert ran.code == 3
    assert ran.envelope()["code"] == "idempotency_required"
    assert ran.envelope()["required_flags"] == ["--idempotency-key"]
    assert state.requests == []


def test_missing_inputs_exit_2_and_are_named_as_flags(payments: Path) -> None:
    ran = anvil_run(payments, "refunds", "create", "--payment-id", "pay_1")
    assert ran.code == 2
    error = ran.envelope()
    assert error["code"] == "validation_error"
    assert error["details"]["missing"] == ["amount", "currency"]
    assert error["details"]["missing_flags"] == ["--amount", "--currency"]
    assert "--amount, --currency" in error["message"]


def test_an_argument_the_gateway_refuses_is_refused_in_direct_mode_before_the_wire(
    payments: Path, mock: tuple[str, Any]
) -> None:
    url, state = mock
    below_minimum = ("refunds", "create", "--payment-id", "pay_123", "--amount", "0", "--currency", "EUR")
    ran = anvil_run(
        payments, *below_minimum, "--confirm", "--idempotency-key", "k-min", "--base-url", url, env=_dev(payments)
    )
    assert (ran.code, ran.envelope()["code"]) == (2, "validation_error")
    assert state.requests == []


def test_an_argument_the_gateway_refuses_is_refused_before_an_mcp_target_is_reached(payments: Path) -> None:
    below_minimum = ("refunds", "create", "--payment-id", "pay_123", "--amount", "0", "--currency", "EUR")
    unreachable = "http://127.0.0.1:9/mcp"
    ran = anvil_run(payments, *below_minimum, "--confirm", "--idempotency-key", "k-min", "--mcp", unreachable)
    assert (ran.code, ran.envelope()["code"]) == (2, "validation_error")


def test_a_dry_run_prints_the_plan_and_touches_nothing(payments: Path, mock: tuple[str, Any]) -> None:
    state = mock[1]
    ran = anvil_run(payments, *REFUND[:3], "pay_1", *REFUND[4:], "--confirm", "--idempotency-key", "ref-001",
                    "--dry-run")  # fmt: skip
    assert ran.code == 0, ran.err
    plan = ran.json()
    assert plan["method"] == "POST"
    assert plan["url"] == "https://payments.internal.example.com/payments/pay_1/refunds"
    assert plan["headers"]["Idempotency-Key"] == "ref-001"
    assert plan["body"] == {"amount": 100, "currency": "EUR"}
    assert plan["retryPlan"] == {"enabled": True, "maxAttempts": 3}
    assert state.requests == []


def test_a_dry_run_without_confirm_is_still_refused(payments: Path) -> None:
    ran = anvil_run(payments, *REFUND, "--idempotency-key", "ref-001", "--dry-run")
    assert ran.code == 3
    assert ran.envelope()["required_flags"] == ["--confirm"]


def test_a_real_call_without_credentials_exits_4_naming_the_variables(payments: Path, mock: tuple[str, Any]) -> None:
    url, state = mock
    ran = anvil_run(payments, "customers", "get", "--customer-id", "cus_123", "--base-url", url)
    assert ran.code == 4
    error = ran.envelope()
    assert error["code"] == "auth_required"
    client_id, secret, endpoint, _, _ = _client_variables(payments)
    assert error["details"]["expected_env"] == [client_id, secret, f"one of: ANVIL_CREDENTIAL_HOSTS OR {endpoint}"]
    assert state.requests == []


def test_in_dev_with_the_originals_client_credentials_a_get_and_a_refund_succeed_with_exchanged_tokens(
    payments: Path, mock: tuple[str, Any]
) -> None:
    url, state = mock
    client_id, secret, endpoint, _, _ = _client_variables(payments)
    env = {"ANVIL_ENV": "dev", client_id: "cli-client", secret: "cli-secret-3e9a", endpoint: f"{url}/oauth/token"}
    state.oauth.clients["cli-client"] = "cli-secret-3e9a"  # the mock now refuses any token it did not issue
    try:
        got = anvil_run(payments, "customers", "get", "--customer-id", "cus_123", "--base-url", url, env=env)
        refund = anvil_run(payments, *REFUND, "--confirm", "--idempotency-key", "k-1", "--base-url", url, env=env)
    finally:
        state.oauth.clients.clear()
    assert (got.code, refund.code) == (0, 0), (got.err, refund.err)
    assert got.json()["id"] == "cus_123" and refund.json()["status"] == "succeeded"
    assert [r["idempotency_key"] for r in state.requests] == [None, "k-1"]
    assert [r["authorization"].removeprefix("Bearer ") for r in state.requests] == list(state.oauth.issued)
    for ran in (got, refund):
        for secret_value in ("cli-secret-3e9a", *state.oauth.issued):
            assert secret_value not in ran.out + ran.err


def test_a_base_url_outside_the_allowlist_exits_5_policy_denied(payments: Path, mock: tuple[str, Any]) -> None:
    url, state = mock
    env = {"ANVIL_ALLOWED_HOSTS": "payments.internal.example.com", _token_variable(payments): "tok-1"}
    ran = anvil_run(payments, "customers", "get", "--customer-id", "cus_123", "--base-url", url, env=env)
    assert ran.code == 5
    assert ran.envelope()["code"] == "policy_denied"
    assert state.requests == []


def test_an_allowlist_entry_that_is_no_host_exits_5_policy_denied_naming_it(
    payments: Path, mock: tuple[str, Any]
) -> None:
    url, state = mock
    env = {"ANVIL_ALLOWED_HOSTS": "127.0.0.1,*.example.com", _token_variable(payments): "tok-1"}
    ran = anvil_run(payments, "customers", "get", "--customer-id", "cus_123", "--base-url", url, env=env)
    assert ran.code == 5 and ran.envelope()["code"] == "policy_denied"
    assert "ANVIL_ALLOWED_HOSTS entry '*.example.com' is refused" in ran.envelope()["message"]
    assert state.requests == []


def test_in_dev_a_read_and_a_keyed_refund_succeed_and_the_key_reaches_the_upstream(
    payments: Path, mock: tuple[str, Any]
) -> None:
    url, state = mock
    read = anvil_run(payments, "customers", "get", "--customer-id", "cus_123", "--base-url", url, "--json",
                     env=_dev(payments))  # fmt: skip
    assert read.code == 0, read.err
    assert read.json()["id"] == "cus_123"
    refund = anvil_run(payments, *REFUND, "--confirm", "--idempotency-key", "k-1", "--base-url", url, "--trace",
                       env=_dev(payments))  # fmt: skip
    assert refund.code == 0, refund.err
    assert refund.json()["amount"] == 100
    lines = refund.err.splitlines()
    assert lines[0].startswith("effect: ")  # direct mode says what the write did, as MCP does
    effect = json.loads(lines[0][len("effect: ") :])
    assert (effect["class"], effect["operation"], effect["idempotency_key"]) == (
        "irreversible",
        "payments.refunds.create",
        "k-1",
    )
    assert lines[1].startswith("trace_id=trace_")
    assert [(r["method"], r["idempotency_key"], r["authorization"]) for r in state.requests] == [
        ("GET", None, "Bearer tok-1"),
        ("POST", "k-1", "Bearer tok-1"),
    ]


def test_the_base_url_pins_the_allowlist_outside_dev(payments: Path, mock: tuple[str, Any]) -> None:
    url, _ = mock
    ran = anvil_run(payments, "customers", "get", "--customer-id", "cus_123", "--base-url", url,
                    env={_token_variable(payments): "tok-1"})  # fmt: skip
    assert ran.code == 0, ran.err


def test_an_upstream_404_exits_6_not_found(payments: Path, mock: tuple[str, Any]) -> None:
    url, _ = mock
    ran = anvil_run(payments, "customers", "get", "--customer-id", "cus_nope", "--base-url", url, env=_dev(payments))
    assert ran.code == 6
    assert ran.envelope()["code"] == "not_found"


def test_a_required_key_write_outside_dev_needs_a_durable_ledger(payments: Path, mock: tuple[str, Any]) -> None:
    url, state = mock
    env = {_token_variable(payments): "tok-1"}
    ran = anvil_run(payments, *REFUND, "--confirm", "--idempotency-key", "k-2", "--base-url", url, env=env)
    assert ran.code == 5
    assert ran.envelope()["code"] == "idempotency_ledger_unavailable"
    assert state.requests == []


def test_a_sqlite_ledger_replays_a_repeated_keyed_refund_without_a_second_request(
    payments: Path, mock: tuple[str, Any], tmp_path: Path
) -> None:
    url, state = mock
    env = {_token_variable(payments): "tok-1", "ANVIL_LEDGER": f"sqlite:///{tmp_path / 'ledger.db'}"}
    args = (*REFUND, "--confirm", "--idempotency-key", "k-3", "--base-url", url, "--json")
    first, second = anvil_run(payments, *args, env=env), anvil_run(payments, *args, env=env)
    assert first.code == second.code == 0, first.err + second.err
    assert first.json() == second.json()
    assert len(state.requests) == 1
    assert "replayed" not in first.err and "anvil: replayed" in second.err  # the caller can tell


# --- flags and values ----------------------------------------------------------------------------


def test_an_unknown_flag_exits_2_with_a_did_you_mean(payments: Path, mock: tuple[str, Any]) -> None:
    url, state = mock
    ran = anvil_run(payments, *REFUND, "--ammount", "5", "--base-url", url, env=_dev(payments))
    assert ran.code == 2
    error = ran.envelope()
    assert error["code"] == "validation_error"
    assert error["details"]["unknown_flags"] == ["--ammount"]
    assert "did you mean --amount?" in error["message"]
    assert state.requests == []


def test_a_valued_flag_without_a_value_exits_2(payments: Path) -> None:
    ran = anvil_run(payments, "customers", "get", "--customer-id")
    assert ran.code == 2
    assert ran.envelope()["details"]["field"] == "--customer-id"


def test_values_are_coerced_by_schema_type(notes: Path, echo: tuple[str, list[Seen]]) -> None:
    url, seen = echo
    seen.clear()
    ran = anvil_run(notes, "notes", "get", "--note-id", "n1", "--limit", "5", "--ratio", "0.5", "--verbose",
                    "--labels", "1,2", "--labels", "3", "--input-timeout", "slow", "--base-url", url)  # fmt: skip
    assert ran.code == 0, ran.err
    assert seen[-1].path == "/notes/n1"
    assert "limit=5" in seen[-1].query and "ratio=0.5" in seen[-1].query and "verbose=true" in seen[-1].query
    assert "timeout=slow" in seen[-1].query
    bad = anvil_run(notes, "notes", "get", "--note-id", "n1", "--limit", "five", "--base-url", url)
    assert bad.code == 2
    assert bad.envelope()["details"] == {"field": "--limit", "type": "integer"}


def test_the_cli_renames_exactly_the_flags_its_grammar_reads_as_its_own() -> None:
    from anvil.air.inputs import CLI_CONTROL_FLAGS
    from anvil.cli.run_args import CONTROL_FLAGS, VIEW_FLAGS

    assert CONTROL_FLAGS - set(VIEW_FLAGS) == CLI_CONTROL_FLAGS


def test_a_flag_is_typed_by_the_schema_its_ref_names_and_by_each_type_it_admits(
    notes: Path, echo: tuple[str, list[Seen]]
) -> None:
    url, seen = echo
    seen.clear()
    body = '{"text": "t", "replies": [{"text": "r"}]}'
    thread = ("threads", "create", "--note-id", "n1", "--confirm", "--base-url", url)
    ran = anvil_run(notes, *thread, "--body", body, "--project", "my-app", "--priority", "2")
    assert ran.code == 0, ran.err  # the $ref body is JSON, the slug a string, the enumerated number a number
    assert json.loads(seen[-1].body) == {"text": "t", "replies": [{"text": "r"}]}
    assert "project=my-app" in seen[-1].query and "priority=2" in seen[-1].query
    numbered = anvil_run(notes, *thread, "--body", body, "--project", "42")
    assert numbered.code == 0, numbered.err
    assert "project=42" in seen[-1].query
    refused = anvil_run(notes, *thread, "--body", "[1]")
    assert refused.code == 2 and refused.envelope()["details"] == {"field": "--body", "type": "object"}
    assert len(seen) == 2


def test_a_control_flag_name_is_taken_by_the_control_and_the_input_moves_to_input_prefix(notes: Path) -> None:
    ran = anvil_run(notes, "notes", "get", "--help")
    assert "--input-timeout  [query]" in ran.out
    assert "--schema  [query]" in ran.out


def test_a_whole_body_is_one_json_flag_and_malformed_json_exits_2(notes: Path, echo: tuple[str, list[Seen]]) -> None:
    url, seen = echo
    seen.clear()
    body = '{"title": "t", "tags": ["a"], "meta": {"pinned": true}}'
    ran = anvil_run(notes, "notes", "create", "--body", body, "--confirm", "--base-url", url, "--json")
    assert ran.code == 0, ran.err
    assert json.loads(seen[-1].body) == {"title": "t", "tags": ["a"], "meta": {"pinned": True}}
    broken = anvil_run(notes, "notes", "create", "--body", "{", "--confirm", "--base-url", url)
    assert broken.code == 2 and "Traceback" not in broken.err
    assert broken.envelope()["details"]["field"] == "--body"
    assert len(seen) == 1


def test_an_input_file_is_the_base_object_the_flags_override(
    payments: Path, mock: tuple[str, Any], tmp_path: Path
) -> None:
    url, state = mock
    given = tmp_path / "refund.json"
    given.write_text(json.dumps({"payment_id": "pay_123", "amount": 1, "currency": "EUR"}))
    ran = anvil_run(payments, "refunds", "create", "--input", str(given), "--amount", "7", "--confirm",
                    "--idempotency-key", "k-4", "--base-url", url, env=_dev(payments))  # fmt: skip
    assert ran.code == 0, ran.err
    assert state.requests[-1]["body"] == {"amount": 7, "currency": "EUR"}
    missing = anvil_run(payments, "refunds", "create", "--input", str(tmp_path / "none.json"))
    assert missing.code == 2 and missing.envelope()["details"]["field"] == "--input"


def test_a_timeout_outside_the_bounds_exits_2_before_the_wire(payments: Path, mock: tuple[str, Any]) -> None:
    url, state = mock
    ran = anvil_run(payments, "customers", "get", "--customer-id", "cus_123", "--timeout", "50", "--base-url", url,
                    env=_dev(payments))  # fmt: skip
    assert ran.code == 2
    assert ran.envelope()["details"]["field"] == "timeout_ms"
    assert state.requests == []


def test_stage_needs_the_gateway_and_is_refused_in_direct_mode(payments: Path) -> None:
    ran = anvil_run(payments, *REFUND, "--confirm", "--idempotency-key", "k", "--stage")
    assert ran.code == 2
    assert ran.envelope()["details"]["field"] == "--stage"


def test_a_malformed_mcp_target_exits_2(payments: Path) -> None:
    ran = anvil_run(payments, "customers", "get", "--customer-id", "c", "--mcp", "ftp://host")
    assert ran.code == 2
    assert ran.envelope()["details"]["field"] == "--mcp"


def test_the_mcp_token_variable_must_be_set_before_connecting(payments: Path) -> None:
    ran = anvil_run(payments, "customers", "get", "--customer-id", "c", "--mcp", "http://127.0.0.1:9/mcp",
                    "--mcp-token-env", "GATEWAY_TOKEN")  # fmt: skip
    assert ran.code == 4
    assert ran.envelope()["code"] == "auth_required"
    assert ran.envelope()["details"]["expected_env"] == ["GATEWAY_TOKEN"]


def test_an_unreachable_gateway_exits_7_without_naming_the_target(payments: Path) -> None:
    secret_url = "http://user:s3cret@127.0.0.1:9/mcp"
    ran = anvil_run(payments, "customers", "get", "--customer-id", "c", env={"ANVIL_MCP_TARGET": secret_url})
    assert ran.code == 7
    assert ran.envelope()["code"] == "upstream_unavailable"
    assert "s3cret" not in ran.err


def test_mcp_direct_overrides_the_environment_target(payments: Path) -> None:
    ran = anvil_run(payments, "customers", "get", "--customer-id", "c", "--mcp", "direct",
                    env={"ANVIL_MCP_TARGET": "http://127.0.0.1:9/mcp"})  # fmt: skip
    assert ran.code == 5  # direct: the bundle's own host is not allowlisted in prod; never a connection failure
    assert ran.envelope()["code"] == "policy_denied"


def test_an_air_file_works_in_place_of_the_bundle_directory(payments: Path, tmp_path: Path) -> None:
    import yaml

    as_yaml = tmp_path / "air.yaml"
    as_yaml.write_text(yaml.safe_dump(json.loads((payments / "air.json").read_text())))
    for path in (payments / "air.json", as_yaml):
        ran = anvil_run(path, "refunds", "create", "--policy")
        assert ran.code == 0, ran.err
        assert ran.json()["required_flags"] == ["--confirm", "--idempotency-key"]
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert anvil_run(broken, "refunds", "create").code == 1


def test_validate_input_checks_the_runtime_contract_and_calls_nothing(payments: Path, mock: tuple[str, Any]) -> None:
    _url, state = mock
    ok = anvil_run(payments, *REFUND, "--confirm", "--idempotency-key", "k-9", "--validate-input", env=_dev(payments))
    assert ok.code == 0, ok.err
    assert ok.json() == {"valid": True, "operation": "payments.refunds.create", "idempotency_key_derived": False}
    unconfirmed = anvil_run(payments, *REFUND, "--idempotency-key", "k-9", "--validate-input", env=_dev(payments))
    assert (unconfirmed.code, unconfirmed.envelope()["code"]) == (3, "confirmation_required")
    keyless = anvil_run(payments, *REFUND, "--confirm", "--validate-input", env=_dev(payments))
    assert (keyless.code, keyless.envelope()["code"]) == (3, "idempotency_required")
    bad_key = anvil_run(payments, *REFUND, "--confirm", "--idempotency-key", "has space", "--validate-input")
    assert (bad_key.code, bad_key.envelope()["code"]) == (2, "validation_error")
    wrong_type = anvil_run(
        payments, "refunds", "create", "--payment-id", "pay_123", "--amount", "lots", "--currency", "EUR",
        "--confirm", "--idempotency-key", "k-9", "--validate-input",
    )  # fmt: skip
    assert (wrong_type.code, wrong_type.envelope()["code"]) == (2, "validation_error")
    missing = anvil_run(payments, "refunds", "create", "--payment-id", "pay_123", "--confirm", "--validate-input")
    assert missing.envelope()["code"] == "validation_error"
    assert state.requests == []
