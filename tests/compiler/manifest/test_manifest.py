"""Reading anvil.yaml: every field of original-core §2 parsed, and strict diagnostics with positions."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from anvil.compiler.manifest.parse import Manifest, load_manifest, normalize_retry_condition, parse_manifest
from anvil.diagnostics import Diagnostic

FIXTURES = Path(__file__).parent.parent / "fixtures" / "manifests"
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _parse(text: str) -> tuple[Manifest | None, list[Diagnostic]]:
    return parse_manifest(textwrap.dedent(text).lstrip("\n"), "anvil.yaml")


def _where(item: Diagnostic) -> tuple[str | None, str | None, int | None, int | None]:
    return (item.code, item.file, item.line, item.column)


def test_every_field_of_a_full_manifest_is_parsed() -> None:
    manifest, found = load_manifest(FIXTURES / "full.yaml")

    assert found == []
    assert manifest is not None
    assert manifest.service.name == "payments"
    assert manifest.service.environment == "prod"
    auth = manifest.auth
    assert auth is not None
    assert auth.type == "oauth2_client_credentials"
    assert auth.scopes == ("payments.read", "payments.write")
    assert auth.carrier is not None and auth.carrier.scheme == "Bearer"
    assert auth.provider is not None and auth.provider.grant == "client_credentials"
    entry = manifest.operation("createRefund")
    assert entry is not None
    assert (entry.side_effect, entry.risk, entry.reversible, entry.action) == ("mutation", "financial", False, "create")
    assert (entry.display_name, entry.description) == ("Refund a payment", "Creates a refund.")
    assert entry.name is not None and (entry.name.resource, entry.name.verb) == ("refunds", "issue")
    assert entry.auth is not None and entry.auth.principal == "service"
    assert entry.idempotency is not None and entry.idempotency.key == "Idempotency-Key"
    assert entry.confirmation is not None and entry.confirmation.human_approval is True
    assert entry.retries is not None
    assert entry.retries.only_on == ("timeout", "http_429", "http_503", "grpc_unavailable")
    assert entry.retries.max_attempts == 3
    assert entry.state == "approved"
    effect = entry.effect
    assert effect is not None and effect.class_ == "compensable"
    assert effect.compensate is not None and effect.compensate.deadline is not None
    assert effect.compensate.deadline.within_ms == 86400000
    assert effect.compensate.arguments == {"refund_id": "response.id", "reason": {"const": "requested_by_customer"}}
    assert effect.lookup is not None and effect.lookup.by == "idempotency_key"
    assert effect.draft is not None and effect.draft.promote.operation == "confirmRefund"
    assert effect.draft.discard is not None and effect.draft.discard.arguments == {}
    workflow = manifest.workflows[0]
    assert (workflow.key, workflow.capability, workflow.human_approval) == ("refund_customer", "refunds", True)
    assert [step.operation for step in workflow.steps] == ["getPayment", "createRefund"]
    assert workflow.steps[1].bindings == {"payment_id": "$.steps.getPayment.id"}
    assert [(r.capability_id, r.state) for r in manifest.capabilities] == [
        ("payments.refunds", "approved"),
        ("payments.customers", "rejected"),
    ]


def test_operation_keys_and_effect_blocks_keep_their_position() -> None:
    manifest, _ = load_manifest(FIXTURES / "full.yaml")

    assert manifest is not None
    entry = manifest.operation("createRefund")
    assert entry is not None
    assert entry.location.as_tuple() == ("full.yaml", 25, 3)
    assert entry.effect is not None and entry.effect.location is not None
    assert entry.effect.location.as_tuple() == ("full.yaml", 51, 5)
    assert entry.effect.positions["compensate.operation"].as_tuple() == ("full.yaml", 54, 20)


def test_an_unknown_key_names_its_position_and_the_closest_known_key() -> None:
    _, found = _parse(
        """
        operations:
          createRefund:
            confirmaton:
              required: true
        """
    )

    assert [_where(item) for item in found] == [("manifest/unknown_key", "anvil.yaml", 3, 5)]
    assert found[0].hint is not None and "confirmation" in found[0].hint


def test_an_unknown_key_inside_the_effect_block_is_rejected() -> None:
    manifest, found = _parse(
        """
        operations:
          createComment:
            effect:
              class: reversible
              undo: x
        """
    )

    assert [_where(item) for item in found] == [("manifest/unknown_key", "anvil.yaml", 5, 7)]
    assert manifest is not None


def test_unknown_keys_at_every_level_of_the_effect_block_are_rejected() -> None:
    _, found = _parse(
        """
        operations:
          a:
            effect:
              inverse: {operation: b, deadline: {within: 5}}
              draft:
                operation: a
                handle: response.id
                promote: {operation: c, args: {}}
        """
    )

    assert [_where(item) for item in found] == [
        ("manifest/unknown_key", "anvil.yaml", 4, 42),
        ("manifest/unknown_key", "anvil.yaml", 8, 33),
    ]


def test_wrong_types_and_values_outside_their_enum_or_range_are_reported_where_they_stand() -> None:
    manifest, found = _parse(
        """
        operations:
          createRefund:
            reversible: "no"
            state: aproved
            retries:
              max_attempts: 6
              only_on: [timeout, teapot]
            idempotency: {strategy: sometimes}
        """
    )

    assert [_where(item) for item in found] == [
        ("manifest/wrong_type", "anvil.yaml", 3, 17),
        ("manifest/wrong_type", "anvil.yaml", 4, 12),
        ("manifest/wrong_type", "anvil.yaml", 6, 21),
        ("manifest/wrong_type", "anvil.yaml", 7, 26),
        ("manifest/wrong_type", "anvil.yaml", 8, 29),
    ]
    assert found[1].hint is not None and "approved" in found[1].hint
    assert manifest is not None
    entry = manifest.operation("createRefund")
    assert entry is not None
    assert (entry.reversible, entry.state) == (None, None)
    assert entry.idempotency is not None and entry.idempotency.strategy is None
    assert entry.retries is not None and entry.retries.max_attempts is None and entry.retries.only_on is None


def test_an_argument_source_must_be_a_path_string_or_exactly_a_const() -> None:
    _, found = _parse(
        """
        operations:
          a:
            effect:
              inverse:
                operation: b
                arguments:
                  good: response.id
                  literal: {const: [1, 2]}
                  listed: [response.id]
                  extra: {const: 1, other: 2}
                  empty: ""
        """
    )

    assert [_where(item) for item in found] == [
        ("manifest/wrong_type", "anvil.yaml", 9, 19),
        ("manifest/wrong_type", "anvil.yaml", 10, 18),
        ("manifest/wrong_type", "anvil.yaml", 11, 18),
    ]


def test_a_follow_up_without_its_operation_is_a_wrong_type() -> None:
    manifest, found = _parse(
        """
        operations:
          a:
            effect:
              class: irreversible
              lookup: {by: id}
              draft: {operation: a, handle: response.id}
        """
    )

    assert [_where(item) for item in found] == [
        ("manifest/wrong_type", "anvil.yaml", 5, 15),
        ("manifest/wrong_type", "anvil.yaml", 6, 14),
    ]
    assert manifest is not None
    entry = manifest.operation("a")
    assert entry is not None and entry.effect is not None
    assert (entry.effect.class_, entry.effect.lookup, entry.effect.draft) == ("irreversible", None, None)


def test_within_ms_must_be_a_positive_integer() -> None:
    _, found = _parse(
        """
        operations:
          a:
            effect:
              inverse: {operation: b, deadline: {within_ms: 0}}
        """
    )

    assert [_where(item) for item in found] == [("manifest/wrong_type", "anvil.yaml", 4, 53)]


def test_invalid_yaml_is_a_parse_error_with_its_line_and_column() -> None:
    manifest, found = _parse(
        """
        operations:
          a: {state: approved
          b: 1
        """
    )

    assert manifest is None
    assert [(item.code, item.file) for item in found] == [("manifest/parse_error", "anvil.yaml")]
    assert found[0].line == 3 and found[0].column is not None


def test_a_repeated_key_is_a_parse_error() -> None:
    _, found = _parse(
        """
        operations:
          createRefund: {state: approved}
          createRefund: {state: blocked}
        """
    )

    assert [_where(item) for item in found] == [("manifest/parse_error", "anvil.yaml", 3, 3)]


def test_a_missing_manifest_is_not_found_with_a_file_line_and_column(tmp_path: Path) -> None:
    manifest, found = load_manifest(Path("no/such/anvil.yaml"))

    assert manifest is None
    assert [_where(item) for item in found] == [("manifest/not_found", "no/such/anvil.yaml", 1, 1)]


def test_a_directory_is_not_a_readable_manifest(tmp_path: Path) -> None:
    manifest, found = load_manifest(tmp_path)

    assert manifest is None
    assert [item.code for item in found] == ["manifest/not_found"]
    assert found[0].file == tmp_path.name


def test_a_manifest_that_is_not_utf8_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "anvil.yaml"
    path.write_bytes(b"service:\n  name: caf\xe9\n")

    manifest, found = load_manifest(path)

    assert manifest is None
    assert [_where(item) for item in found] == [("manifest/parse_error", "anvil.yaml", 2, 12)]


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("auth:\n  type: api_key\n  token: s3cr3t-value\n", 3, 10),
        ("auth:\n  provider:\n    api_key: abcdef0123456789\n", 3, 14),
        ("operations:\n  a:\n    password: hunter2\n", 3, 15),
        ("operations:\n  a:\n    description: 'Bearer abcdefghijklmnopqrstuvwxyz'\n", 3, 18),
        ("operations:\n  a:\n    effect:\n      inverse:\n        operation: b\n"
         "        arguments: {api_key: {const: xyz123}}\n", 6, 30),
        ("operations:\n  a:\n    effect:\n      inverse:\n        operation: b\n"
         "        arguments: {t: {const: ghp_abcdefghijklmnopqrstuvwxyz0123456789}}\n", 6, 32),
    ],
)  # fmt: skip
def test_a_secret_value_is_refused_without_repeating_it(text: str, line: int, column: int) -> None:
    _, found = parse_manifest(text, "anvil.yaml")

    assert [_where(item) for item in found] == [("manifest/secret_value", "anvil.yaml", line, column)]
    shown = str(found[0].to_json())
    for secret in ("s3cr3t-value", "abcdef0123456789", "hunter2", "abcdefghijklmnopqrstuvwxyz", "xyz123"):
        assert secret not in shown


def test_a_carrier_description_under_provider_api_key_is_not_a_secret() -> None:
    manifest, found = _parse(
        """
        auth:
          type: api_key
          provider:
            api_key: {in: header, name: X-API-Key}
        """
    )

    assert found == []
    assert manifest is not None and manifest.auth is not None and manifest.auth.provider is not None
    assert manifest.auth.provider.api_key is not None and manifest.auth.provider.api_key.name == "X-API-Key"


def test_query_templates_are_rejected_rather_than_silently_ignored() -> None:
    manifest, found = _parse(
        """
        query_templates:
          recent: {operation: search}
        operations:
          a:
            query_policy: {query_param: q}
        """
    )

    assert [_where(item) for item in found] == [
        ("manifest/unknown_key", "anvil.yaml", 1, 1),
        ("manifest/unknown_key", "anvil.yaml", 5, 5),
    ]
    assert all(item.hint for item in found)
    assert manifest is not None


def test_operation_level_scopes_are_refused_with_a_hint() -> None:
    _, found = _parse(
        """
        operations:
          a:
            auth: {scopes: [x]}
        """
    )

    assert [_where(item) for item in found] == [("manifest/unknown_key", "anvil.yaml", 3, 12)]


def test_an_auth_scheme_choice_is_parsed_with_where_it_stands() -> None:
    manifest, found = _parse(
        """
        auth:
          scheme: basicAuth
        operations:
          me:
            auth: {scheme: OAuth2, type: bearer, override: true, reason: tokens minted out of band}
        """
    )

    assert found == []
    assert manifest is not None and manifest.auth is not None
    assert (manifest.auth.scheme, manifest.auth.override) == ("basicAuth", None)
    assert manifest.auth.location is not None and (manifest.auth.location.line, manifest.auth.location.column) == (2, 3)
    chosen = manifest.operations[0].auth
    assert chosen is not None
    # bearer is the manifest's spelling of a static bearer token (AIR jwt_bearer)
    assert (chosen.scheme, chosen.type, chosen.override) == ("OAuth2", "jwt_bearer", True)
    assert chosen.reason == "tokens minted out of band"


@pytest.mark.parametrize(
    ("block", "column"),
    [
        ("{scheme: OAuth2, override: true}", 24),  # no reason
        ("{scheme: OAuth2, override: true, reason: '  '}", 24),  # a blank reason
        ("{override: true, reason: why}", 8),  # nothing to override
        ("{scheme: OAuth2, reason: why}", 24),  # a reason for no override
    ],
)
def test_an_auth_override_needs_a_scheme_and_a_reason_and_a_reason_needs_an_override(block: str, column: int) -> None:
    manifest, found = _parse(f"auth: {block}\n")

    assert [_where(item) for item in found] == [("manifest/wrong_type", "anvil.yaml", 1, column)]
    assert manifest is not None and manifest.auth is not None
    assert (manifest.auth.override, manifest.auth.reason) == (None, None)  # left out: nothing applies unreviewed


def test_auth_under_service_is_refused_with_a_hint_to_the_top_level_block() -> None:
    _, found = _parse("service:\n  auth: {scheme: basicAuth}\n")

    assert [_where(item) for item in found] == [("manifest/unknown_key", "anvil.yaml", 2, 3)]
    assert "top-level auth" in (found[0].hint or "")


def test_an_empty_manifest_is_valid_and_states_nothing() -> None:
    manifest, found = parse_manifest("# nothing yet\n", "anvil.yaml")

    assert found == []
    assert manifest is not None and manifest.operations == () and manifest.auth is None


def test_a_manifest_whose_top_level_is_not_a_mapping_is_refused() -> None:
    manifest, found = parse_manifest("- a\n- b\n", "anvil.yaml")

    assert manifest is None
    assert [_where(item) for item in found] == [("manifest/wrong_type", "anvil.yaml", 1, 1)]


def test_an_invalid_service_name_is_a_wrong_type() -> None:
    _, found = _parse("service:\n  name: Payments API\n")

    assert [_where(item) for item in found] == [("manifest/wrong_type", "anvil.yaml", 2, 9)]


def test_a_value_yaml_reads_as_a_date_must_be_quoted() -> None:
    _, found = _parse("service:\n  environment: 2026-07-09\n")

    assert [_where(item) for item in found] == [("manifest/wrong_type", "anvil.yaml", 2, 16)]
    assert found[0].hint is not None


@pytest.mark.parametrize(
    ("text", "column"),
    [
        ("  payments.refunds: {state: rejected, allow_large: true}\n", 39),
        ("  payments.refunds: {state: approved, allow_large: true}\n", 39),
    ],
)
def test_allow_large_needs_an_approval_with_a_note(text: str, column: int) -> None:
    manifest, found = parse_manifest("capabilities:\n" + text, "anvil.yaml")

    assert [_where(item) for item in found] == [("manifest/wrong_type", "anvil.yaml", 2, column)]
    assert manifest is not None and manifest.capabilities == ()


def test_a_workflow_step_needs_an_operation() -> None:
    manifest, found = _parse(
        """
        workflows:
          refund:
            steps:
              - description: no operation here
        """
    )

    assert [_where(item) for item in found] == [("manifest/wrong_type", "anvil.yaml", 4, 9)]
    assert manifest is not None and manifest.workflows[0].steps == ()


def test_merge_keys_and_anchors_are_read() -> None:
    manifest, found = _parse(
        """
        operations:
          getCustomer: &approved {state: approved}
          getPayment:
            <<: *approved
            risk: none
        """
    )

    assert found == []
    assert manifest is not None
    entry = manifest.operation("getPayment")
    assert entry is not None and (entry.state, entry.risk) == ("approved", "none")


def test_a_recursive_alias_is_refused_instead_of_looping() -> None:
    text = "operations:\n  a:\n    effect:\n      inverse:\n        operation: b\n        arguments:\n"
    manifest, found = parse_manifest(text + "          x: &c {const: [*c]}\n", "anvil.yaml")

    assert "manifest/parse_error" in {item.code for item in found}
    assert manifest is not None


@pytest.mark.parametrize(
    ("entry", "condition"),
    [
        ("timeout", "timeout"),
        ("429", "http_429"),
        ("HTTP_503", "http_503"),
        ("unavailable", "grpc_unavailable"),
        ("deadline_exceeded", "grpc_deadline_exceeded"),
        ("soap_transport_fault", "soap_transport_fault"),
        ("418", None),
        ("teapot", None),
    ],
)
def test_retry_conditions_are_normalized(entry: str, condition: str | None) -> None:
    assert normalize_retry_condition(entry) == condition


@pytest.mark.parametrize("name", ["payments", "github-mini"])
def test_the_example_manifests_are_clean(name: str) -> None:
    path = EXAMPLES / name / "anvil.yaml"
    if not path.is_file():
        pytest.skip(f"{path} not written yet")

    manifest, found = load_manifest(path)

    assert manifest is not None
    assert found == []


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abc:-{}[]&*!|>'\" \n\t#,?0129")), max_size=80))
def test_arbitrary_text_never_raises(text: str) -> None:
    manifest, found = parse_manifest(text, "anvil.yaml")

    assert manifest is not None or found
    assert all(item.file == "anvil.yaml" and item.line is not None and item.column is not None for item in found)


def test_a_key_location_without_its_key_name_is_a_wrong_type() -> None:
    manifest, found = _parse(
        """
        operations:
          createRefund:
            idempotency: {strategy: required_request_key, key_location: query, header: Idempotency-Key}
        """
    )

    assert [_where(item) for item in found] == [("manifest/wrong_type", "anvil.yaml", 3, 51)]
    assert manifest is not None


def test_the_disclosure_budgets_are_read_and_bounded() -> None:
    manifest, found = _parse(
        """
        disclosure:
          tool_budget_tokens: 2000
          output_schema_percent: 35
        """
    )
    assert found == []
    assert manifest is not None and manifest.disclosure is not None
    assert (manifest.disclosure.tool_budget_tokens, manifest.disclosure.output_schema_percent) == (2000, 35)
    manifest, found = _parse(
        """
        disclosure:
          tool_budget_tokens: 0
          output_schema_percent: lots
          ladder: true
        """
    )
    assert [_where(item) for item in found] == [
        ("manifest/wrong_type", "anvil.yaml", 2, 23),
        ("manifest/wrong_type", "anvil.yaml", 3, 26),
        ("manifest/unknown_key", "anvil.yaml", 4, 3),
    ]
    assert manifest is not None and manifest.disclosure is not None
    assert manifest.disclosure.tool_budget_tokens is None and manifest.disclosure.output_schema_percent is None
