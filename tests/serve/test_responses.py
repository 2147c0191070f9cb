"""Answers within the response budget, through the gateway (original-core §5.6 steps 3-5).

The upstream is ``httpx.MockTransport`` over the catalog fixture (``tests/serve/fixtures/budget``);
the gateway, its validators, the executor, the ledger and the keeper are the real ones.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import mcp.types as types
import pytest
from jsonschema import Draft202012Validator

from anvil.air.model import Document
from anvil.air.tokens import count_tokens
from anvil.ledger.registry import open_ledger
from anvil.serve.answer_store import ANSWER_URI_PREFIX, MemoryAnswers, answer_owner
from anvil.serve.fleet import Fleet, FleetBundle
from anvil.serve.gateway import Gateway
from anvil.serve.mcp.results import CallResult
from anvil.serve.responses import PAGE_CAP_META, PAGE_CAP_PREFIX, TRUNCATED_META, TRUNCATED_PREFIX
from tests.serve.budget_upstream import Upstream, catalog_context, catalog_document, item_list

pytestmark = pytest.mark.anyio

BUDGET = 8000
ALICE = {"sub": "alice", "iss": "https://issuer.test"}
BOB = {"sub": "bob", "iss": "https://issuer.test"}
#: About 5 MB of items (12,000 of about 420 bytes).
BIG = {"object": "list", "data": item_list(12_000), "has_more": True}


@pytest.fixture(scope="module")
def catalog() -> Document:
    return catalog_document()


@pytest.fixture
def upstream() -> Upstream:
    return Upstream(answers={"/items": BIG})


@pytest.fixture
async def client(upstream: Upstream) -> AsyncIterator[httpx.AsyncClient]:
    async with upstream.client() as http:
        yield http


def gateway_of(catalog: Document, client: httpx.AsyncClient, **kwargs: Any) -> Gateway:
    return Gateway(catalog, catalog_context(client), **kwargs)


def wire(result: CallResult | None) -> dict[str, Any]:
    assert result is not None
    out = result.to_wire()
    types.CallToolResult.model_validate(out)  # what the SDK sends (a resource_link is a content kind it knows)
    return out


def text_of(out: dict[str, Any]) -> str:
    text = out["content"][0]["text"]
    assert isinstance(text, str)
    return text


async def test_a_five_megabyte_list_reaches_the_client_within_the_budget_as_json_with_a_marker_and_a_link(
    catalog: Document, client: httpx.AsyncClient
) -> None:
    keeper = MemoryAnswers()
    gateway = gateway_of(catalog, client, keeper=keeper)
    out = wire(await gateway.call("catalog_list_items", {}, identity=ALICE))
    text = text_of(out)
    assert count_tokens(text) <= BUDGET * 1.05
    assert sum(count_tokens(block["text"]) for block in out["content"] if block["type"] == "text") <= BUDGET
    view = json.loads(text)
    served = len(view["data"])
    assert 10 < served < 12_000 and view["data"] == BIG["data"][:served]  # whole leading items
    assert view["has_more"] is True and view["object"] == "list"  # every other field kept
    assert out["structuredContent"] == view  # the model is never given more than the text
    marker_text = out["content"][1]["text"]
    last = BIG["data"][served - 1]["id"]
    assert marker_text.startswith(TRUNCATED_PREFIX)
    assert f'starting_after="{last}"' in marker_text  # the page input and its next value
    assert f"{served:,} of 12,000 items at $.data" in marker_text
    link = out["content"][2]
    assert link["type"] == "resource_link" and link["mimeType"] == "application/json"
    assert link["uri"].startswith(ANSWER_URI_PREFIX) and link["uri"] in marker_text
    marker = out["_meta"][TRUNCATED_META]
    assert marker["continue"] == {"starting_after": last}
    assert marker["page_size"] == {"limit": served}
    assert marker["cuts"] == [{"path": "$.data", "served": served, "total": 12_000, "unit": "items"}]
    assert marker["projection"] == "data[].{id: id, name: name}"
    assert marker["answer"] == link["uri"] and marker["served_tokens"] == count_tokens(text)
    assert marker["total_tokens"] > 1_000_000 and marker["budget"] == BUDGET
    assert "effect" in out["_meta"]  # the effect report travels beside it
    kept = await keeper.read(link["uri"], answer_owner(ALICE))
    assert kept is not None and json.loads(kept.body) == BIG  # the whole answer, to the same principal
    assert await keeper.read(link["uri"], answer_owner(BOB)) is None  # and to no other
    assert await keeper.read(link["uri"], answer_owner(None)) is None


async def test_a_paginated_read_without_a_page_size_reaches_the_upstream_with_the_size_its_first_answer_taught(
    catalog: Document, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    upstream.answers["/items"] = lambda request: {
        "object": "list",
        "data": item_list(int(request.url.params.get("limit", "500"))),
        "has_more": True,
    }
    gateway = gateway_of(catalog, client, keeper=MemoryAnswers())
    first = wire(await gateway.call("catalog_list_items", {}))
    assert "limit" not in upstream.last("/items").url.params  # nothing taught the item size yet
    assert TRUNCATED_META in first["_meta"]
    second = wire(await gateway.call("catalog_list_items", {}))
    size = int(upstream.last("/items").url.params["limit"])
    assert 20 < size < 100  # the largest page that fits 8,000 tokens, under the upstream's maximum of 100
    assert len(json.loads(text_of(second))["data"]) == size
    assert TRUNCATED_META not in second.get("_meta", {})  # the sized page fits whole
    assert count_tokens(text_of(second)) <= BUDGET
    await gateway.call("catalog_list_items", {"limit": 3})
    assert upstream.last("/items").url.params["limit"] == "3"  # the caller's own size is never replaced


async def test_a_page_that_fitted_whole_is_never_sized_smaller_afterwards(
    catalog: Document, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    # Long words: about 14 characters a token, so the estimate (4.2) is cautious and the count is not.
    events = [{"n": n, "text": " documentation" * 40} for n in range(58)]
    upstream.answers["/events"] = {"ok": True, "events": events}
    gateway = gateway_of(catalog, client)
    first = wire(await gateway.call("catalog_list_events", {}))
    assert TRUNCATED_META not in first.get("_meta", {})  # 58 items fitted whole
    responses = gateway._responses
    assert responses is not None
    item, rest = responses.items.estimate("catalog.events.list") or (0.0, 0.0)
    assert (8000 * 0.85 - rest) / item < 58  # the estimate alone would size a smaller page
    await gateway.call("catalog_list_events", {})
    assert upstream.last("/events").url.params["limit"] == "58"


async def test_a_read_whose_spec_shows_an_item_is_sized_from_its_first_call(
    catalog: Document, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    upstream.answers["/records"] = {"records": [], "total": 0}
    gateway = gateway_of(catalog, client)
    await gateway.call("catalog_list_records", {})
    assert upstream.last("/records").url.params["limit"] == "50"  # the example's ~30 tokens: the maximum, 50


async def test_a_page_is_never_sized_without_a_known_item_or_with_the_budget_off(
    catalog: Document, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    upstream.answers["/events"] = {"ok": True, "events": [{"n": 1}], "response_metadata": {"next_cursor": "c2"}}
    gateway = gateway_of(catalog, client)
    await gateway.call("catalog_list_events", {})
    assert "limit" not in upstream.last("/events").url.params
    off = gateway_of(catalog, client, result_token_budget=0)
    await off.call("catalog_list_records", {})
    assert "limit" not in upstream.last("/records").url.params


async def test_a_list_at_the_upstreams_page_cap_with_no_continuation_is_followed_by_a_notice(
    catalog: Document, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    upstream.answers["/records"] = {"records": [{"id": n, "title": "t"} for n in range(50)], "total": 50}
    gateway = gateway_of(catalog, client)
    out = wire(await gateway.call("catalog_list_records", {"offset": 100, "limit": 50}))
    assert json.loads(text_of(out))["records"][49]["id"] == 49  # the answer comes first, whole
    notice = out["content"][1]["text"]
    assert notice.startswith(PAGE_CAP_PREFIX) and "exactly 50 items at $.records" in notice
    assert "offset=150" in notice
    assert out["_meta"][PAGE_CAP_META] == {
        "items": 50,
        "path": "$.records",
        "max_page_size": 50,
        "next": {"offset": 150},
    }
    upstream.answers["/records"] = {"records": [{"id": n, "title": "t"} for n in range(49)], "total": 49}
    shorter = wire(await gateway.call("catalog_list_records", {"limit": 50}))
    assert len(shorter["content"]) == 1 and PAGE_CAP_META not in shorter.get("_meta", {})


async def test_a_full_page_that_names_its_next_cursor_has_no_page_cap_notice(
    catalog: Document, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    events = [{"n": n} for n in range(200)]
    gateway = gateway_of(catalog, client)
    for cursor, notices in (("c2", 0), ("", 1)):
        upstream.answers["/events"] = {"ok": True, "events": events, "response_metadata": {"next_cursor": cursor}}
        out = wire(await gateway.call("catalog_list_events", {"limit": 200}))
        assert sum(block["text"].startswith(PAGE_CAP_PREFIX) for block in out["content"][1:]) == notices


async def test_an_error_envelope_is_never_cut_whatever_the_budget(
    catalog: Document, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    upstream.status["/items"] = 404
    gateway = gateway_of(catalog, client, result_token_budget=1, keeper=MemoryAnswers())
    out = wire(await gateway.call("catalog_list_items", {}))
    assert out["isError"] is True and len(out["content"]) == 1
    envelope = json.loads(text_of(out))
    assert envelope["error"]["code"] == "not_found" and envelope["error"]["operation"] == "catalog.items.list"
    assert out["_meta"]["effect"]["operation"] == "catalog.items.list" and set(out["_meta"]) == {"effect"}


async def test_a_budget_of_zero_answers_the_whole_list_as_compact_json(
    catalog: Document, client: httpx.AsyncClient
) -> None:
    gateway = gateway_of(catalog, client, result_token_budget=0, keeper=MemoryAnswers())
    out = wire(await gateway.call("catalog_list_items", {}))
    assert len(out["content"]) == 1 and TRUNCATED_META not in out["_meta"]
    assert text_of(out) == json.dumps(BIG, separators=(",", ":"), ensure_ascii=False)


async def test_an_answer_within_the_budget_is_compact_json_with_nothing_kept(
    catalog: Document, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    small = {"object": "list", "data": item_list(3, prefix="ünï"), "has_more": False}
    upstream.answers["/items"] = small
    keeper = MemoryAnswers()
    gateway = gateway_of(catalog, client, keeper=keeper)
    out = wire(await gateway.call("catalog_list_items", {"limit": 3}))
    assert text_of(out) == json.dumps(small, separators=(",", ":"), ensure_ascii=False)
    assert "\n" not in text_of(out) and "ünï_000000" in text_of(out)
    assert len(out["content"]) == 1 and keeper._kept == {}  # nothing is kept for an answer not cut


async def test_a_cut_write_replayed_under_its_key_is_cut_the_same_way_without_a_second_request(
    catalog: Document, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    upstream.answers["/exports"] = {"id": "exp_1", "rows": item_list(1000, prefix="row")}  # under the replay ceiling
    keeper = MemoryAnswers()
    gateway = Gateway(catalog, catalog_context(client, open_ledger("memory:")), keeper=keeper)
    arguments = {"name": "all rows"}
    first = wire(await gateway.call("catalog_create_export", arguments, {"idempotency_key": "exp-1"}, identity=ALICE))
    again = wire(await gateway.call("catalog_create_export", arguments, {"idempotency_key": "exp-1"}, identity=ALICE))
    assert len([request for request in upstream.requests if request.url.path == "/exports"]) == 1
    assert again["_meta"]["effect"]["replayed"] is True
    assert text_of(again) == text_of(first) and count_tokens(text_of(first)) <= BUDGET
    assert again["structuredContent"] == first["structuredContent"] == json.loads(text_of(first))
    marks = [dict(out["_meta"][TRUNCATED_META]) for out in (first, again)]
    assert marks[0].pop("answer") != marks[1].pop("answer")  # each answer kept for its own call
    assert marks[0] == marks[1]
    assert not {"continue", "next_page", "page_size", "projection"} & set(marks[0])  # a write: no re-call hints
    kept = await keeper.read(first["content"][2]["uri"], answer_owner(ALICE))
    assert kept is not None and len(json.loads(kept.body)["rows"]) == 1000


async def test_a_dry_run_plan_over_the_budget_is_cut_and_nothing_is_kept(
    catalog: Document, client: httpx.AsyncClient
) -> None:
    keeper = MemoryAnswers()
    gateway = gateway_of(catalog, client, keeper=keeper)
    name = "a very long export name " * 4000
    out = wire(
        await gateway.call("catalog_create_export", {"name": name, "idempotency_key": "dry-1", "anvil_dry_run": True})
    )
    plan = json.loads(text_of(out))
    assert plan["method"] == "POST" and plan["body"]["name"] == name[:2000] + "…"
    assert out["structuredContent"] == plan
    assert [block["type"] for block in out["content"]] == ["text", "text"]
    assert out["content"][1]["text"].startswith(TRUNCATED_PREFIX) and "dry run" in out["content"][1]["text"]
    assert out["_meta"][TRUNCATED_META]["answer"] is None and out["_meta"][TRUNCATED_META]["shortened"] == 1
    assert keeper._kept == {}


async def test_a_projection_is_cut_after_projecting_and_keeps_the_projected_shape(
    catalog: Document, client: httpx.AsyncClient
) -> None:
    keeper = MemoryAnswers()
    gateway = gateway_of(catalog, client, keeper=keeper)
    expression = "data[].{id: id, name: name}"
    out = wire(await gateway.call("catalog_list_items", {"anvil_projection": expression}, identity=ALICE))
    view = json.loads(text_of(out))
    assert count_tokens(text_of(out)) <= BUDGET and view[0] == {"id": "item_000000", "name": "Item 0"}
    assert out["structuredContent"] == {"anvil_projection": expression, "result": view}
    marker = out["_meta"][TRUNCATED_META]
    assert marker["cuts"][0]["path"] == "$" and marker["cuts"][0]["total"] == 12_000
    assert marker["next_page"] == {"starting_after": "item_011999"}  # the next page, not the rest of this view
    assert "continue" not in marker and "page_size" not in marker
    kept = await keeper.read(marker["answer"], answer_owner(ALICE))
    assert kept is not None and len(json.loads(kept.body)) == 12_000  # the whole view


async def test_a_cut_view_the_response_schema_refuses_is_structured_in_the_projected_shape(
    catalog: Document, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    upstream.answers["/report"] = {"rows": [{"n": n, "label": "row " * 20} for n in range(5000)]}
    gateway = gateway_of(catalog, client)
    tool = next(tool for tool in gateway.tools if tool["name"] == "catalog_get_report")
    out = wire(await gateway.call("catalog_get_report", {}))
    view = json.loads(text_of(out))
    assert len(view["rows"]) < 1000  # under the schema's minItems
    assert out["structuredContent"] == {"anvil_projection": "@", "result": view}
    assert Draft202012Validator(tool["outputSchema"]).is_valid(out["structuredContent"])
    items = next(tool for tool in gateway.tools if tool["name"] == "catalog_list_items")
    listed = wire(await gateway.call("catalog_list_items", {}))
    assert "data" in listed["structuredContent"]  # a cut view the schema admits keeps the response's shape
    assert Draft202012Validator(items["outputSchema"]).is_valid(listed["structuredContent"])


async def test_without_a_keeper_the_marker_says_the_whole_answer_is_not_kept(
    catalog: Document, client: httpx.AsyncClient
) -> None:
    out = wire(await gateway_of(catalog, client).call("catalog_list_items", {}))
    assert [block["type"] for block in out["content"]] == ["text", "text"]
    assert "is not kept" in out["content"][1]["text"] and out["_meta"][TRUNCATED_META]["answer"] is None


class _Full:
    """A keeper that keeps nothing (full, or down)."""

    async def keep(self, owner: str, body: bytes, media_type: str = "application/json") -> str | None:
        return None

    async def read(self, uri: str, owner: str) -> None:
        return None


async def test_a_keeper_that_keeps_nothing_leaves_the_cut_answer_without_a_link(
    catalog: Document, client: httpx.AsyncClient
) -> None:
    out = wire(await gateway_of(catalog, client, keeper=_Full()).call("catalog_list_items", {}))
    assert [block["type"] for block in out["content"]] == ["text", "text"]
    assert "could not be kept" in out["content"][1]["text"]


async def test_an_offset_read_cut_continues_at_the_first_item_not_served(
    catalog: Document, client: httpx.AsyncClient, upstream: Upstream
) -> None:
    upstream.answers["/records"] = {"records": [{"id": n, "title": "x " * 200} for n in range(300)], "total": 900}
    out = wire(await gateway_of(catalog, client).call("catalog_list_records", {"offset": 600, "limit": 50}))
    served = len(json.loads(text_of(out))["records"])
    assert out["_meta"][TRUNCATED_META]["continue"] == {"offset": 600 + served}
    assert f"offset={600 + served}" in out["content"][1]["text"]


async def test_a_negative_budget_is_refused_when_the_gateway_is_built(
    catalog: Document, client: httpx.AsyncClient
) -> None:
    with pytest.raises(ValueError, match="result_token_budget"):
        gateway_of(catalog, client, result_token_budget=-1)


async def test_a_fleet_builds_every_gateway_with_its_budget_and_keeper(
    catalog: Document, client: httpx.AsyncClient
) -> None:
    keeper = MemoryAnswers()
    bundles = [FleetBundle(id=name, document=catalog, context=catalog_context(client)) for name in ("one", "two")]
    fleet = Fleet(bundles, result_token_budget=500, keeper=keeper)
    assert {mounted.gateway.result_token_budget for mounted in fleet.mounted(True).values()} == {500}
    out = wire(await fleet.call("one__catalog_list_items", {}, identity=ALICE))
    assert count_tokens(text_of(out)) <= 500
    kept = await keeper.read(out["content"][2]["uri"], answer_owner(ALICE))
    assert kept is not None and json.loads(kept.body) == BIG


async def test_a_cut_answers_link_reads_back_whole_over_mcp_for_its_caller_and_not_found_for_another(
    catalog: Document, client: httpx.AsyncClient
) -> None:
    from mcp.client import Client
    from mcp.shared.exceptions import MCPError

    from anvil.serve.auth.principals import STATIC_ISSUER, Principal
    from anvil.serve.mcp.resources import RESOURCE_NOT_FOUND
    from anvil.serve.mcp.server import build_server

    def verified(pid: str) -> Principal:
        return Principal(id=pid, issuer=STATIC_ISSUER, subject=pid, verified=True)

    bundle = FleetBundle(id="catalog", document=catalog, context=catalog_context(client))
    fleet = Fleet([bundle], keeper=MemoryAnswers())
    alice, bob = fleet.compose(verified("alice")), fleet.compose(verified("bob"))
    async with Client(build_server(fleet, select=lambda request: alice)) as as_alice:
        cut = await as_alice.call_tool("catalog_list_items", {})
        [link] = [block for block in cut.content if block.type == "resource_link"]
        whole = await as_alice.read_resource(str(link.uri))
    [content] = whole.contents
    assert json.loads(getattr(content, "text", "")) == BIG  # the whole answer, to the caller that made the call
    async with Client(build_server(fleet, select=lambda request: bob)) as as_bob:
        with pytest.raises(MCPError) as refused:
            await as_bob.read_resource(str(link.uri))
    assert refused.value.error.code == RESOURCE_NOT_FOUND  # another caller is told nothing is there
