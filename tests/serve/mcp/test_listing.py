"""tools/list: the plain projection, plus the effect keys of tools that declare a contract (of all, on request)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import anyio
import pytest

from anvil.air.model import Document
from anvil.air.surface import surface_of
from anvil.air.tools import tool_definition
from anvil.serve.gateway import Gateway
from anvil.serve.mcp.listing import effect_classification, rewrite_listing_tools, served_tool_definition
from tests.serve.support import connected, op_of


def listed(gateway: Gateway, name: str) -> dict[str, object]:
    tool = gateway.tool(name)
    assert tool is not None, name
    return tool.definition


def replaced(doc: Document, *ops: object) -> Document:
    by_id = {op.id: op for op in ops}  # type: ignore[attr-defined]
    return dataclasses.replace(doc, operations=tuple(by_id.get(op.id, op) for op in doc.operations))


def no_tools(_: str) -> str | None:
    return None


@pytest.mark.anyio
async def test_a_reversible_operation_publishes_its_class_contract_and_classification(
    github: Document, make_gateway: Callable[..., Gateway]
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    meta = tools["github_create_comment"].meta
    assert meta is not None
    assert meta["anvil/operation_id"] == "github.comments.create"
    assert meta["anvil/effect_class"] == "reversible"
    assert meta["anvil/effect_contract"] == {
        "class": "reversible",
        "inverse": {
            "operation": "github.comments.delete",
            "arguments": {"owner": "request.owner", "repo": "request.repo", "comment_id": "response.id"},
        },
    }
    assert meta["effect"] == {
        "class": "reversible",
        "deletion": False,
        "draft": None,
        "lookup": None,
        "operation": "github.comments.create",
    }
    assert list(meta)[-3:] == ["anvil/effect_class", "anvil/effect_contract", "effect"]


@pytest.mark.anyio
async def test_an_operation_with_a_draft_and_a_lookup_names_their_tools(
    github: Document, make_gateway: Callable[..., Gateway]
) -> None:
    meta = listed(make_gateway(github), "github_create_release")["_meta"]
    assert meta["effect"] == {  # type: ignore[index]
        "class": "irreversible",
        "deletion": False,
        "draft": "github_create_release",
        "lookup": "github_get_release",
        "operation": "github.releases.create",
    }


UNDECLARED = {
    "github.issues.update": ("irreversible", False),
    "github.comments.delete": ("irreversible", True),
    "github.tags.get": ("read", False),
    "github.pulls.list": ("read", False),
}


def every_class(doc: Document) -> Document:
    """``doc`` as compiled with ``service.list_effect_class: all``."""
    return dataclasses.replace(doc, service=dataclasses.replace(doc.service, list_effect_class="all"))


@pytest.mark.anyio
async def test_operations_that_declare_no_contract_list_exactly_the_plain_projection(
    github: Document, make_gateway: Callable[..., Gateway]
) -> None:
    gateway = make_gateway(github)
    for op_id in UNDECLARED:
        op = op_of(github, op_id)
        assert listed(gateway, op.mcp.tool_name) == tool_definition(op, github.schemas)


@pytest.mark.anyio
async def test_with_list_effect_class_all_undeclared_operations_list_their_default_class_and_no_contract(
    github: Document, make_gateway: Callable[..., Gateway]
) -> None:
    doc = every_class(github)
    gateway = make_gateway(doc)
    for op_id, (effect_class, deletion) in UNDECLARED.items():
        op = op_of(doc, op_id)
        definition = listed(gateway, op.mcp.tool_name)
        meta = definition["_meta"]
        assert isinstance(meta, dict)
        assert meta["anvil/effect_class"] == effect_class
        assert "anvil/effect_contract" not in meta
        assert meta["effect"] == {
            "class": effect_class,
            "deletion": deletion,
            "draft": None,
            "lookup": None,
            "operation": op_id,
        }
        plain = tool_definition(op, doc.schemas)
        assert {k: v for k, v in definition.items() if k != "_meta"} == {k: v for k, v in plain.items() if k != "_meta"}
        assert {k: v for k, v in meta.items() if k.startswith("anvil/") and k != "anvil/effect_class"} == plain["_meta"]
    declared = listed(gateway, "github_create_comment")["_meta"]
    assert declared == listed(make_gateway(github), "github_create_comment")["_meta"]  # type: ignore[index]


@pytest.mark.anyio
async def test_payments_tools_list_is_exactly_the_plain_projection_on_the_wire(
    payments: Document, make_gateway: Callable[..., Gateway]
) -> None:
    gateway = make_gateway(payments)
    plain = [tool_definition(op, payments.schemas) for op in payments.operations if op.is_approved]
    served = list(gateway.tools)
    assert served == plain
    assert not any("anvil/effect_class" in tool["_meta"] or "effect" in tool["_meta"] for tool in served)
    async with connected(gateway) as client:
        with anyio.fail_after(10):
            wire = (await client.list_tools()).tools
    dumped = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in wire]
    assert json.dumps(dumped, sort_keys=True) == json.dumps(served, sort_keys=True)


@pytest.mark.anyio
async def test_payments_with_list_effect_class_all_lists_the_class_of_every_tool_on_the_wire(
    payments: Document, make_gateway: Callable[..., Gateway]
) -> None:
    doc = every_class(payments)
    gateway = make_gateway(doc)
    plain = [tool_definition(op, doc.schemas) for op in doc.operations if op.is_approved]
    served = list(gateway.tools)
    assert [{k: v for k, v in t.items() if k != "_meta"} for t in served] == [
        {k: v for k, v in t.items() if k != "_meta"} for t in plain
    ]
    for tool, base in zip(served, plain, strict=True):
        assert list(tool["_meta"])[: len(base["_meta"])] == list(base["_meta"])
        assert tool["_meta"]["anvil/effect_class"] in ("read", "irreversible")
        assert tool["_meta"]["effect"]["class"] == tool["_meta"]["anvil/effect_class"]
    async with connected(gateway) as client:
        with anyio.fail_after(10):
            wire = (await client.list_tools()).tools
    dumped = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in wire]
    assert json.dumps(dumped, sort_keys=True) == json.dumps(served, sort_keys=True)


def test_deletion_is_true_for_a_delete_action_or_destructive_risk(github: Document) -> None:
    delete = op_of(github, "github.comments.delete")
    declared = dataclasses.replace(delete, effect=dataclasses.replace(delete.effect, class_="irreversible"))
    assert declared.effect.action == "delete"
    assert effect_classification(declared, no_tools)["deletion"] is True  # type: ignore[index]
    update = op_of(github, "github.issues.update")
    risky = dataclasses.replace(update, effect=dataclasses.replace(update.effect, class_="irreversible"))
    assert effect_classification(risky, no_tools)["deletion"] is False  # type: ignore[index]
    destroying = dataclasses.replace(risky, effect=dataclasses.replace(risky.effect, risk="destructive"))
    assert effect_classification(destroying, no_tools)["deletion"] is True  # type: ignore[index]
    assert effect_classification(update, no_tools)["class"] == "irreversible"
    assert effect_classification(delete, no_tools)["deletion"] is True


@pytest.mark.anyio
async def test_a_follow_up_that_is_not_served_is_named_by_no_tool(
    github: Document, make_gateway: Callable[..., Gateway]
) -> None:
    tags = dataclasses.replace(op_of(github, "github.tags.get"), state="review_required")
    gateway = make_gateway(replaced(github, tags))
    assert gateway.tool("github_get_release") is None
    assert listed(gateway, "github_create_release")["_meta"]["effect"]["lookup"] is None  # type: ignore[index]
    dev = make_gateway(replaced(github, tags), include_unapproved=True)
    assert dev.tool("github_get_release") is not None
    assert listed(dev, "github_create_release")["_meta"]["effect"]["lookup"] is None  # type: ignore[index]


def test_a_fleet_can_serve_prefixed_names_or_rewrite_a_listing(github: Document) -> None:
    op = op_of(github, "github.releases.create")

    def prefixed(op_id: str) -> str | None:
        found = github.operation(op_id)
        return f"github__{found.mcp.tool_name}" if found is not None else None

    served = served_tool_definition(op, prefixed, name="github__github_create_release")
    assert served["name"] == "github__github_create_release"
    assert served["_meta"]["anvil/operation_id"] == "github.releases.create"
    assert served["_meta"]["effect"]["lookup"] == "github__github_get_release"
    plain = served_tool_definition(op, lambda op_id: op_of(github, op_id).mcp.tool_name)
    rewritten = rewrite_listing_tools(plain, lambda name: f"github__{name}")
    assert rewritten == served
    assert plain["name"] == "github_create_release"  # the input is not changed


@pytest.mark.anyio
async def test_a_gateway_names_its_tools_and_reported_follow_ups_with_the_given_naming(
    github: Document, make_gateway: Callable[..., Gateway]
) -> None:
    gateway = make_gateway(github, tool_name=lambda op: f"github__{op.mcp.tool_name}")
    assert gateway.tool("github_create_comment") is None
    assert gateway.server_name == "github-tools"
    arguments = {"owner": "octo", "repo": "hello", "issue_number": 2, "body": "hi"}
    with anyio.fail_after(10):
        result = await gateway.call("github__github_create_comment", arguments, {"idempotency_key": "ledger-04"})
    assert result is not None and result.report is not None
    assert result.report["undo"]["tool"] == "github__github_delete_comment"
    assert await gateway.call("github_create_comment", arguments) is None


@pytest.mark.anyio
async def test_the_tool_budget_counts_each_tool_exactly_as_it_is_listed(
    github: Document, make_gateway: Callable[..., Gateway]
) -> None:
    surface = surface_of(github)
    gateway = make_gateway(github)
    for op in github.operations:
        if op.is_approved:
            tool = listed(gateway, op.mcp.tool_name)
            assert surface.published(op).served_chars == len(
                json.dumps(tool, separators=(",", ":"), ensure_ascii=False)
            )
    release = listed(gateway, "github_create_release")["_meta"]
    assert release["effect"]["lookup"] == "github_get_release"  # a follow-up, named by its tool, is counted too


@pytest.mark.anyio
async def test_the_tool_budget_counts_the_effect_keys_of_every_tool_when_all_list_them(
    github: Document, make_gateway: Callable[..., Gateway]
) -> None:
    doc = every_class(github)
    surface = surface_of(doc)
    gateway = make_gateway(doc)
    for op in doc.operations:
        if op.is_approved:
            tool = listed(gateway, op.mcp.tool_name)
            assert "anvil/effect_class" in tool["_meta"]  # type: ignore[operator]
            assert surface.published(op).served_chars == len(
                json.dumps(tool, separators=(",", ":"), ensure_ascii=False)
            )
