"""The selftest's state comparison and example arguments."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from anvil.air.values import CannotMake
from anvil.bundle.read import read_bundle
from anvil.proof.mock import MockApi, create_mock_app
from anvil.proof.mock.state import MAX_LOG
from anvil.proof.selftest.support import ABSENT, Example, Wire, first_difference, wire_text


def test_equal_states_have_no_difference_and_a_reordered_identified_list_is_equal() -> None:
    assert first_difference({"a": [1, 2]}, {"a": [1, 2]}) is None
    assert first_difference([{"id": 1}, {"id": 2}], [{"id": 2}, {"id": 1}]) is None


def test_a_difference_names_the_field_inside_an_identified_item_and_both_values() -> None:
    before = [{"id": 7, "state": "open", "title": "t"}]
    after = [{"id": 7, "state": "closed", "title": "t"}]
    assert first_difference(before, after) == ("[id=7].state", "open", "closed")


def test_an_item_left_over_is_named_by_its_identity_with_an_absent_before() -> None:
    field, was, now = first_difference([], [{"number": 3, "title": "x"}]) or ("", None, None)
    assert (field, was, now) == ("[number=3]", ABSENT, {"number": 3, "title": "x"})
    assert first_difference({"a": 1}, {}) == ("a", 1, ABSENT)
    assert first_difference(None, {"x": 1}) == ("(whole state)", None, {"x": 1})


def test_examples_use_declared_examples_and_number_plain_strings_per_call(payments: Path, github: Path) -> None:
    pay = read_bundle(payments)
    refund = pay.operation("payments.refunds.create")
    assert refund is not None
    example = Example(pay)
    first = example.arguments(refund, key="k-1")
    assert (first["payment_id"], first["confirm"], first["idempotency_key"]) == ("pay_123", True, "k-1")
    git = read_bundle(github)
    comment = git.operation("github.comments.create")
    assert comment is not None
    again = Example(git)
    one, two = again.arguments(comment), again.arguments(comment)
    assert one["body"] != two["body"] and one["owner"] != two["owner"]
    assert "confirm" not in again.arguments(comment, confirm=False)


@pytest.mark.anyio
async def test_the_wire_log_still_sees_new_requests_after_the_mock_log_rolled_over(github: Path) -> None:
    app = create_mock_app(MockApi(read_bundle(github)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://mock") as http:
        wire = Wire(http)
        await wire.detect()
        for _ in range(MAX_LOG + 5):
            await http.get("/repos/o/r/pulls")
        mark = await wire.mark()
        await http.post("/repos/o/r/issues", json={"title": "after the roll-over"})
        sent = await wire.since(mark)
    assert (wire.log, mark) == ("anvil", MAX_LOG + 5)
    assert sent is not None and [(e.method, e.body) for e in sent] == [("POST", {"title": "after the roll-over"})]


def test_examples_honour_format_pattern_and_length_and_never_reuse_a_spec_key(events: Path) -> None:
    doc = read_bundle(events)
    create = doc.operation("events.events.create")
    assert create is not None
    example = Example(doc)
    arguments = example.arguments(create)
    body = arguments["body"]
    assert isinstance(body, dict)
    assert re.fullmatch(r"AC[0-9a-f]{32}", str(arguments["account_id"]))
    assert all(datetime.fromisoformat(str(body[name]).replace("Z", "+00:00")) for name in ("start", "end"))
    assert len(body["price"]["currency"]) == 3
    again = example.arguments(create)
    keys = {arguments["idempotency_key"], again["idempotency_key"]}
    assert len(keys) == 2 and "same-key-every-time" not in keys
    assert example.problem(create) is None


def test_an_operation_whose_required_input_no_value_fits_is_a_problem_named_before_any_call(events: Path) -> None:
    doc = read_bundle(events)
    report = doc.operation("events.reports.create")
    assert report is not None
    example = Example(doc)
    assert example.problem(report) == (
        "no valid example input can be made: create_report: 'body': 'range': 'from' is required but "
        "additionalProperties is false"
    )
    assert example.counter == 0  # asking used up no number
    with pytest.raises(CannotMake):
        example.arguments(report)


def test_a_list_and_an_object_are_compared_as_the_executor_writes_them_on_the_wire() -> None:
    assert wire_text(["parts", "history"]) == "parts,history"
    assert wire_text({"gt": 1, "lt": 2}) == '{"gt":1,"lt":2}'
    assert (wire_text(True), wire_text(2.0), wire_text("x")) == ("true", "2", "x")
