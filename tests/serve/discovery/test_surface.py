"""A searched surface: three meta-tools at rest, search that returns what flat mode lists, and proxies that
make the direct call (same gates, same answer, same audit line), on the github-mini and payments fleet."""

from __future__ import annotations

from typing import Any

import pytest

from anvil.air.model import Document
from anvil.serve.discovery.meta import CALL_READ_TOOL, CALL_WRITE_TOOL, INPUTS_FROM_META, META_TOOL_NAMES, SEARCH_TOOL
from anvil.serve.discovery.modes import DisclosureSettings, measure_listing
from anvil.serve.fleet import FleetError
from anvil.serve.mcp.provider import UnknownTool
from anvil.serve.mcp.results import CallResult
from tests.serve.support import OWNER_REPO
from tests.serve.test_fleet import Rig, error_of, principal, read_grant

pytestmark = pytest.mark.anyio

SEARCH = DisclosureSettings(mode="search")
COMMENT = {**OWNER_REPO, "issue_number": 2, "body": "Found by search"}


def found_names(result: CallResult | None) -> list[str]:
    assert result is not None and result.kind == "success", result
    assert isinstance(result.data, dict)
    return [tool["name"] for tool in result.data["tools"]]


async def test_auto_serves_a_small_fleet_flat_and_lists_exactly_what_it_always_did(rig: Rig) -> None:
    auto = rig.fleet()
    flat = rig.fleet(disclosure=DisclosureSettings(mode="flat"))
    assert auto.default.surface.mode == "flat" and auto.default.surface.requested == "auto"
    assert auto.tools == flat.tools == auto.default.flat_tools
    assert not any(tool["name"] in META_TOOL_NAMES for tool in auto.tools)


async def test_auto_searches_when_the_flat_list_is_over_the_surface_budget(rig: Rig) -> None:
    fleet = rig.fleet(disclosure=DisclosureSettings(mode="auto", surface_budget=500))
    surface = fleet.default.surface
    assert surface.mode == "search" and surface.measure.over
    assert [tool["name"] for tool in fleet.tools] == list(META_TOOL_NAMES)
    at_rest = measure_listing(fleet.tools)
    assert at_rest.tokens is not None and at_rest.tokens <= 3000


async def test_search_finds_a_tool_by_its_exact_name_first_and_returns_it_as_flat_mode_lists_it(rig: Rig) -> None:
    fleet = rig.fleet(disclosure=SEARCH)
    flat = {tool["name"]: tool for tool in fleet.default.flat_tools}
    for name in ("github__github_create_comment", "payments__payments_create_refund"):
        result = await fleet.call(SEARCH_TOOL, {"query": name, "limit": 3})
        assert found_names(result)[0] == name
        assert result is not None and isinstance(result.data, dict)
        entry = dict(result.data["tools"][0])
        meta = dict(entry.pop("_meta"))
        meta.pop(INPUTS_FROM_META, None)
        assert {**entry, "_meta": meta} == flat[name]


async def test_a_search_names_the_tools_whose_answers_supply_a_required_input(rig: Rig) -> None:
    fleet = rig.fleet(disclosure=SEARCH)
    result = await fleet.call(SEARCH_TOOL, {"query": "payments__payments_get_customer", "limit": 1})
    assert result is not None and isinstance(result.data, dict)
    supplied = result.data["tools"][0]["_meta"].get(INPUTS_FROM_META, {})
    for suppliers in supplied.values():
        assert suppliers and all(name.startswith("payments__") for name in suppliers)


async def test_a_read_through_the_read_proxy_answers_as_the_direct_call_does(rig: Rig) -> None:
    fleet = rig.fleet(disclosure=SEARCH)
    direct = await fleet.call("payments__payments_get_customer", {"customer_id": "cus_123"})
    proxied = await fleet.call(
        CALL_READ_TOOL, {"tool": "payments__payments_get_customer", "arguments": {"customer_id": "cus_123"}}
    )
    assert direct is not None and proxied is not None
    assert proxied.kind == direct.kind == "success"
    assert proxied.data == direct.data and proxied.structured == direct.structured
    assert [line["operation"] for line in rig.lines()] == ["payments.customers.get", "payments.customers.get"]


async def test_the_read_proxy_refuses_a_write_before_anything_runs_and_names_the_write_proxy(rig: Rig) -> None:
    fleet = rig.fleet(disclosure=SEARCH)
    result = await fleet.call(CALL_READ_TOOL, {"tool": "github__github_create_comment", "arguments": COMMENT})
    error = error_of(result)
    assert error["code"] == "validation_error"
    assert error["details"] == {
        "code": "discovery/write_through_read",
        "tool": "github__github_create_comment",
        "use": CALL_WRITE_TOOL,
    }
    assert CALL_WRITE_TOOL in error["message"]
    assert rig.github_requests == [] and rig.lines() == []


async def test_a_keyed_write_through_the_write_proxy_replays_on_retry_and_reports_the_real_tool(rig: Rig) -> None:
    fleet = rig.fleet(disclosure=SEARCH)
    call = {"tool": "github__github_create_comment", "arguments": COMMENT}
    first = await fleet.call(CALL_WRITE_TOOL, call, {"idempotency_key": "search-key-1"})
    again = await fleet.call(CALL_WRITE_TOOL, call, {"idempotency_key": "search-key-1"})
    assert first is not None and again is not None and first.kind == again.kind == "success"
    assert first.data == again.data
    posts = [request for request in rig.github_requests if request["method"] == "POST"]
    assert len(posts) == 1
    assert first.report is not None and first.report["undo"]["tool"] == "github__github_delete_comment"
    assert again.report is not None and again.report.get("replayed") is True
    lines = rig.lines()
    assert [line["operation"] for line in lines] == ["github.comments.create", "github.comments.create"]
    assert [line["ledger"] for line in lines] == ["reserved", "replay"]


async def test_a_proxy_naming_an_unknown_tool_is_refused_as_a_direct_call_to_it_is(rig: Rig) -> None:
    fleet = rig.fleet(disclosure=SEARCH)
    assert await fleet.call("github__no_such_tool", {}) is None
    with pytest.raises(UnknownTool) as raised:
        await fleet.call(CALL_WRITE_TOOL, {"tool": "github__no_such_tool", "arguments": {}})
    assert raised.value.name == "github__no_such_tool"


async def test_a_grant_hides_tools_from_search_and_the_proxy_refuses_them_as_the_direct_call_does(rig: Rig) -> None:
    fleet = rig.fleet(disclosure=SEARCH)
    reader = fleet.compose(principal(grants=read_grant()))
    assert reader.surface.mode == "search"
    result = await reader.call(SEARCH_TOOL, {"query": "create a comment on an issue", "limit": 20})
    names = found_names(result)
    assert names and all(name.startswith("github__") for name in names)
    assert "github__github_create_comment" not in names
    direct = error_of(await reader.call("github__github_create_comment", COMMENT))
    call = {"tool": "github__github_create_comment", "arguments": COMMENT}
    proxied = error_of(await reader.call(CALL_WRITE_TOOL, call))
    assert proxied["code"] == direct["code"] == "policy_denied"
    assert proxied["details"]["code"] == direct["details"]["code"] == "policy/grant_denied"
    assert rig.github_requests == []


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        (SEARCH_TOOL, {}, "query"),
        (SEARCH_TOOL, {"query": "x" * 501}, "query"),
        (SEARCH_TOOL, {"query": "refund", "limit": 21}, "limit"),
        (SEARCH_TOOL, {"query": "refund", "limit": True}, "limit"),
        (SEARCH_TOOL, {"query": "refund", "extra": 1}, "extra"),
        (CALL_READ_TOOL, {"arguments": {}}, "tool"),
        (CALL_READ_TOOL, {"tool": "payments__payments_get_customer", "arguments": []}, "arguments"),
        (CALL_WRITE_TOOL, {"tool": SEARCH_TOOL, "arguments": {"query": "x"}}, "tool"),
    ],
    ids=["no-query", "long-query", "limit-21", "limit-bool", "extra", "no-tool", "arguments-list", "meta-target"],
)
async def test_a_meta_tool_input_that_breaks_its_schema_is_a_coded_refusal(
    rig: Rig, tool: str, arguments: dict[str, Any], field: str
) -> None:
    fleet = rig.fleet(disclosure=SEARCH)
    error = error_of(await fleet.call(tool, arguments))
    assert error["code"] == "validation_error"
    assert error["details"] == {"code": "discovery/invalid_arguments", "field": field}


async def test_meta_tools_are_not_served_on_a_flat_surface(rig: Rig) -> None:
    fleet = rig.fleet(disclosure=DisclosureSettings(mode="flat"))
    assert await fleet.call(SEARCH_TOOL, {"query": "refund"}) is None


async def test_an_operation_tool_named_like_a_meta_tool_is_refused_at_start(rig: Rig, github: Document) -> None:
    import dataclasses

    op = github.operations[0]
    renamed = dataclasses.replace(op, mcp=dataclasses.replace(op.mcp, tool_name=SEARCH_TOOL))
    rig.docs["github"] = dataclasses.replace(github, operations=(renamed, *github.operations[1:]))
    with pytest.raises(FleetError) as raised:
        rig.fleet("github", disclosure=SEARCH)
    assert raised.value.code == "fleet/tool_collision"
    assert rig.fleet("github", disclosure=DisclosureSettings(mode="flat")).tools


async def test_a_pinned_operation_stays_listed_beside_the_meta_tools(rig: Rig, github: Document) -> None:
    import dataclasses

    from anvil.air.model import DisclosureBudget

    rig.docs["github"] = dataclasses.replace(github, disclosure=DisclosureBudget(pinned=("issues.*",)))
    fleet = rig.fleet(disclosure=SEARCH)
    names = [tool["name"] for tool in fleet.tools]
    assert names[:3] == list(META_TOOL_NAMES)
    assert names[3:] and all(name.startswith("github__github_") and "issue" in name for name in names[3:])


async def test_start_up_says_which_mode_serves_the_surface_and_what_it_costs(rig: Rig) -> None:
    from anvil.cli.serve import disclosure_line

    flat = disclosure_line(rig.fleet())
    assert flat.startswith("anvil: disclosure flat (chosen by auto: the flat list is ")
    assert "tools/list shows 16 tools, " in flat and flat.endswith("(surface budget 20,000 tokens)")
    searched = disclosure_line(rig.fleet(disclosure=DisclosureSettings(mode="auto", surface_budget=500)))
    assert searched.startswith("anvil: disclosure search (chosen by auto: the flat list is over the 500-token budget)")
    assert "tools/list shows 3 tools" in searched and "are found with anvil_search_tools" in searched
    forced = disclosure_line(rig.fleet(disclosure=SEARCH))
    assert forced.startswith("anvil: disclosure search: tools/list shows 3 tools, ")


def test_a_listing_is_read_only_until_it_passes_the_surface_budget() -> None:
    over = {"name": "big", "description": "word " * 400}
    unread: dict[str, Any] = {"name": "never", "description": {1, 2}}  # not JSON: reading it would raise
    measured = measure_listing([over, unread], 100)
    assert measured.over and measured.tokens is not None and measured.tokens > 100
    assert measure_listing([{"name": "small"}], 100).tokens is None  # within the budget by bytes: not counted
