"""Effect-contract checks over hand-built AIR: every effect/* code, its severity and location, the fallback."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from anvil.air.inputs import assemble_input_schema
from anvil.air.model import (
    BodyField,
    Cli,
    Confirmation,
    Deadline,
    Document,
    Draft,
    Effect,
    FollowUp,
    Idempotency,
    Input,
    Lookup,
    Mcp,
    Operation,
    Output,
    Param,
    RequestBody,
    RetryPolicy,
    Service,
    SourceRef,
    StepCall,
)
from anvil.compiler.effects import check_effects, pin_effect_references
from anvil.diagnostics import Diagnostic

MANIFEST = "examples/anvil.yaml"
REJECTED = "Effect contract rejected"

SCHEMAS: dict[str, Any] = {
    "Comment": {
        "type": "object",
        "required": ["id", "body"],
        "properties": {"id": {"type": "integer"}, "body": {"type": "string"}},
    },
    "Issue": {
        "type": "object",
        "required": ["number", "title", "state"],
        "properties": {
            "number": {"type": "integer"},
            "title": {"type": "string"},
            "state": {"type": "string", "enum": ["open", "closed"]},
            "body": {"type": "string"},
        },
    },
    "Release": {
        "type": "object",
        "required": ["id", "tag_name", "draft"],
        "properties": {
            "id": {"type": "integer"},
            "tag_name": {"type": "string"},
            "name": {"type": "string"},
            "body": {"type": "string"},
            "draft": {"type": "boolean"},
        },
    },
}

OWNER_REPO = (("owner", "string"), ("repo", "string"))


def make_op(
    op_id: str,
    kind: str,
    *,
    operation_id: str,
    path: tuple[tuple[str, str], ...] = OWNER_REPO,
    query: tuple[tuple[str, str], ...] = (),
    body: tuple[tuple[str, dict[str, Any], bool], ...] = (),
    output: str | None = None,
    keyed: bool = False,
    confirm: bool = False,
    state: str = "approved",
) -> Operation:
    params = tuple(Param(name=name, in_="path", required=True, schema={"type": kind_}) for name, kind_ in path)
    params += tuple(Param(name=name, in_="query", schema={"type": kind_}) for name, kind_ in query)
    request_body = None
    if body:
        request_body = RequestBody(
            required=True,
            schema={"type": "object", "properties": {name: schema for name, schema, _ in body}},
            projection="fields",
            fields=tuple(BodyField(name=name, schema=schema, required=req) for name, schema, req in body),
        )
    service, resource, action = op_id.split(".")
    op = Operation(
        id=op_id,
        canonical_name=f"{action}_{resource.rstrip('s')}",
        display_name=op_id,
        source_ref=SourceRef(operation_id=operation_id),
        effect=Effect(kind=kind, action="list" if kind == "read" else "create", risk="medium"),  # type: ignore[arg-type]
        input=Input(params=params, body=request_body),
        output=Output(schema={"$ref": f"#/components/schemas/{output}"}) if output else Output(),
        idempotency=(
            Idempotency(mode="key_supported", mechanism="header", key="Idempotency-Key")
            if keyed
            else Idempotency(mode="natural" if kind == "read" else "none")
        ),
        retries=RetryPolicy(mode="none"),
        confirmation=Confirmation(required=confirm, risk="medium" if confirm else None),
        cli=Cli(command=f"{service} {resource} {action}"),
        mcp=Mcp(tool_name=f"{service}_{action}_{resource}"),
        state=state,  # type: ignore[arg-type]
    )
    return with_schema(op)


def with_schema(op: Operation) -> Operation:
    return replace(op, input=replace(op.input, schema=assemble_input_schema(op)))


STRING = {"type": "string"}
ISSUE_NUMBER = ("issue_number", "integer")


def base_operations() -> tuple[Operation, ...]:
    return (
        make_op("gh.issues.list", "read", operation_id="listIssues", query=(("state", "string"),), output="Issue"),
        make_op(
            "gh.issues.create",
            "mutation",
            operation_id="createIssue",
            body=(("title", STRING, True), ("body", STRING, False)),
            output="Issue",
            confirm=True,
        ),
        make_op(
            "gh.issues.update",
            "mutation",
            operation_id="updateIssue",
            path=(*OWNER_REPO, ISSUE_NUMBER),
            body=(("title", STRING, False), ("state", {"type": "string", "enum": ["open", "closed"]}, False)),
            output="Issue",
            confirm=True,
        ),
        make_op("gh.comments.list", "read", operation_id="listIssueComments", path=(*OWNER_REPO, ISSUE_NUMBER)),
        make_op(
            "gh.comments.create",
            "mutation",
            operation_id="createIssueComment",
            path=(*OWNER_REPO, ISSUE_NUMBER),
            body=(("body", STRING, True),),
            output="Comment",
            keyed=True,
        ),
        make_op(
            "gh.comments.delete",
            "mutation",
            operation_id="deleteIssueComment",
            path=(*OWNER_REPO, ("comment_id", "integer")),
            confirm=True,
        ),
        make_op(
            "gh.comments.find",
            "read",
            operation_id="findComment",
            path=(("owner", "string"),),
            query=(("key", "string"),),
            output="Comment",
        ),
        make_op(
            "gh.releases.create",
            "mutation",
            operation_id="createRelease",
            body=(
                ("tag_name", STRING, True),
                ("name", STRING, False),
                ("body", STRING, False),
                ("draft", {"type": "boolean"}, False),
            ),
            output="Release",
            confirm=True,
        ),
        make_op(
            "gh.releases.update",
            "mutation",
            operation_id="updateRelease",
            path=(*OWNER_REPO, ("release_id", "integer")),
            body=(("name", STRING, False), ("draft", {"type": "boolean"}, False)),
            output="Release",
            confirm=True,
        ),
        make_op(
            "gh.releases.delete",
            "mutation",
            operation_id="deleteRelease",
            path=(*OWNER_REPO, ("release_id", "integer")),
            confirm=True,
        ),
        make_op("gh.tags.get", "read", operation_id="getReleaseByTag", path=(*OWNER_REPO, ("tag", "string"))),
        make_op("gh.pulls.list", "read", operation_id="listPulls"),
    )


@dataclass
class Application:
    """Stands in for the manifest application: the three attributes check_effects reads."""

    explicit_reversible: frozenset[str] = frozenset()
    effect_locations: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    manifest_file: str | None = MANIFEST


def document(**contracts: dict[str, Any]) -> Document:
    """The base service with ``contracts`` (op id with dots as ``__``) written onto effects."""
    ops = []
    for op in base_operations():
        declared = contracts.get(op.id.replace(".", "__"))
        ops.append(replace(op, effect=replace(op.effect, **declared)) if declared else op)
    return Document(service=Service(id="gh", version="1", display_name="GH"), operations=tuple(ops), schemas=SCHEMAS)


def run(doc: Document, application: object | None = None) -> tuple[Document, list[Diagnostic]]:
    return check_effects(doc, Application() if application is None else application)


def codes(diagnostics: list[Diagnostic], severity: str | None = None) -> set[str]:
    return {d.code for d in diagnostics if severity is None or d.severity == severity}


def op_of(doc: Document, op_id: str) -> Operation:
    found = doc.operation(op_id)
    assert found is not None
    return found


COMMENT_INVERSE = FollowUp(
    operation="gh.comments.delete",
    arguments={"owner": "request.owner", "repo": "request.repo", "comment_id": "response.id"},
)
REVERSIBLE_COMMENT: dict[str, Any] = {"class_": "reversible", "reversible": True, "inverse": COMMENT_INVERSE}
COMPENSABLE_ISSUE: dict[str, Any] = {
    "class_": "compensable",
    "reversible": False,
    "compensate": FollowUp(
        operation="gh.issues.update",
        arguments={
            "owner": "request.owner",
            "repo": "request.repo",
            "issue_number": "response.number",
            "state": {"const": "closed"},
        },
    ),
}
RELEASE_DRAFT = Draft(
    operation="gh.releases.create",
    arguments={
        "owner": "request.owner",
        "repo": "request.repo",
        "tag_name": "request.tag_name",
        "name": "request.name?",
        "body": "request.body?",
        "draft": {"const": True},
    },
    handle="response.id",
    promote=StepCall(
        operation="gh.releases.update",
        arguments={
            "owner": "request.owner",
            "repo": "request.repo",
            "release_id": "response.id",
            "draft": {"const": False},
        },
    ),
    discard=StepCall(
        operation="gh.releases.delete",
        arguments={"owner": "request.owner", "repo": "request.repo", "release_id": "response.id"},
    ),
)
IRREVERSIBLE_RELEASE: dict[str, Any] = {
    "class_": "irreversible",
    "reversible": False,
    "lookup": Lookup(
        operation="gh.tags.get",
        by="id",
        arguments={"owner": "request.owner", "repo": "request.repo", "tag": "request.tag_name"},
    ),
    "draft": RELEASE_DRAFT,
}


# --- clean contracts -------------------------------------------------------------------------------------


def test_the_three_fixture_contracts_compile_without_diagnostics() -> None:
    doc = document(
        gh__comments__create=REVERSIBLE_COMMENT,
        gh__issues__create=COMPENSABLE_ISSUE,
        gh__releases__create=IRREVERSIBLE_RELEASE,
    )
    checked, diagnostics = run(doc)
    assert diagnostics == []
    assert checked == doc


def test_a_document_without_contracts_is_returned_unchanged() -> None:
    doc = document()
    assert run(doc) == (doc, [])
    assert check_effects(doc, None) == (doc, [])


def test_a_deadline_within_ms_is_accepted() -> None:
    inverse = replace(COMMENT_INVERSE, deadline=Deadline(within_ms=60000))
    _, diagnostics = run(document(gh__comments__create={**REVERSIBLE_COMMENT, "inverse": inverse}))
    assert diagnostics == []


def test_a_deadline_at_a_declared_response_time_is_accepted() -> None:
    inverse = replace(COMMENT_INVERSE, deadline=Deadline(at="response.id"))
    _, diagnostics = run(document(gh__comments__create={**REVERSIBLE_COMMENT, "inverse": inverse}))
    assert diagnostics == []


def test_references_are_pinned_to_air_ids_from_any_manifest_spelling() -> None:
    spelled = {
        **REVERSIBLE_COMMENT,
        "inverse": replace(COMMENT_INVERSE, operation="deleteIssueComment"),
        "lookup": Lookup(
            operation="find_comment",
            by="idempotency_key",
            arguments={"owner": "request.owner", "key": "idempotency_key"},
        ),
    }
    checked, diagnostics = run(document(gh__comments__create=spelled))
    assert diagnostics == []
    effect = op_of(checked, "gh.comments.create").effect
    assert effect.inverse is not None and effect.inverse.operation == "gh.comments.delete"
    assert effect.lookup is not None and effect.lookup.operation == "gh.comments.find"


def test_an_ambiguous_reference_is_left_as_written() -> None:
    ops = base_operations()
    twin = replace(ops[0], id="gh.other.list")  # same operationId as gh.issues.list
    source = replace(
        ops[4], effect=replace(ops[4].effect, class_="irreversible", lookup=Lookup(operation="listIssues", by="id"))
    )
    pinned = pin_effect_references((*ops[:4], source, twin))
    lookup = pinned[4].effect.lookup
    assert lookup is not None and lookup.operation == "listIssues"


def test_reversible_follows_a_declared_class_unless_the_manifest_set_it() -> None:
    contract = {**COMPENSABLE_ISSUE, "reversible": True}
    checked, diagnostics = run(document(gh__issues__create=contract))
    assert diagnostics == []
    assert op_of(checked, "gh.issues.create").effect.reversible is False


# --- every effect/* code -------------------------------------------------------------------------------------

BAD_CONTRACTS: list[tuple[str, dict[str, Any], set[str]]] = [
    ("reversible without inverse", {"class_": "reversible"}, {"effect/reversible_without_inverse"}),
    (
        "missing operation",
        {**REVERSIBLE_COMMENT, "inverse": replace(COMMENT_INVERSE, operation="gh.nope")},
        {"effect/operation_missing"},
    ),
    (
        "inverse is a read",
        {
            **REVERSIBLE_COMMENT,
            "inverse": FollowUp(
                operation="gh.comments.list",
                arguments={"owner": "request.owner", "repo": "request.repo", "issue_number": "request.issue_number"},
            ),
        },
        {"effect/follow_up_is_read"},
    ),
    (
        "missing required and unknown argument",
        {
            **REVERSIBLE_COMMENT,
            "inverse": replace(
                COMMENT_INVERSE, arguments={"owner": "request.owner", "repo": "request.repo", "bogus": "response.id"}
            ),
        },
        {"effect/mapping_missing_required", "effect/mapping_unknown_argument"},
    ),
    (
        "undeclared response path",
        {
            **REVERSIBLE_COMMENT,
            "inverse": replace(COMMENT_INVERSE, arguments={**COMMENT_INVERSE.arguments, "comment_id": "response.nope"}),
        },
        {"effect/path_unresolved"},
    ),
    (
        "undeclared request path",
        {
            **REVERSIBLE_COMMENT,
            "inverse": replace(COMMENT_INVERSE, arguments={**COMMENT_INVERSE.arguments, "owner": "request.nope"}),
        },
        {"effect/path_unresolved"},
    ),
    (
        "path with an unknown root",
        {
            **REVERSIBLE_COMMENT,
            "inverse": replace(COMMENT_INVERSE, arguments={**COMMENT_INVERSE.arguments, "owner": "body.owner"}),
        },
        {"effect/path_invalid"},
    ),
    (
        "mapping sets confirm",
        {
            **REVERSIBLE_COMMENT,
            "inverse": replace(COMMENT_INVERSE, arguments={**COMMENT_INVERSE.arguments, "confirm": {"const": True}}),
        },
        {"effect/mapping_sets_safety_control"},
    ),
    (
        "inverse on an irreversible effect",
        {"class_": "irreversible", "inverse": COMMENT_INVERSE},
        {"effect/inverse_on_non_reversible"},
    ),
    ("read class on a mutation", {"class_": "read"}, {"effect/read_class_on_mutation"}),
    (
        "compensable without compensation",
        {"class_": "compensable", "reversible": False},
        {"effect/compensable_without_compensate"},
    ),
    (
        "compensation on an irreversible effect",
        {
            "class_": "irreversible",
            "compensate": FollowUp(
                operation="gh.comments.delete",
                arguments={"owner": "request.owner", "repo": "request.repo", "comment_id": "response.id"},
            ),
        },
        {"effect/compensate_on_class"},
    ),
    (
        "inverse names the operation itself",
        {**REVERSIBLE_COMMENT, "inverse": FollowUp(operation="gh.comments.create")},
        {"effect/operation_self"},
    ),
    (
        "lookup is a mutation",
        {
            **REVERSIBLE_COMMENT,
            "lookup": Lookup(
                operation="gh.comments.delete",
                by="id",
                arguments={"owner": "request.owner", "repo": "request.repo", "comment_id": "response.id"},
            ),
        },
        {"effect/lookup_not_read"},
    ),
    (
        "lookup by key reads the response",
        {
            **REVERSIBLE_COMMENT,
            "lookup": Lookup(
                operation="gh.comments.find",
                by="idempotency_key",
                arguments={"key": "idempotency_key", "owner": "response.body"},
            ),
        },
        {"effect/path_root_not_allowed"},
    ),
    (
        "deadline with both forms",
        {**REVERSIBLE_COMMENT, "inverse": replace(COMMENT_INVERSE, deadline=Deadline(within_ms=1, at="response.id"))},
        {"effect/deadline_shape"},
    ),
    (
        "deadline with neither form",
        {**REVERSIBLE_COMMENT, "inverse": replace(COMMENT_INVERSE, deadline=Deadline())},
        {"effect/deadline_shape"},
    ),
    (
        "deadline at a request path",
        {**REVERSIBLE_COMMENT, "inverse": replace(COMMENT_INVERSE, deadline=Deadline(at="request.owner"))},
        {"effect/deadline_path"},
    ),
    (
        "deadline at an undeclared response path",
        {**REVERSIBLE_COMMENT, "inverse": replace(COMMENT_INVERSE, deadline=Deadline(at="response.expires_at"))},
        {"effect/path_unresolved"},
    ),
    (
        "required input from an optional path",
        {
            **REVERSIBLE_COMMENT,
            "inverse": replace(COMMENT_INVERSE, arguments={**COMMENT_INVERSE.arguments, "comment_id": "response.id?"}),
        },
        {"effect/mapping_required_optional"},
    ),
    (
        "a literal of the wrong type",
        {
            **REVERSIBLE_COMMENT,
            "inverse": replace(
                COMMENT_INVERSE, arguments={**COMMENT_INVERSE.arguments, "comment_id": {"const": "abc"}}
            ),
        },
        {"effect/mapping_type_mismatch"},
    ),
    (
        "a path of the wrong type",
        {
            **REVERSIBLE_COMMENT,
            "inverse": replace(COMMENT_INVERSE, arguments={**COMMENT_INVERSE.arguments, "comment_id": "request.body"}),
        },
        {"effect/mapping_type_mismatch"},
    ),
]


@pytest.mark.parametrize(("name", "contract", "expected"), BAD_CONTRACTS, ids=[case[0] for case in BAD_CONTRACTS])
def test_each_bad_comment_contract_yields_exactly_its_errors_and_falls_back(
    name: str, contract: dict[str, Any], expected: set[str]
) -> None:
    checked, diagnostics = run(document(gh__comments__create=contract))
    assert codes(diagnostics, "error") == expected
    op = op_of(checked, "gh.comments.create")
    assert op.effect.class_ == "irreversible"
    assert op.effect.reversible is False
    assert (op.effect.inverse, op.effect.compensate, op.effect.lookup, op.effect.draft) == (None, None, None, None)
    assert [note for note in op.review_notes if note.startswith(REJECTED)] == [op.review_notes[-1]]
    assert op.confirmation.required is True
    assert op.input.schema is not None and op.input.schema["required"].count("confirm") == 1


def test_a_class_disagreeing_with_an_explicit_reversible_is_an_error() -> None:
    doc = document(gh__comments__create={**REVERSIBLE_COMMENT, "reversible": False})
    _, diagnostics = run(doc, Application(explicit_reversible=frozenset({"gh.comments.create"})))
    assert codes(diagnostics) == {"effect/class_conflicts_reversible"}
    _, unknown = check_effects(doc, None)
    assert codes(unknown) == {"effect/class_conflicts_reversible"}


def test_a_lookup_by_key_on_an_operation_that_sends_no_key_is_two_errors() -> None:
    release = {
        **IRREVERSIBLE_RELEASE,
        "lookup": Lookup(
            operation="gh.tags.get",
            by="idempotency_key",
            arguments={"owner": "request.owner", "repo": "request.repo", "tag": "request.tag_name"},
        ),
    }
    checked, diagnostics = run(document(gh__releases__create=release))
    assert codes(diagnostics) == {"effect/lookup_without_idempotency_key", "effect/lookup_key_unused"}
    assert op_of(checked, "gh.releases.create").effect.draft is None


def test_a_draft_handle_outside_the_response_is_an_error() -> None:
    release = {**IRREVERSIBLE_RELEASE, "draft": replace(RELEASE_DRAFT, handle="request.body")}
    _, diagnostics = run(document(gh__releases__create=release))
    assert codes(diagnostics) == {"effect/draft_handle"}


def test_a_draft_reads_only_the_request() -> None:
    draft = replace(RELEASE_DRAFT, arguments={**RELEASE_DRAFT.arguments, "name": "response.name?"})
    _, diagnostics = run(document(gh__releases__create={**IRREVERSIBLE_RELEASE, "draft": draft}))
    assert codes(diagnostics) == {"effect/path_root_not_allowed"}


def test_a_mapping_may_not_set_the_targets_idempotency_key() -> None:
    compensate = FollowUp(
        operation="gh.comments.create",
        arguments={
            "owner": "request.owner",
            "repo": "request.repo",
            "issue_number": "response.number",
            "body": {"const": "Closing."},
            "idempotency_key": {"const": "k-1"},
        },
    )
    _, diagnostics = run(document(gh__issues__create={**COMPENSABLE_ISSUE, "compensate": compensate}))
    assert codes(diagnostics) == {"effect/mapping_sets_safety_control"}


def test_a_read_that_declares_another_class_is_served_as_a_read() -> None:
    checked, diagnostics = run(document(gh__pulls__list={"class_": "irreversible"}))
    assert codes(diagnostics) == {"effect/class_on_read"}
    op = op_of(checked, "gh.pulls.list")
    assert (op.effect.class_, op.effect.reversible, op.confirmation.required) == ("read", True, False)
    assert op.review_notes[-1].startswith(REJECTED)


def test_a_read_may_declare_neither_a_lookup_nor_a_draft() -> None:
    lookup = Lookup(operation="gh.tags.get", by="id", arguments={"owner": "request.owner", "repo": "request.repo"})
    _, with_lookup = run(document(gh__issues__list={"lookup": lookup}))
    assert "effect/lookup_on_read" in codes(with_lookup, "error")
    _, with_draft = run(document(gh__issues__list={"draft": RELEASE_DRAFT}))
    assert "effect/draft_on_read" in codes(with_draft, "error")


# --- severities, locations, warnings -------------------------------------------------------------------------


def test_diagnostics_point_at_the_effect_block_and_name_the_operation() -> None:
    application = Application(effect_locations={"gh.comments.create": ("examples/anvil.yaml", 40, 5)})
    _, diagnostics = run(document(gh__comments__create={"class_": "reversible"}), application)
    (only,) = diagnostics
    assert (only.code, only.severity) == ("effect/reversible_without_inverse", "error")
    assert (only.file, only.line, only.column, only.operation) == ("examples/anvil.yaml", 40, 5, "gh.comments.create")
    assert only.to_air()["operationId"] == "gh.comments.create"


def test_an_unlocated_diagnostic_names_the_manifest_file() -> None:
    _, diagnostics = run(document(gh__comments__create={"class_": "reversible"}))
    assert [(d.file, d.line) for d in diagnostics] == [(MANIFEST, None)]


def test_an_open_response_schema_is_an_info_and_keeps_the_contract() -> None:
    doc = document(gh__comments__create=REVERSIBLE_COMMENT)
    ops = tuple(replace(op, output=Output()) if op.id == "gh.comments.create" else op for op in doc.operations)
    checked, diagnostics = run(replace(doc, operations=ops))
    assert [(d.code, d.severity) for d in diagnostics] == [("effect/path_unverified", "info")]
    assert op_of(checked, "gh.comments.create").effect.inverse is not None


def test_a_follow_up_that_is_not_approved_is_a_warning() -> None:
    doc = document(gh__comments__create=REVERSIBLE_COMMENT)
    ops = tuple(replace(op, state="review_required") if op.id == "gh.comments.delete" else op for op in doc.operations)
    checked, diagnostics = run(replace(doc, operations=ops))
    assert [(d.code, d.severity) for d in diagnostics] == [("effect/operation_not_approved", "warning")]
    assert op_of(checked, "gh.comments.create").effect.class_ == "reversible"


def test_a_draft_that_needs_confirmation_makes_the_operation_need_it() -> None:
    draft = Draft(
        operation="gh.issues.create",
        arguments={"owner": "request.owner", "repo": "request.repo", "title": "request.body"},
        handle="response.number",
        promote=StepCall(
            operation="gh.issues.update",
            arguments={"owner": "request.owner", "repo": "request.repo", "issue_number": "response.number"},
        ),
    )
    checked, diagnostics = run(
        document(gh__comments__create={"class_": "irreversible", "reversible": False, "draft": draft})
    )
    assert [(d.code, d.severity) for d in diagnostics] == [("effect/confirmation_for_draft", "warning")]
    op = op_of(checked, "gh.comments.create")
    assert op.confirmation.required is True
    assert op.confirmation.reason
    assert op.input.schema is not None and "confirm" in op.input.schema["required"]
    assert op_of(checked, "gh.issues.create").confirmation.required is True


def test_a_keyed_reversible_comment_needs_no_confirmation_until_its_contract_breaks() -> None:
    checked, _ = run(document(gh__comments__create=REVERSIBLE_COMMENT))
    assert op_of(checked, "gh.comments.create").confirmation.required is False
    broken = {**REVERSIBLE_COMMENT, "inverse": replace(COMMENT_INVERSE, arguments={"owner": "request.owner"})}
    rejected, _ = run(document(gh__comments__create=broken))
    op = op_of(rejected, "gh.comments.create")
    assert (op.confirmation.required, op.confirmation.risk) == (True, "medium")
    assert op.confirmation.reason


def test_the_fallback_keeps_an_existing_confirmation_and_adds_its_note_once() -> None:
    contract = {**IRREVERSIBLE_RELEASE, "draft": replace(RELEASE_DRAFT, handle="request.body")}
    once, _ = run(document(gh__releases__create=contract))
    op = op_of(once, "gh.releases.create")
    assert op.confirmation == Confirmation(required=True, risk="medium")
    again = replace(op, effect=replace(op.effect, draft=replace(RELEASE_DRAFT, handle="request.body")))
    twice, _ = run(replace(once, operations=tuple(again if o.id == op.id else o for o in once.operations)))
    assert op_of(twice, "gh.releases.create").review_notes == op.review_notes


def test_the_result_does_not_depend_on_operation_order() -> None:
    doc = document(
        gh__comments__create={**REVERSIBLE_COMMENT, "inverse": replace(COMMENT_INVERSE, operation="gh.nope")},
        gh__issues__create=COMPENSABLE_ISSUE,
        gh__pulls__list={"class_": "reversible"},
    )
    forward, forward_diagnostics = run(doc)
    backward, backward_diagnostics = run(replace(doc, operations=doc.operations[::-1]))
    assert sorted(forward.operations, key=lambda o: o.id) == sorted(backward.operations, key=lambda o: o.id)
    assert sorted(d.message for d in forward_diagnostics) == sorted(d.message for d in backward_diagnostics)
