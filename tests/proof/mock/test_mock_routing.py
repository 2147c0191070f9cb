"""Routing in the mock and the simulator: literal segments win over templates, and operations that
share a URL are told apart by the query or fragment the spec keys them by, as the executor sends it;
and the mock's answers stay within each operation's answer schema."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from anvil.air.model import Document
from anvil.bundle.read import read_bundle
from anvil.cli.compile import compile_bundle
from anvil.proof.mock import MockApi, create_mock_app
from anvil.proof.simulate.upstream import SimulatedUpstream
from anvil.runtime.request import build_request, prepare

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BASE = "http://mock"


@pytest.fixture(scope="module")
def routing(tmp_path_factory: pytest.TempPathFactory) -> Document:
    out = tmp_path_factory.mktemp("routing") / "routing"
    outcome = compile_bundle(
        FIXTURES / "routing.yaml", out=out, manifest=FIXTURES / "routing.anvil.yaml", service_id="routing"
    )
    assert outcome.bundle_hash is not None
    return read_bundle(out)


def _wire(doc: Document, op_id: str, arguments: dict[str, object]) -> httpx.Request:
    """The request the executor puts on the wire for ``op_id`` (its own path encoding)."""
    op = doc.operation(op_id)
    assert op is not None
    built = build_request(prepare(op), arguments, BASE, None)  # type: ignore[arg-type]
    return httpx.Request(built.method, built.url, content=built.content, headers=list(built.headers))


@pytest.fixture
async def mock(routing: Document) -> AsyncIterator[httpx.AsyncClient]:
    app = create_mock_app(MockApi(routing))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) as client:
        yield client


async def _logged_operation(client: httpx.AsyncClient, request: httpx.Request) -> tuple[int, object]:
    answer = await client.send(request)
    log = (await client.get("/__anvil/requests")).json()["requests"]
    return answer.status_code, log[-1]["operation"]


@pytest.mark.anyio
async def test_the_mock_prefers_a_literal_segment_over_a_template_that_would_also_match_it(
    routing: Document, mock: httpx.AsyncClient
) -> None:
    local = _wire(routing, "routing.local.list", {"account_sid": "AC1"})
    assert local.url.path == "/Accounts/AC1/IncomingPhoneNumbers/Local.json"
    status, operation = await _logged_operation(mock, local)
    assert (status, operation) == (200, "routing.local.list")
    one = _wire(routing, "routing.incoming_phone_numbers.get", {"account_sid": "AC1", "sid": "PN1"})
    status, operation = await _logged_operation(mock, one)
    assert operation == "routing.incoming_phone_numbers.get"


@pytest.mark.anyio
async def test_the_mock_tells_operations_sharing_a_url_apart_by_their_fragment_and_query(
    routing: Document, mock: httpx.AsyncClient
) -> None:
    for op_id, field in (
        ("routing.messages_send.create", "sent"),
        ("routing.messages_recall.create", "recalled"),
        ("routing.responses_beta_true.list", "beta"),
        ("routing.responses.list", "stable"),
    ):
        request = _wire(routing, op_id, {"text": "hi"} if "messages" in op_id else {})
        answer = await mock.send(request)
        log = (await mock.get("/__anvil/requests")).json()["requests"]
        assert log[-1]["operation"] == op_id
        assert answer.is_success and list(answer.json()) == [field], op_id  # within the answer schema
    as_query = await mock.get("/responses", params={"beta": "true"})  # the query key sent as a real query
    assert as_query.json() == {"beta": as_query.json()["beta"]}


@pytest.mark.anyio
async def test_the_simulator_routes_literal_segments_fragments_and_queries_as_the_spec_keys_them(
    routing: Document,
) -> None:
    upstream = SimulatedUpstream(routing)
    cases = [
        ("routing.local.list", {"account_sid": "AC1"}),
        ("routing.incoming_phone_numbers.get", {"account_sid": "AC1", "sid": "PN1"}),
        ("routing.messages_send.create", {"text": "hi"}),
        ("routing.messages_recall.create", {"text": "hi"}),
        ("routing.responses_beta_true.list", {}),
        ("routing.responses.list", {}),
    ]
    for op_id, arguments in cases:
        upstream.answer(_wire(routing, op_id, arguments))
        assert upstream.hits[op_id] == 1, (op_id, dict(upstream.hits))


@pytest.mark.anyio
async def test_a_wrapped_create_answers_within_its_schema_and_its_item_is_found_and_deleted_by_id(
    mock: httpx.AsyncClient,
) -> None:
    created = await mock.post("/widgets", json={"widget": {"name": "w", "colour": "red"}})
    assert created.status_code == 201
    widget = created.json()["widget"]
    assert created.json() == {"widget": {"id": widget["id"], "name": "w"}}  # no colour, no top-level id
    found = await mock.get(f"/widgets/{widget['id']}")
    assert found.json() == created.json()
    assert (await mock.delete(f"/widgets/{widget['id']}")).status_code == 204
    assert (await mock.get(f"/widgets/{widget['id']}")).status_code == 404
