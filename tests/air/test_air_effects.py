"""Reading an operation's effect contract: its class, its published declaration, its follow-ups."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from anvil.air.canonical import hash_canonical
from anvil.air.codec import to_json
from anvil.air.effects import (
    FOLLOW_UP_PLACES,
    declared_contract,
    effect_class_of,
    follow_up_refs,
    forwards_idempotency_key,
    reversible_for_class,
)
from anvil.air.model import (
    Cli,
    Deadline,
    Draft,
    Effect,
    FollowUp,
    Idempotency,
    Lookup,
    Mcp,
    Operation,
    RetryPolicy,
    StepCall,
)


def make_op(kind: str = "mutation", **effect: Any) -> Operation:
    return Operation(
        id="gh.comments.create",
        canonical_name="create_comment",
        display_name="Create comment",
        effect=Effect(kind=kind, **effect),  # type: ignore[arg-type]
        idempotency=Idempotency(mode="none"),
        retries=RetryPolicy(mode="none"),
        cli=Cli(command="gh comments create"),
        mcp=Mcp(tool_name="gh_create_comment"),
    )


def test_an_undeclared_class_is_read_for_a_read_and_irreversible_otherwise() -> None:
    assert effect_class_of(make_op("read")) == "read"
    assert effect_class_of(make_op("mutation", reversible=True)) == "irreversible"
    assert effect_class_of(make_op("mutation", class_="compensable")) == "compensable"


def test_a_class_implies_the_reversible_flag() -> None:
    assert [reversible_for_class(c) for c in ("read", "reversible", "compensable", "irreversible")] == [
        True,
        True,
        False,
        False,
    ]


def test_an_operation_declaring_nothing_publishes_no_contract_and_hashes_as_before() -> None:
    op = make_op()
    assert declared_contract(op) is None
    effect_json = to_json(op.effect)
    assert set(effect_json) == {"kind", "action", "risk", "reversible"}
    plain = {"kind": "mutation", "action": "other", "risk": "low", "reversible": True}
    assert hash_canonical(effect_json) == hash_canonical(plain)


def test_a_bare_class_publishes_only_the_class() -> None:
    assert declared_contract(make_op(class_="irreversible")) == {"class": "irreversible"}


def test_the_published_contract_is_the_air_shape_verbatim() -> None:
    op = make_op(
        class_="reversible",
        inverse=FollowUp(
            operation="gh.comments.delete",
            arguments={"comment_id": "response.id"},
            deadline=Deadline(within_ms=60000),
        ),
        lookup=Lookup(operation="gh.comments.get", by="id", arguments={"id": "response.id"}),
    )
    assert declared_contract(op) == {
        "class": "reversible",
        "inverse": {
            "operation": "gh.comments.delete",
            "arguments": {"comment_id": "response.id"},
            "deadline": {"withinMs": 60000},
        },
        "lookup": {"operation": "gh.comments.get", "by": "id", "arguments": {"id": "response.id"}},
    }


def test_a_contract_without_a_class_publishes_the_default_class() -> None:
    op = make_op(draft=Draft(operation="gh.releases.create", handle="response.id"))
    contract = declared_contract(op)
    assert contract is not None
    assert contract["class"] == "irreversible"
    assert contract["draft"] == {"operation": "gh.releases.create", "arguments": {}, "handle": "response.id"}


def test_follow_up_references_come_in_a_fixed_order() -> None:
    op = make_op(
        class_="reversible",
        inverse=FollowUp(operation="i"),
        compensate=FollowUp(operation="c"),
        lookup=Lookup(operation="l", by="id"),
        draft=Draft(
            operation="d", handle="response.id", promote=StepCall(operation="p"), discard=StepCall(operation="x")
        ),
    )
    refs = list(follow_up_refs(op.effect))
    assert [ref.place for ref in refs] == list(FOLLOW_UP_PLACES)
    assert [ref.operation for ref in refs] == ["i", "c", "l", "d", "p", "x"]
    assert list(follow_up_refs(make_op().effect)) == []


def test_only_a_keyed_operation_with_a_resolvable_carrier_forwards_its_key() -> None:
    keyed = replace(make_op(), idempotency=Idempotency(mode="key_supported", mechanism="header", key="Idempotency-Key"))
    assert forwards_idempotency_key(keyed)
    assert not forwards_idempotency_key(make_op())
    unresolvable = replace(keyed, idempotency=Idempotency(mode="key_supported", mechanism="none"))
    assert not forwards_idempotency_key(unresolvable)
