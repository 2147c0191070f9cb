"""GET /openapi: the runtime operations catalog, behind the same auth as /mcp, narrowed by the caller's grant."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.serve.auth.middleware import is_guarded
from anvil.serve.auth.principals import hash_token, parse_principals
from anvil.serve.auth.tokens import StaticTokenAuthenticator
from anvil.serve.catalog import CATALOG_PATH
from anvil.serve.fleet import Fleet
from anvil.serve.listener import create_listener
from tests.serve.support import TOKEN
from tests.serve.test_fleet import Rig, principal, read_grant, write_grant

pytestmark = pytest.mark.anyio

RESOURCE = "https://gw.example/mcp"
BEARERS = {"open": "tok-open", "reader": "tok-reader", "payer": "tok-payer", "nobody": "tok-nobody"}
GRANTS: dict[str, Any] = {
    "open": None,
    "reader": read_grant("github"),
    "payer": write_grant("payments", ["refunds.*", "customers.get"], confirm="allow"),
    "nobody": [],
}


def _authenticator() -> StaticTokenAuthenticator:
    entries = []
    for pid, token in BEARERS.items():
        entry: dict[str, Any] = {"id": pid, "token_sha256": hash_token(token)}
        if GRANTS[pid] is not None:
            entry["grants"] = GRANTS[pid]
        entries.append(entry)
    return StaticTokenAuthenticator(parse_principals({"principals": entries}))


@pytest.fixture
async def rig(github: Document, payments: Document) -> AsyncIterator[Rig]:
    made = Rig(github, payments)
    yield made
    await made.aclose()


async def _get(fleet: Fleet, bearer: str | None = None, *, guarded: bool = True, method: str = "GET") -> httpx.Response:
    app = create_listener(fleet, authenticator=_authenticator() if guarded else None, resource=RESOURCE)
    headers = {"authorization": f"Bearer {bearer}"} if bearer else {}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        return await client.request(method, CATALOG_PATH, headers=headers)


def _tool_names(catalog: dict[str, Any]) -> list[str]:
    parts = catalog["bundles"] if "bundles" in catalog else [catalog]
    return [op["toolName"] for part in parts for op in part["operations"]]


async def test_one_bundle_answers_exactly_the_bundles_runtime_manifest(rig: Rig, payments: Document) -> None:
    answer = await _get(rig.fleet("payments"), guarded=False)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["cache-control"] == "no-store"
    assert answer.content == emit_bundle(payments)["runtime/operations.manifest.json"]
    body = answer.json()
    assert (body["service"], body["version"]) == ("payments", payments.service.version)
    assert [op["id"] for op in body["operations"]] == [op.id for op in payments.operations if op.is_approved]


async def test_a_request_without_a_valid_bearer_gets_the_same_401_as_mcp(rig: Rig) -> None:
    app = create_listener(rig.fleet("payments"), authenticator=_authenticator(), resource=RESOURCE)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        for bearer, code in ((None, "invalid_request"), ("not-a-known-token", "invalid_token")):
            headers = {"authorization": f"Bearer {bearer}"} if bearer else {}
            catalog = await client.get(CATALOG_PATH, headers=headers)
            mcp = await client.post("/mcp", json={}, headers={**headers, "accept": "application/json"})
            assert (catalog.status_code, catalog.json()["error"]["code"]) == (401, code)
            assert catalog.json() == mcp.json()
            challenge = catalog.headers["www-authenticate"]
            assert challenge == mcp.headers["www-authenticate"]
            assert 'resource_metadata="https://gw.example/.well-known/oauth-protected-resource"' in challenge
            assert "operations" not in catalog.text


async def test_an_authenticated_caller_without_a_grant_gets_the_manifest_of_the_one_bundle(
    rig: Rig, payments: Document
) -> None:
    answer = await _get(rig.fleet("payments"), BEARERS["open"])
    assert answer.status_code == 200
    assert answer.content == emit_bundle(payments)["runtime/operations.manifest.json"]


async def test_a_fleet_answers_every_bundle_with_the_prefixed_names_tools_list_shows(rig: Rig) -> None:
    fleet = rig.fleet()
    answer = await _get(fleet, guarded=False)
    body = answer.json()
    assert [(part["id"], part["connector"], part["service"]) for part in body["bundles"]] == [
        ("github", "github", "github"),
        ("payments", "payments", "payments"),
    ]
    assert _tool_names(body) == [tool["name"] for tool in fleet.tools]
    assert all(name.startswith(("github__", "payments__")) for name in _tool_names(body))
    own = json.loads(emit_bundle(rig.docs["github"])["runtime/operations.manifest.json"])
    github = body["bundles"][0]
    assert {key: github[key] for key in own} | {"operations": None} == own | {"operations": None}
    assert [op["id"] for op in github["operations"]] == [op["id"] for op in own["operations"]]


async def test_a_grant_narrows_the_catalog_to_its_bundles_and_the_operations_its_listing_shows(rig: Rig) -> None:
    fleet = rig.fleet()
    reader = (await _get(fleet, BEARERS["reader"])).json()
    assert [part["id"] for part in reader["bundles"]] == ["github"]
    shown = [tool["name"] for tool in fleet.compose(principal("reader", grants=GRANTS["reader"])).tools]
    assert _tool_names(reader) == shown
    assert {op["effect"]["kind"] for op in reader["bundles"][0]["operations"]} == {"read"}
    payer = (await _get(fleet, BEARERS["payer"])).json()
    assert [part["id"] for part in payer["bundles"]] == ["payments"]
    assert [op["id"] for op in payer["bundles"][0]["operations"]] == [
        "payments.customers.get",
        "payments.refunds.create",
    ]
    nobody = (await _get(fleet, BEARERS["nobody"])).json()
    assert nobody == {"bundles": []}


async def test_a_grant_on_one_bundle_gets_the_prefixed_fleet_form_as_its_tools_do(rig: Rig) -> None:
    fleet = rig.fleet("payments")
    body = (await _get(fleet, BEARERS["payer"])).json()
    assert [part["id"] for part in body["bundles"]] == ["payments"]
    assert _tool_names(body) == ["payments__payments_get_customer", "payments__payments_create_refund"]


async def test_the_catalog_is_deterministic_and_carries_no_secret(rig: Rig) -> None:
    first = await _get(rig.fleet(), BEARERS["open"])
    again = await _get(rig.fleet(), BEARERS["open"])
    assert first.content == again.content
    for secret in (TOKEN, *BEARERS.values(), hash_token(BEARERS["open"]), "http://github.test", "http://payments.test"):
        assert secret not in first.text


async def test_only_approved_operations_are_listed_even_when_unapproved_ones_are_served(
    rig: Rig, payments: Document
) -> None:
    held = "payments.capture.create"
    operations = tuple(replace(op, state="review_required") if op.id == held else op for op in payments.operations)
    rig.docs["payments"] = replace(payments, operations=operations)
    fleet = Fleet([rig.bundle("payments")], include_unapproved=True)
    assert held in [tool["_meta"]["anvil/operation_id"] for tool in fleet.tools]
    answer = await _get(fleet, guarded=False)
    assert answer.content == emit_bundle(rig.docs["payments"])["runtime/operations.manifest.json"]
    assert held not in [op["id"] for op in answer.json()["operations"]]


async def test_another_method_is_a_json_405_naming_get(rig: Rig) -> None:
    answer = await _get(rig.fleet("payments"), BEARERS["open"], method="POST")
    assert (answer.status_code, answer.json()["error"]["code"]) == (405, "method_not_allowed")
    assert answer.headers["allow"] == "GET, HEAD"


def test_the_catalog_route_is_guarded_like_mcp() -> None:
    assert is_guarded(CATALOG_PATH) and is_guarded("/mcp") and is_guarded("/call/x")
    assert not any(is_guarded(path) for path in ("/metrics", "/healthz", "/readyz", "/openapi.json"))
