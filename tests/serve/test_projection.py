"""anvil_projection: the JMESPath check and its metered view, then over MCP against github-mini and its mock."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from referencing import Registry

from anvil.air.model import Document, Output
from anvil.ledger.registry import open_ledger
from anvil.serve.gateway import Gateway
from anvil.serve.projection import (
    NARROW_ALLOWANCE,
    WORK_FLOOR,
    Projection,
    ProjectionFailed,
    ProjectionRefusal,
    compile_projection,
)
from tests.serve.support import OWNER_REPO, MockServer, connected

COMMENT = {**OWNER_REPO, "issue_number": 2, "body": "Looks good ✓"}


def compiled(expression: str) -> Projection:
    found = compile_projection(expression)
    assert isinstance(found, Projection), found
    return found


def refused(expression: object, kind: str) -> ProjectionRefusal:
    found = compile_projection(expression)
    assert isinstance(found, ProjectionRefusal), expression
    assert found.details["code"] == "projection/invalid" and found.details["field"] == "anvil_projection"
    assert found.kind == kind, (expression, found)
    return found


def failure(expression: str, data: Any) -> str:
    """The kind of failure applying ``expression`` to ``data`` raises."""
    with pytest.raises(ProjectionFailed) as failed:
        compiled(expression).apply(data)
    return failed.value.kind


# --- the expression and its view -------------------------------------------------------------------


def test_a_projection_selects_and_renames_what_the_caller_reads() -> None:
    data = {"items": [{"id": 1, "name": "a", "notes": "x" * 500}, {"id": 2, "name": "b", "notes": ""}], "total": 2}
    assert compiled("items[].{id: id, label: name}").apply(data) == [{"id": 1, "label": "a"}, {"id": 2, "label": "b"}]
    assert compiled("items[?id > `1`].name").apply(data) == ["b"]
    assert compiled("length(items)").apply(data) == 2
    assert compiled("sort_by(items, &name)[-1].id").apply(data) == 2
    assert compiled("join(', ', items[].name)").apply(data) == "a, b"
    assert compiled("contains(items[].id, `2`)").apply(data) is True
    assert compiled("items[?id == `1`] | [0].name").apply(data) == "a"
    assert compiled("missing").apply(data) is None


def test_a_malformed_expression_is_refused_naming_where_parsing_stopped() -> None:
    assert refused("items[.id", "parse").details["position"] == 6
    assert refused("items[", "parse").details["position"] == 6  # an incomplete expression stops at its end
    assert "position" in refused("id $ name", "parse").details  # a character JMESPath has no token for


def test_an_unknown_function_or_a_wrong_argument_count_is_refused_before_the_call() -> None:
    refused("nosuch(@)", "function")
    refused("items[].length(@, @)", "function")
    refused("not_null()", "function")  # variadic, but at least one argument
    assert isinstance(compile_projection("not_null(a, b, c)"), Projection)


def test_an_expression_that_is_not_a_short_string_is_refused() -> None:
    assert refused("a" * 1001, "length").details["max_length"] == 1000
    assert isinstance(compile_projection("a" * 1000), Projection)
    for value in (5, None, ["id"], {"id": 1}):
        refused(value, "type")
    for value in ("", "   "):
        refused(value, "empty")


def test_an_expression_nested_past_the_interpreter_depth_is_refused_not_raised() -> None:
    refused("(" * 499 + "@" + ")" * 499, "depth")  # 999 characters, deeper than the parser's recursion allows


@pytest.mark.parametrize(
    "tail",
    [
        "[][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][]",  # flatten
        "to_string(@)",  # serialize
        "contains(@, `1`)",  # search
        "[*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*][*]",  # project
        "@",  # the view itself
    ],
)
def test_an_expression_that_repeats_the_answer_into_itself_stops_within_its_budget(tail: str) -> None:
    doubling = " | ".join(["[@, @]"] * 70)  # 2**70 copies when expanded, built from shared references
    assert len(f"{doubling} | {tail}") <= 1000
    assert failure(f"{doubling} | {tail}", {"a": 1}) == "budget"


def test_comparing_two_self_repeating_values_stops_within_its_budget() -> None:
    half = "|".join(["[@,@]"] * 60)
    assert failure(f"({half}) == ({half})", {"a": 1}) == "budget"


def test_a_large_answer_may_still_be_read_whole_once_the_floor_is_spent() -> None:
    data = {"items": [{"id": index, "tags": ["a", "b"]} for index in range(WORK_FLOOR // 4)]}
    assert compiled("@").apply(data) is data
    assert len(compiled("items[].id").apply(data)) == WORK_FLOOR // 4  # type: ignore[arg-type]


def test_a_view_larger_than_the_answer_is_refused_because_a_projection_may_only_narrow() -> None:
    data = {"items": list(range(NARROW_ALLOWANCE * 2))}
    assert failure("[@, @]", data) == "narrow"
    assert compiled("{count: length(items), all: items}").apply(data) == {"count": 128, "all": data["items"]}


def test_a_view_that_json_cannot_carry_or_a_wrongly_typed_argument_fails() -> None:
    assert failure("to_number('1e999')", {}) == "number"
    assert failure("length(total)", {"total": 2}) == "type"
    assert failure("sort(@)", [1, "a"]) == "type"


# --- over MCP -------------------------------------------------------------------------------------

pytestmark = pytest.mark.anyio


def envelope(result: Any) -> dict[str, Any]:
    assert result.is_error is True and result.structured_content is None
    return dict(json.loads(result.content[0].text)["error"])


def effect(result: Any) -> dict[str, Any]:
    assert result.meta is not None
    return dict(result.meta["effect"])


def ledger_rows(path: Path) -> list[tuple[str, str | None]]:
    """(status, stored result) of every row of the SQLite ledger at ``path``."""
    with sqlite3.connect(path) as db:
        (table,) = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchone()
        return list(db.execute(f"SELECT status, result_json FROM {table}"))


@pytest.fixture
async def durable(make_gateway: Callable[..., Gateway], tmp_path: Path) -> AsyncIterator[Callable[[Document], Gateway]]:
    """Gateways over the mock that share one SQLite ledger file (``tmp_path / ledger.db``)."""
    ledger = open_ledger(f"sqlite:///{tmp_path / 'ledger.db'}")
    await ledger.initialize()  # the table exists from the start, so "no row" means no reservation
    yield lambda doc: make_gateway(doc, ledger=ledger)
    await ledger.close()


async def test_a_projection_narrows_a_read_and_the_official_client_accepts_the_view(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            await client.call_tool("github_create_comment", COMMENT)
            await client.call_tool("github_create_comment", {**COMMENT, "body": "second"})
            # The official client validates structuredContent against the listed outputSchema: it would raise.
            ids = await client.call_tool(
                "github_list_comment", {**OWNER_REPO, "issue_number": 2, "anvil_projection": "[].id"}
            )
            first = await client.call_tool(
                "github_list_comment", {**OWNER_REPO, "issue_number": 2, "anvil_projection": "[0].{text: body}"}
            )
    assert ids.is_error is False and json.loads(ids.content[0].text) == [100, 101]
    assert ids.structured_content == {"anvil_projection": "[].id", "result": [100, 101]}
    assert first.structured_content == {"anvil_projection": "[0].{text: body}", "result": {"text": "Looks good ✓"}}
    listed = tools["github_list_comment"].output_schema
    assert listed is not None
    jsonschema.Draft202012Validator(listed, registry=Registry()).validate(ids.structured_content)
    assert effect(ids)["class"] == "read"
    assert all("anvil_projection" not in json.dumps(r) for r in mock.requests)  # it never travels upstream
    projection = tools["github_list_comment"].input_schema["properties"]["anvil_projection"]
    assert projection["type"] == "string" and projection["maxLength"] == 1000
    assert "anvil_projection" not in tools["github_list_comment"].input_schema.get("required", [])


async def test_a_tool_without_an_output_schema_answers_the_view_as_the_original_shapes_it(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    ops = tuple(
        dataclasses.replace(op, output=Output()) if op.id == "github.issues.get" else op for op in github.operations
    )
    doc = dataclasses.replace(github, operations=ops)
    issue = {**OWNER_REPO, "issue_number": 1}
    async with connected(make_gateway(doc)) as client:
        with anyio.fail_after(10):
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            picked = await client.call_tool("github_get_issue", {**issue, "anvil_projection": "{n: number}"})
            scalar = await client.call_tool("github_get_issue", {**issue, "anvil_projection": "number"})
    assert tools["github_get_issue"].output_schema is None
    assert picked.structured_content == {"n": 1}  # an object view is the structured content itself
    assert scalar.structured_content == {"result": 1}  # anything else under result
    assert json.loads(scalar.content[0].text) == 1


async def test_a_malformed_projection_is_refused_before_the_ledger_and_the_upstream(
    github: Document, durable: Callable[[Document], Gateway], mock: MockServer, tmp_path: Path
) -> None:
    async with connected(durable(github)) as client:
        with anyio.fail_after(10):
            bad = await client.call_tool(
                "github_create_comment", {**COMMENT, "anvil_projection": "id["}, meta={"idempotency_key": "bad-1"}
            )
            unknown = await client.call_tool(
                "github_create_comment", {**COMMENT, "anvil_projection": "nosuch(id)"}, meta={"idempotency_key": "b-2"}
            )
            long = await client.call_tool("github_create_comment", {**COMMENT, "anvil_projection": "i" * 1001})
            dry = await client.call_tool(
                "github_create_comment", {**COMMENT, "anvil_projection": "id[", "anvil_dry_run": True}
            )
    for result in (bad, unknown, dry):
        error = envelope(result)
        assert error["code"] == "validation_error"
        assert error["details"]["code"] == "projection/invalid"
    assert envelope(bad)["details"]["position"] == 3
    assert envelope(long)["code"] == "validation_error"  # over the published maxLength: the schema check
    assert effect(bad)["class"] == "reversible" and effect(bad)["undo"] is None  # a failure report, as refusals carry
    assert mock.requests == []
    assert ledger_rows(tmp_path / "ledger.db") == []


async def test_a_keyed_write_replayed_with_another_projection_answers_its_own_view_from_the_whole_stored_answer(
    github: Document, durable: Callable[[Document], Gateway], mock: MockServer, tmp_path: Path
) -> None:
    key = {"idempotency_key": "view-1"}
    async with connected(durable(github)) as client:
        with anyio.fail_after(10):
            by_id = await client.call_tool("github_create_comment", {**COMMENT, "anvil_projection": "id"}, meta=key)
            by_body = await client.call_tool("github_create_comment", {**COMMENT, "anvil_projection": "body"}, meta=key)
            whole = await client.call_tool("github_create_comment", COMMENT, meta=key)
    assert [r["method"] for r in mock.requests] == ["POST"]  # one write; the others replayed from the ledger
    assert json.loads(by_id.content[0].text) == 100
    assert by_body.structured_content == {"anvil_projection": "body", "result": "Looks good ✓"}
    assert whole.structured_content == {"id": 100, "body": "Looks good ✓"}  # no projection: the whole answer
    assert "replayed" not in effect(by_id) and effect(by_body)["replayed"] is True and effect(whole)["replayed"]
    # The report is taken from the whole answer, whatever the view: the undo names the comment.
    assert effect(by_id)["undo"]["arguments"]["comment_id"] == 100
    assert effect(by_body)["undo"] == effect(by_id)["undo"]
    assert effect(by_body)["idempotency_key"] == "view-1"
    [(status, stored)] = ledger_rows(tmp_path / "ledger.db")
    assert status == "completed" and json.loads(stored or "null") == {"id": 100, "body": "Looks good ✓"}


async def test_a_projection_that_fails_after_a_write_is_an_error_that_still_reports_the_effect(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            result = await client.call_tool(
                "github_create_comment", {**COMMENT, "anvil_projection": "length(id)"}, meta={"idempotency_key": "f-1"}
            )
    error = envelope(result)
    assert (error["code"], error["details"]) == (
        "validation_error",
        {"code": "projection/failed", "field": "anvil_projection"},
    )
    assert error["upstream"] == {"status": 201}
    assert "Looks good" not in result.content[0].text  # never the unprojected payload
    report = effect(result)  # the write happened: the caller is told so, with its undo
    assert report["idempotency_key"] == "f-1"
    assert report["undo"]["tool"] == "github_delete_comment"
    assert report["undo"]["arguments"]["comment_id"] == 100
    assert [c["id"] for c in mock.state.comments] == [100]


async def test_an_unknown_argument_is_still_refused_beside_a_projection(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            typo = await client.call_tool("github_create_comment", {**COMMENT, "anvil_projection": "id", "bogus": 1})
            wrong_type = await client.call_tool("github_create_comment", {**COMMENT, "anvil_projection": 5})
    assert envelope(typo)["code"] == "validation_error"
    assert envelope(wrong_type)["code"] == "validation_error"
    assert mock.requests == []


async def test_a_staged_call_answers_the_view_of_its_draft(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    release = {**OWNER_REPO, "tag_name": "v1.0.0", "confirm": True, "anvil_projection": "{draft: draft, tag: tag_name}"}
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            staged = await client.call_tool("github_create_release", release, meta={"stage": True})
    assert staged.is_error is False
    assert json.loads(staged.content[0].text) == {"draft": True, "tag": "v1.0.0"}
    assert effect(staged)["staged"]["promote"]["tool"] == "github_update_release"
    assert [r["method"] for r in mock.requests] == ["POST"]
