"""Token counts taken in a helper process are exactly the in-process counts, whatever happens to the helper."""

from __future__ import annotations

import shutil
import sys

from anvil.air.token_counter import TokenCounter
from anvil.air.tokens import count_tokens

_TEXTS = [
    "hello world",
    "",
    "a <|endoftext|> b",
    '{"name":"jira.issue.get","inputSchema":{"type":"object","properties":{"key":{"type":"string"}}}}',
    "Ünïcödé – 日本語 🚀 " * 50,
    "word, " * 20_000,  # more than a pipe buffer on its own
]


def test_the_helper_answers_every_text_in_order_with_the_in_process_counts() -> None:
    with TokenCounter(executable=sys.executable) as counter:
        for text in _TEXTS:
            counter.add(text)
        assert counter.counts() == [count_tokens(text) for text in _TEXTS]
        assert counter.answered_by_helper


def test_texts_added_after_an_answer_are_answered_by_the_helper_in_the_next_round() -> None:
    with TokenCounter(executable=sys.executable) as counter:
        counter.add(_TEXTS[0])
        assert counter.counts() == [2]
        for text in _TEXTS[2:]:
            counter.add(text)
        assert counter.counts() == [count_tokens(text) for text in _TEXTS[2:]]
        assert counter.answered_by_helper
        assert counter.counts() == []


def test_once_the_helper_is_gone_later_rounds_are_counted_in_this_process() -> None:
    with TokenCounter(executable=sys.executable) as counter:
        counter.add(_TEXTS[0])
        assert counter.counts() == [2]
        counter.close()
        counter.add(_TEXTS[2])
        assert counter.counts() == [count_tokens(_TEXTS[2])]
        assert not counter.answered_by_helper


def test_without_a_helper_or_with_one_that_cannot_start_or_dies_the_counts_are_the_same() -> None:
    false = shutil.which("false") or "/bin/false"
    for executable in ("", "/nonexistent/python", false):
        with TokenCounter(executable=executable) as counter:
            for text in _TEXTS:
                counter.add(text)
            assert counter.counts() == [count_tokens(text) for text in _TEXTS], executable
            assert not counter.answered_by_helper


def test_a_counter_closed_before_it_answers_counts_in_this_process() -> None:
    counter = TokenCounter(executable=sys.executable)
    counter.add(_TEXTS[3])
    counter.close()
    assert counter.counts() == [count_tokens(_TEXTS[3])]
    assert not counter.answered_by_helper


def test_nothing_to_count_answers_at_once_without_waiting_for_the_helper() -> None:
    with TokenCounter(executable=sys.executable) as counter:
        assert counter.counts() == []
        assert not counter.answered_by_helper
