"""Public inputs and the assembled input schema (original-core §1.6, scenarios §9.1.5-§9.1.8)."""

from __future__ import annotations

from typing import Any

import jsonschema

from anvil.air.inputs import (
    PORTABLE_KEY_SCHEMA,
    assemble_input_schema,
    cli_flags,
    input_bindings,
    safety_keys,
)
from anvil.air.model import (
    BodyField,
    Cli,
    Confirmation,
    Effect,
    Idempotency,
    Input,
    Mcp,
    Operation,
    Param,
    RequestBody,
    RetryPolicy,
    SourceRef,
)

PAYMENT_ID = Param(name="payment_id", in_="path", required=True, schema={"type": "string"}, description="Payment.")
REFUND_BODY = RequestBody(
    required=True,
    schema={
        "type": "object",
        "required": ["amount", "currency"],
        "properties": {"amount": {"type": "integer"}, "currency": {"type": "string"}, "reason": {"type": "string"}},
    },
    projection="fields",
    fields=(
        BodyField(name="amount", required=True, schema={"type": "integer"}),
        BodyField(name="currency", required=True, schema={"type": "string"}),
        BodyField(name="reason", schema={"type": "string"}),
    ),
)


def make_op(
    *,
    params: tuple[Param, ...] = (PAYMENT_ID,),
    body: RequestBody | None = REFUND_BODY,
    idempotency: Idempotency | None = None,
    confirmation: Confirmation | None = None,
) -> Operation:
    return Operation(
        id="payments.refunds.create",
        canonical_name="create_refund",
        display_name="Create refund",
        source_ref=SourceRef(path="/payments/{payment_id}/refunds", method="post"),
        effect=Effect(kind="mutation", action="create", risk="financial", reversible=False),
        input=Input(params=params, body=body),
        idempotency=idempotency
        or Idempotency(mode="required", mechanism="header", key="Idempotency-Key", key_derivation="client_supplied"),
        retries=RetryPolicy(mode="safe"),
        confirmation=confirmation
        or Confirmation(
            required=True, risk="financial", reason="This operation is an irreversible financial mutation."
        ),
        cli=Cli(command="payments refunds create"),
        mcp=Mcp(tool_name="payments_create_refund"),
    )


def test_the_refund_schema_requires_business_inputs_the_key_and_confirm() -> None:
    schema = assemble_input_schema(make_op())
    jsonschema.Draft202012Validator.check_schema(schema)
    assert list(schema["properties"]) == ["payment_id", "amount", "currency", "reason", "idempotency_key", "confirm"]
    assert schema["required"] == ["payment_id", "amount", "currency", "idempotency_key", "confirm"]
    assert schema["properties"]["confirm"]["const"] is True
    assert schema["properties"]["confirm"]["type"] == "boolean"
    assert schema["additionalProperties"] is False
    assert schema["title"] == "create_refund"
    assert schema["properties"]["payment_id"]["x-anvil-wire-name"] == "payment_id"
    assert schema["properties"]["payment_id"]["description"] == "Payment."


def test_the_portable_key_pattern_accepts_visible_ascii_only() -> None:
    schema = assemble_input_schema(make_op())
    key = schema["properties"]["idempotency_key"]
    validator = jsonschema.Draft202012Validator(key)
    assert validator.is_valid("business-operation_123")
    assert not validator.is_valid("has spaces")
    assert not validator.is_valid("unicode-é")
    assert not validator.is_valid("")
    assert not validator.is_valid("x" * 256)


def test_a_valid_refund_call_passes_the_whole_schema() -> None:
    validator = jsonschema.Draft202012Validator(assemble_input_schema(make_op()))
    good = {"payment_id": "p1", "amount": 5, "currency": "usd", "idempotency_key": "k-1", "confirm": True}
    assert validator.is_valid(good)
    assert not validator.is_valid({**good, "confirm": False})
    assert not validator.is_valid({**good, "extra": 1})


def test_a_fingerprint_derived_key_exists_but_is_not_required() -> None:
    for mode in ("required", "key_supported"):
        op = make_op(
            idempotency=Idempotency(
                mode=mode, mechanism="header", key="Idempotency-Key", key_derivation="request_fingerprint"
            )
        )
        schema = assemble_input_schema(op)
        assert "idempotency_key" in schema["properties"]
        assert "idempotency_key" not in schema["required"]


def test_key_supported_with_client_key_is_optional_and_no_key_without_a_keyed_mode() -> None:
    op = make_op(idempotency=Idempotency(mode="natural"), confirmation=Confirmation(required=False))
    schema = assemble_input_schema(op)
    assert "idempotency_key" not in schema["properties"]
    assert "confirm" not in schema["properties"]
    assert safety_keys(op).idempotency is None
    assert safety_keys(op).confirm is None


def test_business_inputs_named_like_safety_keys_push_the_safety_keys_aside() -> None:
    params = (
        PAYMENT_ID,
        Param(name="idempotency_key", in_="query"),
        Param(name="confirm", in_="query", schema={"type": "boolean"}),
    )
    op = make_op(params=params)
    keys = safety_keys(op)
    assert keys.idempotency == "anvil_idempotency_key"
    assert keys.confirm == "anvil_confirm"
    flags = cli_flags(op)
    assert flags["idempotency_key"] == "--input-idempotency-key"
    assert flags["confirm"] == "--input-confirm"
    assert flags["payment_id"] == "--payment-id"


def test_an_input_named_like_a_cli_control_flag_gets_the_input_prefix_and_never_takes_anothers_flag() -> None:
    params = (
        Param(name="timeout", in_="query"),
        Param(name="input_timeout", in_="query"),
        Param(name="json", in_="query"),
        Param(name="schema", in_="query"),
    )
    flags = cli_flags(make_op(params=params))
    assert {prop: flags[prop] for prop in ("timeout", "input_timeout", "json", "schema")} == {
        "timeout": "--anvil-input-timeout",  # --input-timeout is the other input's own flag
        "input_timeout": "--input-timeout",
        "json": "--input-json",
        "schema": "--schema",  # a view flag given a value is the business input
    }


def test_numbered_safety_key_variants_skip_every_taken_name() -> None:
    params = (
        Param(name="idempotency_key", in_="query"),
        Param(name="anvil_idempotency_key", in_="query"),
        Param(name="confirm", in_="query"),
        Param(name="anvil_confirm", in_="query"),
        Param(name="anvil_confirm_2", in_="query"),
    )
    keys = safety_keys(make_op(params=params))
    assert keys.idempotency == "anvil_idempotency_key_2"
    assert keys.confirm == "anvil_confirm_3"


def test_an_agent_name_and_aliases_are_published_with_the_wire_name() -> None:
    param = Param(
        name="paymentId",
        agent_name="payment_identifier",
        aliases=("payment_id",),
        in_="path",
        required=True,
        example="pay_123",
    )
    schema = assemble_input_schema(make_op(params=(param,)))
    prop = schema["properties"]["payment_identifier"]
    assert prop["x-anvil-wire-name"] == "paymentId"
    assert prop["x-anvil-aliases"] == ["payment_id"]
    assert prop["examples"] == ["pay_123"]
    assert "payment_identifier" in schema["required"]


def test_the_modeled_carrier_param_is_skipped_and_its_constraints_join_the_key_schema() -> None:
    carrier = Param(name="Idempotency-Key", in_="header", schema={"type": "string", "maxLength": 64})
    schema = assemble_input_schema(make_op(params=(PAYMENT_ID, carrier)))
    assert "idempotency_key" in schema["properties"]
    key = schema["properties"]["idempotency_key"]
    assert key["allOf"] == [{"type": "string", "maxLength": 64}, PORTABLE_KEY_SCHEMA]
    wire_names = [b.wire_name for b in input_bindings(make_op(params=(PAYMENT_ID, carrier)))]
    assert wire_names == ["payment_id", "amount", "currency", "reason"]


def test_a_carrier_without_material_constraints_keeps_the_portable_key_schema() -> None:
    carrier = Param(name="Idempotency-Key", in_="header", schema={"type": "string", "description": "Key."})
    key = assemble_input_schema(make_op(params=(carrier,)))["properties"]["idempotency_key"]
    assert {k: v for k, v in key.items() if k != "description"} == PORTABLE_KEY_SCHEMA


def test_a_whole_body_carrier_field_is_removed_from_the_body_property() -> None:
    body = RequestBody(
        required=True,
        schema={
            "type": "object",
            "required": ["idempotency_key", "amount"],
            "properties": {"idempotency_key": {"type": "string"}, "amount": {"$ref": "#/$defs/Amount"}},
            "example": {"idempotency_key": "k", "amount": 1},
            "$defs": {"Amount": {"type": "integer"}},
        },
    )
    op = make_op(
        body=body,
        idempotency=Idempotency(
            mode="required", mechanism="body", key="idempotency_key", key_derivation="client_supplied"
        ),
    )
    schema = assemble_input_schema(op)
    jsonschema.Draft202012Validator.check_schema(schema)
    prop = schema["properties"]["body"]
    assert list(prop["properties"]) == ["amount"]
    assert prop["required"] == ["amount"]
    assert prop["example"] == {"amount": 1}
    assert schema["$defs"] == {"Amount": {"type": "integer"}}
    assert "$defs" not in prop
    assert schema["required"] == ["payment_id", "body", "idempotency_key", "confirm"]
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"payment_id": "p", "body": {"amount": 1}, "idempotency_key": "k", "confirm": True})
    assert not validator.is_valid({"payment_id": "p", "body": {"amount": "1"}, "idempotency_key": "k", "confirm": True})


def test_a_projected_body_field_carrier_is_not_a_business_input() -> None:
    body = RequestBody(
        required=True,
        schema={"type": "object", "properties": {"key": {"type": "string"}, "amount": {"type": "integer"}}},
        projection="fields",
        fields=(BodyField(name="key", schema={"type": "string"}), BodyField(name="amount", schema={"type": "integer"})),
    )
    op = make_op(
        body=body,
        idempotency=Idempotency(mode="required", mechanism="body", key="key", key_derivation="client_supplied"),
    )
    assert [b.property for b in input_bindings(op)] == ["payment_id", "amount"]
    assert [b.location for b in input_bindings(op)] == ["path", "body_field"]


def test_the_assembled_schema_is_deterministic() -> None:
    first: Any = assemble_input_schema(make_op())
    second: Any = assemble_input_schema(make_op())
    assert first == second
    assert list(first) == ["$schema", "type", "title", "description", "additionalProperties", "properties", "required"]


def test_a_whole_body_without_a_description_is_described_by_the_originals_sentence() -> None:
    plain = RequestBody(required=True, schema={"type": "object", "properties": {"tags": {"type": "array"}}})
    described = RequestBody(required=True, schema={"type": "array", "description": "The tags to set."})
    sentence = "The request body. Provide the full object; its structure is preserved from the source schema."
    assert assemble_input_schema(make_op(body=plain))["properties"]["body"]["description"] == sentence
    assert assemble_input_schema(make_op(body=described))["properties"]["body"]["description"] == "The tags to set."


def test_colliding_inputs_keep_the_first_and_assemble_as_the_original_with_later_wins() -> None:
    path_id = Param(name="id", in_="path", required=True, schema={"type": "integer"})
    body = RequestBody(
        required=True,
        schema={"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}},
        projection="fields",
        fields=(BodyField(name="id", schema={"type": "string"}), BodyField(name="name", schema={"type": "string"})),
    )
    op = make_op(params=(path_id,), body=body)
    kept = assemble_input_schema(op)
    assert list(kept["properties"])[:2] == ["id", "name"]
    assert kept["properties"]["id"]["type"] == "integer"
    theirs = assemble_input_schema(op, later_wins=True)
    assert list(theirs["properties"])[:2] == ["id", "name"]
    assert theirs["properties"]["id"]["type"] == "string"


def test_bindings_are_worked_out_once_per_operation_and_never_taken_for_another_operations() -> None:
    op = make_op()
    first = input_bindings(op)
    assert input_bindings(op) is first  # the same operation object: answered from what was worked out
    other = make_op(params=(Param(name="refund_id", in_="path", required=True, schema={"type": "string"}),))
    assert other == make_op(params=other.input.params) and other is not op
    assert [b.property for b in input_bindings(other)][:1] == ["refund_id"]
    assert [b.property for b in input_bindings(op)][:1] == ["payment_id"]
    many = [make_op() for _ in range(5000)]  # more operations than are kept: the oldest are worked out again
    assert all(input_bindings(item) == first for item in many)
    assert input_bindings(op) == first
