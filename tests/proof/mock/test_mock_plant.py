"""``POST /__anvil/items``: the mock is given an item of a kind, and only that item is invented."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from anvil.bundle.read import read_bundle
from anvil.proof.mock import MockApi, create_mock_app


@pytest.fixture
async def checkout_mock(checkout: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_mock_app(MockApi(read_bundle(checkout)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as client:
        yield client


@pytest.mark.anyio
async def test_a_planted_item_is_read_back_and_no_other_id_of_a_created_kind_is_invented(
    checkout_mock: httpx.AsyncClient,
) -> None:
    assert (await checkout_mock.get("/sessions/sess_9")).status_code == 404  # the API creates sessions
    planted = await checkout_mock.post("/__anvil/items", json={"kind": "Session", "scope": "/sessions"})
    assert planted.status_code == 201
    item = planted.json()
    assert (item["kind"], item["scope"]) == ("Session", "/sessions")
    assert isinstance(item["data"]["amount"], int)
    read = await checkout_mock.get(f"/sessions/{item['key']}")
    assert (read.status_code, read.json()) == (200, item["data"])
    assert (await checkout_mock.get("/sessions/sess_9")).status_code == 404
    logged = (await checkout_mock.get("/__anvil/requests")).json()["requests"]
    assert [entry["path"] for entry in logged] == ["/sessions/sess_9", f"/sessions/{item['key']}", "/sessions/sess_9"]


@pytest.mark.anyio
async def test_planting_a_kind_the_mock_does_not_serve_is_refused(checkout_mock: httpx.AsyncClient) -> None:
    for body in ({"kind": "Nothing"}, {"scope": "/sessions"}, ["Session"], {"kind": "Session", "scope": 7}):
        refused = await checkout_mock.post("/__anvil/items", json=body)
        assert refused.status_code == 400
        assert refused.json()["code"] == "invalid_seed"
    assert (await checkout_mock.get("/__anvil/items")).json() == {"kinds": {}}


@pytest.mark.anyio
async def test_a_list_filtered_by_the_idempotency_key_lists_only_the_item_made_with_that_key(
    checkout_mock: httpx.AsyncClient,
) -> None:
    made = await checkout_mock.post("/payments", json={"amount": 5}, headers={"Idempotency-Key": "k-1"})
    other = await checkout_mock.post("/payments", json={"amount": 7}, headers={"Idempotency-Key": "k-2"})
    assert (made.status_code, other.status_code) == (201, 201)
    assert (await checkout_mock.get("/payments", params={"idempotency_key": "k-1"})).json() == [made.json()]
    assert (await checkout_mock.get("/payments", params={"idempotency_key": "never"})).json() == []
    assert len((await checkout_mock.get("/payments")).json()) == 2
