"""Query expansion: what a task searches beyond its own words (the thesaurus, turns of phrase, values left
out), how much each term counts, and that an expansion never outranks the words a tool shares with the task."""

from __future__ import annotations

import random

from anvil.serve.discovery.expansion import (
    DESCRIBED_WEIGHT,
    GENERIC_VERB_WEIGHT,
    UNHELD_WEIGHT,
    Vocabulary,
)
from anvil.serve.discovery.index import SearchIndex
from anvil.serve.discovery.terms import run_terms
from anvil.serve.discovery.thesaurus import GROUP_WEIGHT, phrase_terms, related_terms
from tests.serve.discovery.test_index import entry


def vocabulary(words: str, identifiers: str = "") -> Vocabulary:
    held = {term for word in words.split() for term in run_terms(word)}
    return Vocabulary(held, frozenset(term for word in identifiers.split() for term in run_terms(word)))


def test_the_thesaurus_relates_the_words_users_and_apis_use_for_one_thing() -> None:
    assert set(run_terms("section")) <= set(related_terms(run_terms("column")[0]))
    assert set(run_terms("merge")) <= set(related_terms(run_terms("fold")[0]))
    assert set(run_terms("embedding")) <= set(related_terms(run_terms("vector")[0]))
    assert set(run_terms("moderation")) <= set(related_terms(run_terms("hateful")[0]))
    assert related_terms("zzzz") == ()


def test_a_turn_of_phrase_asks_for_what_it_means() -> None:
    assert {"vector", "stor"} <= set(phrase_terms("set up a knowledge base from our docs".split()))
    assert "merg" in set(phrase_terms("fold them into the first one".split()))
    assert {"link", "dependency"} <= set(phrase_terms("mark web as blocked by api".split()))
    assert list(phrase_terms("base knowledge".split())) == []


def test_a_related_word_counts_less_than_the_tasks_own_and_more_when_the_own_word_is_not_indexed() -> None:
    held = vocabulary("section project merge incident")
    weights = held.weighted_terms("add a column to the project")
    assert weights["project"] == 1.0
    assert weights["section"] == UNHELD_WEIGHT  # "column" is not indexed: "section" stands for it
    weights = vocabulary("section column project").weighted_terms("add a column to the project")
    assert weights["column"] == 1.0 and weights["section"] <= GROUP_WEIGHT


def test_a_code_a_task_names_is_a_value_unless_the_api_uses_the_word() -> None:
    weights = vocabulary("project bug pay").weighted_terms("find the open bugs in the PAY project")
    assert "pay" in weights  # the index holds "pay": kept
    weights = vocabulary("project bug").weighted_terms("find the open bugs in the PAY project")
    assert "pay" not in weights and "payment" not in weights
    assert "sms" in vocabulary("sms contact").weighted_terms("page me by SMS")


def test_a_verb_pointing_at_what_the_task_is_about_counts_less() -> None:
    weights = vocabulary("message post").weighted_terms("fix the typo in the message I just posted")
    assert weights["messag"] == 1.0
    assert weights["post"] == DESCRIBED_WEIGHT
    assert vocabulary("post").weighted_terms("post the message")["post"] == 1.0


def test_generic_verbs_count_less_and_a_repeating_prefix_finds_the_word_the_api_uses() -> None:
    weights = vocabulary("build hook url").weighted_terms("give me a URL to trigger a rebuild")
    assert weights["giv"] == GENERIC_VERB_WEIGHT
    assert weights["rebuild"] == 1.0 and 0.0 < weights["build"] < 1.0


def test_a_channel_mention_searches_channels_and_a_thing_after_the_is_not_someone() -> None:
    held = vocabulary("channel conversation history board user member")
    assert "channel" in held.weighted_terms("what was said in #incidents?")
    assert "user" not in held.weighted_terms("add a column to the Website board")
    assert "user" in held.weighted_terms("add Carol to the board")


def test_a_synonym_finds_the_tool_whose_words_differ() -> None:
    tools = (
        entry("sections_create", "Create a section in a project", method="POST", path="/projects/{id}/sections",
              resource="section", action="create", description="Creates a new section in a project."),
        entry("projects_create", "Create a project", method="POST", path="/projects", resource="project",
              action="create", description="Creates a new project."),
        entry("merge_update", "Merge incidents", method="PUT", path="/incidents/{id}/merge", resource="merge",
              action="replace", description="Merges a list of incidents into this one."),
        entry("incidents_update", "Update an incident", method="PUT", path="/incidents/{id}", resource="incident",
              action="replace", description="Acknowledges, resolves or reassigns an incident."),
        entry("vector_stores_create", "Create vector store", method="POST", path="/vector_stores",
              resource="vector_store", action="create", description="Creates a vector store."),
        entry("assistants_create", "Create assistant", method="POST", path="/assistants", resource="assistant",
              action="create", description="Creates an assistant with a model and instructions."),
    )  # fmt: skip
    index = SearchIndex.build(tools)
    assert index.search("add a new column called 'Blocked' to the board", 1) == ["sections_create"]
    assert index.search("these incidents are one outage, fold them into the first one", 1) == ["merge_update"]
    assert index.search("set up a knowledge base from our docs for the assistant", 1) == ["vector_stores_create"]


def test_an_expansion_never_outranks_a_tool_sharing_the_tasks_own_word() -> None:
    tools = (
        entry("widgets_merge", "Merge widgets", method="POST", path="/widgets/merge", resource="widget",
              action="update", description="Merges widgets."),
        entry("widgets_combine", "Combine widgets", method="POST", path="/widgets/combine", resource="widget",
              action="update", description="Combines widgets."),
        entry("widgets_consolidate", "Consolidate widgets", method="POST", path="/widgets/consolidate",
              resource="widget", action="update", description="Consolidates widgets."),
    )  # fmt: skip
    index = SearchIndex.build(tools)
    for tool in tools:
        word = tool.title.split()[0].casefold()
        assert index.search(f"{word} the widgets", 1) == [tool.name], word
        assert index.search(tool.name, 1) == [tool.name]
    assert len(index.search("fold the widgets into one", 3)) == 3


def test_expanded_searches_answer_the_same_whatever_the_order_the_tools_come_in() -> None:
    tools = [
        entry(f"{noun}_{verb}", f"{verb.title()} {noun}", resource=noun, action=verb)
        for noun in ("section", "column", "incident", "merge", "vector_store", "embedding")
        for verb in ("create", "get", "list", "delete")
    ]
    queries = ("add a column", "fold these incidents", "knowledge base", "get vectors for these texts")
    expected = [SearchIndex.build(tools).search(query, 10) for query in queries]
    shuffled = list(tools)
    random.Random(7).shuffle(shuffled)
    assert [SearchIndex.build(shuffled).search(query, 10) for query in queries] == expected


def test_a_generic_verb_after_a_determiner_is_a_noun_and_counts_fully() -> None:
    held = vocabulary("status update incident")
    assert held.weighted_terms("send stakeholders an update on the incident")["updat"] == 1.0
    assert held.weighted_terms("update the incident")["updat"] == GENERIC_VERB_WEIGHT
