"""Reading an operation's effect contract: its class, its published declaration, its follow-ups."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from anvil.air.canonical import hash_canonical
from anvil.air.codec import to_json
from anvil.air.effects import (
    FOLLOW_UP_PLACES,
    DeclaredUndo,
    deadline_phrase,
    declared_contract,
    declared_undo,
    effect_class_of,
    follow_up_refs,
    forwards_idempotency_key,
    reversible_for_class,
    undo_sentence,
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


def command(op_id: str) -> str:
    return op_id.replace(".", " ")


def test_undo_sentences_name_the_follow_up_by_its_command() -> None:
    hourly = make_op(class_="reversible", inverse=FollowUp(operation="s.d", deadline=Deadline(within_ms=3_600_000)))
    assert undo_sentence(hourly, command) == "This action can be undone with `s d` within 1 hour."
    plain = make_op(class_="reversible", inverse=FollowUp(operation="s.d"))
    assert undo_sentence(plain, command) == "This action can be undone with `s d`."
    compensable = make_op(class_="compensable", compensate=FollowUp(operation="s.close"))
    assert undo_sentence(compensable, command) == (
        "This action cannot be undone, but can be compensated with `s close` (which leaves a trace)."
    )
    drafted = make_op(class_="irreversible", draft=Draft(operation="s.draft", handle="response.id"))
    assert undo_sentence(drafted, command) == (
        "This action cannot be undone. It has a draft form (`s draft`) that can be reviewed before it is promoted."
    )
    assert undo_sentence(make_op(), command) == "This action cannot be undone."
    assert undo_sentence(make_op("read"), command) == "Changes nothing."


def test_a_deadline_is_said_in_its_largest_exact_unit() -> None:
    assert deadline_phrase(None) == ""
    assert deadline_phrase(Deadline(within_ms=86_400_000)) == " within 1 day"
    assert deadline_phrase(Deadline(within_ms=7_200_000)) == " within 2 hours"
    assert deadline_phrase(Deadline(within_ms=90_000)) == " within 90 seconds"
    assert deadline_phrase(Deadline(within_ms=60_000)) == " within 1 minute"
    assert deadline_phrase(Deadline(within_ms=1500)) == " within 1500 ms"
    assert deadline_phrase(Deadline(at="response.expires_at")) == " until the deadline the response gives"


def test_the_declared_undo_is_the_inverse_or_the_compensation_of_its_class() -> None:
    both = make_op(class_="reversible", inverse=FollowUp(operation="i"), compensate=FollowUp(operation="c"))
    assert declared_undo(both) == DeclaredUndo("inverse", "i")
    assert declared_undo(make_op(class_="compensable", compensate=FollowUp(operation="c"))) == DeclaredUndo(
        "compensate", "c"
    )
    assert declared_undo(make_op(class_="irreversible")) is None
    assert declared_undo(make_op()) is None
