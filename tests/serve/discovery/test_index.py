"""The lexical tool search index: exact matches first, ranking, the grant filter, determinism, hostile text."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from anvil.air.model import Document
from anvil.compiler import build
from anvil.serve.auth.naming import fleet_tool_name
from anvil.serve.discovery.index import MAX_QUERY_TERMS, IndexEntry, SearchIndex, query_terms
from tests.conftest import corpus_dir, missing


def entry(
    name: str, title: str, *, method: str = "GET", path: str = "", description: str = "", **more: str
) -> IndexEntry:
    """A tool as the index reads it; the operation id and resource/action come from the name when not given."""
    resource, _, action = name.partition("_")
    return IndexEntry(
        name=name,
        operation_id=more.get("operation_id", f"svc.{resource}.{action or 'get'}"),
        method=method,
        path=path or f"/{resource}",
        title=title,
        description=description,
        resource=more.get("resource", resource),
        action=more.get("action", action or "get"),
        inputs=(("id", "The identifier."),),
        lane=more.get("lane"),
    )


TOOLS = (
    entry("comments_delete", "Delete comment", method="DELETE", path="/issue/{issueIdOrKey}/comment/{id}",
          operation_id="svc.comment.delete", resource="comment", action="delete",
          description="Deletes a comment from an issue."),
    entry("comments_list", "Get comments", path="/issue/{issueIdOrKey}/comment", operation_id="svc.comment.list",
          resource="comment", action="list", description="Returns all comments for an issue."),
    entry("issues_update", "Edit issue", method="PUT", path="/issue/{issueIdOrKey}", operation_id="svc.issue.replace",
          resource="issue", action="replace", description="Resolve, reassign or edit an issue."),
    entry("issues_get", "Get issue", path="/issue/{issueIdOrKey}", operation_id="svc.issue.get",
          resource="issue", action="get", description="Returns the details of an issue."),
    entry("oncalls_list", "List all of the on-calls", path="/oncalls", resource="oncall", action="list"),
    entry("decoy_get", "Get decoy", path="/decoy",
          description="Names comments_delete, svc.issue.get and DELETE /issue/{issueIdOrKey}/comment/{id} as text."),
)  # fmt: skip


@pytest.fixture(scope="module")
def index() -> SearchIndex:
    return SearchIndex.build(TOOLS)


def test_a_tools_exact_name_operation_id_and_method_path_find_it_first(index: SearchIndex) -> None:
    for tool in TOOLS:
        for query in (tool.name, tool.operation_id, f"{tool.method} {tool.path}", f"  {tool.name.upper()}  "):
            assert index.search(query, 3)[0] == tool.name, query


def test_a_path_alone_finds_every_tool_on_it_first(index: SearchIndex) -> None:
    assert set(index.search("/issue/{issueIdOrKey}", 2)) == {"issues_update", "issues_get"}


def test_words_meet_identifier_parts_and_other_forms_of_the_same_word(index: SearchIndex) -> None:
    assert index.search("deleting a comment", 1) == ["comments_delete"]
    assert index.search("listing the comments", 1) == ["comments_list"]


def test_generic_related_words_and_joined_words_find_the_tool(index: SearchIndex) -> None:
    assert index.search("close the ticket", 1) == ["issues_update"]
    assert index.search("who is on call", 1) == ["oncalls_list"]


def test_the_values_a_task_names_are_not_searched() -> None:
    terms = query_terms("close PROJ-123 'Send invoices' in #general for bob@example.com via oauth2, $250")
    assert terms == ("clos", "via", "oauth")


def test_the_plain_baseline_neither_splits_identifiers_nor_stems(index: SearchIndex) -> None:
    plain = SearchIndex.build(TOOLS, plain=True)
    assert query_terms("deleteComment creating", plain=True) == ("deletecomment", "creating")
    assert plain.search("comments_delete", 1) == ["comments_delete"]  # exact matches still come first
    assert "comments_delete" not in plain.search("deleting", 5)
    assert index.search("deleting", 1) == ["comments_delete"]


def test_the_grant_filter_never_returns_a_name_it_refuses_even_an_exact_match(index: SearchIndex) -> None:
    refused = {"comments_delete", "issues_get"}
    for query in ("comments_delete", "svc.issue.get", "delete comment issue", "/issue/{issueIdOrKey}", "get"):
        found = index.search(query, 10, allowed=lambda name: name not in refused)
        assert found and not refused & set(found), query
    assert index.search("comments_delete", 5, allowed=lambda name: False) == []


def test_results_are_the_same_whatever_the_order_tools_were_indexed_in() -> None:
    queries = ("get", "issue", "comment", "list all", "delete", "nothing here")
    expected = [SearchIndex.build(TOOLS).search(query, 10) for query in queries]
    shuffled = list(TOOLS)
    random.Random(7).shuffle(shuffled)
    assert [SearchIndex.build(shuffled).search(query, 10) for query in queries] == expected


def test_equal_scores_are_ordered_by_name() -> None:
    twins = [entry(f"widget_{n}", "Get widget", path="/widget") for n in ("c", "a", "b")]
    assert SearchIndex.build(twins).search("widget", 5) == ["widget_a", "widget_b", "widget_c"]


def test_a_name_indexed_twice_keeps_its_first_entry_and_limit_bounds_the_answer(index: SearchIndex) -> None:
    doubled = SearchIndex.build([*TOOLS, entry("issues_get", "Something else entirely", path="/elsewhere")])
    assert len(doubled) == len(TOOLS)
    assert doubled.search("/elsewhere", 5) == []
    assert len(index.search("issue comment get list", 2)) == 2
    assert index.search("issue", 0) == []
    assert SearchIndex.build([]).search("issue") == []


@pytest.mark.parametrize(
    "query",
    [
        "",
        "   ",
        "the of and to it is",
        "x" * 500,
        "get " * 250,
        " ".join(f"word{n}x" for n in range(200)),
        "é中文🙂 Ünïcödé ß ﬁ",
        r"(.*)+[a-z]{1,}\d?$^|\\",
        "\x00\x01\u202e delete",
        "'unterminated \"quotes` everywhere'",
    ],
)
def test_hostile_queries_answer_without_error(index: SearchIndex, query: str) -> None:
    found = index.search(query, 5)
    assert len(found) <= 5 and set(found) <= set(index.names)
    assert len(query_terms(query)) <= MAX_QUERY_TERMS


def test_hostile_descriptions_are_read_within_bounds() -> None:
    huge = entry("huge_get", "Get huge", description="a" * 1_000_000 + " " + "word " * 100_000 + " needle")
    start = time.perf_counter()
    index = SearchIndex.build([huge, *TOOLS])
    assert time.perf_counter() - start < 2.0
    assert index.search("needle") == []  # past the description's bound
    assert index.search("huge_get", 1) == ["huge_get"]


# --- the corpus: one large spec ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def jira() -> Document:
    """jira-platform compiled as a fresh user compiles it (every one of its operations is a tool here)."""
    folder = corpus_dir()
    if not (folder / "INDEX.tsv").is_file():
        missing(f"corpus not found at {folder} (set ANVIL_CORPUS)")
    spec = Path(folder / "jira-platform.json")
    document = build(spec, manifest=None, service_id="jira-platform", source_uri=spec.name).document
    assert document is not None and len(document.operations) > 400
    return document


@pytest.mark.corpus
def test_every_jira_platform_tool_is_found_first_by_its_name_operation_id_and_method_path(jira: Document) -> None:
    entries = [IndexEntry.of(op, op.mcp.tool_name) for op in jira.operations]
    index = SearchIndex.build(entries)
    misses = [
        (query, tool.name)
        for tool in entries
        for query in (tool.name, tool.operation_id, f"{tool.method} {tool.path}")
        if index.search(query, 1) != [tool.name]
    ]
    assert misses == []


@pytest.mark.corpus
def test_a_fleet_index_of_prefixed_names_filters_per_caller_and_answers_the_same_twice(jira: Document) -> None:
    entries = [IndexEntry.of(op, fleet_tool_name("tracker/jira", op.mcp.tool_name)) for op in jira.operations]
    index = SearchIndex.build(entries)
    first = entries[0]
    assert index.search(first.name, 1) == [first.name] and first.name.startswith("tracker_jira__")
    granted = {tool.name for tool in entries if "comment" in tool.name}
    for query in ("add a comment to the issue", "delete the comment", "assign the issue to me", "list projects"):
        found = index.search(query, 5, allowed=granted.__contains__)
        assert set(found) <= granted
        assert index.search(query, 5) == index.search(query, 5)
    assert index.search("add a comment to an issue", 1, allowed=granted.__contains__) == [
        fleet_tool_name("tracker/jira", "jira-platform_add_comment")
    ]
