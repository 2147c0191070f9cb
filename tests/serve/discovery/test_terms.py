"""The words of tasks as the search reads them: values and negated words out, turns of phrase in."""

from __future__ import annotations

from anvil.serve.discovery.terms import cue_terms, query_terms, stem, task_words


def test_host_and_file_names_are_values_not_the_task() -> None:
    assert query_terms("point the docs site at docs.acme.dev and attach report.pdf") == (
        "point",
        "doc",
        "sit",
        "attach",
    )
    assert query_terms("svc.issue.get") == ("svc", "issu", "get")  # an operation id is not a host name


def test_a_word_a_negation_governs_is_left_out() -> None:
    assert task_words("take the site offline without deleting it") == [
        "take",
        "the",
        "site",
        "offline",
        "without",
        "it",
    ]
    assert "close" not in task_words("don't close it, just snooze it")


def test_turns_of_phrase_ask_for_counts_identity_hooks_and_history() -> None:
    assert {"count", "statistic"} <= set(cue_terms(["how", "many", "errors"]))
    assert {"current", "identity"} <= set(cue_terms(["which", "account", "am", "I", "logged", "in", "as"]))
    assert "hook" in set(cue_terms(["email", "the", "team", "whenever", "a", "deploy", "fails"]))
    assert "history" in set(cue_terms(["who", "bumped", "the", "priority"]))
    assert list(cue_terms(["who", "is", "on", "call"])) == []


def test_what_a_message_is_to_say_is_a_value_not_the_task() -> None:
    assert task_words("leave a comment on DATA-9 saying the export is fixed. Then close it") == [
        "leave",
        "a",
        "comment",
        "on",
        "saying",
        "Then",
        "close",
        "it",
    ]


def test_irregular_past_forms_and_british_spellings_meet_the_words_apis_write() -> None:
    for said, written in (
        ("sent", "send"),
        ("paid", "pays"),
        ("organise", "organize"),
        ("organised", "organizing"),
        ("colour", "color"),
        ("favourite", "favorites"),
        ("centre", "center"),
        ("cancelled", "canceled"),
        ("labelled", "labeled"),
    ):
        assert stem(said) == stem(written), said
    assert stem("called") == stem("call") != stem("cancel")
