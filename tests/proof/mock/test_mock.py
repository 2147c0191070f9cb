"""The generated mock upstream: state by path template, validation, idempotency, faults, the request log."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from anvil.bundle.read import read_bundle
from anvil.proof.mock import MAX_BODY_BYTES, MockApi, create_mock_app
from tests.serve.budget_upstream import catalog_document

REPO = "/repos/octo/hello"


@pytest.fixture
async def github_mock(github: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_mock_app(MockApi(read_bundle(github)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as client:
        yield client


@pytest.fixture
async def payments_mock(payments: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_mock_app(MockApi(read_bundle(payments)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as client:
        yield client


@pytest.mark.anyio
async def test_a_create_stores_an_item_that_get_list_update_and_delete_then_see(github_mock: httpx.AsyncClient) -> None:
    created = await github_mock.post(f"{REPO}/issues", json={"title": "Broken", "body": "It fails."})
    assert created.status_code == 201
    issue = created.json()
    assert (issue["title"], issue["body"], issue["number"]) == ("Broken", "It fails.", 1)
    assert issue["state"] in ("open", "closed")  # generated from the schema's enum

    assert (await github_mock.get(f"{REPO}/issues/1")).json() == issue
    assert (await github_mock.get(f"{REPO}/issues")).json() == [issue]
    patched = await github_mock.patch(f"{REPO}/issues/1", json={"state": "closed"})
    assert patched.json() == {**issue, "state": "closed"}
    assert (await github_mock.get(f"{REPO}/issues", params={"state": "open"})).json() == []
    assert (await github_mock.get(f"{REPO}/issues", params={"state": "all"})).json() == [patched.json()]


@pytest.mark.anyio
async def test_items_are_found_by_their_own_field_and_a_delete_makes_them_gone(github_mock: httpx.AsyncClient) -> None:
    release = (await github_mock.post(f"{REPO}/releases", json={"tag_name": "v1.0", "draft": True})).json()
    assert release["draft"] is True
    by_tag = await github_mock.get(f"{REPO}/releases/tags/v1.0")
    assert by_tag.json() == release
    assert (await github_mock.get(f"{REPO}/releases/tags/v9.9")).status_code == 404

    comment = (await github_mock.post(f"{REPO}/issues/7/comments", json={"body": "hi"})).json()
    assert (await github_mock.get(f"{REPO}/issues/7/comments")).json() == [comment]
    assert (await github_mock.get(f"{REPO}/issues/8/comments")).json() == []  # listed by the path created under
    deleted = await github_mock.delete(f"{REPO}/issues/comments/{comment['id']}")
    assert (deleted.status_code, deleted.content) == (204, b"")
    assert (await github_mock.get(f"{REPO}/issues/7/comments")).json() == []
    assert (await github_mock.delete(f"{REPO}/issues/comments/{comment['id']}")).status_code == 404


@pytest.mark.anyio
async def test_a_read_only_kind_is_filled_in_on_first_read_and_then_remembered(
    payments_mock: httpx.AsyncClient,
) -> None:
    customer = await payments_mock.get("/customers/cus_42")
    assert customer.status_code == 200 and customer.json()["id"] == "cus_42"
    assert (await payments_mock.get("/customers/cus_42")).json() == customer.json()
    captured = await payments_mock.post("/payments/pay_1/capture")
    assert captured.status_code == 200 and captured.json()["id"] == "pay_1"


@pytest.mark.anyio
async def test_a_request_that_does_not_fit_the_operation_inputs_is_a_400_naming_the_field(
    github_mock: httpx.AsyncClient,
) -> None:
    missing = await github_mock.post(f"{REPO}/issues", json={"body": "no title"})
    assert (missing.status_code, missing.json()["code"], missing.json()["field"]) == (400, "invalid_input", "body")
    typed = await github_mock.get(f"{REPO}/issues/not-a-number")
    assert (typed.status_code, typed.json()["field"]) == (400, "issue_number")
    not_json = await github_mock.post(f"{REPO}/issues", content=b"{", headers={"content-type": "application/json"})
    assert not_json.status_code == 400
    big = await github_mock.post(f"{REPO}/issues", content=b" " * (MAX_BODY_BYTES + 1))
    assert (big.status_code, big.json()["code"]) == (413, "request_too_large")
    assert (await github_mock.get("/nowhere")).status_code == 404
    assert (await github_mock.put(f"{REPO}/issues")).status_code == 405
    assert (await github_mock.get(f"{REPO}/issues")).json() == []  # nothing refused changed anything


@pytest.mark.anyio
async def test_the_declared_idempotency_carrier_replays_the_first_answer_and_refuses_another_body(
    payments_mock: httpx.AsyncClient,
) -> None:
    body = {"amount": 100, "currency": "EUR"}
    first = await payments_mock.post("/payments/pay_1/refunds", json=body, headers={"Idempotency-Key": "k-1"})
    again = await payments_mock.post("/payments/pay_1/refunds", json=body, headers={"Idempotency-Key": "k-1"})
    other = await payments_mock.post(
        "/payments/pay_1/refunds", json={**body, "amount": 5}, headers={"Idempotency-Key": "k-1"}
    )
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and first.json()["payment_id"] == "pay_1"
    assert (other.status_code, other.json()["code"]) == (409, "idempotency_key_reused")
    log = (await payments_mock.get("/__anvil/requests")).json()
    assert [entry.get("replayed", False) for entry in log["requests"]] == [False, True, False]
    fresh = await payments_mock.post("/payments/pay_1/refunds", json=body, headers={"Idempotency-Key": "k-2"})
    assert fresh.json()["id"] != first.json()["id"]


@pytest.fixture
async def telephony_mock(telephony: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_mock_app(MockApi(read_bundle(telephony)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as client:
        yield client


PAYMENTS = "/2010-04-01/Accounts/AC1/Payments.json"


@pytest.mark.anyio
async def test_a_form_field_carrier_replays_the_first_answer_and_refuses_another_form(
    telephony_mock: httpx.AsyncClient,
) -> None:
    form = {"IdempotencyKey": "pay-1", "StatusCallback": "https://cb.example", "ChargeAmount": "10.5"}
    first = await telephony_mock.post(PAYMENTS, data=form)
    again = await telephony_mock.post(PAYMENTS, data=form)
    other = await telephony_mock.post(PAYMENTS, data={**form, "ChargeAmount": "11"})
    fresh = await telephony_mock.post(PAYMENTS, data={**form, "IdempotencyKey": "pay-2"})
    assert first.status_code == again.status_code == fresh.status_code == 201
    assert again.json() == first.json() and first.json()["ChargeAmount"] == 10.5  # typed by the body schema
    assert (other.status_code, other.json()["code"]) == (409, "idempotency_key_reused")
    assert fresh.json()["id"] != first.json()["id"]
    log = (await telephony_mock.get("/__anvil/requests")).json()["requests"]
    assert [entry.get("replayed", False) for entry in log] == [False, True, False, False]
    assert log[0]["body"] == {"IdempotencyKey": "pay-1", "StatusCallback": "https://cb.example", "ChargeAmount": 10.5}


@pytest.mark.anyio
async def test_a_multipart_field_carrier_dedupes_and_its_fields_are_typed(telephony_mock: httpx.AsyncClient) -> None:
    path = "/2010-04-01/Accounts/AC1/Recordings.json"
    fields = {"RequestToken": "rec-1", "Label": "intro", "Channels": "2"}
    first = await telephony_mock.post(path, files={name: (None, value) for name, value in fields.items()})
    again = await telephony_mock.post(path, files={name: (None, value) for name, value in fields.items()})
    assert first.status_code == again.status_code == 201 and again.json() == first.json()
    assert first.json()["Label"] == "intro" and "RequestToken" not in first.json()
    log = (await telephony_mock.get("/__anvil/requests")).json()["requests"]
    assert log[0]["body"] == {"RequestToken": "rec-1", "Label": "intro", "Channels": 2}
    assert log[1]["replayed"] is True


@pytest.mark.anyio
async def test_an_injected_fault_answers_its_status_for_its_times_then_the_api_answers_again(
    github_mock: httpx.AsyncClient,
) -> None:
    refused = await github_mock.post("/__anvil/fault", json={"status": 999})
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid_fault")
    await github_mock.post("/__anvil/fault", json={"status": 503, "times": 2, "path": f"{REPO}/pulls"})
    answers = [(await github_mock.get(f"{REPO}/pulls")).status_code for _ in range(3)]
    assert answers == [503, 503, 200]
    injected = await github_mock.post("/__anvil/fault", json={"status": 500})
    assert injected.status_code == 201
    assert (await github_mock.get(f"{REPO}/pulls")).json()["code"] == "injected_fault"
    await github_mock.post(
        "/__anvil/fault", json={"status": 503, "method": "POST", "path": "/repos/{owner}/{repo}/issues"}
    )
    assert (await github_mock.post(f"{REPO}/issues", json={"title": "x"})).status_code == 503
    assert (await github_mock.get(f"{REPO}/issues")).json() == []  # a fault before commit changes nothing
    await github_mock.post("/__anvil/fault", json={"status": 502, "after_commit": True})
    assert (await github_mock.post(f"{REPO}/issues", json={"title": "lost"})).status_code == 502
    assert [issue["title"] for issue in (await github_mock.get(f"{REPO}/issues", params={"state": "all"})).json()] == [
        "lost"
    ]
    assert (await github_mock.get("/__anvil/fault")).json() == {"faults": []}


@pytest.mark.anyio
async def test_the_request_log_shows_each_request_with_its_coordinates_and_never_a_credential(
    github_mock: httpx.AsyncClient,
) -> None:
    await github_mock.get(f"{REPO}/issues", params={"state": "open"}, headers={"Authorization": "Bearer s3cret"})
    await github_mock.post(f"{REPO}/issues/3/comments", json={"body": "b"}, headers={"Idempotency-Key": "key-9"})
    log = (await github_mock.get("/__anvil/requests")).json()
    assert log["count"] == 2
    first, second = log["requests"]
    assert (first["operation"], first["query"], first["headers"]["authorization"]) == (
        "github.issues.list",
        [["state", "open"]],
        "***",
    )
    assert "s3cret" not in str(log)
    assert (second["path"], second["body"], second["headers"]["idempotency-key"], second["status"]) == (
        f"{REPO}/issues/3/comments",
        {"body": "b"},
        "key-9",
        201,
    )
    assert (await github_mock.get("/__anvil/requests", params={"since": "1"})).json()["requests"] == [second]
    await github_mock.post("/__anvil/reset")
    assert (await github_mock.get("/__anvil/requests")).json() == {"count": 0, "requests": []}
    assert (await github_mock.get(f"{REPO}/issues/3/comments")).json() == []


@pytest.mark.anyio
async def test_the_same_seed_gives_the_same_generated_answers_and_another_seed_other_ones(payments: Path) -> None:
    document = read_bundle(payments)

    async def customer(seed: int) -> object:
        app = create_mock_app(MockApi(document, seed=seed))
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as client:
            return (await client.get("/customers/cus_1")).json()

    assert await customer(1) == await customer(1)
    assert await customer(1) != await customer(2)


@pytest.mark.anyio
async def test_a_kind_is_bounded_and_a_client_chosen_id_cannot_be_taken_twice(payments: Path) -> None:
    app = create_mock_app(MockApi(read_bundle(payments), max_items=2))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as client:
        body = {"amount": 1, "currency": "EUR", "id": "ref_fixed"}
        first = await client.post("/payments/pay_1/refunds", json=body)
        taken = await client.post("/payments/pay_1/refunds", json=body)
        second = await client.post("/payments/pay_1/refunds", json={"amount": 2, "currency": "EUR"})
        full = await client.post("/payments/pay_1/refunds", json={"amount": 3, "currency": "EUR"})
    assert (first.status_code, first.json()["id"]) == (201, "ref_fixed")
    assert (taken.status_code, taken.json()["code"]) == (409, "already_exists")
    assert second.status_code == 201
    assert (full.status_code, full.json()["code"]) == (507, "mock_full")


@pytest.mark.anyio
async def test_a_create_answers_within_a_closed_output_schema_with_an_id_of_the_declared_format(events: Path) -> None:
    import jsonschema

    from anvil.air.tools import output_projection

    doc = read_bundle(events)
    create = doc.operation("events.events.create")
    assert create is not None
    projection = output_projection(create, doc.schemas)
    assert projection is not None
    body = {
        "title": "Launch",
        "start": "2030-01-01T10:00:00Z",
        "end": "2030-01-01T11:00:00Z",
        "price": {"amount": 5, "currency": "EUR"},
        "kind": "https://example.com/venue",
    }
    app = create_mock_app(MockApi(doc))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as client:
        created = await client.post(f"/accounts/AC{'0' * 32}/events", json=body)
    assert created.status_code == 201
    answer = created.json()
    assert (answer["title"], answer["start"]) == ("Launch", "2030-01-01T10:00:00Z")  # the request, as the schema has it
    assert "price" not in answer and "kind" not in answer
    assert jsonschema.Draft202012Validator(projection.schema).is_valid(answer)
    assert len(answer["id"]) == 36 and answer["id"].count("-") == 4


@pytest.mark.anyio
async def test_a_composite_is_accepted_with_every_factor_and_the_log_masks_each_header_and_query_factor(
    vault: Path,
) -> None:
    app = create_mock_app(MockApi(read_bundle(vault)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as mock:
        factors = {"X-Client-Id": "cid-s3cret", "X-Client-Secret": "sec-s3cret"}
        created = await mock.post(
            "/items",
            params={"tenant_key": "tk-s3cret"},
            json={"name": "box"},
            headers={**factors, "Idempotency-Key": "k-1"},
        )
        assert created.status_code == 201
        log = (await mock.get("/__anvil/requests")).json()
    [entry] = log["requests"]
    assert entry["operation"] == "vault.items.create" and entry["query"] == [["tenant_key", "***"]]
    assert (entry["headers"]["x-client-id"], entry["headers"]["x-client-secret"]) == ("***", "***")
    assert entry["headers"]["idempotency-key"] == "k-1"
    assert "s3cret" not in str(log)


@pytest.mark.anyio
async def test_a_page_size_or_offset_never_filters_a_list_even_when_items_have_a_field_of_that_name() -> None:
    document = catalog_document()
    record = document.schemas["Record"]
    fields = {**record["properties"], "limit": {"type": "integer"}, "offset": {"type": "integer"}}
    document = replace(document, schemas={**document.schemas, "Record": {**record, "properties": fields}})
    app = create_mock_app(MockApi(document))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as client:
        first = (await client.get("/records")).json()["records"]
        sized = (await client.get("/records", params={"limit": 7, "offset": 0})).json()["records"]
    assert first and sized == first  # a gateway that sizes the page gets the same items
