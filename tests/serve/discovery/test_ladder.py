"""A laddered surface (original-core §5.15): lane cards at rest, members opened by calling a card, every gate
intact through the proxies, and the session's list growing (with list_changed) where the protocol keeps one."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import anyio
import httpx
import pytest
from mcp import ClientSession
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from anvil.air.model import Document
from anvil.compiler import build
from anvil.compiler.manifest.draft import draft_manifest
from anvil.runtime.context import RuntimeContext
from anvil.serve.discovery.ladder import (
    CAPABILITY_META,
    LANE_META,
    LANE_TOKENS_META,
    LANE_TOOLS_META,
    Ladder,
    LaneTool,
    card_name,
    plan_ladder,
)
from anvil.serve.discovery.meta import CALL_READ_TOOL, CALL_WRITE_TOOL, INPUTS_FROM_META, SEARCH_TOOL
from anvil.serve.discovery.modes import DisclosureSettings, measure_listing
from anvil.serve.fleet import Fleet, FleetBundle, FleetError
from anvil.serve.mcp.http import create_app
from anvil.serve.mcp.results import CallResult
from anvil.serve.mcp.server import build_server
from tests.serve.mcp.test_hotpath import serving
from tests.serve.support import OWNER_REPO
from tests.serve.test_fleet import Rig, error_of, principal, read_grant

pytestmark = pytest.mark.anyio

LADDERED = DisclosureSettings(mode="laddered")
ISSUES = "open_github_issue"
COMMENT = {**OWNER_REPO, "issue_number": 2, "body": "Found through a lane"}


def names(tools: Any) -> list[str]:
    return [tool["name"] if isinstance(tool, dict) else tool.name for tool in tools]


def opened(result: CallResult | None) -> dict[str, Any]:
    assert result is not None and result.kind == "success", result
    assert isinstance(result.data, dict) and result.structured == result.data
    return result.data


def lane_tools(fleet: Fleet) -> list[LaneTool]:
    return [
        LaneTool(name, mounted.tool.op, mounted.bundle.document, mounted.bundle.id if fleet.prefixed else None)
        for name, mounted in fleet.mounted(fleet.prefixed).items()
    ]


async def test_lanes_are_deterministic_and_hold_every_tool_in_exactly_one_lane(rig: Rig) -> None:
    fleet = rig.fleet(disclosure=LADDERED)
    first, again = Ladder.build(lane_tools(fleet)), Ladder.build(reversed(lane_tools(fleet)))
    assert first == fleet.ladder(True) == Ladder.build(lane_tools(fleet))
    assert {lane.card: lane for lane in first.lanes} == {lane.card: lane for lane in again.lanes}
    assert [lane.card for lane in first.lanes] == sorted(lane.card for lane in first.lanes)  # bundle, then capability
    members = [member for lane in first.lanes for member in lane.members]
    assert sorted(members) == sorted(fleet.mounted(True)) and len(members) == len(set(members))
    assert first.unlaned == () and first.collisions == ()
    github_ops = {op.id: op.capability_id for op in rig.docs["github"].operations if op.is_approved}
    for lane in first.lanes:
        assert list(lane.operation_ids) == sorted(lane.operation_ids)
        assert all(github_ops.get(op_id, lane.capability_id) == lane.capability_id for op_id in lane.operation_ids)


async def test_an_operation_without_a_capability_lanes_by_first_tag_then_resource_then_service(
    github: Document,
) -> None:
    ops = [op for op in github.operations if op.is_approved][:3]
    tagged = dataclasses.replace(ops[0], capability_id=None, tags=("Pull Requests",))
    resourced = dataclasses.replace(ops[1], capability_id=None, tags=())
    bare = dataclasses.replace(
        ops[2], capability_id=None, tags=(), effect=dataclasses.replace(ops[2].effect, resource="")
    )
    ladder = Ladder.build(LaneTool(op.mcp.tool_name, op, github) for op in (tagged, resourced, bare))
    lanes = {lane.operation_ids[0]: lane for lane in ladder.lanes}
    assert lanes[tagged.id].capability_id == "github.pull_requests"
    assert lanes[tagged.id].display_name == "Pull Requests"
    assert lanes[resourced.id].capability_id == f"github.{resourced.effect.resource}"
    assert lanes[bare.id].capability_id == "github.github"
    assert lanes[bare.id].routing_phrases == ("work with github", "manage github")


async def test_a_card_is_open_capability_read_only_and_says_what_it_opens(rig: Rig) -> None:
    fleet = rig.fleet("github", disclosure=LADDERED)
    surface = fleet.default.surface
    assert surface.mode == "laddered" and surface.plan is not None and surface.plan.reason == "over_budget"
    card = next(tool for tool in fleet.tools if tool["name"] == ISSUES)
    assert card_name("github.issue") == ISSUES and card_name("a.b c/d") == "open_a_b_c_d"
    assert card["title"] == "Open Issue"
    assert card["description"] == (
        "Issue capability for github. Opens 4 tool(s) for Issue. Covers: create issue, get issue, list issue, "
        "update issue. Use for requests like: work with issue; manage issue."
    )
    assert card["annotations"] == {
        "title": "Open Issue",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }
    measured = sum(
        op.disclosure_cost.tool_tokens
        for op in rig.docs["github"].operations
        if op.capability_id == "github.issue" and op.disclosure_cost is not None
    )
    assert card["_meta"] == {
        LANE_META: True,
        CAPABILITY_META: "github.issue",
        LANE_TOOLS_META: 4,
        LANE_TOKENS_META: measured,
    }
    prefixed = next(tool for tool in rig.fleet(disclosure=LADDERED).tools if tool["name"] == "github__" + ISSUES)
    assert prefixed["_meta"]["anvil/fleet_bundle_id"] == "github"
    assert prefixed["_meta"]["anvil/fleet_tool_name"] == ISSUES


async def test_at_rest_a_laddered_list_shows_the_proxies_the_cards_and_the_pinned_tools_only(
    rig: Rig, github: Document
) -> None:
    from anvil.air.model import DisclosureBudget

    rig.docs["github"] = dataclasses.replace(github, disclosure=DisclosureBudget(pinned=("pulls.*",)))
    fleet = rig.fleet("github", disclosure=LADDERED)
    listed = names(fleet.tools)
    assert listed == [
        CALL_READ_TOOL,
        CALL_WRITE_TOOL,
        "open_github_comment",
        ISSUES,
        "open_github_release",
        "github_list_pull",
    ]
    assert SEARCH_TOOL not in listed
    rest, flat = measure_listing(fleet.tools).tokens, measure_listing(fleet.default.flat_tools).tokens
    assert rest is not None and flat is not None and rest < flat
    assert fleet.ladder(False).unlaned == ("github_list_pull",)


async def test_opening_a_card_answers_its_members_exactly_as_search_returns_them(rig: Rig) -> None:
    laddered = rig.fleet(disclosure=LADDERED)
    searched = rig.fleet(disclosure=DisclosureSettings(mode="search"))
    found = opened(await laddered.call("github__" + ISSUES, {}))
    assert found["lane"] == "github.issue" and found["total"] == 4 and "next_offset" not in found
    assert names(found["tools"]) == [
        "github__github_create_issue",
        "github__github_get_issue",
        "github__github_list_issue",
        "github__github_update_issue",
    ]
    for entry in found["tools"]:
        search = opened(await searched.call(SEARCH_TOOL, {"query": entry["name"], "limit": 1}))
        assert search["tools"][0] == entry
    get_issue = found["tools"][1]
    assert "github__github_list_issue" in json.dumps(get_issue["_meta"].get(INPUTS_FROM_META, {}))
    again = opened(await laddered.call("github__" + ISSUES, {"offset": 0}))
    assert again == found  # opening twice is the same answer


async def test_a_card_answer_over_the_response_budget_is_cut_to_whole_tools_and_goes_on_from_next_offset(
    rig: Rig,
) -> None:
    fleet = rig.fleet("github", disclosure=LADDERED, result_token_budget=1)
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = opened(await fleet.call(ISSUES, {"offset": offset}))
        assert len(page["tools"]) == 1 and page["total"] == 4
        seen += names(page["tools"])
        offset = page.get("next_offset")
    assert seen == names(opened(await rig.fleet("github", disclosure=LADDERED).call(ISSUES, {}))["tools"])
    beyond = opened(await fleet.call(ISSUES, {"offset": 9}))
    assert beyond["tools"] == [] and "next_offset" not in beyond


@pytest.mark.parametrize(
    ("arguments", "field"),
    [({"offset": -1}, "offset"), ({"offset": True}, "offset"), ({"offset": "2"}, "offset"), ({"query": "x"}, "query")],
    ids=["negative", "bool", "string", "unknown"],
)
async def test_a_card_input_that_breaks_its_schema_is_a_coded_refusal(
    rig: Rig, arguments: dict[str, Any], field: str
) -> None:
    fleet = rig.fleet("github", disclosure=LADDERED)
    assert fleet.default.input_schema(ISSUES) == {
        "type": "object",
        "properties": {"offset": {"type": "integer", "minimum": 0, "description": "next_offset of a cut answer."}},
        "additionalProperties": False,
    }
    error = error_of(await fleet.call(ISSUES, arguments))
    assert error["code"] == "validation_error"
    assert error["details"] == {"code": "discovery/invalid_arguments", "field": field}


async def test_a_member_is_called_through_the_proxies_as_a_direct_call_and_a_card_is_no_proxy_target(
    rig: Rig,
) -> None:
    fleet = rig.fleet("github", disclosure=LADDERED)
    assert await fleet.call(SEARCH_TOOL, {"query": "issue"}) is None  # the search tool is not served here
    call = {"tool": "github_create_comment", "arguments": COMMENT}
    refused = error_of(await fleet.call(CALL_READ_TOOL, call))
    assert refused["details"]["code"] == "discovery/write_through_read"
    written = await fleet.call(CALL_WRITE_TOOL, call, {"idempotency_key": "lane-key-1"})
    assert written is not None and written.kind == "success"
    assert written.report is not None and written.report["undo"]["tool"] == "github_delete_comment"
    assert [line["operation"] for line in rig.lines()] == ["github.comments.create"]
    card = error_of(await fleet.call(CALL_READ_TOOL, {"tool": ISSUES, "arguments": {}}))
    assert card["details"] == {"code": "discovery/invalid_arguments", "field": "tool"}


async def test_a_grant_lists_only_the_cards_whose_lanes_hold_a_tool_it_sees(rig: Rig) -> None:
    fleet = rig.fleet(disclosure=LADDERED)
    reader = fleet.compose(principal(grants=read_grant()))
    assert reader.surface.mode == "laddered"
    cards = {card.lane.card: card for card in reader.surface.cards}
    assert cards and all(card.startswith("github__") for card in cards)
    issues = cards["github__" + ISSUES]
    assert issues.members == ("github__github_get_issue", "github__github_list_issue")
    assert issues.definition["_meta"][LANE_TOOLS_META] == 2
    assert "Opens 2 tool(s)" in issues.definition["description"]
    answer = opened(await reader.call("github__" + ISSUES, {}))
    assert names(answer["tools"]) == list(issues.members)
    assert await reader.call("payments__open_payments_refunds", {}) is None  # not this caller's card


async def test_a_card_named_like_a_tool_is_refused_at_start(rig: Rig, github: Document) -> None:
    op = github.operations[0]
    renamed = dataclasses.replace(op, mcp=dataclasses.replace(op.mcp, tool_name=ISSUES))
    rig.docs["github"] = dataclasses.replace(github, operations=(renamed, *github.operations[1:]))
    with pytest.raises(FleetError) as raised:
        rig.fleet("github", disclosure=LADDERED)
    assert raised.value.code == "fleet/tool_collision"
    assert ISSUES in raised.value.message
    assert rig.fleet("github", disclosure=DisclosureSettings(mode="search")).tools  # no card: no collision


async def test_two_capabilities_minting_one_card_are_refused_at_start(rig: Rig, github: Document) -> None:
    ops = list(github.operations)
    ops[0] = dataclasses.replace(ops[0], capability_id="github.is.sue")
    ops[1] = dataclasses.replace(ops[1], capability_id="github.is_sue")
    rig.docs["github"] = dataclasses.replace(github, operations=tuple(ops))
    with pytest.raises(FleetError) as raised:
        rig.fleet("github", disclosure=LADDERED)
    assert raised.value.code == "fleet/tool_collision"
    assert "both mint card open_github_is_sue" in raised.value.message


async def test_a_ladder_that_groups_nothing_is_declined_and_the_surface_is_what_auto_picks(
    rig: Rig, github: Document
) -> None:
    alone = tuple(dataclasses.replace(op, capability_id=f"github.only_{n}") for n, op in enumerate(github.operations))
    rig.docs["github"] = dataclasses.replace(github, operations=alone)
    fleet = rig.fleet("github", disclosure=LADDERED)
    surface = fleet.default.surface
    assert surface.plan is not None and (surface.plan.mode, surface.plan.reason) == ("flat", "no_grouping_benefit")
    assert surface.mode == "flat" and fleet.tools == fleet.default.flat_tools
    assert await fleet.call("open_github_only_0", {}) is None
    small = rig.fleet("github", disclosure=DisclosureSettings(mode="laddered", surface_budget=500))
    alone_surface = small.default.surface
    assert alone_surface.mode == "search"  # declined, and the flat list is over this budget


def test_the_ladder_decision_follows_the_originals_order() -> None:
    assert plan_ladder([], 100, 10, 0).reason == "no_capabilities"
    assert plan_ladder([3], 100, 10, 100).reason == "fits_budget"
    assert plan_ladder([1, 1], 100, 10, 0).reason == "no_grouping_benefit"
    assert plan_ladder([2], 100, 100, 0).reason == "no_token_benefit"
    laddered = plan_ladder([2, 1], 100, 99, 0)
    assert (laddered.mode, laddered.reason, laddered.lanes, laddered.largest) == ("laddered", "over_budget", 2, 2)


async def test_start_up_says_a_laddered_surface_and_its_cards(rig: Rig, github: Document) -> None:
    from anvil.cli.serve import disclosure_line

    fleet = rig.fleet("github", disclosure=LADDERED)
    line = disclosure_line(fleet)
    assert line.startswith("anvil: disclosure laddered: tools/list shows 6 tools (4 lane cards), ")
    assert line.endswith(f"; {len(fleet.default.flat_tools)} tools are listed once their lane card is opened")
    alone = tuple(dataclasses.replace(op, capability_id=f"github.only_{n}") for n, op in enumerate(github.operations))
    rig.docs["github"] = dataclasses.replace(github, operations=alone)
    declined = disclosure_line(rig.fleet("github", disclosure=LADDERED))
    assert declined.startswith("anvil: disclosure flat (laddered declined: no_grouping_benefit; chosen as auto would")


# --- the MCP server: a session's list grows, and it is told ---------------------------------------------


async def test_over_a_session_an_opened_lane_is_listed_and_the_client_hears_list_changed(rig: Rig) -> None:
    fleet = rig.fleet("github", disclosure=LADDERED)
    heard: list[Any] = []

    async def hear(message: Any) -> None:
        heard.append(message)

    server = build_server(fleet)
    async with Client(server, mode="legacy", message_handler=hear) as client:
        capabilities = client.session.initialize_result.capabilities  # type: ignore[union-attr]
        assert capabilities.tools is not None and capabilities.tools.list_changed is True
        at_rest = names((await client.list_tools()).tools)
        assert at_rest == names(fleet.tools)
        answer = await client.call_tool(ISSUES, {})
        assert answer.is_error is False and answer.structured_content is not None
        members = names(answer.structured_content["tools"])
        with anyio.fail_after(5):
            while not heard:
                await anyio.sleep(0.01)
        assert [type(message).__name__ for message in heard] == ["ToolListChangedNotification"]
        listed = names((await client.list_tools()).tools)
        assert listed == at_rest + members
        await client.call_tool(ISSUES, {})  # a lane stays open: opening it again changes nothing
        await anyio.sleep(0.05)
        assert len(heard) == 1 and names((await client.list_tools()).tools) == listed
        issues = await client.call_tool("github_list_issue", OWNER_REPO)  # a listed member, called by its name
        assert issues.is_error is False
    async with Client(server, mode="legacy") as other:  # another session starts at rest
        assert names((await other.list_tools()).tools) == at_rest


async def test_without_a_session_the_list_stays_at_rest_and_the_card_answer_carries_the_members(rig: Rig) -> None:
    fleet = rig.fleet("github", disclosure=LADDERED)
    async with Client(build_server(fleet)) as client:  # the 2026-07-28 protocol: no session
        answer = await client.call_tool(ISSUES, {})
        assert len(answer.structured_content["tools"]) == 4  # type: ignore[index]
        assert names((await client.list_tools()).tools) == names(fleet.tools)
    app = create_app(build_server(fleet), service="github")  # stateless HTTP, the hot path
    with anyio.fail_after(60):
        async with serving(app) as (url,):
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                started = await session.initialize()
                assert started.capabilities.tools is not None and started.capabilities.tools.list_changed is False
                answer = await session.call_tool(ISSUES, {})
                assert names(answer.structured_content["tools"]) == [  # type: ignore[index]
                    "github_create_issue",
                    "github_get_issue",
                    "github_list_issue",
                    "github_update_issue",
                ]
                assert names((await session.list_tools()).tools) == names(fleet.tools)


async def test_over_stateful_http_each_session_keeps_its_own_opened_lanes(rig: Rig) -> None:
    fleet = rig.fleet("github", disclosure=LADDERED)
    app = create_app(build_server(fleet), service="github", stateless=False, json_response=False)
    heard: list[Any] = []

    async def hear(message: Any) -> None:
        heard.append(message)

    with anyio.fail_after(60):
        async with serving(app) as (url,):
            async with (
                streamable_http_client(url) as (read, write),
                ClientSession(read, write, message_handler=hear) as first,
                streamable_http_client(url) as (read2, write2),
                ClientSession(read2, write2) as second,
            ):
                started = await first.initialize()
                await second.initialize()
                assert started.capabilities.tools is not None and started.capabilities.tools.list_changed is True
                at_rest = names((await first.list_tools()).tools)
                await first.call_tool("open_github_comment", {})
                with anyio.fail_after(10):
                    while not heard:
                        await anyio.sleep(0.01)
                grown = names((await first.list_tools()).tools)
                assert grown[: len(at_rest)] == at_rest
                assert grown[len(at_rest) :] == [
                    "github_create_comment",
                    "github_delete_comment",
                    "github_list_comment",
                ]
                assert names((await second.list_tools()).tools) == at_rest


# --- a large API ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pagerduty(tmp_path_factory: pytest.TempPathFactory) -> Document:
    from tests.conftest import corpus_dir, missing

    spec = corpus_dir() / "pagerduty-rest.json"
    if not spec.is_file():
        missing(f"corpus spec {spec} is missing (set ANVIL_CORPUS)")
    manifest = tmp_path_factory.mktemp("pagerduty") / "anvil.yaml"
    manifest.write_text(draft_manifest(build(spec, service_id="pd").document, approve="all"), encoding="utf-8")
    document = build(spec, manifest=manifest, service_id="pd").document
    assert document.operations and all(op.is_approved for op in document.operations)
    return document


@pytest.mark.corpus
async def test_a_large_api_all_approved_is_laddered_within_the_surface_budget(pagerduty: Document) -> None:
    async with httpx.AsyncClient(transport=httpx.MockTransport(lambda request: httpx.Response(500))) as client:
        context = RuntimeContext(service_id="pd", base_url="http://pd.invalid", client=client, env="dev")
        fleet = Fleet([FleetBundle(id="pd", document=pagerduty, context=context)], disclosure=LADDERED)
        surface = fleet.default.surface
        assert surface.mode == "laddered"
        rest = measure_listing(fleet.tools).tokens
        assert rest is not None and rest <= 20_000
        ladder = fleet.ladder(False)
        members = [member for lane in ladder.lanes for member in lane.members]
        assert sorted(members) == sorted(fleet.mounted(False)) and len(set(members)) == len(members)
        assert len(surface.cards) == len(ladder.lanes) == len({op.capability_id for op in pagerduty.operations})
        largest = max(surface.cards, key=lambda card: len(card.members))
        answer = opened(await fleet.call(largest.lane.card, {}))
        assert names(answer["tools"]) == list(largest.members)[: len(answer["tools"])]


async def test_a_fleet_whose_capability_cards_are_over_the_budget_ladders_one_card_per_api(rig: Rig) -> None:
    fine = rig.fleet(disclosure=LADDERED).default.surface
    assert fine.mode == "laddered" and len(fine.cards) > 2
    fine_tokens = measure_listing(fine.tools).tokens
    assert fine_tokens is not None
    tight = rig.fleet(disclosure=DisclosureSettings(mode="laddered", surface_budget=fine_tokens - 1)).default.surface
    assert tight.mode == "laddered"
    assert [card.lane.card for card in tight.cards] == ["github__open_github", "payments__open_payments"]
    coarse_tokens = measure_listing(tight.tools).tokens
    assert coarse_tokens is not None and coarse_tokens < fine_tokens
    members = {member for card in tight.cards for member in card.members}
    assert members == {card_member for card in fine.cards for card_member in card.members}
    opened = await rig.fleet(disclosure=DisclosureSettings(mode="laddered", surface_budget=fine_tokens - 1)).call(
        "payments__open_payments", {}
    )
    assert opened is not None and opened.kind == "success" and isinstance(opened.data, dict)
    assert {tool["name"] for tool in opened.data["tools"]} <= members
