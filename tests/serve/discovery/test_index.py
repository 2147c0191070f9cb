"""The lexical tool search index: exact matches first, ranking, the grant filter, determinism, hostile text."""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Iterator
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


# --- the second stage: intent, shape, head, people, marks ---------------------------------------------

WIDGETS = (
    entry("widgets_create", "Create a widget", method="POST", path="/widgets", resource="widget", action="create",
          description="Creates a widget."),
    entry("widgets_delete", "Delete a widget", method="DELETE", path="/widgets/{id}", resource="widget",
          action="delete", description="Deletes a widget."),
    entry("widgets_update", "Update a widget", method="PUT", path="/widgets/{id}", resource="widget",
          action="replace", description="Updates a widget."),
    entry("widgets_get", "Get a widget", path="/widgets/{id}", resource="widget", action="get",
          description="Returns a widget."),
    entry("widgets_list", "List widgets", path="/widgets", resource="widget", action="list",
          description="Returns every widget."),
)  # fmt: skip


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("remove the blue widget", "widgets_delete"),
        ("get rid of that widget", "widgets_delete"),
        ("please add a widget for the launch", "widgets_create"),
        ("can you make a widget", "widgets_create"),
        ("rename the widget to Gizmo", "widgets_update"),
        ("archive the widget without deleting it", "widgets_update"),
    ],
)
def test_the_tasks_verb_picks_the_tool_of_that_shape_over_its_siblings(query: str, first: str) -> None:
    assert SearchIndex.build(WIDGETS).search(query, 1) == [first]


def test_remove_the_x_ranks_the_delete_of_x_above_its_create() -> None:
    found = SearchIndex.build(WIDGETS).search("remove the widget", 5)
    assert found.index("widgets_delete") < found.index("widgets_create")


def test_a_question_finds_the_reads_first() -> None:
    found = SearchIndex.build(WIDGETS).search("which widgets do we have?", 2)
    assert set(found) == {"widgets_get", "widgets_list"}


def test_an_rpc_tools_own_verb_says_its_shape_whatever_its_method() -> None:
    tools = (
        entry("accounts_get", "Retrieve accounts", method="POST", path="/accounts/get", resource="get",
              action="create", description="Retrieves the accounts linked to an item."),
        entry("accounts_create", "Accounts create", method="POST", path="/accounts.create", resource="account",
              action="create", description="Creates an account linked to an item."),
        entry("accounts_remove", "Accounts remove", method="POST", path="/accounts.remove", resource="account",
              action="create", description="Removes an account from an item."),
    )  # fmt: skip
    index = SearchIndex.build(tools)
    assert index.search("list the accounts linked to the item", 1) == ["accounts_get"]
    assert index.search("delete the account", 1) == ["accounts_remove"]


def test_a_capitalised_word_the_index_does_not_hold_reads_as_someone_so_a_user() -> None:
    tools = (
        entry("projects_get", "Get a project", path="/projects/{id}", resource="project", action="get"),
        entry("users_get", "Get a user", path="/users/{id}", resource="user", action="get"),
    )
    index = SearchIndex.build(tools)
    assert index.search("show me Carol", 1) == ["users_get"]
    assert index.search("show me carol", 2) == ["projects_get", "users_get"]  # a tie, in name order


def test_the_verb_of_a_task_names_what_it_acts_on() -> None:
    tools = (
        *(entry(f"calls_{verb}", f"Calls {verb}", method="POST", path=f"/calls.{verb}", resource="call",
                action="create", description=f"{verb.title()}s a call.") for verb in ("add", "end", "update")),
        entry("reminders_add", "Reminders add", method="POST", path="/reminders.add", resource="reminder",
              action="create", description="Creates a reminder."),
        entry("reminders_list", "Reminders list", path="/reminders.list", resource="reminder", action="list",
              description="Lists reminders."),
    )  # fmt: skip
    assert SearchIndex.build(tools).search("remind me to call the dentist", 1) == ["reminders_add"]


def test_deprecated_and_admin_tools_rank_below_their_plain_twins_unless_the_task_asks_for_them() -> None:
    old = IndexEntry(
        name="balance_get_old", operation_id="svc.balance.get.old", method="POST", path="/balance/get",
        title="Retrieve a balance", description="Retrieves the balance (deprecated: use /v2/balance).",
        resource="balance", action="get", inputs=(), deprecated=True,
    )  # fmt: skip
    tools = (
        old,
        entry("balance_get", "Retrieve a balance", path="/v2/balance", resource="balance", action="get",
              description="Retrieves the balance."),
        entry("admin_emoji_list", "Admin emoji list", path="/admin.emoji.list", resource="emoji", action="list",
              description="Lists the custom emoji of a workspace."),
        entry("emoji_list", "Emoji list", path="/emoji.list", resource="emoji", action="list",
              description="Lists the custom emoji of a workspace."),
    )  # fmt: skip
    index = SearchIndex.build(tools)
    assert index.search("show the balance", 1) == ["balance_get"]
    assert index.search("show the balance from the deprecated endpoint", 1) == ["balance_get_old"]
    assert index.search("list the custom emoji", 1) == ["emoji_list"]
    assert index.search("as an admin, list the custom emoji", 1) == ["admin_emoji_list"]


def test_a_spelled_out_acronym_finds_the_tool_named_by_it() -> None:
    tools = (
        entry("ooo_entries_create", "Create an OOO entry", method="POST", path="/ooo_entries", resource="ooo_entry",
              action="create", description="Creates an entry for a user's time away."),
        entry("offices_list", "List offices", path="/offices", resource="office", action="list",
              description="Returns the company's offices."),
    )  # fmt: skip
    assert SearchIndex.build(tools).search("I'm out of office next week, put that in", 1) == ["ooo_entries_create"]


def test_how_many_asks_for_counts_and_whenever_asks_for_a_hook() -> None:
    tools = (
        entry("events_list", "List a project's events", path="/projects/{id}/events", resource="event",
              action="list", description="Returns the events of a project."),
        entry("stats_list", "Retrieve a project's statistics", path="/projects/{id}/stats", resource="stat",
              action="list", description="Returns totals for a project."),
        entry("deploys_create", "Create a deploy", method="POST", path="/deploys", resource="deploy",
              action="create", description="Starts a deploy."),
        entry("hooks_create", "Create a notification hook", method="POST", path="/hooks", resource="hook",
              action="create", description="Sends an email or a message on a deploy event."),
    )  # fmt: skip
    index = SearchIndex.build(tools)
    assert index.search("how many did each project get?", 1) == ["stats_list"]
    assert index.search("what did each project get?", 1) == ["events_list"]
    assert index.search("email the team whenever a deploy fails", 1) == ["hooks_create"]


def test_a_longer_answer_begins_with_the_shorter_one(index: SearchIndex) -> None:
    widgets = SearchIndex.build([*TOOLS, *WIDGETS])
    for query in ("remove the widget", "get comments", "issue", "update", "who is on call"):
        assert widgets.search(query, 20)[:3] == widgets.search(query, 3), query


@pytest.mark.corpus
def test_a_whole_bodys_top_level_property_names_are_searched_as_input_names(jira: Document) -> None:
    op = next(op for op in jira.operations if op.id == "jira-platform.issue_link.create")
    assert op.input.body is not None and not op.input.body.fields
    names = {name for name, _ in IndexEntry.of(op, op.mcp.tool_name).inputs}
    assert {"inwardIssue", "outwardIssue", "type"} <= names


def test_a_path_naming_the_caller_is_found_by_asking_who_i_am() -> None:
    tools = (
        entry("me_get", "Get a user", path="/users/me", resource="user", action="get",
              description="Returns a user: the one asking."),
        entry("users_get", "Get a user", path="/users/{id}", resource="user", action="get",
              description="Returns a user: the one named."),
        entry("accounts_list", "List accounts", path="/accounts", resource="account", action="list",
              description="Returns the accounts."),
    )  # fmt: skip
    index = SearchIndex.build(tools)
    assert index.search("which user am I logged in as?", 1) == ["me_get"]
    assert index.search("whoami", 1) == ["me_get"]


def test_a_descriptions_first_sentence_says_more_of_the_tool_than_the_rest() -> None:
    # the same words, but only one says them first (the later ones often describe anything else)
    tools = (
        entry("list_b", "Conversations list", path="/conversations.list", resource="conversation",
              action="list", description="Lists all channels in a team. Archived conversations are left out."),
        entry("list_a", "Conversations list", path="/conversations.list", resource="conversation",
              action="list", description="Lists archived conversations. All channels in a team are left out."),
    )  # fmt: skip
    assert SearchIndex.build(tools).search("list the channels", 1) == ["list_b"]  # not first by name


def test_building_pauses_the_garbage_collector_and_leaves_it_as_it_was() -> None:
    seen: list[bool] = []

    def watched() -> Iterator[IndexEntry]:
        seen.append(gc.isenabled())
        yield from TOOLS

    assert gc.isenabled()
    SearchIndex.build(watched())
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        SearchIndex.build(TOOLS)
        assert not gc.isenabled()
    finally:
        gc.enable()
