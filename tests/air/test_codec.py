"""AIR round-trips through JSON, applies defaults on load, and refuses documents outside its bounds."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from anvil.air.canonical import hash_canonical
from anvil.air.codec import contract_hash, document_json, from_json, load_document, to_json
from anvil.air.model import ApiKeyCarrier, Auth, AuthProvider
from anvil.compiler import build
from anvil.errors import AirError

PAYMENTS = Path(__file__).resolve().parents[2] / "examples" / "payments"


@pytest.fixture(scope="module")
def payments_json() -> dict[str, Any]:
    result = build(PAYMENTS / "openapi.yaml", manifest=PAYMENTS / "anvil.yaml", service_id="payments")
    return document_json(result.document)


def test_loading_is_idempotent(payments_json: dict[str, Any]) -> None:
    once = load_document(payments_json)
    assert document_json(load_document(document_json(once))) == document_json(once)


def test_contract_hash_ignores_key_order_spelled_out_defaults_and_diagnostics(payments_json: dict[str, Any]) -> None:
    base = contract_hash(payments_json)
    reordered = dict(reversed(list(payments_json.items())))
    assert contract_hash(reordered) == base
    with_diagnostics = {**payments_json, "diagnostics": [{"level": "info", "code": "x", "message": "y"}]}
    assert contract_hash(with_diagnostics) == base
    assert all(op["streaming"] is False for op in payments_json["operations"])
    sparse = {
        **payments_json,
        "operations": [{k: v for k, v in op.items() if k != "streaming"} for op in payments_json["operations"]],
    }
    assert contract_hash(sparse) == base


def test_contract_hash_changes_with_a_description(payments_json: dict[str, Any]) -> None:
    doc = load_document(payments_json)
    changed = replace(doc, operations=(replace(doc.operations[0], description="changed"), *doc.operations[1:]))
    assert contract_hash(changed) != contract_hash(doc)


def test_array_order_changes_the_canonical_hash() -> None:
    assert hash_canonical({"a": [1, 2]}) != hash_canonical({"a": [2, 1]})


@pytest.mark.parametrize("service_id", ["../escape", "nested/service", "UPPER", "has space", "trailing-", "a" * 65])
def test_invalid_service_ids_do_not_load(payments_json: dict[str, Any], service_id: str) -> None:
    bad = {**payments_json, "service": {**payments_json["service"], "id": service_id}}
    with pytest.raises(AirError) as caught:
        load_document(bad)
    assert caught.value.code == "air/invalid"


@pytest.mark.parametrize("service_id", ["a", "payments", "payments-api", "payments_api"])
def test_valid_service_ids_load(payments_json: dict[str, Any], service_id: str) -> None:
    good = {**payments_json, "service": {**payments_json["service"], "id": service_id}}
    assert load_document(good).service.id == service_id


@pytest.mark.parametrize(
    ("field", "value", "loads"),
    [("maxAttempts", 6, False), ("maxAttempts", 5, True), ("baseDelayMs", 20001, False), ("maxDelayMs", 20000, True)],
)
def test_retry_bounds_are_enforced_on_load(payments_json: dict[str, Any], field: str, value: int, loads: bool) -> None:
    ops = [dict(op) for op in payments_json["operations"]]
    ops[0] = {**ops[0], "retries": {**ops[0]["retries"], field: value}}
    doc = {**payments_json, "operations": ops}
    if loads:
        assert load_document(doc).operations[0].retries is not None
    else:
        with pytest.raises(AirError) as caught:
            load_document(doc)
        assert caught.value.code == "air/invalid"


@pytest.mark.parametrize(
    ("budget", "loads"),
    [
        ({"toolBudgetTokens": 2000}, True),
        ({"outputSchemaPercent": 0}, True),
        ({"toolBudgetTokens": 0}, False),
        ({"outputSchemaPercent": -1}, False),
        ({"outputSchemaPercent": 10_001}, False),
    ],
)
def test_disclosure_budgets_are_bounded_on_load(
    payments_json: dict[str, Any], budget: dict[str, int], loads: bool
) -> None:
    doc = {**payments_json, "disclosure": budget}
    if loads:
        loaded = load_document(doc)
        assert loaded.disclosure is not None and document_json(loaded)["disclosure"]["toolBudgetTokens"] > 0
    else:
        with pytest.raises(AirError) as caught:
            load_document(doc)
        assert caught.value.code == "air/invalid" and "disclosure." in caught.value.message


def test_unknown_fields_and_bad_enum_values_are_refused(payments_json: dict[str, Any]) -> None:
    ops = [dict(op) for op in payments_json["operations"]]
    for bad_op in ({**ops[0], "surprise": 1}, {**ops[0], "state": "live"}):
        with pytest.raises(AirError):
            load_document({**payments_json, "operations": [bad_op]})


def _as_the_original_writes_it(payments_json: dict[str, Any]) -> dict[str, Any]:
    """payments AIR with the fields the original writes and we did not model before."""
    import copy

    data = copy.deepcopy(payments_json)
    data["service"]["source"]["origin"] = {"kind": "file", "uri": "examples/payments/openapi.yaml"}
    for op in data["operations"]:
        op["disclosureCost"] = {"toolTokens": 180, "charsPerToken": 3.912, "estimator": "o200k_base"}
        for claim in op["evidence"]["claims"]:
            claim["sourceRef"] = "openapi.yaml#/paths"
    first_read = next(op for op in data["operations"] if op["effect"]["kind"] == "read")
    first_read["pagination"] = {"style": "cursor", "cursorParam": "starting_after", "itemsField": "data"}
    return data


def test_air_written_by_the_original_loads_and_keeps_its_extra_fields(payments_json: dict[str, Any]) -> None:
    original = _as_the_original_writes_it(payments_json)
    doc = load_document(original)
    assert doc.service.source.origin is not None and doc.service.source.origin.kind == "file"
    assert doc.operations[0].disclosure_cost is not None and doc.operations[0].disclosure_cost.tool_tokens == 180
    assert all(c.source_ref == "openapi.yaml#/paths" for op in doc.operations for c in op.evidence.claims)
    paged = [op for op in doc.operations if op.pagination is not None]
    assert len(paged) == 1 and paged[0].pagination is not None and paged[0].pagination.cursor_param == "starting_after"
    again = document_json(doc)
    assert again["service"]["source"]["origin"] == {"kind": "file", "uri": "examples/payments/openapi.yaml"}
    assert again["operations"][0]["disclosureCost"] == {
        "toolTokens": 180,
        "responseItemTokens": 0,
        "responseTokens": 0,
        "charsPerToken": 3.912,
        "estimator": "o200k_base",
    }
    assert load_document(again) == doc


@pytest.mark.anyio
async def test_a_bundle_migrated_from_the_original_reads_and_serves(
    payments_json: dict[str, Any], tmp_path: Path
) -> None:
    import json

    import httpx

    from anvil.bundle.read import read_bundle
    from anvil.runtime.context import RuntimeContext
    from anvil.serve.gateway import Gateway

    (tmp_path / "air.json").write_text(json.dumps(_as_the_original_writes_it(payments_json)), encoding="utf-8")
    doc = read_bundle(tmp_path)
    async with httpx.AsyncClient() as client:
        gateway = Gateway(doc, RuntimeContext(service_id=doc.service.id, base_url="http://127.0.0.1:9", client=client))
    assert {tool["name"] for tool in gateway.tools} == {op.mcp.tool_name for op in doc.operations if op.is_approved}


def test_an_operations_own_servers_round_trip_and_are_omitted_when_it_has_none(payments_json: dict[str, Any]) -> None:
    assert all("servers" not in op for op in payments_json["operations"])
    assert all("variables" not in server for server in payments_json["service"]["servers"])
    data = json.loads(json.dumps(payments_json))
    upload = {"url": "https://{zone}.example.com/v1", "variables": {"zone": {"default": "upload", "enum": ["upload"]}}}
    data["operations"][0]["servers"] = [upload]
    loaded = load_document(data)
    assert loaded.operations[0].servers is not None and loaded.operations[0].servers[0].variables == upload["variables"]
    written = document_json(loaded)
    assert written["operations"][0]["servers"] == [upload]
    assert "servers" not in written["operations"][1]
    keys = list(written["operations"][0])
    assert keys.index("auth") + 1 == keys.index("servers")  # serialized in declaration order, after auth


def _composite() -> Auth:
    header = AuthProvider(api_key=ApiKeyCarrier(in_="header", name="X-Client-Id"))
    query = AuthProvider(api_key=ApiKeyCarrier(in_="query", name="tenant_key"))
    return Auth(
        type="composite",
        credential_profile="client_id_tenant_key_0123456789abcdef0123456789abcdef",
        factors=(
            Auth(type="api_key", credential_profile="client_id_0123456789abcdef0123456789abcdef", provider=header),
            Auth(type="api_key", credential_profile="tenant_key_0123456789abcdef0123456789abcdef", provider=query),
            Auth(type="basic", credential_profile="basic_0123456789abcdef0123456789abcdef"),
        ),
    )


def test_a_composite_auth_round_trips_with_its_nested_factors_in_order(payments_json: dict[str, Any]) -> None:
    composite = _composite()
    encoded = to_json(composite)
    assert [factor["type"] for factor in encoded["factors"]] == ["api_key", "api_key", "basic"]
    assert from_json(Auth, encoded) == composite
    data = json.loads(json.dumps(payments_json))
    data["operations"][0]["auth"] = encoded
    loaded = load_document(data)
    assert loaded.operations[0].auth == composite
    assert document_json(loaded)["operations"][0]["auth"] == encoded


def test_a_single_scheme_auth_writes_no_factors_key(payments_json: dict[str, Any]) -> None:
    assert "factors" not in json.dumps(payments_json)
    assert "factors" not in to_json(Auth(type="api_key"))


def test_a_factor_of_a_bad_type_does_not_load(payments_json: dict[str, Any]) -> None:
    data = json.loads(json.dumps(payments_json))
    data["operations"][0]["auth"] = {"type": "composite", "factors": [{"type": "carrier_pigeon"}]}
    with pytest.raises(AirError, match=r"factors\[0\]\.type"):
        load_document(data)


def test_document_json_is_to_json_keeps_nothing_between_calls_and_takes_the_operations_json_given(
    payments_json: dict[str, Any],
) -> None:
    payments_doc = load_document(payments_json)
    first = document_json(payments_doc)
    assert first == to_json(payments_doc)
    # Nothing is kept for a later call (a server that hashes its contract holds no copy of its operations).
    assert document_json(payments_doc)["operations"] is not first["operations"]
    relabelled = replace(payments_doc, service=replace(payments_doc.service, version="9.9.9"))
    second = document_json(relabelled, operations=first["operations"])
    assert second == to_json(relabelled)
    assert second["operations"] is first["operations"]  # what the caller already wrote, not written again
    other = replace(payments_doc, operations=payments_doc.operations[:1])
    assert document_json(other) == to_json(other)


def _air_nodes() -> list[type]:
    import dataclasses
    import importlib
    import pkgutil

    import anvil.air

    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(anvil.air.__path__, "anvil.air."):
        for value in vars(importlib.import_module(info.name)).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == info.name:
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[key] for key in sorted(found)]


def test_every_air_nodes_field_types_are_what_get_type_hints_gives() -> None:
    import typing

    from anvil.air.codec import _fields

    nodes = _air_nodes()
    assert len(nodes) > 40
    for node in nodes:
        hints = typing.get_type_hints(node)
        assert [(name, kind) for name, _json, kind, _default in _fields(node)] == [
            (name, hints[name]) for name, _json, _kind, _default in _fields(node)
        ], node


def test_an_annotation_text_shared_by_two_nodes_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins
    import dataclasses

    from anvil.air.codec import _fields

    @dataclasses.dataclass(frozen=True)
    class First:
        """One node."""

        spans: tuple[int, bytes] | None = None

    @dataclasses.dataclass(frozen=True)
    class Second:
        """Another, with the same annotation text."""

        spans: tuple[int, bytes] | None = None

    compiled: list[str] = []
    real_compile = builtins.compile

    def counting(source: Any, *args: Any, **kwargs: Any) -> Any:
        compiled.append(str(source))
        return real_compile(source, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", counting)
    kinds = [_fields(node)[0][2] for node in (First, Second)]

    assert kinds == [tuple[int, bytes] | None] * 2
    assert compiled.count("tuple[int, bytes] | None") == 1
