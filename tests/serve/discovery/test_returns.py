"""What a tool answers with, in words: its response schema's record (names, properties, description) searched."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from anvil.air.model import Document, Operation, Output
from anvil.serve.discovery.index import IndexEntry, SearchIndex
from anvil.serve.discovery.returns import returns_text

SECTION: dict[str, Any] = {
    "SectionResponse": {"allOf": [{"$ref": "#/components/schemas/SectionCompact"}, {"type": "object"}]},
    "SectionCompact": {
        "description": "A section is a subdivision of a project. It is a header in a list view or a column in a "
        "board view.",
        "type": "object",
        "properties": {"gid": {"type": "string"}, "name": {"type": "string"}},
    },
    "Loop": {"$ref": "#/components/schemas/Loop"},
}


def answering(op: Operation, schema: dict[str, Any] | None) -> Operation:
    return replace(op, output=Output(schema=schema))


def test_a_wrapped_referenced_records_names_properties_and_description_are_read(github: Document) -> None:
    op = answering(github.operations[0], {"properties": {"data": {"$ref": "#/components/schemas/SectionResponse"}}})
    text = returns_text(op, SECTION)
    assert text.startswith("data SectionResponse SectionCompact gid name A section is a subdivision")
    assert "column in a board view" in text


def test_a_pages_record_is_its_lists_item(github: Document) -> None:
    page = {
        "type": "object",
        "properties": {
            "data": {"type": "array", "items": {"$ref": "#/components/schemas/SectionCompact"}},
            "next_page": {"type": "object"},
        },
    }
    text = returns_text(answering(github.operations[0], page), SECTION)
    assert "SectionCompact" in text and "column in a board view" in text


def test_a_cyclic_missing_or_boilerplate_schema_costs_little_and_says_nothing(github: Document) -> None:
    op = github.operations[0]
    assert set(returns_text(answering(op, {"$ref": "#/components/schemas/Loop"}), SECTION).split()) == {"Loop"}
    assert len(returns_text(answering(op, {"$ref": "#/components/schemas/Loop"}), SECTION).split()) <= 8
    assert returns_text(answering(op, {"$ref": "#/components/schemas/Nowhere"}), SECTION) == "Nowhere"
    assert returns_text(answering(op, {"$ref": "https://elsewhere.example/schema.json"}), SECTION) == ""
    assert returns_text(answering(op, None), SECTION) == ""
    slack = {"description": "Schema for successful response of chat.update", "properties": {"ok": {}, "ts": {}}}
    assert returns_text(answering(op, slack), {}) == "ts"


def test_a_tool_is_found_by_what_its_answer_is_when_its_own_words_do_not_say(github: Document) -> None:
    op = answering(github.operations[0], {"properties": {"data": {"$ref": "#/components/schemas/SectionResponse"}}})
    with_schemas = IndexEntry.of(op, "sections_create", SECTION)
    without = IndexEntry.of(op, "sections_create")
    other = IndexEntry.of(github.operations[1], "other_tool")
    assert "board view" in with_schemas.returns and without.returns == "data SectionResponse"
    assert SearchIndex.build([with_schemas, other]).search("a subdivision of the project", 1) == ["sections_create"]
    assert "sections_create" not in SearchIndex.build([without, other]).search("a subdivision of the project", 2)
