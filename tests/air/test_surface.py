"""The tool surface: an outputSchema that fits is published whole; one that does not is cut or left out, and says so."""

from __future__ import annotations

import json
import math
from dataclasses import replace

from anvil._types import JSONObject
from anvil.air.model import DisclosureBudget, DisclosureCost, Document, Input, Operation, Output, Service
from anvil.air.outputs import compact_size
from anvil.air.surface import (
    INPUT_SCHEMA_BUDGET_TOKENS,
    INPUT_SCHEMA_META,
    OUTPUT_SCHEMA_META,
    ToolSurface,
    surface_measured,
    surface_of,
)
from anvil.air.tools import output_projection, published_input_schema
from tests.air.test_input_summary import order_schema
from tests.air.test_outputs import GRAPH, REF, _read


def _served_chars(surface: ToolSurface, op: Operation) -> int:
    return surface.published(op).served_chars


def _graph(size: int) -> JSONObject:
    """``size`` schemas in one cycle, each also naming the schema seven further on (a dense cyclic graph)."""
    return {
        f"S{i}": {
            "type": "object",
            "description": f"Schema {i} of a large cyclic graph, described at some length as real APIs do.",
            "properties": {
                "id": {"type": "string"},
                "next": {"$ref": f"{REF}S{(i + 1) % size}"},
                "other": {"anyOf": [{"type": "string"}, {"$ref": f"{REF}S{(i + 7) % size}"}]},
            },
        }
        for i in range(size)
    }


def test_an_output_schema_that_fits_is_published_whole_with_no_marker() -> None:
    op = _read({"$ref": REF + "A"})
    roomy = ToolSurface(GRAPH, budget=DisclosureBudget(output_schema_percent=500))
    definition = roomy.definition(op)
    assert definition["outputSchema"] == output_projection(op, GRAPH).schema  # type: ignore[union-attr]
    assert OUTPUT_SCHEMA_META not in definition["_meta"]
    assert roomy.published(op).output_state is None


def test_an_output_schema_over_the_budget_is_cut_the_same_way_every_time_and_says_so() -> None:
    graph = _graph(60)
    op = _read({"$ref": REF + "S0"})
    surface = ToolSurface(graph)
    published = surface.published(op)
    assert published.output_state == "summarised"
    assert published.definition["_meta"][OUTPUT_SCHEMA_META] == "summarised"
    assert published.served_chars <= surface.budget_chars
    again = ToolSurface(json.loads(json.dumps(graph))).definition(op)  # a fresh document, same bytes
    assert json.dumps(again) == json.dumps(published.definition)
    whole = output_projection(op, graph)
    # the gateway still checks all of it: 60 schemas, the dry-run plan and the projected answer
    assert whole is not None and len(whole.schema["$defs"]) == 62


def test_the_deepest_cut_that_fits_is_chosen() -> None:
    op = _read({"type": "object", "properties": {"first": {"$ref": REF + "S0"}}})
    graph = _graph(60)
    small, large = (
        ToolSurface(graph, budget=DisclosureBudget(tool_budget_tokens=budget, output_schema_percent=1000))
        for budget in (600, 3000)
    )
    kept_small = small.definition(op)["outputSchema"].get("$defs", {})
    kept_large = large.definition(op)["outputSchema"].get("$defs", {})
    assert set(kept_small) < set(kept_large)
    assert large.definition(op)["_meta"][OUTPUT_SCHEMA_META] == "summarised"
    assert _served_chars(large, op) <= large.budget_chars


def test_an_output_schema_may_add_at_most_its_share_to_the_tool() -> None:
    op = _read({"$ref": REF + "A"})
    for percent in (0, 10, 20, 60, 300):
        surface = ToolSurface(GRAPH, budget=DisclosureBudget(output_schema_percent=percent))
        published = surface.published(op)
        bare = {key: value for key, value in published.definition.items() if key != "outputSchema"}
        listed = len(json.dumps(published.definition, separators=(",", ":")))
        assert listed <= len(json.dumps(bare, separators=(",", ":"))) * (100 + percent) / 100
    assert ToolSurface(GRAPH, budget=DisclosureBudget(output_schema_percent=0)).published(op).output_state == "omitted"


def test_a_tool_over_the_budget_without_its_output_schema_leaves_it_out_and_says_so() -> None:
    op = _read({"$ref": REF + "A"})
    surface = ToolSurface(GRAPH, budget=DisclosureBudget(tool_budget_tokens=50))
    published = surface.published(op)
    assert "outputSchema" not in published.definition
    assert published.definition["_meta"][OUTPUT_SCHEMA_META] == "omitted"
    assert published.rest_chars > surface.budget_chars
    assert math.ceil(published.served_chars / 4) > surface.budget_tokens


def test_a_tool_without_a_response_schema_publishes_none_and_no_marker() -> None:
    definition = ToolSurface(GRAPH).definition(replace(_read({}), output=Output()))
    assert "outputSchema" not in definition and OUTPUT_SCHEMA_META not in definition["_meta"]


def test_a_documents_surface_uses_its_stated_budgets() -> None:
    op = _read({"$ref": REF + "A"})
    doc = Document(service=Service(id="svc", version="1", display_name="Svc"), operations=(op,), schemas=GRAPH)
    assert surface_of(doc).budget == DisclosureBudget()
    tight = replace(doc, disclosure=DisclosureBudget(tool_budget_tokens=50, output_schema_percent=20))
    assert surface_of(tight).budget_tokens == 50
    assert surface_of(tight).definition(op)["_meta"][OUTPUT_SCHEMA_META] == "omitted"
    assert surface_of(tight) is surface_of(tight)  # asked again for the same document: the same projections


def _large_input(op: Operation) -> Operation:
    """``op`` taking an order whose optional parts make its input schema ~27 KB (over the 16 KB input budget)."""
    return replace(op, input=Input(schema=order_schema(120)))


def test_an_input_schema_over_the_input_budget_is_listed_summarised_and_says_so() -> None:
    op = _large_input(_read({"$ref": REF + "A"}))
    surface = ToolSurface(GRAPH)
    assert surface.input_budget_tokens == INPUT_SCHEMA_BUDGET_TOKENS == 4000
    whole = published_input_schema(op)
    assert compact_size(whole) > surface.input_budget_tokens * 4
    published = surface.published(op)
    listed = published.definition["inputSchema"]
    assert published.input_summarised and published.definition["_meta"][INPUT_SCHEMA_META] == "summarised"
    assert compact_size(listed) <= surface.input_budget_tokens * 4
    assert listed["properties"]["body"]["properties"]["shipping"]["properties"]["address"] == {
        "type": "object",
        "description": "Address (summarised: read anvil://schema/svc_get_a)",
    }
    assert listed["properties"]["anvil_projection"] == whole["properties"]["anvil_projection"]  # reserved: whole
    assert published.rest_chars < compact_size(whole)  # the rest of the tool is measured as it is listed
    # served under another name (a fleet's), the stubs name the resource that name reads
    renamed = surface.definition(op, name="shop__svc_get_a")["inputSchema"]
    assert "anvil://schema/shop__svc_get_a" in json.dumps(renamed)
    assert surface.definition(op)["name"] == "svc_get_a"


def test_every_tool_within_the_input_budget_lists_the_same_bytes_as_without_summaries() -> None:
    small = _read({"$ref": REF + "A"})
    large = _large_input(_read({"$ref": REF + "B"}, "get_b"))
    default, unbounded = ToolSurface(GRAPH), ToolSurface(GRAPH, input_budget_tokens=10**9)
    assert json.dumps(default.definition(small)) == json.dumps(unbounded.definition(small))
    assert INPUT_SCHEMA_META not in default.definition(small)["_meta"]
    whole = unbounded.published(large)
    assert not whole.input_summarised and INPUT_SCHEMA_META not in whole.definition["_meta"]
    assert whole.definition["inputSchema"] == published_input_schema(large)


def test_a_tool_budget_above_the_input_budget_raises_it() -> None:
    op = _large_input(_read({"$ref": REF + "A"}))
    roomy = ToolSurface(GRAPH, budget=DisclosureBudget(tool_budget_tokens=20_000))
    assert roomy.input_budget_tokens == 20_000
    assert not roomy.published(op).input_summarised


def test_a_tool_is_published_once_per_operation_and_every_definition_is_a_copy_of_it() -> None:
    op = _read({"$ref": REF + "A"})
    surface = ToolSurface(GRAPH)
    first = surface.published(op)
    assert surface.published(op) is first
    definition = surface.definition(op)
    assert definition == first.definition and definition is not first.definition
    definition["name"] = "renamed"  # a caller renaming its copy changes nothing published
    assert surface.definition(op)["name"] == op.mcp.tool_name
    assert surface.published(replace(op, display_name="Other")) is not first  # another operation object


def test_a_document_differing_only_in_its_diagnostics_shares_the_surface_and_its_tools() -> None:
    op = _read({"$ref": REF + "A"})
    doc = Document(service=Service(id="svc", version="1", display_name="Svc"), operations=(op,), schemas=GRAPH)
    surface = surface_of(doc)
    published = surface.published(op)
    assert surface_of(replace(doc, diagnostics=())) is surface
    assert surface_of(replace(doc, diagnostics=())).published(op) is published
    tight = replace(doc, disclosure=DisclosureBudget(tool_budget_tokens=50))
    assert surface_of(tight) is not surface  # other budgets: another surface


def test_a_measured_document_shares_the_tools_published_before_its_figures_were_measured() -> None:
    op = _read({"$ref": REF + "A"})
    doc = Document(service=Service(id="svc", version="1", display_name="Svc"), operations=(op,), schemas=GRAPH)
    published = surface_of(doc).published(op)
    cost = DisclosureCost(tool_tokens=42, chars_per_token=3.5, estimator="o200k_base")
    measured_op = replace(op, disclosure_cost=cost)
    measured = replace(doc, operations=(measured_op,))
    surface = surface_measured(doc, measured)
    assert surface_of(measured) is surface
    assert surface.published(measured_op) is published
    assert published == ToolSurface(GRAPH).published(measured_op)  # what a fresh surface works out
