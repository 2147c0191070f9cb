from __future__ import annotations

import copy
from dataclasses import replace

from anvil.air.inputs import assemble_input_schema
from anvil.air.model import (
    Auth,
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
)
from anvil.air.tools import (
    PROJECTION_DESCRIPTION,
    RESERVED_ARGUMENTS,
    published_input_schema,
    tool_definition,
    tool_description,
)


def _refund() -> Operation:
    op = Operation(
        id="payments.refunds.create",
        canonical_name="create_refund",
        display_name="Create a refund",
        description="Creates a refund for a captured payment. Irreversible.",
        effect=Effect(kind="mutation", action="create", resource="refund", risk="financial", reversible=False),
        input=Input(
            params=(Param(name="payment_id", in_="path", required=True),),
            body=RequestBody(
                required=True,
                projection="fields",
                fields=(
                    BodyField(name="amount", required=True, schema={"type": "integer"}),
                    BodyField(name="currency", required=True, schema={"type": "string"}),
                ),
            ),
        ),
        idempotency=Idempotency(
            mode="required", mechanism="header", key="Idempotency-Key", key_derivation="client_supplied"
        ),
        retries=RetryPolicy(mode="safe", basis="idempotency_key", max_attempts=3, backoff="exponential_jitter"),
        confirmation=Confirmation(required=True, risk="financial", reason="Irreversible financial mutation."),
        auth=Auth(type="oauth2_client_credentials", scopes=("payments.write",)),
        cli=Cli(command="payments refunds create"),
        mcp=Mcp(tool_name="payments_create_refund"),
        state="approved",
    )
    return replace(op, input=replace(op.input, schema=assemble_input_schema(op)))


def _read() -> Operation:
    return Operation(
        id="payments.customers.get",
        canonical_name="get_customer",
        display_name="Get a customer",
        effect=Effect(kind="read", action="get", risk="none"),
        input=Input(params=(Param(name="customer_id", in_="path", required=True),)),
        idempotency=Idempotency(mode="natural"),
        retries=RetryPolicy(mode="safe", basis="read_safe", max_attempts=3),
        cli=Cli(command="payments customers get"),
        mcp=Mcp(tool_name="payments_get_customer"),
        state="approved",
    )


def test_refund_description_matches_the_original_sentence_for_sentence() -> None:
    assert tool_description(_refund()) == (
        "Creates a refund for a captured payment. Irreversible. This is a irreversible financial mutation. "
        "Requires an idempotency key. Requires confirm=true. Retry-safe."
    )


def test_read_description_falls_back_to_the_display_name_and_says_read_only() -> None:
    assert tool_description(_read()) == "Get a customer Read-only."


def test_an_unkeyed_reversible_mutation_is_described_as_not_retry_safe() -> None:
    op = replace(
        _refund(),
        description="",
        effect=Effect(kind="mutation", action="update", risk="medium", reversible=True),
        idempotency=Idempotency(mode="none"),
        retries=RetryPolicy(mode="none"),
        confirmation=Confirmation(required=False),
    )
    assert tool_description(op) == "Create a refund This is a medium mutation. Not retry-safe."


def test_the_confirm_sentence_names_the_namespaced_safety_input_when_confirm_is_taken() -> None:
    op = _refund()
    op = replace(
        op, input=replace(op.input, params=(*op.input.params, Param(name="confirm", in_="query")), schema=None)
    )
    assert "Requires anvil_confirm=true." in tool_description(op)


def test_annotations_and_meta_follow_the_effect_posture() -> None:
    refund, read = tool_definition(_refund()), tool_definition(_read())
    assert refund["annotations"] == {
        "title": "Create a refund",
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert read["annotations"] == {
        "title": "Get a customer",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    assert refund["_meta"] == {
        "anvil/effect": "mutation",
        "anvil/action": "create",
        "anvil/risk": "financial",
        "anvil/retry_safe": True,
        "anvil/retry_basis": "idempotency_key",
        "anvil/idempotency": "required",
        "anvil/principal": "service",
        "anvil/operation_id": "payments.refunds.create",
    }
    assert refund["name"] == "payments_create_refund"
    assert list(refund) == ["name", "title", "description", "inputSchema", "annotations", "_meta"]


def test_published_schema_adds_the_optional_reserved_arguments_and_keeps_the_required_list() -> None:
    op = _refund()
    schema = published_input_schema(op)
    assert schema["properties"]["anvil_dry_run"]["type"] == "boolean"
    assert schema["required"] == ["payment_id", "amount", "currency", "idempotency_key", "confirm"]
    assert "anvil_dry_run" not in schema["required"] and "anvil_projection" not in schema["required"]
    assert schema["properties"]["anvil_projection"] == {
        "type": "string",
        "maxLength": 1000,
        "description": PROJECTION_DESCRIPTION,
    }
    assert set(RESERVED_ARGUMENTS) == {"anvil_dry_run", "anvil_projection"}
    assert schema["properties"]["confirm"]["const"] is True


def test_the_listed_projection_argument_says_what_the_measured_surface_says() -> None:
    from anvil.air.disclosure_surface import measured_surface

    listed = published_input_schema(_refund())["properties"]["anvil_projection"]
    measured = measured_surface(_refund())["inputSchema"]["properties"]["anvil_projection"]
    assert listed["description"] == measured["description"]
    assert "only narrow" in listed["description"]


def test_a_business_input_that_owns_a_reserved_name_keeps_it() -> None:
    base = _refund().input.schema or {}
    owned = {**base, "properties": {**base["properties"], "anvil_projection": {"type": "integer"}}}
    op = replace(_refund(), input=replace(_refund().input, schema=owned))
    assert published_input_schema(op)["properties"]["anvil_projection"] == {"type": "integer"}


def test_tool_definition_is_pure_and_leaves_the_operation_untouched() -> None:
    op = _refund()
    before = copy.deepcopy(op.input.schema)
    assert tool_definition(op) == tool_definition(op)
    assert op.input.schema == before
    assert "anvil_dry_run" not in (op.input.schema or {})["properties"]


def test_an_operation_without_a_stored_schema_is_assembled_on_the_fly() -> None:
    op = replace(_refund(), input=replace(_refund().input, schema=None))
    assert published_input_schema(op)["required"] == published_input_schema(_refund())["required"]


def test_a_paginated_read_says_how_to_page() -> None:
    from anvil.air.model import Pagination

    paged = replace(_read(), pagination=Pagination(style="cursor", cursor_param="starting_after", items_field="data"))
    assert "Paginated (cursor): pass 'starting_after'; items at 'data'." in tool_description(paged)
    assert "Paginated" not in tool_description(_read())


def test_the_output_schema_inlines_components_folds_nullable_and_wraps_non_objects() -> None:
    from anvil.air.model import Output
    from anvil.air.outputs import PROJECTION_VIEW_DEF
    from anvil.air.tools import DRY_RUN_PLAN_DEF, output_projection

    components = {"Item": {"type": "object", "properties": {"name": {"type": "string", "nullable": True}}}}
    listing = replace(_read(), output=Output(schema={"type": "array", "items": {"$ref": "#/components/schemas/Item"}}))
    projection = output_projection(listing, components)
    assert projection is not None and projection.wrap
    response, plan, view = projection.schema["anyOf"]
    assert response["properties"]["result"] == {"type": "array", "items": {"$ref": "#/$defs/Item"}}
    assert plan == {"$ref": f"#/$defs/{DRY_RUN_PLAN_DEF}"}
    assert view == {"$ref": f"#/$defs/{PROJECTION_VIEW_DEF}"}
    assert projection.schema["$defs"][PROJECTION_VIEW_DEF]["required"] == ["anvil_projection", "result"]
    assert projection.schema["$defs"]["Item"]["properties"]["name"] == {"type": ["string", "null"]}
    dangling = replace(_read(), output=Output(schema={"$ref": "#/components/responses/Nope"}))
    found = output_projection(dangling, components)
    assert found is not None and "#/components" not in str(found.schema)
    assert output_projection(replace(_read(), output=Output()), components) is None


def test_a_source_schema_that_is_not_json_schema_publishes_no_output_schema() -> None:
    from anvil.air.model import Output
    from anvil.air.tools import output_projection

    broken = replace(_read(), output=Output(schema={"type": "file"}))
    assert output_projection(broken, {}) is None
    assert "outputSchema" not in tool_definition(broken, {})
