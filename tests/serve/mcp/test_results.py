"""structuredContent follows the published outputSchema, and an answer that breaks it is schema_mismatch."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable

import anyio
import httpx
import jsonschema
import pytest
from referencing import Registry

from anvil.air.model import DisclosureBudget, Document, Output
from anvil.air.outputs import OutputProjection
from anvil.air.surface import surface_of
from anvil.runtime.context import RuntimeContext
from anvil.runtime.envelope import ErrorEnvelope
from anvil.serve.gateway import Gateway
from anvil.serve.mcp.results import CallResult, OutputCheck
from tests.serve.raw_upstream import Answer, RawUpstream
from tests.serve.support import OWNER_REPO, TOKEN, MockServer, connected, op_of, token_variable

COMMENT = {**OWNER_REPO, "issue_number": 2, "body": "Looks good"}

pytestmark = pytest.mark.anyio


def _with_output(doc: Document, op_id: str, schema: dict[str, object]) -> Document:
    ops = tuple(
        dataclasses.replace(op, output=Output(schema=schema)) if op.id == op_id else op for op in doc.operations
    )
    return dataclasses.replace(doc, operations=ops)


async def test_the_official_client_validates_structured_content_against_every_output_schema(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    async with connected(make_gateway(github)) as client:
        with anyio.fail_after(10):
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            created = await client.call_tool("github_create_comment", COMMENT)  # the client validates it
            listed = await client.call_tool("github_list_comment", {**OWNER_REPO, "issue_number": 2})
    schema = tools["github_create_comment"].output_schema
    assert schema is not None and "#/components" not in json.dumps(schema)
    assert created.is_error is False and listed.is_error is False
    for name, result in (("github_create_comment", created), ("github_list_comment", listed)):
        published = tools[name].output_schema
        assert published is not None
        jsonschema.Draft202012Validator(published, registry=Registry()).validate(result.structured_content)
    # A list response is wrapped as {"result": [...]} and its schema says so.
    assert listed.structured_content == {"result": json.loads(listed.content[0].text)}
    # Listed cut to its 20 % share (the tool lists no effect keys, so its share is small), checked whole:
    # the answer with its items summarised, the dry-run plan and the projected answer by their keys.
    assert tools["github_list_comment"].output_schema == {
        "type": "object",
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    "result": {"type": "array", "items": {"type": "object", "description": "Comment (summarised)"}}
                },
                "required": ["result"],
            },
            {"required": ["operation", "method", "url", "retryPlan"]},
            {"required": ["anvil_projection", "result"]},
        ],
    }
    whole = surface_of(github).output(op_of(github, "github.comments.list"))
    assert whole is not None and whole.wrap and whole.schema["anyOf"][0]["required"] == ["result"]  # type: ignore[index]
    assert len(mock.requests) == 2


async def test_an_answer_that_breaks_the_output_schema_is_schema_mismatch_with_its_effect_report(
    github: Document, make_gateway: Callable[..., Gateway], mock: MockServer
) -> None:
    strict = {"type": "object", "required": ["never_sent"], "properties": {"never_sent": {"type": "string"}}}
    doc = _with_output(github, "github.comments.create", strict)
    async with connected(make_gateway(doc)) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("github_create_comment", COMMENT)
    assert result.is_error is True
    body = json.loads(result.content[0].text)
    assert body["error"]["code"] == "schema_mismatch"
    assert result.meta is not None and result.meta["effect"]["class"] == "reversible"
    assert len(mock.requests) == 1  # the write happened, and the report says so


async def test_a_recursive_output_schema_is_self_contained_through_defs(
    github: Document, make_gateway: Callable[..., Gateway]
) -> None:
    op = op_of(github, "github.comments.create")
    schemas = {
        **github.schemas,
        "Node": {"type": "object", "properties": {"child": {"$ref": "#/components/schemas/Node"}}},
    }
    doc = dataclasses.replace(_with_output(github, op.id, {"$ref": "#/components/schemas/Node"}), schemas=schemas)
    doc = dataclasses.replace(doc, disclosure=DisclosureBudget(output_schema_percent=500))  # room for it whole
    tool = make_gateway(doc).tool("github_create_comment")
    assert tool is not None
    schema = tool.definition["outputSchema"]
    assert isinstance(schema, dict)
    assert schema["$defs"]["Node"]["properties"]["child"] == {"$ref": "#/$defs/Node"}
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema, registry=Registry()).validate({"child": {"child": {}}})


def test_an_error_result_carries_its_envelope_as_text_and_no_structured_content() -> None:
    # The TypeScript SDK's client (MCP Inspector's) validates structuredContent against the outputSchema
    # even when isError is set, so an envelope there would hide the code behind a client-side failure.
    envelope = ErrorEnvelope(
        code="confirmation_required",
        message="Confirm first.",
        retryable=False,
        safe_to_retry=False,
        operation="payments.refunds.create",
        trace_id="trace_1",
        required_flags=("--confirm",),
    )
    wire = CallResult(kind="error", envelope=envelope, report={"class": "irreversible"}).to_wire()
    assert "structuredContent" not in wire
    assert wire["isError"] is True
    assert json.loads(wire["content"][0]["text"]) == envelope.to_json()
    assert wire["_meta"] == {"effect": {"class": "irreversible"}}


#: A cyclic graph: a node names its child and its owner, an owner its manager (another owner).
_CYCLIC = {
    "Node": {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "child": {"$ref": "#/components/schemas/Node"},
            "owner": {"$ref": "#/components/schemas/Owner"},
        },
    },
    "Owner": {
        "type": "object",
        "required": ["login"],
        "properties": {"login": {"type": "string"}, "manager": {"$ref": "#/components/schemas/Owner"}},
    },
}


async def test_a_deep_cyclic_answer_the_published_summary_accepts_but_the_whole_schema_refuses_is_schema_mismatch(
    github: Document, http: httpx.AsyncClient
) -> None:
    op = op_of(github, "github.issues.get")
    doc = dataclasses.replace(
        _with_output(github, op.id, {"$ref": "#/components/schemas/Node"}),
        schemas={**github.schemas, **_CYCLIC},
        disclosure=DisclosureBudget(output_schema_percent=10),  # room for a one-object summary only
    )
    deep = {"name": "a", "child": {"name": "b", "owner": {"login": "c", "manager": {"login": 7}}}}
    with RawUpstream(lambda request, count: Answer(body=json.dumps(deep).encode())) as upstream:
        context = RuntimeContext(
            service_id="github",
            base_url=upstream.url,
            client=http,
            env="dev",
            allowed_hosts=("127.0.0.1",),
            credentials={token_variable(doc): TOKEN},
        )
        gateway = Gateway(doc, context)
        tool = gateway.tool("github_get_issue")
        assert tool is not None and tool.output is not None
        published = tool.definition["outputSchema"]
        assert tool.definition["_meta"]["anvil/output_schema"] == "summarised"
        assert published == {"type": "object", "description": "Node (summarised)"}
        jsonschema.Draft202012Validator(published, registry=Registry()).validate(deep)  # a client would accept it
        whole = tool.output.projection.schema
        assert not jsonschema.Draft202012Validator(whole, registry=Registry()).is_valid(deep)
        async with connected(gateway) as client:
            with anyio.fail_after(10):
                result = await client.call_tool("github_get_issue", {**OWNER_REPO, "issue_number": 1})
    assert result.is_error is True and result.structured_content is None
    assert json.loads(result.content[0].text)["error"]["code"] == "schema_mismatch"
    assert len(upstream.requests) == 1


async def test_tools_answering_the_same_schemas_share_one_whole_schema_in_the_gateway(
    github: Document, make_gateway: Callable[..., Gateway]
) -> None:
    node = {"$ref": "#/components/schemas/Node"}
    doc = _with_output(_with_output(github, "github.issues.get", node), "github.issues.update", node)
    doc = dataclasses.replace(doc, schemas={**github.schemas, **_CYCLIC})
    gateway = make_gateway(doc)
    read, update = gateway.tool("github_get_issue"), gateway.tool("github_update_issue")
    assert read is not None and update is not None and read.output is not None and update.output is not None
    # The table holds each tool's published definition and a reference to the document's one projection.
    assert read.output.projection.schema["$defs"] is update.output.projection.schema["$defs"]
    assert list(read.output.projection.schema["$defs"]) == ["Node", "Owner", "anvil:dry_run_plan", "anvil:projection"]


#: The reviewer's slug pattern: a 25-character answer field cost Python's re 2.2 s of a frozen loop.
SLUG = r"^([a-z0-9]+-?)+$"


async def test_a_hostile_answer_to_a_slug_pattern_is_schema_mismatch_and_the_loop_keeps_turning(
    github: Document, http: httpx.AsyncClient
) -> None:
    op = op_of(github, "github.issues.get")
    doc = _with_output(github, op.id, {"type": "object", "properties": {"slug": {"type": "string", "pattern": SLUG}}})
    hostile = {"slug": "a" * 25 + "!"}
    with RawUpstream(lambda request, count: Answer(body=json.dumps(hostile).encode())) as upstream:
        context = RuntimeContext(
            service_id="github",
            base_url=upstream.url,
            client=http,
            env="dev",
            allowed_hosts=("127.0.0.1",),
            credentials={token_variable(doc): TOKEN},
        )
        gaps: list[float] = []

        async def ticker() -> None:
            while True:
                started = time.perf_counter()
                await anyio.sleep(0.005)
                gaps.append(time.perf_counter() - started)

        async with connected(Gateway(doc, context)) as client, anyio.create_task_group() as group:
            group.start_soon(ticker)
            await anyio.sleep(0.02)  # the ticker is turning before the call
            with anyio.fail_after(10):
                result = await client.call_tool("github_get_issue", {**OWNER_REPO, "issue_number": 1})
            await anyio.sleep(0.02)  # and its sleep across the call has ended
            group.cancel_scope.cancel()
    assert result.is_error is True
    assert json.loads(result.content[0].text)["error"]["code"] == "schema_mismatch"
    assert gaps and max(gaps) < 0.5


@pytest.mark.parametrize("length", [20, 25, 30, 40])
def test_an_answer_is_judged_against_its_patterns_in_linear_time_on_either_path(length: int) -> None:
    hostile = "a" * length + "!"
    compiled = OutputCheck(OutputProjection({"type": "object", "properties": {"slug": {"pattern": SLUG}}}, False))
    keyed = OutputCheck(
        OutputProjection({"type": "object", "patternProperties": {SLUG: {}}, "additionalProperties": False}, False)
    )
    for check, answer in ((compiled, {"slug": hostile}), (keyed, {hostile: 1})):
        started = time.perf_counter()
        assert check.valid(answer) is False
        assert time.perf_counter() - started < 0.5
    assert compiled.valid({"slug": "a-b"}) and keyed.valid({"a-b": 1})
