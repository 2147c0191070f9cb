"""Idempotency carrier resolution (original-core §1.8): every way a carrier resolves or fails."""

from __future__ import annotations

from typing import Any

import pytest

from anvil.air.carrier import (
    auth_carrier_conflict,
    effective_auth_carrier,
    effective_auth_carriers,
    factor_carrier_clash,
    parse_body_pointer,
    resolve_carrier,
)
from anvil.air.model import (
    ApiKeyCarrier,
    Auth,
    AuthCarrier,
    AuthProvider,
    Cli,
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


def make_op(
    *,
    mode: Any = "required",
    mechanism: Any = "header",
    key: str | None = "Idempotency-Key",
    derivation: Any = "client_supplied",
    params: tuple[Param, ...] = (),
    body: RequestBody | None = None,
    path: str = "/payments/{payment_id}/refunds",
    auth: Auth | None = None,
) -> Operation:
    return Operation(
        id="payments.refunds.create",
        canonical_name="create_refund",
        display_name="Create refund",
        source_ref=SourceRef(path=path, method="post"),
        effect=Effect(kind="mutation", action="create"),
        input=Input(params=params, body=body),
        idempotency=Idempotency(mode=mode, mechanism=mechanism, key=key, key_derivation=derivation),
        retries=RetryPolicy(mode="none"),
        cli=Cli(command="payments refunds create"),
        mcp=Mcp(tool_name="payments_create_refund"),
        **({"auth": auth} if auth is not None else {}),
    )


def json_body(schema: dict[str, Any], content_type: str = "application/json") -> RequestBody:
    return RequestBody(content_type=content_type, required=True, schema=schema, projection="whole")


def test_modes_without_a_carrier_resolve_to_nothing() -> None:
    for mode in ("natural", "client_id", "none"):
        resolution = resolve_carrier(make_op(mode=mode))
        assert resolution.binding is None
        assert resolution.issue is None
        assert resolution.ok


def test_an_unmodeled_header_carrier_resolves_from_the_manifest_alone() -> None:
    resolution = resolve_carrier(make_op())
    assert resolution.binding is not None
    assert resolution.binding.mechanism == "header"
    assert resolution.binding.key == "Idempotency-Key"
    assert resolution.binding.input_name is None
    assert resolution.binding.schema is None


def test_a_modeled_header_param_is_matched_case_insensitively() -> None:
    param = Param(name="idempotency-key", in_="header", schema={"type": "string", "maxLength": 64})
    resolution = resolve_carrier(make_op(params=(param,)))
    assert resolution.binding is not None
    assert resolution.binding.key == "Idempotency-Key"
    assert resolution.binding.input_name == "idempotency_key"
    assert resolution.binding.schema == {"type": "string", "maxLength": 64}


@pytest.mark.parametrize(
    ("mechanism", "key"),
    [("none", "Idempotency-Key"), ("header", None), ("header", "  "), ("header", "Bad Header"), ("header", "Host")],
)
def test_a_missing_blank_non_token_or_runtime_owned_header_fails(mechanism: str, key: str | None) -> None:
    resolution = resolve_carrier(make_op(mechanism=mechanism, key=key))
    assert resolution.binding is None
    assert resolution.issue
    assert resolution.code == "unsupported_idempotency_carrier"


def test_a_same_named_header_param_that_is_not_a_string_fails() -> None:
    param = Param(name="Idempotency-Key", in_="header", schema={"type": "integer"})
    resolution = resolve_carrier(make_op(params=(param,)))
    assert resolution.code == "unsupported_idempotency_carrier"


def test_a_query_carrier_must_be_declared() -> None:
    assert resolve_carrier(make_op(mechanism="query", key="idem")).code == "unsupported_idempotency_carrier"
    param = Param(name="idem", in_="query", schema={"type": "string"})
    resolution = resolve_carrier(make_op(mechanism="query", key="idem", params=(param,)))
    assert resolution.binding is not None
    assert resolution.binding.input_name == "idem"


def test_a_path_carrier_needs_a_declared_param_and_a_placeholder() -> None:
    declared = Param(name="request_id", in_="path", required=True)
    no_placeholder = make_op(mechanism="path", key="request_id", params=(declared,))
    assert resolve_carrier(no_placeholder).code == "unsupported_idempotency_carrier"
    undeclared = make_op(mechanism="path", key="request_id", path="/refunds/{request_id}")
    assert resolve_carrier(undeclared).code == "unsupported_idempotency_carrier"
    good = make_op(mechanism="path", key="request_id", path="/refunds/{request_id}", params=(declared,))
    binding = resolve_carrier(good).binding
    assert binding is not None
    assert binding.mechanism == "path"


def test_a_body_carrier_reads_a_field_name_or_a_json_pointer_with_escapes() -> None:
    schema = {
        "type": "object",
        "properties": {
            "idempotency_key": {"type": "string"},
            "meta": {"$ref": "#/$defs/Meta"},
        },
        "$defs": {"Meta": {"type": "object", "properties": {"a/b": {"properties": {"k~": {"type": "string"}}}}}},
    }
    plain = resolve_carrier(make_op(mechanism="body", key="idempotency_key", body=json_body(schema)))
    assert plain.binding is not None
    assert plain.binding.pointer == ("idempotency_key",)
    nested = resolve_carrier(make_op(mechanism="body", key="/meta/a~1b/k~0", body=json_body(schema)))
    assert nested.binding is not None
    assert nested.binding.pointer == ("meta", "a/b", "k~")
    assert nested.binding.key == "k~"


def test_a_body_carrier_field_must_be_declared_string_like_in_a_json_body() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer"},
            "c": {"const": "x"},
            "e": {"enum": ["a", "b"]},
            "t": {"type": ["string", "null"]},
        },
    }
    body = json_body(schema)
    assert resolve_carrier(make_op(mechanism="body", key="n", body=body)).code == "unsupported_idempotency_carrier"
    assert (
        resolve_carrier(make_op(mechanism="body", key="missing", body=body)).code == "unsupported_idempotency_carrier"
    )
    for key in ("c", "e", "t"):
        assert resolve_carrier(make_op(mechanism="body", key=key, body=body, derivation="client_supplied")).ok
    xml = json_body(schema, "application/xml")
    assert resolve_carrier(make_op(mechanism="body", key="t", body=xml)).code == "unsupported_idempotency_carrier"
    assert resolve_carrier(
        make_op(mechanism="body", key="t", body=json_body(schema, "application/merge-patch+json"))
    ).ok
    assert resolve_carrier(make_op(mechanism="body", key="t")).code == "unsupported_idempotency_carrier"


@pytest.mark.parametrize("media", ["application/x-www-form-urlencoded", "multipart/form-data; charset=utf-8"])
def test_a_top_level_field_of_a_form_body_carries_a_key_like_a_json_body_field(media: str) -> None:
    schema = {
        "type": "object",
        "properties": {"IdempotencyKey": {"type": "string"}, "Amount": {"type": "integer"}},
    }
    binding = resolve_carrier(make_op(mechanism="body", key="IdempotencyKey", body=json_body(schema, media))).binding
    assert binding is not None
    assert (binding.mechanism, binding.key, binding.pointer) == ("body", "IdempotencyKey", ("IdempotencyKey",))
    assert binding.schema == {"type": "string"}
    refused = resolve_carrier(make_op(mechanism="body", key="Amount", body=json_body(schema, media)))
    assert refused.code == "unsupported_idempotency_carrier" and "not declared as a string" in (refused.issue or "")


def test_a_nested_key_has_no_coordinate_in_a_form_body() -> None:
    schema = {"type": "object", "properties": {"meta": {"type": "object", "properties": {"k": {"type": "string"}}}}}
    form = json_body(schema, "application/x-www-form-urlencoded")
    refused = resolve_carrier(make_op(mechanism="body", key="/meta/k", body=form))
    assert refused.code == "unsupported_idempotency_carrier"
    assert refused.issue == (
        "body field '/meta/k' is nested, but a form body (application/x-www-form-urlencoded) has top-level fields only"
    )
    assert resolve_carrier(make_op(mechanism="body", key="/meta/k", body=json_body(schema))).ok


def test_a_legacy_body_param_carries_a_body_key() -> None:
    param = Param(name="token", in_="body", schema={"type": "string"})
    binding = resolve_carrier(make_op(mechanism="body", key="token", params=(param,))).binding
    assert binding is not None
    assert binding.input_name == "token"


def test_a_fingerprint_derived_key_needs_a_schema_that_accepts_anvil_hex() -> None:
    def check(schema: dict[str, Any]) -> str | None:
        param = Param(name="Idempotency-Key", in_="header", schema=schema)
        return resolve_carrier(make_op(params=(param,), mode="key_supported", derivation="request_fingerprint")).code

    assert check({"type": "string"}) is None
    assert check({"type": "string", "minLength": 38, "maxLength": 38}) is None
    assert check({"type": "string", "pattern": "^[!-~]+$"}) is None
    assert check({"type": "string", "pattern": "^anvil-[0-9a-f]{32}$"}) is None
    for bad in (
        {"type": "string", "format": "uuid"},
        {"type": "string", "maxLength": 36},
        {"type": "string", "minLength": 40},
        {"type": "string", "pattern": "^[0-9]+$"},
        {"type": "string", "enum": ["a"]},
        {"allOf": [{"type": "string"}]},
    ):
        assert check(bad) == "unsupported_idempotency_carrier_schema", bad


def test_a_client_supplied_key_schema_that_accepts_no_key_fails_on_schema() -> None:
    param = Param(name="Idempotency-Key", in_="header", schema={"type": "string", "maxLength": 0})
    assert resolve_carrier(make_op(params=(param,))).code == "unsupported_idempotency_carrier_schema"


def test_body_pointers_parse_per_rfc_6901() -> None:
    assert parse_body_pointer("key") == ("key",)
    assert parse_body_pointer("/a/b") == ("a", "b")
    assert parse_body_pointer("/a~1b/c~0d") == ("a/b", "c~d")
    assert parse_body_pointer("/a//b") is None
    assert parse_body_pointer("/a~2") is None
    assert parse_body_pointer("") is None


def test_the_effective_credential_carrier_follows_the_auth_type() -> None:
    assert effective_auth_carrier(Auth(type="none")) is None
    api = effective_auth_carrier(Auth(type="api_key"))
    assert api is not None and (api.in_, api.name) == ("header", "X-API-Key")
    provided = Auth(type="api_key", provider=AuthProvider(api_key=ApiKeyCarrier(in_="query", name="key")))
    carrier = effective_auth_carrier(provided)
    assert carrier is not None and (carrier.in_, carrier.name) == ("query", "key")
    bearer = effective_auth_carrier(Auth(type="oauth2_client_credentials"))
    assert bearer is not None and bearer.scheme == "Bearer"


def test_a_key_header_equal_to_the_credential_header_conflicts() -> None:
    op = make_op(key="X-Api-Key", auth=Auth(type="api_key"))
    binding = resolve_carrier(op).binding
    assert binding is not None
    assert auth_carrier_conflict(op, binding)
    other = make_op(auth=Auth(type="api_key"))
    other_binding = resolve_carrier(other).binding
    assert other_binding is not None
    assert not auth_carrier_conflict(other, other_binding)


def _key(name: str, where: str = "header") -> Auth:
    return Auth(type="api_key", provider=AuthProvider(api_key=ApiKeyCarrier(in_=where, name=name)))


def test_every_factor_of_a_composite_has_its_carrier_and_a_composite_none_of_its_own() -> None:
    composite = Auth(type="composite", factors=(_key("X-Client-Id"), _key("tenant_key", "query"), Auth(type="basic")))
    assert effective_auth_carrier(composite) is None
    carriers = effective_auth_carriers(composite)
    assert [(c.in_, c.name) for c in carriers] == [
        ("header", "X-Client-Id"),
        ("query", "tenant_key"),
        ("header", "Authorization"),
    ]


def test_factors_clash_in_one_header_whatever_its_case_or_in_authorization_but_not_across_header_and_query() -> None:
    assert factor_carrier_clash((_key("X-Key"), _key("x-key"))) == (0, 1, AuthCarrier(in_="header", name="x-key"))
    clash = factor_carrier_clash((_key("A"), Auth(type="basic"), Auth(type="jwt_bearer")))
    assert clash is not None and clash[:2] == (1, 2)
    assert factor_carrier_clash((_key("key"), _key("key", "query"))) is None
    assert factor_carrier_clash((_key("k", "query"), _key("K", "query"))) is None  # query names are exact


def test_a_key_carrier_conflicts_with_any_factor_of_a_composite() -> None:
    composite = Auth(type="composite", factors=(_key("X-Client-Id"), _key("Idempotency-Key")))
    op = make_op(auth=composite)
    binding = resolve_carrier(op).binding
    assert binding is not None and auth_carrier_conflict(op, binding)
    other = make_op(auth=Auth(type="composite", factors=(_key("X-Client-Id"), _key("X-Secret"))))
    other_binding = resolve_carrier(other).binding
    assert other_binding is not None and not auth_carrier_conflict(other, other_binding)
