"""A task's intent, a tool's shape and head, and how well the two agree (the search's second stage)."""

from __future__ import annotations

import re

import pytest

from anvil.serve.discovery.intent import (
    CHECK,
    CREATE,
    DELETE,
    GET,
    LIST,
    OBTAIN,
    OTHER,
    READ,
    UPDATE,
    agreement,
    head_terms,
    task_intent,
    tool_shape,
)
from anvil.serve.discovery.terms import task_words


def words(task: str) -> list[str]:
    """A task's words as the index hands them over: values and negated words out, folded, letters only."""
    runs = re.findall(r"[^\W_]+", " ".join(task_words(task)))
    return [run.casefold() for run in runs if run.isalpha() and len(run) > 1]


@pytest.mark.parametrize(
    ("task", "intent"),
    [
        ("remove the comment", DELETE),
        ("get rid of the old draft", DELETE),
        ("take Dave off the mobile team", DELETE),
        ("we finished early, end the maintenance window now", None),  # "end" is a verb only where a clause opens
        ("end the maintenance window now", DELETE),
        ("set up a webhook for deploys", CREATE),
        ("file a bug in the MOBILE project", CREATE),
        ("can you add a note to PT-4", CREATE),
        ("open a new incident", CREATE),
        ("open the 'Quarterly plan' task", READ),
        ("download the file from my batch", READ),
        ("close the incident I opened", UPDATE),
        ("take the staging site offline without deleting it", UPDATE),
        ("who is on call right now?", READ),
        ("give me the timeline", OBTAIN),
        ("get vectors for these descriptions", OBTAIN),
        ("give Maria access to the project", CREATE),
        ("these three incidents are the same outage", None),
    ],
)
def test_a_tasks_intent_is_read_from_its_first_verb_its_phrase_or_its_question(task: str, intent: int | None) -> None:
    assert task_intent(words(task))[0] == intent


def test_the_intent_says_where_its_verb_is() -> None:
    assert task_intent(words("please remind me to call Bob")) == (CREATE, 1)
    assert task_intent(words("which channels exist?")) == (READ, 0)
    assert task_intent([]) == (None, -1)


@pytest.mark.parametrize(
    ("path", "title", "action", "shape"),
    [
        ("/teams/{team_gid}/removeUser", "Remove a user from a team", "create", DELETE),
        ("/accounts/get", "(Deprecated) Retrieve a balance", "create", GET),  # the path's verb, under POST
        ("/conversations.setTopic", "Conversations set topic", "create", UPDATE),
        ("/threads/{id}/runs", "Thread runs", "list", LIST),  # a plural is a collection, not "run"
        ("/threads/{id}/runs", "Create run", "create", CREATE),
        ("/rest/api/3/filter", "Create filter", "create", CREATE),
        ("/incidents/{id}", "Update an incident", "replace", UPDATE),
        ("/signal/evaluate", "Evaluate a proposed ACH transaction", "create", OTHER),
        ("/widgets/{id}", "Widget", "get", GET),  # no verb of its own: the AIR action
    ],
)
def test_a_tools_shape_is_read_from_its_title_then_its_path_then_its_action(
    path: str, title: str, action: str, shape: int
) -> None:
    assert tool_shape(path, title, action) == shape


def test_a_tools_head_is_what_its_path_title_and_resource_name_less_their_verbs() -> None:
    assert head_terms("/teams/{team_gid}/removeUser", "Remove a user from a team", "removeUser") == {"user"}
    assert head_terms("/accounts/get", "Retrieve accounts", "get") == {"account"}
    assert head_terms("/oncalls", "List all of the on-calls", "oncall") == {"oncall", "call"}


def test_a_shape_agrees_with_its_intent_and_contradicts_the_opposite_one() -> None:
    assert agreement(DELETE, DELETE) == 1.0 and agreement(DELETE, CREATE) < 0
    assert agreement(READ, GET) == agreement(READ, LIST) == 1.0 and agreement(READ, UPDATE) < 0


def test_getting_something_reads_it_or_has_it_made_for_the_asker() -> None:
    # "get vectors for these descriptions", "give me a URL the CMS can call": a create answers, less than a read
    assert agreement(OBTAIN, GET) == agreement(OBTAIN, LIST) == 1.0
    assert agreement(READ, CREATE) < agreement(OBTAIN, CREATE) < 0 < agreement(OBTAIN, OTHER)
    assert agreement(OBTAIN, DELETE) < 0 and agreement(OBTAIN, UPDATE) < 0


def test_checking_something_asks_for_a_tool_that_checks_before_one_that_reads() -> None:
    assert task_intent(words("check whether this comment is hateful"))[0] == CHECK
    assert task_intent(words("verify the account holder's name"))[0] == CHECK
    assert agreement(CHECK, OTHER) > agreement(CHECK, GET) > 0 > agreement(CHECK, DELETE)
    assert tool_shape("/moderations", "Classifies if text is potentially harmful", "create") == OTHER
    assert tool_shape("/identity/match", "Retrieve identity match score", "create") == GET
    assert agreement(UPDATE, UPDATE) > agreement(UPDATE, CREATE) > agreement(UPDATE, DELETE)
    assert agreement(None, DELETE) == 0.0 and agreement(CREATE, OTHER) == 0.0
