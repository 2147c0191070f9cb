"""Applying the manifest through policy overlays (original-core §2.3-§2.6, §2.10, §9.2; ADR-0030 effect block)."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from anvil.air.model import (
    Auth,
    AuthProvider,
    Claim,
    Cli,
    Deadline,
    Evidence,
    Mcp,
    Operation,
    SourceRef,
)
from anvil.air.naming import derive_names
from anvil.compiler import build
from anvil.compiler.classify import classify_operation, confirmation_for, retry_policy_for
from anvil.compiler.manifest.model import Manifest
from anvil.compiler.manifest.parse import parse_manifest
from anvil.compiler.overlay import (
    Assertion,
    ManifestApplication,
    PolicyOverlay,
    Target,
    apply_manifest,
    apply_service_defaults,
    make_overlay,
    overlay_digest,
)
from anvil.compiler.validate import critique_names

CLIENT_CREDENTIALS = Auth(
    type="oauth2_client_credentials",
    scopes=("payments.write",),
    credential_profile="oauth2_d8ad572d2fb1b3f6c47061c8a5b64a62",
    principal="service",
    secret_source="env",
    provider=AuthProvider(token_endpoint="https://auth.example.com/token", grant="client_credentials"),
)


def _op(
    service: str,
    method: str,
    path: str,
    operation_id: str | None,
    summary: str | None = None,
    *,
    auth: Auth | None = None,
    state: str = "generated",
) -> Operation:
    """An operation shaped the way normalize produces it (names, classifier defaults, name claim)."""
    names = derive_names(service, path, method, operation_id, summary)
    found = classify_operation(method=method, path=path, operation_id=operation_id, summary=summary)
    effect = replace(found.effect, resource=names.effect_resource)
    return Operation(
        id=names.id,
        canonical_name=names.canonical_name,
        display_name=names.display_name,
        source_ref=SourceRef(path=path, method=method, operation_id=operation_id),
        effect=effect,
        idempotency=found.idempotency,
        retries=retry_policy_for(effect, found.idempotency),
        confirmation=confirmation_for(effect, found.idempotency),
        auth=auth or Auth(type="none", principal="anonymous", secret_source="none"),
        cli=Cli(command=names.command),
        mcp=Mcp(tool_name=names.tool_name),
        state=state,  # type: ignore[arg-type]
        evidence=Evidence(
            claims=(
                Claim(
                    subject=names.id,
                    predicate="name.quality",
                    value=names.canonical_name,
                    source="inferred",
                    confidence=names.confidence,
                ),
            )
        ),
    )


def _payments() -> tuple[Operation, ...]:
    read, write = replace(CLIENT_CREDENTIALS, scopes=("payments.read",)), CLIENT_CREDENTIALS
    return (
        _op("payments", "get", "/customers/{customer_id}", "getCustomer", "Get a customer", auth=read),
        _op("payments", "get", "/payments/{payment_id}", "getPayment", "Get a payment", auth=read),
        _op("payments", "post", "/payments/{payment_id}/refunds", "createRefund", "Create a refund", auth=write),
        _op("payments", "post", "/payments/{payment_id}/capture", "capturePayment", "Capture a payment", auth=write),
    )  # fmt: skip


def _manifest(text: str) -> Manifest:
    manifest, found = parse_manifest(textwrap.dedent(text).lstrip("\n"), "anvil.yaml")
    assert found == []
    assert manifest is not None
    return manifest


def _apply(text: str, operations: tuple[Operation, ...] | None = None, **kwargs: object) -> ManifestApplication:
    ops = operations if operations is not None else _payments()
    service = ops[0].id.split(".")[0]
    return apply_manifest(ops, _manifest(text), service_id=service, **kwargs)  # type: ignore[arg-type]


def _get(result: ManifestApplication, op_id: str) -> Operation:
    return next(op for op in result.operations if op.id == op_id)


def _codes(result: ManifestApplication) -> list[str]:
    return [item.code for item in result.diagnostics]


PAYMENTS = """
service: {name: payments}
operations:
  createRefund:
    side_effect: mutation
    risk: financial
    reversible: false
    idempotency: {strategy: required_request_key, key_location: header, header: Idempotency-Key}
    confirmation:
      required: true
      risk: financial
      reason: This operation creates an irreversible financial mutation.
    retries: {enabled: true, only_on: [timeout, "429", "503"], max_attempts: 3}
    state: approved
  capturePayment:
    side_effect: mutation
    risk: financial
    idempotency: {strategy: natural}
    confirmation: {required: true, risk: financial}
    state: approved
  getCustomer: {state: approved}
  getPayment: {state: approved}
"""


# --- the payments manifest (§2.11, §9.2.1-3) ----------------------------------------------------------


def test_the_payments_refund_requires_a_client_key_retries_safely_and_confirms() -> None:
    result = _apply(PAYMENTS)

    refund = _get(result, "payments.refunds.create")
    assert result.diagnostics == ()
    assert (refund.effect.kind, refund.effect.action, refund.effect.risk, refund.effect.reversible) == (
        "mutation",
        "create",
        "financial",
        False,
    )
    assert (refund.idempotency.mode, refund.idempotency.mechanism, refund.idempotency.key) == (
        "required",
        "header",
        "Idempotency-Key",
    )
    assert refund.idempotency.key_derivation == "client_supplied"
    retries = refund.retries
    assert (retries.mode, retries.basis, retries.max_attempts, retries.backoff) == (
        "safe",
        "idempotency_key",
        3,
        "exponential_jitter",
    )
    assert (retries.base_delay_ms, retries.max_delay_ms) == (200, 20000)
    assert retries.retry_on == ("timeout", "http_429", "http_503")
    assert refund.confirmation.required is True and refund.confirmation.risk == "financial"
    assert refund.confirmation.reason == "This operation creates an irreversible financial mutation."
    assert refund.auth.type == "oauth2_client_credentials" and refund.auth.scopes == ("payments.write",)
    assert refund.state == "approved"
    enriched = [claim for claim in refund.evidence.claims if claim.predicate == "enriched"]
    assert [(c.source, c.method, c.confidence, c.review) for c in enriched] == [
        ("spec", "anvil-manifest", 0.95, "accepted")
    ]


def test_the_payments_capture_is_naturally_idempotent_and_confirms_with_the_classifier_reason() -> None:
    capture = _get(_apply(PAYMENTS), "payments.capture.create")

    assert capture.effect.reversible is False
    assert capture.idempotency.mode == "natural"
    assert (capture.retries.mode, capture.retries.basis, capture.retries.max_attempts) == (
        "safe",
        "natural_idempotent",
        3,
    )
    assert capture.retries.retry_on[-1] == "http_504"
    assert capture.confirmation.required is True
    assert capture.confirmation.reason == "This operation is an irreversible financial mutation."
    assert capture.state == "approved"


def test_the_payments_reads_are_approved_and_keep_their_read_posture() -> None:
    result = _apply(PAYMENTS)

    for op_id in ("payments.customers.get", "payments.payments.get"):
        op = _get(result, op_id)
        assert (op.state, op.idempotency.mode, op.retries.basis, op.confirmation.required) == (
            "approved",
            "natural",
            "read_safe",
            False,
        )
        assert op.auth.scopes == ("payments.read",)


# --- §2.4 idempotency strategies ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("idempotency", "mode", "mechanism", "key", "derivation"),
    [
        ("{strategy: natural}", "natural", "none", None, "none"),
        ("{strategy: client_id}", "client_id", "none", None, "none"),
        ("{strategy: none}", "none", "none", None, "none"),
        ("{strategy: key_supported, key_location: header, header: Idem}", "key_supported", "header", "Idem",
         "request_fingerprint"),
        ("{strategy: required_request_key, key_location: query, parameter: idem}", "required", "query", "idem",
         "client_supplied"),
        ("{strategy: required_request_key, key_location: path, parameter: key}", "required", "path", "key",
         "client_supplied"),
        ("{strategy: required_request_key, key_location: body, field: /meta/key}", "required", "body", "/meta/key",
         "client_supplied"),
        ("{strategy: key_supported, header: Idempotency-Key}", "key_supported", "header", "Idempotency-Key",
         "request_fingerprint"),
        ("{strategy: key_supported, parameter: idem}", "key_supported", "none", "idem", "request_fingerprint"),
        ("{key_location: header, header: Idem}", "none", "none", None, "none"),
    ],
)  # fmt: skip
def test_each_idempotency_strategy_maps_to_its_air_posture(
    idempotency: str, mode: str, mechanism: str, key: str | None, derivation: str
) -> None:
    refund = _get(_apply(f"operations:\n  createRefund:\n    idempotency: {idempotency}\n"), "payments.refunds.create")

    assert (refund.idempotency.mode, refund.idempotency.mechanism, refund.idempotency.key) == (mode, mechanism, key)
    assert refund.idempotency.key_derivation == derivation


def test_a_keyed_strategy_makes_retries_safe_on_the_idempotency_key() -> None:
    refund = _get(
        _apply("operations:\n  createRefund:\n    idempotency: {strategy: key_supported, header: Idempotency-Key}\n"),
        "payments.refunds.create",
    )

    assert (refund.retries.mode, refund.retries.basis) == ("safe", "idempotency_key")


# --- keys and their diagnostics -------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["createRefund", "payments.refunds.create", "create_refund"])
def test_an_entry_applies_by_operation_id_air_id_or_canonical_name(key: str) -> None:
    result = _apply(f"operations:\n  {key}:\n    display_name: Refund it\n")

    assert _get(result, "payments.refunds.create").display_name == "Refund it"
    assert result.diagnostics == ()


def test_a_key_that_names_no_operation_is_an_error_with_its_position_and_a_suggestion() -> None:
    result = _apply("operations:\n  createRefnd:\n    state: approved\n")

    assert [(d.code, d.severity, d.file, d.line, d.column) for d in result.diagnostics] == [
        ("manifest/unknown_operation", "error", "anvil.yaml", 2, 3)
    ]
    assert result.diagnostics[0].hint is not None and "createRefund" in result.diagnostics[0].hint
    assert all(op.state == "generated" for op in result.operations)


def test_a_key_that_names_several_operations_applies_to_none() -> None:
    ops = (
        _op("svc", "get", "/a", "get"),
        _op("svc", "get", "/b", "get"),
    )

    result = _apply("operations:\n  get:\n    state: approved\n", ops)

    assert [(d.code, d.line, d.column) for d in result.diagnostics] == [("manifest/ambiguous_operation", 2, 3)]
    assert [op.state for op in result.operations] == ["generated", "generated"]


# --- §2.3 fields, in order ------------------------------------------------------------------------------


def test_side_effect_mutation_on_a_post_search_reclassifies_it_conservatively() -> None:
    search = _op("jira", "post", "/search/jql", "searchIssues", "Search issues")
    assert search.effect.kind == "read"

    result = _apply("operations:\n  searchIssues:\n    side_effect: mutation\n", (search,))

    op = result.operations[0]
    assert (op.effect.kind, op.effect.action, op.effect.risk, op.effect.reversible) == (
        "mutation",
        "create",
        "medium",
        True,
    )
    assert op.idempotency.mode == "none"
    assert (op.retries.mode, op.retries.basis, op.retries.max_attempts) == ("none", "unproven", 1)
    assert (op.confirmation.required, op.confirmation.risk) == (True, "medium")
    assert op.effect.resource == search.effect.resource


def test_stating_action_risk_reversible_and_a_key_on_a_reclassified_search_proves_it() -> None:
    search = _op("jira", "post", "/search/jql", "searchIssues", "Search issues")

    result = _apply(
        """
        operations:
          searchIssues:
            side_effect: mutation
            action: reserve
            risk: financial
            reversible: false
            idempotency: {strategy: required_request_key, key_location: header, header: Idempotency-Key}
        """,
        (search,),
    )

    op = result.operations[0]
    assert (op.effect.action, op.effect.risk, op.effect.reversible) == ("reserve", "financial", False)
    assert (op.retries.mode, op.retries.basis) == ("safe", "idempotency_key")
    assert (op.confirmation.required, op.confirmation.risk) == (True, "financial")
    assert result.explicit_reversible == frozenset({"jira.jql.search"})


def test_side_effect_read_on_an_operation_without_a_method_uses_the_read_baseline() -> None:
    op = replace(_op("svc", "post", "/things", "makeThing"), source_ref=SourceRef(operation_id="makeThing"))

    result = _apply("operations:\n  makeThing:\n    side_effect: read\n", (op,))

    out = result.operations[0]
    assert (out.effect.kind, out.effect.action, out.effect.risk, out.effect.reversible) == (
        "read",
        "list",
        "none",
        True,
    )
    assert out.idempotency.mode == "natural"
    assert (out.retries.basis, out.confirmation.required) == ("read_safe", False)


def test_an_end_user_principal_on_a_client_credentials_read_blocks_it() -> None:
    result = _apply(
        "operations:\n  getPayment:\n    action: export\n    auth: {principal: end_user}\n    state: approved\n"
    )

    op = _get(result, "payments.payments.get")
    assert (op.effect.action, op.auth.principal, op.state) == ("export", "end_user", "blocked")
    assert any(note.startswith("Auth contract blocked: ") for note in op.review_notes)
    assert _codes(result) == ["auth/incoherent"]
    assert result.diagnostics[0].operation == "payments.payments.get"


def test_an_auth_type_change_resets_principal_and_secret_source_and_an_unexecutable_type_blocks() -> None:
    result = _apply(
        """
        operations:
          getCustomer:
            auth: {type: api_key, provider: {api_key: {in: header, name: X-Key}}}
          getPayment:
            auth: {type: mtls}
        """
    )

    keyed = _get(result, "payments.customers.get")
    assert (keyed.auth.type, keyed.auth.principal, keyed.auth.secret_source) == ("api_key", "service", "env")
    assert keyed.auth.provider is not None and keyed.auth.provider.api_key is not None
    assert keyed.auth.provider.grant is None and keyed.state == "generated"
    blocked = _get(result, "payments.payments.get")
    assert blocked.state == "blocked"
    assert _codes(result) == ["auth/incoherent"]


def test_retries_can_be_turned_off_and_only_on_replaces_the_conditions() -> None:
    result = _apply(
        """
        operations:
          getCustomer: {retries: {enabled: false}}
          getPayment: {retries: {only_on: [timeout, unavailable], max_attempts: 5}}
        """
    )

    off = _get(result, "payments.customers.get").retries
    assert (off.mode, off.max_attempts, off.backoff, off.retry_on, off.basis) == ("none", 1, "none", (), "read_safe")
    tuned = _get(result, "payments.payments.get").retries
    assert (tuned.retry_on, tuned.max_attempts) == (("timeout", "grpc_unavailable"), 5)


def test_retries_enabled_on_an_unproven_mutation_is_left_for_validation_to_refuse() -> None:
    refund = _get(_apply("operations:\n  createRefund: {retries: {enabled: true}}\n"), "payments.refunds.create")

    assert (refund.retries.mode, refund.retries.basis, refund.retries.backoff) == (
        "safe",
        "unproven",
        "exponential_jitter",
    )


def test_human_approval_forces_confirmation_with_a_default_reason() -> None:
    result = _apply("operations:\n  getPayment: {confirmation: {human_approval: true}}\n")

    confirmation = _get(result, "payments.payments.get").confirmation
    assert (confirmation.required, confirmation.human_approval) == (True, True)
    assert confirmation.reason == "This operation requires explicit human approval."


def test_explicit_confirmation_overrides_the_recomputed_one() -> None:
    result = _apply("operations:\n  createRefund: {confirmation: {required: false, human_approval: false}}\n")

    confirmation = _get(result, "payments.refunds.create").confirmation
    assert (confirmation.required, confirmation.human_approval) == (False, False)


def test_display_name_and_description_are_set() -> None:
    op = _get(
        _apply("operations:\n  getPayment: {display_name: Look up a payment, description: ''}\n"),
        "payments.payments.get",
    )

    assert (op.display_name, op.description) == ("Look up a payment", "")


def test_a_name_override_rehomes_canonical_cli_and_tool_but_not_the_id() -> None:
    op = _op("jira", "post", "/rest/api/3/issue/{issueIdOrKey}/transitions", "doTransition", "Transition issue")
    weak = next(c for c in op.evidence.claims if c.predicate == "name.quality")

    result = _apply("operations:\n  doTransition:\n    name: {resource: issues, verb: transition}\n", (op,))

    out = result.operations[0]
    assert out.id == op.id
    assert (out.canonical_name, out.cli.command, out.mcp.tool_name) == (
        "transition_issue",
        "jira issues transition",
        "jira_transition_issue",
    )
    assert out.effect.resource == "issue"
    quality = next(c for c in out.evidence.claims if c.predicate == "name.quality")
    assert (quality.confidence, quality.value) == (0.95, "transition_issue")
    assert weak.confidence < 0.5
    assert [d.code for d in critique_names((op,))] == ["weak_operation_name"]
    assert critique_names(result.operations) == []


def test_a_verb_alone_keeps_the_current_resource() -> None:
    result = _apply("operations:\n  getCustomer:\n    name: {verb: fetch}\n")

    op = _get(result, "payments.customers.get")
    assert (op.canonical_name, op.cli.command, op.mcp.tool_name) == (
        "fetch_customer",
        "payments customers fetch",
        "payments_fetch_customer",
    )


def test_only_the_manifest_state_approves_and_an_untouched_operation_is_unchanged() -> None:
    ops = _payments()

    result = _apply("operations:\n  getPayment: {state: approved}\n", ops)

    assert _get(result, "payments.payments.get").state == "approved"
    assert _get(result, "payments.customers.get") == ops[0]


# --- §2.10 overlays -----------------------------------------------------------------------------------------


def test_two_keys_for_one_operation_that_disagree_on_a_safety_predicate_block_it() -> None:
    result = _apply(
        """
        operations:
          createRefund: {state: approved, display_name: Refund}
          payments.refunds.create: {state: deprecated, display_name: Refund}
        """
    )

    refund = _get(result, "payments.refunds.create")
    assert refund.state == "blocked"
    assert refund.display_name == "Refund"
    conflict = next(d for d in result.diagnostics if d.code == "overlay/conflict")
    assert (conflict.severity, conflict.operation, conflict.file, conflict.line, conflict.column) == (
        "error",
        "payments.refunds.create",
        "anvil.yaml",
        2,
        3,
    )
    assert result.blocked_operation_ids == ("payments.refunds.create",)
    assert [c.predicate for c in result.conflicts] == ["state"]
    assert any("state" in note for note in refund.review_notes)


def test_two_keys_that_agree_are_not_a_conflict() -> None:
    result = _apply(
        """
        operations:
          createRefund: {state: approved}
          create_refund: {state: approved}
        """
    )

    assert result.diagnostics == ()
    assert _get(result, "payments.refunds.create").state == "approved"


def test_a_tie_on_a_non_safety_predicate_is_resolved_by_order_with_an_info() -> None:
    result = _apply(
        """
        operations:
          createRefund: {display_name: Refund B}
          payments.refunds.create: {display_name: Refund A}
        """
    )

    assert _codes(result) == ["overlay/resolved_by_order"]
    assert result.diagnostics[0].severity == "info"
    assert _get(result, "payments.refunds.create").display_name == "Refund A"


def _overlay(
    origin: str, predicate: str, value: object, *, operation: str = "set", ref: str = "getPayment"
) -> PolicyOverlay:
    item = Assertion(target=Target(ref=ref), predicate=predicate, operation=operation, value=value)  # type: ignore[arg-type]
    return make_overlay(origin, [item])  # type: ignore[arg-type]


def test_an_investigation_overlay_cannot_loosen_confirmation_but_the_manifest_can() -> None:
    loosen = _overlay("investigation", "confirmation.required", False, ref="createRefund")

    refused = _apply("service: {name: payments}\n", overlays=[loosen])
    allowed = _apply("operations:\n  createRefund: {confirmation: {required: false}}\n")

    assert _codes(refused) == ["overlay/loosen_refused"]
    assert _get(refused, "payments.refunds.create").confirmation.required is True
    assert allowed.diagnostics == ()
    assert _get(allowed, "payments.refunds.create").confirmation.required is False


def test_only_an_authoritative_origin_consents_to_send_the_credential_to_another_host() -> None:
    consent = _overlay("investigation", "credentialHosts", ["status.example.net"])

    refused = _apply("service: {name: payments}\n", overlays=[consent])
    allowed = _apply("operations:\n  getPayment: {credential_hosts: [Status.Example.NET]}\n")

    assert _codes(refused) == ["overlay/loosen_refused"]
    assert _get(refused, "payments.payments.get").credential_hosts is None
    assert allowed.diagnostics == ()
    assert _get(allowed, "payments.payments.get").credential_hosts == ("status.example.net",)


def test_an_investigation_overlay_cannot_approve_or_upgrade_idempotency_but_an_operator_can_approve() -> None:
    overlays = [
        _overlay("investigation", "state", "approved"),
        _overlay("investigation", "idempotency.mode", "natural", ref="createRefund"),
    ]

    refused = _apply("service: {name: payments}\n", overlays=overlays)
    approved = _apply("service: {name: payments}\n", overlays=[_overlay("operator", "state", "approved")])

    assert _codes(refused) == ["overlay/loosen_refused", "overlay/loosen_refused"]
    assert _get(refused, "payments.payments.get").state == "generated"
    assert _get(refused, "payments.refunds.create").idempotency.mode == "none"
    assert approved.diagnostics == ()
    assert _get(approved, "payments.payments.get").state == "approved"


def test_two_operator_sets_that_disagree_on_confirmation_block_the_operation() -> None:
    overlays = [
        _overlay("operator", "confirmation.required", True),
        _overlay("operator", "confirmation.required", False),
    ]

    result = _apply("service: {name: payments}\n", overlays=overlays)

    op = _get(result, "payments.payments.get")
    assert op.state == "blocked"
    assert _codes(result) == ["overlay/conflict"]
    assert result.conflicts[0].safety_sensitive is True
    assert {side.value for side in result.conflicts[0].sides} == {True, False}


def test_the_operator_outranks_the_manifest() -> None:
    result = _apply(
        "operations:\n  getPayment: {state: review_required}\n", overlays=[_overlay("operator", "state", "approved")]
    )

    assert result.diagnostics == ()
    assert _get(result, "payments.payments.get").state == "approved"


def test_a_restriction_tightens_confirmation_on_a_read_from_any_origin() -> None:
    result = _apply(
        "service: {name: payments}\n",
        overlays=[_overlay("investigation", "confirmation.required", True, operation="restrict")],
    )

    assert result.diagnostics == ()
    assert _get(result, "payments.payments.get").confirmation.required is True


def test_a_restriction_never_loosens() -> None:
    result = _apply(
        "operations:\n  createRefund: {confirmation: {required: true}}\n",
        overlays=[_overlay("gateway", "confirmation.required", False, operation="restrict", ref="createRefund")],
    )

    assert _get(result, "payments.refunds.create").confirmation.required is True


def test_contradictory_retry_modes_on_a_mutation_block_it() -> None:
    overlays = [
        _overlay("operator", "retries.mode", "safe", ref="capturePayment"),
        _overlay("operator", "retries.mode", "none", ref="capturePayment"),
    ]

    result = _apply("service: {name: payments}\n", overlays=overlays)

    assert _get(result, "payments.capture.create").state == "blocked"
    assert result.conflicts[0].allowed_resolutions == ("set", "block", "escalate")


def test_scopes_union_across_restrictions_and_a_non_authoritative_set_cannot_drop_one() -> None:
    overlays = [
        _overlay("investigation", "auth.scopes", ["payments.audit"], operation="restrict"),
        _overlay("observed_traffic", "auth.scopes", ["payments.admin"], operation="restrict"),
        _overlay("investigation", "auth.scopes", ["payments.other"]),
    ]

    result = _apply("service: {name: payments}\n", overlays=overlays)

    assert _get(result, "payments.payments.get").auth.scopes == (
        "payments.admin",
        "payments.audit",
        "payments.other",
        "payments.read",
    )
    assert _codes(result) == ["overlay/loosen_refused"]


def test_a_gateway_can_replace_scopes_but_only_an_authoritative_origin_removes_one() -> None:
    replaced = _apply(
        "service: {name: payments}\n", overlays=[_overlay("gateway", "auth.scopes", ["payments.read.v2"])]
    )
    removed = _apply(
        "service: {name: payments}\n",
        overlays=[_overlay("investigation", "auth.scopes", ["payments.read"], operation="remove")],
    )

    assert _get(replaced, "payments.payments.get").auth.scopes == ("payments.read.v2",)
    assert _get(removed, "payments.payments.get").auth.scopes == ("payments.read",)
    assert _codes(removed) == ["overlay/loosen_refused"]


def test_a_gateway_cannot_loosen_confirmation_but_can_tighten_it() -> None:
    loosen = _apply(
        "service: {name: payments}\n",
        overlays=[_overlay("gateway", "confirmation.required", False, ref="createRefund")],
    )
    tighten = _apply("service: {name: payments}\n", overlays=[_overlay("gateway", "confirmation.required", True)])

    assert _get(loosen, "payments.refunds.create").confirmation.required is True
    assert _codes(loosen) == ["overlay/loosen_refused"]
    assert _get(tighten, "payments.payments.get").confirmation.required is True


def test_resolution_does_not_depend_on_overlay_order() -> None:
    overlays = [
        _overlay("operator", "state", "approved"),
        _overlay("gateway", "auth.scopes", ["a"], operation="restrict"),
        _overlay("investigation", "confirmation.required", True, operation="restrict", ref="getCustomer"),
        _overlay("operator", "displayName", "One"),
        _overlay("operator", "displayName", "Two"),
    ]

    forward = _apply(PAYMENTS, overlays=overlays)
    backward = _apply(PAYMENTS, overlays=list(reversed(overlays)))

    assert forward.operations == backward.operations
    assert sorted(d.code for d in forward.diagnostics) == sorted(d.code for d in backward.diagnostics)


def test_the_overlay_digest_ignores_assertion_order_and_duplicates() -> None:
    a = Assertion(target=Target(ref="x"), predicate="state", value="approved")
    b = Assertion(target=Target(ref="y"), predicate="effect.risk", value="low")

    assert overlay_digest("manifest", [a, b]) == overlay_digest("manifest", [b, a, b])
    assert overlay_digest("manifest", [a]) != overlay_digest("operator", [a])
    assert make_overlay("manifest", [a]).id.startswith("overlay_manifest_")


# --- the effect block (ADR-0030) ------------------------------------------------------------------------


def _github() -> tuple[Operation, ...]:
    bearer = Auth(type="jwt_bearer", principal="service", secret_source="env")
    repo = "/repos/{owner}/{repo}"
    return (
        _op("github", "post", f"{repo}/issues", "createIssue", "Create an issue", auth=bearer),
        _op("github", "patch", f"{repo}/issues/{{issue_number}}", "updateIssue", "Update an issue", auth=bearer),
        _op("github", "post", f"{repo}/issues/{{issue_number}}/comments", "createIssueComment", "Comment", auth=bearer),
        _op("github", "delete", f"{repo}/issues/comments/{{comment_id}}", "deleteIssueComment", "Delete", auth=bearer),
        _op("github", "post", f"{repo}/releases", "createRelease", "Create a release", auth=bearer),
        _op("github", "patch", f"{repo}/releases/{{release_id}}", "updateRelease", "Update a release", auth=bearer),
        _op("github", "delete", f"{repo}/releases/{{release_id}}", "deleteRelease", "Delete a release", auth=bearer),
        _op("github", "get", f"{repo}/releases/tags/{{tag}}", "getReleaseByTag", "Get a release by tag", auth=bearer),
    )


GITHUB = """
operations:
  createIssueComment:
    idempotency: {strategy: key_supported, key_location: header, header: Idempotency-Key}
    effect:
      class: reversible
      inverse:
        operation: delete_issue_comment
        arguments: {owner: request.owner, repo: request.repo, comment_id: response.id}
        deadline: {within_ms: 86400000}
  createIssue:
    reversible: true
    effect:
      class: compensable
      compensate:
        operation: github.issues.update
        arguments: {issue_number: response.number, state: {const: closed}}
  createRelease:
    effect:
      class: irreversible
      lookup: {operation: getReleaseByTag, by: id, arguments: {tag: request.tag_name}}
      draft:
        operation: createRelease
        arguments: {tag_name: request.tag_name, draft: {const: true}}
        handle: response.id
        promote: {operation: updateRelease, arguments: {release_id: response.id, draft: {const: false}}}
        discard: {operation: deleteRelease, arguments: {release_id: response.id}}
"""


def test_effect_references_in_any_spelling_are_pinned_to_air_ids_and_within_ms_is_carried() -> None:
    result = _apply(GITHUB, _github())

    comment = _get(result, "github.comments.create").effect
    assert comment.class_ == "reversible" and comment.reversible is True
    assert comment.inverse is not None and comment.inverse.operation == "github.comments.delete"
    assert comment.inverse.deadline == Deadline(within_ms=86400000)
    assert comment.inverse.arguments == {"owner": "request.owner", "repo": "request.repo", "comment_id": "response.id"}
    release = _get(result, "github.releases.create").effect
    assert release.lookup is not None and release.lookup.operation == "github.tags.get"
    assert release.draft is not None and release.draft.operation == "github.releases.create"
    assert release.draft.promote is not None and release.draft.promote.operation == "github.releases.update"
    assert release.draft.discard is not None and release.draft.discard.operation == "github.releases.delete"
    assert release.draft.arguments == {"tag_name": "request.tag_name", "draft": {"const": True}}
    assert result.diagnostics == ()


def test_a_declared_class_sets_reversible_unless_the_entry_states_it() -> None:
    result = _apply(GITHUB, _github())

    assert _get(result, "github.releases.create").effect.reversible is False
    assert _get(result, "github.comments.create").effect.reversible is True
    issue = _get(result, "github.issues.create")
    assert (issue.effect.class_, issue.effect.reversible) == ("compensable", True)
    assert result.explicit_reversible == frozenset({"github.issues.create"})


def test_an_irreversible_class_is_applied_before_confirmation_is_recomputed() -> None:
    release = _get(_apply(GITHUB, _github()), "github.releases.create")

    assert release.confirmation.required is True
    assert release.confirmation.reason == "This operation is an irreversible medium mutation."


def test_effect_locations_point_at_each_applied_effect_block() -> None:
    result = _apply(GITHUB, _github())

    assert result.effect_locations == {
        "github.comments.create": ("anvil.yaml", 4, 5),
        "github.issues.create": ("anvil.yaml", 12, 5),
        "github.releases.create": ("anvil.yaml", 18, 5),
    }
    assert result.effect_positions["github.comments.create"]["inverse.operation"] == ("anvil.yaml", 7, 20)
    assert result.manifest_file == "anvil.yaml"


def test_an_unresolvable_reference_is_left_as_written_for_the_checker() -> None:
    result = _apply(
        "operations:\n  createIssue:\n    effect: {class: compensable, compensate: {operation: closeIssue}}\n",
        _github(),
    )

    compensate = _get(result, "github.issues.create").effect.compensate
    assert compensate is not None and compensate.operation == "closeIssue"


def test_two_entries_with_different_effect_blocks_are_one_contested_predicate() -> None:
    result = _apply(
        """
        operations:
          createRelease:
            effect: {class: irreversible}
          github.releases.create:
            effect: {class: reversible, inverse: {operation: deleteRelease}}
        """,
        _github(),
    )

    release = _get(result, "github.releases.create")
    assert release.state == "blocked"
    assert release.effect.class_ is None and release.effect.inverse is None
    assert [c.predicate for c in result.conflicts] == ["effectContract"]
    assert "overlay/conflict" in _codes(result)
    assert "github.releases.create" not in result.effect_locations


def test_a_non_authoritative_overlay_cannot_declare_an_undo() -> None:
    block = {"class": "reversible", "inverse": {"operation": "deleteIssueComment", "arguments": {}}}
    overlay = _overlay("investigation", "effectContract", block, ref="createIssueComment")

    result = _apply("service: {name: github}\n", _github(), overlays=[overlay])

    assert _codes(result) == ["overlay/loosen_refused"]
    assert _get(result, "github.comments.create").effect.declares_contract is False


# --- §2.2 service-wide auth ---------------------------------------------------------------------------------


def _service(text: str, ops: tuple[Operation, ...], **kwargs: object) -> tuple[tuple[Operation, ...], list[str]]:
    out, found = apply_service_defaults(ops, _manifest(text), **kwargs)  # type: ignore[arg-type]
    return out, [item.code for item in found]


def test_legacy_oauth2_leaves_credentialed_operations_alone_and_blocks_anonymous_ones() -> None:
    anonymous = _op("payments", "get", "/health", "health")
    ops = (*_payments(), anonymous)

    out, codes = _service("auth: {type: oauth2, scopes: [payments.read, payments.write]}\n", ops)

    assert out[:4] == ops[:4]
    health = out[4]
    assert (health.auth.type, health.state) == ("custom_header", "blocked")
    assert health.auth.scopes == ("payments.read", "payments.write")
    assert codes == ["auth/service_oauth2_ambiguous", "auth/incoherent"]


def test_legacy_oauth2_cannot_choose_among_unmodeled_alternatives() -> None:
    ops = _payments()

    out, codes = _service("auth: {type: oauth2}\n", ops, alternatives_unmodeled=frozenset({"payments.payments.get"}))

    assert codes == ["auth/service_oauth2_ambiguous"]
    assert out[1].auth == ops[1].auth and out[1].review_notes


def test_a_service_type_is_applied_to_anonymous_operations_only() -> None:
    anonymous = _op("payments", "get", "/health", "health")

    out, codes = _service(
        "auth: {type: api_key, provider: {api_key: {in: header, name: X-Key}}, scopes: [s]}\n",
        (*_payments(), anonymous),
    )

    assert (out[4].auth.type, out[4].auth.principal, out[4].auth.secret_source) == ("api_key", "service", "env")
    assert out[4].auth.scopes == ("s",)
    assert out[0].auth.type == "oauth2_client_credentials"
    assert codes.count("auth/service_default_not_applied") == 4


def test_on_behalf_of_remodels_an_end_user_flow_to_review() -> None:
    end_user = _op(
        "docs",
        "get",
        "/documents",
        "listDocuments",
        auth=Auth(type="oauth2_authorization_code", principal="end_user", secret_source="env"),
        state="blocked",
    )

    out, codes = _service("auth: {type: oauth2_on_behalf_of}\n", (end_user,))

    assert (out[0].auth.type, out[0].auth.principal, out[0].state) == (
        "oauth2_on_behalf_of",
        "delegated",
        "review_required",
    )
    assert out[0].auth.provider is not None and out[0].auth.provider.grant == "token_exchange"
    assert codes == ["auth/end_user_flow_remodeled"]


def test_a_compatible_service_auth_overrides_policy_and_fills_gaps() -> None:
    ops = _payments()

    out, codes = _service(
        "auth:\n  tenant: acme\n  audience: payments\n  credential_profile: other\n"
        "  provider: {token_endpoint: 'https://other.example.com/token', client_auth: client_secret_post}\n",
        ops,
    )

    auth = out[2].auth
    assert (auth.tenant, auth.audience, auth.credential_profile) == (
        "acme",
        "payments",
        CLIENT_CREDENTIALS.credential_profile,
    )
    assert auth.provider is not None
    assert (auth.provider.token_endpoint, auth.provider.client_auth) == (
        "https://auth.example.com/token",
        "client_secret_post",
    )
    assert codes == []


def test_no_service_auth_changes_nothing() -> None:
    ops = _payments()

    assert apply_service_defaults(ops, _manifest("service: {name: payments}\n")) == (ops, [])
    assert apply_service_defaults(ops, None) == (ops, [])


# --- end to end: the payments example (§2.11) -------------------------------------------------------------


def test_the_payments_example_compiles_to_the_observed_effective_air() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "payments"
    if not (example / "anvil.yaml").is_file():
        pytest.skip("examples/payments is not written yet")

    result = build(example / "openapi.yaml", manifest=example / "anvil.yaml", service_id="payments")

    document = result.document
    assert [d.severity for d in result.diagnostics if d.severity != "info"] == []
    assert [op.state for op in document.operations] == ["approved"] * 4
    refund = document.operation("payments.refunds.create")
    assert refund is not None
    assert (refund.idempotency.mode, refund.idempotency.key, refund.idempotency.key_derivation) == (
        "required",
        "Idempotency-Key",
        "client_supplied",
    )
    assert (refund.retries.mode, refund.retries.max_attempts, refund.retries.retry_on) == (
        "safe",
        3,
        ("timeout", "http_429", "http_503"),
    )
    assert (refund.confirmation.required, refund.confirmation.risk) == (True, "financial")
    assert (refund.auth.type, refund.auth.scopes) == ("oauth2_client_credentials", ("payments.write",))
    assert any(c.predicate == "enriched" and c.review == "accepted" for c in refund.evidence.claims)
    capture = document.operation("payments.capture.create")
    assert capture is not None
    assert (capture.idempotency.mode, capture.retries.basis) == ("natural", "natural_idempotent")
    assert capture.confirmation.reason == "This operation is an irreversible financial mutation."
    (workflow,) = document.workflows
    assert (workflow.id, workflow.human_approval, workflow.state) == (
        "payments.refunds.refund_customer",
        True,
        "generated",
    )
    assert [s.operation_id for s in workflow.steps] == ["payments.payments.get", "payments.refunds.create"]


def test_retry_values_from_other_overlays_are_normalized_and_bounded() -> None:
    overlays = [
        _overlay("operator", "retries.retryOn", ["429", "teapot"]),
        _overlay("operator", "retries.maxAttempts", 9),
    ]

    result = _apply("service: {name: payments}\n", overlays=overlays)

    retries = _get(result, "payments.payments.get").retries
    assert (retries.retry_on, retries.max_attempts) == (("http_429",), 3)


def test_an_operation_touched_twice_carries_one_enriched_claim() -> None:
    ops, _ = apply_service_defaults(_payments(), _manifest("auth: {tenant: acme}\n"))

    result = apply_manifest(ops, _manifest("operations:\n  getPayment: {state: approved}\n"), service_id="payments")

    claims = [c for c in _get(result, "payments.payments.get").evidence.claims if c.predicate == "enriched"]
    assert len(claims) == 1
