"""Caller controls in _meta and key forwarding."""

from __future__ import annotations

import pytest

from anvil.serve.controls import CallerControls, ControlError, KeyConflict, forward_key, read_controls


def test_absent_or_empty_meta_asks_for_nothing() -> None:
    assert read_controls(None) == CallerControls()
    assert read_controls({}) == CallerControls()


def test_the_key_and_stage_are_read_and_every_other_key_is_ignored() -> None:
    meta = {"idempotency_key": "k", "stage": True, "progressToken": 3, "io.modelcontextprotocol/clientInfo": {}}
    assert read_controls(meta) == CallerControls(idempotency_key="k", stage=True)
    assert read_controls({"stage": False}) == CallerControls()


@pytest.mark.parametrize(
    "meta", [{"idempotency_key": ""}, {"idempotency_key": None}, {"idempotency_key": 7}, {"stage": "yes"}]
)
def test_a_malformed_control_is_an_error(meta: dict[str, object]) -> None:
    assert isinstance(read_controls(meta), ControlError)


def test_a_key_is_forwarded_only_into_an_idempotency_input() -> None:
    arguments = {"body": "x"}
    assert forward_key(arguments, "k", "idempotency_key") == {"body": "x", "idempotency_key": "k"}
    assert arguments == {"body": "x"}
    assert forward_key(arguments, "k", None) is arguments
    assert forward_key(arguments, None, "idempotency_key") is arguments


def test_a_different_key_already_in_the_arguments_conflicts_and_the_same_one_does_not() -> None:
    assert forward_key({"idempotency_key": "a"}, "b", "idempotency_key") == KeyConflict("idempotency_key")
    assert forward_key({"idempotency_key": "b"}, "b", "idempotency_key") == {"idempotency_key": "b"}
    assert forward_key({"idempotency_key": ""}, "b", "idempotency_key") == {"idempotency_key": "b"}
