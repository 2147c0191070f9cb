"""Validation (original-core §3.6): each rule's code and consequence."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from anvil.air.model import (
    Auth,
    Claim,
    Cli,
    Confirmation,
    Effect,
    Evidence,
    Idempotency,
    Input,
    Mcp,
    Operation,
    Param,
    RequestBody,
    RetryPolicy,
    Server,
    SourceRef,
)
from anvil.compiler.classify import TRANSIENT_CONDITIONS
from anvil.compiler.validate import critique_names, validate_operations

SAFE = RetryPolicy(
    mode="safe", basis="natural_idempotent", max_attempts=3, backoff="exponential_jitter", retry_on=TRANSIENT_CONDITIONS
)


def make_op(name: str = "thing", **changes: Any) -> Operation:
    op = Operation(
        id=f"svc.{name}.replace",
        canonical_name=f"replace_{name}",
        display_name="Replace",
        source_ref=SourceRef(path=f"/{name}/{{id}}", method="put"),
        effect=Effect(kind="mutation", action="replace", risk="medium", reversible=True),
        input=Input(params=(Param(name="id", in_="path", required=True),)),
        idempotency=Idempotency(mode="natural"),
        retries=SAFE,
        cli=Cli(command=f"svc {name} replace"),
        mcp=Mcp(tool_name=f"svc_replace_{name}"),
    )
    return replace(op, **changes)


def run(*ops: Operation) -> tuple[tuple[Operation, ...], list[str]]:
    out, found = validate_operations(ops)
    return out, [d.code for d in found]


def test_a_clean_natural_mutation_passes() -> None:
    out, codes = run(make_op())
    assert codes == []
    assert out[0].state == "generated"


def test_duplicate_names_are_errors_on_every_surface() -> None:
    first = make_op()
    _, codes = run(first, replace(first, source_ref=SourceRef(path="/other", method="put")))
    assert codes.count("duplicate_operation_id") == 2
    assert codes.count("duplicate_tool_name") == 2
    assert codes.count("duplicate_cli_command") == 2


def test_two_wire_inputs_with_one_public_name_block() -> None:
    params = (Param(name="id", in_="path", required=True), Param(name="Id", in_="query"))
    out, codes = run(make_op(input=Input(params=params)))
    assert codes == ["duplicate_agent_input_name"]
    assert out[0].state == "blocked"


def test_an_undeclared_query_carrier_blocks_and_turns_retries_off() -> None:
    idem = Idempotency(mode="required", mechanism="query", key="idem", key_derivation="client_supplied")
    out, codes = run(make_op(idempotency=idem))
    assert codes == ["unsupported_idempotency_carrier"]
    op = out[0]
    assert op.state == "blocked"
    assert (op.retries.mode, op.retries.basis, op.retries.max_attempts, op.retries.backoff, op.retries.retry_on) == (
        "none",
        "unproven",
        1,
        "none",
        (),
    )
    assert any(note.startswith("Blocked: the declared idempotency key cannot be injected") for note in op.review_notes)


def test_a_form_body_field_carrier_passes_where_an_xml_body_field_blocks() -> None:
    schema = {"type": "object", "properties": {"IdempotencyKey": {"type": "string"}, "To": {"type": "string"}}}
    idem = Idempotency(mode="required", mechanism="body", key="IdempotencyKey", key_derivation="client_supplied")
    for media in ("application/x-www-form-urlencoded", "multipart/form-data"):
        body = RequestBody(content_type=media, schema=schema)
        out, codes = run(make_op(input=Input(params=make_op().input.params, body=body), idempotency=idem))
        assert codes == [] and out[0].state == "generated", media
    xml = RequestBody(content_type="application/xml", schema=schema)
    out, codes = run(make_op(input=Input(params=make_op().input.params, body=xml), idempotency=idem))
    assert codes == ["unsupported_idempotency_carrier"] and out[0].state == "blocked"


def test_an_operation_with_its_own_server_is_told_where_it_is_sent() -> None:
    server = Server(url="https://{zone}.example.com/v2", variables={"zone": {"default": "upload"}})
    out, found = validate_operations([make_op(servers=(server,))])
    assert [(d.code, d.severity, d.message) for d in found] == [
        (
            "server/operation_server",
            "info",
            "Operation 'svc.thing.replace' is sent to its own server https://upload.example.com/v2, not the service's.",
        )
    ]
    assert out[0].state == "generated"


def test_an_operation_whose_own_server_has_no_url_is_blocked_not_sent_to_the_services() -> None:
    approved = make_op(servers=(Server(url="https://{zone}.example.com"),), state="approved")
    out, found = validate_operations([approved])
    assert [(d.code, d.severity) for d in found] == [("server/unresolved", "error")]
    assert "the server variable {zone} is not declared" in found[0].message
    assert out[0].state == "blocked"
    assert out[0].review_notes[-1].startswith("Blocked: the operation's own server has no URL to send to")


def test_an_operation_server_with_a_comma_host_is_refused_and_blocked() -> None:
    approved = make_op(servers=(Server(url="https://status.example.net,com,net,io"),), state="approved")
    out, found = validate_operations([approved])
    assert [(d.code, d.severity) for d in found] == [("server/invalid_host", "error")]
    assert "status.example.net,com,net,io" in found[0].message and out[0].state == "blocked"


def test_a_service_server_with_a_comma_host_is_refused() -> None:
    servers = (Server(url="https://status.example.net,com,net,io/v1"),)
    _, found = validate_operations([make_op()], service_servers=servers)
    assert [(d.code, d.severity, d.operation) for d in found] == [("server/invalid_host", "error", None)]


def test_an_operation_sent_to_another_host_than_the_services_is_a_warning_naming_both_hosts() -> None:
    home = (Server(url="https://api.example.com/v1"),)
    same = make_op("same", servers=(Server(url="https://api.example.com/v2"),))
    other = make_op("other", servers=(Server(url="https://status.example.net/v1"),), auth=Auth(type="api_key"))
    consented = replace(
        make_op("consented", servers=other.servers, auth=other.auth), credential_hosts=("status.example.net",)
    )
    _, found = validate_operations([same, other, consented], service_servers=home)
    found = [d for d in found if d.code.startswith("server/")]
    assert [(d.code, d.severity, d.operation) for d in found] == [
        ("server/operation_server", "info", "svc.same.replace"),
        ("server/operation_server", "warning", "svc.other.replace"),
        ("server/operation_server", "warning", "svc.consented.replace"),
    ]
    assert found[1].message == (
        "Operation 'svc.other.replace' is sent to its own server https://status.example.net/v1, on "
        "status.example.net, not the service's api.example.com; its credential is withheld there unless "
        "ANVIL_CREDENTIAL_HOSTS names status.example.net."
    )
    assert found[1].hint is not None and "credential_hosts: [status.example.net]" in found[1].hint
    assert found[2].message.endswith("its credential goes there (credential_hosts names status.example.net).")


def test_a_carrier_schema_that_cannot_hold_a_derived_key_blocks() -> None:
    params = (
        Param(name="id", in_="path", required=True),
        Param(name="Idempotency-Key", in_="header", schema={"type": "string", "format": "uuid"}),
    )
    idem = Idempotency(
        mode="key_supported", mechanism="header", key="Idempotency-Key", key_derivation="request_fingerprint"
    )
    out, codes = run(make_op(input=Input(params=params), idempotency=idem))
    assert codes == ["unsupported_idempotency_carrier_schema"]
    assert out[0].state == "blocked"
    assert out[0].retries.mode == "none"


def test_a_key_in_the_credential_header_blocks() -> None:
    idem = Idempotency(mode="required", mechanism="header", key="X-API-Key", key_derivation="client_supplied")
    out, codes = run(make_op(idempotency=idem, auth=Auth(type="api_key", scopes=("w",))))
    assert codes == ["idempotency_auth_carrier_conflict"]
    assert out[0].state == "blocked"
    assert out[0].retries.mode == "none"


def test_a_retry_safe_mutation_without_idempotency_loses_its_retries_and_needs_review() -> None:
    out, codes = run(
        make_op(idempotency=Idempotency(mode="none"), confirmation=Confirmation(required=True, risk="medium"))
    )
    assert codes == ["unsafe_retry", "unproven_idempotency"]
    op = out[0]
    assert op.retries.mode == "none"
    assert op.state == "review_required"
    assert len(op.review_notes) == 2


def test_unproven_idempotency_keeps_an_approved_state() -> None:
    op = make_op(idempotency=Idempotency(mode="none"), retries=RetryPolicy(mode="none"), state="approved")
    out, codes = run(op)
    assert codes == ["unproven_idempotency"]
    assert out[0].state == "approved"


def test_a_financial_mutation_without_confirmation_is_forced_to_confirm() -> None:
    effect = Effect(kind="mutation", action="create", risk="financial", reversible=False)
    out, codes = run(make_op(effect=effect))
    assert codes == ["missing_confirmation"]
    confirmation = out[0].confirmation
    assert (confirmation.required, confirmation.risk) == (True, "financial")
    assert confirmation.reason == "This operation is an irreversible financial mutation."


def test_retries_without_conditions_are_turned_off() -> None:
    out, codes = run(make_op(retries=replace(SAFE, retry_on=())))
    assert codes == ["empty_retry_conditions"]
    assert out[0].retries.mode == "none"
    assert out[0].retries.max_attempts == 1


def test_an_authenticated_mutation_without_scopes_is_noted() -> None:
    _, codes = run(make_op(auth=Auth(type="basic")))
    assert codes == ["no_declared_scopes"]
    _, scoped = run(make_op(auth=Auth(type="basic", scopes=("w",))))
    assert scoped == []


def test_an_unconstrained_query_language_input_blocks() -> None:
    params = (Param(name="jql", in_="query"),)
    op = make_op(
        effect=Effect(kind="read", action="search", risk="none"),
        input=Input(params=params),
        archetype="query_passthrough",
        retries=replace(SAFE, basis="read_safe"),
    )
    out, codes = run(op)
    assert codes == ["query_language_passthrough"]
    assert out[0].state == "blocked"


def test_a_query_language_passthrough_is_an_error_only_where_it_was_approved() -> None:
    params = (Param(name="jql", in_="query"),)
    read = replace(SAFE, basis="read_safe")
    search = Effect(kind="read", action="search", risk="none")
    op = make_op(effect=search, input=Input(params=params), archetype="query_passthrough", retries=read)
    for state, severity in (("approved", "error"), ("review_required", "warning"), ("generated", "warning")):
        out, found = validate_operations([replace(op, state=state)])
        assert [(d.code, d.severity) for d in found] == [("query_language_passthrough", severity)], state
        assert out[0].state == "blocked"


def test_weak_names_are_critiqued_from_the_latest_name_quality_claim() -> None:
    weak = Claim(subject="svc.thing.replace", predicate="name.quality", value=0.15, source="inferred", confidence=0.15)
    fixed = Claim(subject="svc.thing.replace", predicate="name.quality", value=0.95, source="spec", confidence=0.95)
    assert [d.code for d in critique_names([make_op(evidence=Evidence(claims=(weak,)))])] == ["weak_operation_name"]
    assert critique_names([make_op(evidence=Evidence(claims=(weak, fixed)))]) == []


def test_a_form_body_that_is_no_object_of_named_parts_blocks() -> None:
    upload = RequestBody(content_type="multipart/form-data", schema={"type": "string", "format": "binary"})
    out, codes = run(make_op(input=Input(body=upload)))
    assert "form_body_not_object" in codes
    assert out[0].state == "blocked" and any("not named parts" in note for note in out[0].review_notes)
    parts = RequestBody(content_type="multipart/form-data", schema={"type": "object", "properties": {"file": {}}})
    _, fine = run(make_op(input=Input(body=parts)))
    assert "form_body_not_object" not in fine
    listed = RequestBody(content_type="*/*", schema={"type": "array", "items": {"type": "string"}})
    _, json_body = run(make_op(input=Input(body=listed)))  # not a form: sent as JSON
    assert "form_body_not_object" not in json_body
