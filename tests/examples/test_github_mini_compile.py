"""github-mini compiles to the contracts of original-gateway §3.1-§3.2; payments declares none.

Also pins what the effect-contract feature must leave alone: a manifest without any ``effect:`` block
(payments) compiles to the same AIR, byte for byte, as before the feature.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from anvil.air.codec import contract_hash, document_json
from anvil.air.effects import effect_class_of
from anvil.air.model import Document, Operation
from anvil.air.tools import operation_input_schema
from anvil.compiler import CompileResult, build
from anvil.compiler.effects import check_effects

REPO = Path(__file__).resolve().parents[2]
GITHUB = REPO / "examples" / "github-mini"
PAYMENTS = REPO / "examples" / "payments"

#: contractHash of payments compiled with its manifest, from before effect contracts existed, with the
#: ``disclosureCost`` the original also measures left out. A change here means a manifest with
#: no ``effect:`` block no longer compiles to the same AIR.
PAYMENTS_CONTRACT_HASH = "343337b0ab82d31245fd8c51c87cef4bfedd42667a0c9197ec72886eb46a8c93"
#: The same AIR with its disclosure measurement (o200k_base token counts of the original's tool surface).
PAYMENTS_CONTRACT_HASH_MEASURED = "b3d4cfcedd14f1f760281f0a41a798297a55b77d53e37007bfd0d119ff118996"


def compile_github(manifest: Path = GITHUB / "anvil.yaml") -> CompileResult:
    return build(
        GITHUB / "openapi.yaml",
        manifest=manifest,
        service_id="github",
        source_uri="examples/github-mini/openapi.yaml",
    )


@pytest.fixture(scope="module")
def github() -> CompileResult:
    return compile_github()


def op(doc: Document, op_id: str) -> Operation:
    found = doc.operation(op_id)
    assert found is not None, op_id
    return found


def test_github_mini_compiles_with_zero_errors_and_no_effect_findings(github: CompileResult) -> None:
    assert [d.code for d in github.diagnostics if d.severity == "error"] == []
    assert [d.code for d in github.diagnostics if d.code.startswith("effect/")] == []
    assert all(o.state == "approved" for o in github.document.operations)


def test_every_github_mini_operation_has_its_effect_class(github: CompileResult) -> None:
    classes = {o.id: (o.source_ref.operation_id, effect_class_of(o)) for o in github.document.operations}
    assert classes == {
        "github.issues.list": ("listIssues", "read"),
        "github.issues.create": ("createIssue", "compensable"),
        "github.issues.get": ("getIssue", "read"),
        "github.issues.update": ("updateIssue", "irreversible"),
        "github.comments.list": ("listIssueComments", "read"),
        "github.comments.create": ("createIssueComment", "reversible"),
        "github.comments.delete": ("deleteIssueComment", "irreversible"),
        "github.releases.create": ("createRelease", "irreversible"),
        "github.releases.update": ("updateRelease", "irreversible"),
        "github.releases.delete": ("deleteRelease", "irreversible"),
        "github.tags.get": ("getReleaseByTag", "read"),
        "github.pulls.list": ("listPulls", "read"),
    }
    declared = sorted(o.id for o in github.document.operations if o.effect.declares_contract)
    assert declared == ["github.comments.create", "github.issues.create", "github.releases.create"]


def test_the_by_tag_read_keeps_its_path_derived_id(github: CompileResult) -> None:
    by_tag = op(github.document, "github.tags.get")
    assert by_tag.source_ref.operation_id == "getReleaseByTag"
    assert by_tag.cli.command == "github releases get"


def test_the_comment_is_reversible_by_deleting_it(github: CompileResult) -> None:
    comment = op(github.document, "github.comments.create")
    effect = comment.effect
    assert (effect.class_, effect.reversible) == ("reversible", True)
    assert effect.inverse is not None and effect.inverse.operation == "github.comments.delete"
    assert list(effect.inverse.arguments.items()) == [
        ("owner", "request.owner"),
        ("repo", "request.repo"),
        ("comment_id", "response.id"),
    ]
    assert effect.inverse.deadline is None
    assert (effect.compensate, effect.lookup, effect.draft) == (None, None, None)
    assert comment.confirmation.required is False


def test_the_issue_is_compensated_by_closing_it(github: CompileResult) -> None:
    effect = op(github.document, "github.issues.create").effect
    assert (effect.class_, effect.reversible) == ("compensable", False)
    assert effect.compensate is not None and effect.compensate.operation == "github.issues.update"
    assert list(effect.compensate.arguments.items()) == [
        ("owner", "request.owner"),
        ("repo", "request.repo"),
        ("issue_number", "response.number"),
        ("state", {"const": "closed"}),
    ]
    assert (effect.inverse, effect.lookup, effect.draft) == (None, None, None)


def test_the_release_is_irreversible_with_a_lookup_and_a_draft_form(github: CompileResult) -> None:
    effect = op(github.document, "github.releases.create").effect
    assert (effect.class_, effect.reversible) == ("irreversible", False)
    assert (effect.inverse, effect.compensate) == (None, None)
    assert effect.lookup is not None
    assert (effect.lookup.operation, effect.lookup.by) == ("github.tags.get", "id")
    assert list(effect.lookup.arguments.items()) == [
        ("owner", "request.owner"),
        ("repo", "request.repo"),
        ("tag", "request.tag_name"),
    ]
    draft = effect.draft
    assert draft is not None and draft.promote is not None and draft.discard is not None
    assert (draft.operation, draft.handle) == ("github.releases.create", "response.id")
    assert list(draft.arguments.items()) == [
        ("owner", "request.owner"),
        ("repo", "request.repo"),
        ("tag_name", "request.tag_name"),
        ("name", "request.name?"),
        ("body", "request.body?"),
        ("draft", {"const": True}),
    ]
    assert draft.promote.operation == "github.releases.update"
    assert list(draft.promote.arguments.items()) == [
        ("owner", "request.owner"),
        ("repo", "request.repo"),
        ("release_id", "response.id"),
        ("draft", {"const": False}),
    ]
    assert draft.discard.operation == "github.releases.delete"
    assert list(draft.discard.arguments.items()) == [
        ("owner", "request.owner"),
        ("repo", "request.repo"),
        ("release_id", "response.id"),
    ]


def test_undeclared_operations_carry_no_effect_class(github: CompileResult) -> None:
    update = op(github.document, "github.issues.update")
    assert update.effect.class_ is None and not update.effect.declares_contract
    (written,) = [o for o in document_json(github.document)["operations"] if o["id"] == "github.issues.update"]
    assert "class" not in written["effect"]


def test_a_rejected_contract_is_served_irreversible_and_confirmed(tmp_path: Path) -> None:
    text = (GITHUB / "anvil.yaml").read_text(encoding="utf-8")
    assert text.count("comment_id: response.id") == 1
    broken = tmp_path / "anvil.yaml"
    broken.write_text(text.replace("comment_id: response.id", "comment_id: response.nope"), encoding="utf-8")
    result = compile_github(broken)
    findings = [(d.code, d.severity, d.operation) for d in result.diagnostics if d.code.startswith("effect/")]
    assert findings == [("effect/path_unresolved", "error", "github.comments.create")]
    comment = op(result.document, "github.comments.create")
    effect = comment.effect
    assert (effect.class_, effect.reversible) == ("irreversible", False)
    assert (effect.inverse, effect.compensate, effect.lookup, effect.draft) == (None, None, None, None)
    assert [n for n in comment.review_notes if n.startswith("Effect contract rejected (1 error(s))")] != []
    assert comment.confirmation.required is True
    assert comment.input.schema is not None and "confirm" in comment.input.schema["required"]
    assert "confirm" in operation_input_schema(comment)["required"]
    # The errors sit in the AIR's diagnostics; the other contracts are untouched.
    assert "effect/path_unresolved" in [d["code"] for d in document_json(result.document)["diagnostics"]]
    assert op(result.document, "github.issues.create").effect.class_ == "compensable"


# --- a manifest without effect: blocks is untouched ----------------------------------------------------------


@pytest.fixture(scope="module")
def payments() -> Document:
    result = build(
        PAYMENTS / "openapi.yaml",
        manifest=PAYMENTS / "anvil.yaml",
        service_id="payments",
        source_uri="examples/payments/openapi.yaml",
    )
    assert [d.code for d in result.diagnostics if d.severity == "error"] == []
    return result.document


def keys_of(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from keys_of(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys_of(item)


def test_payments_declares_no_effect_contract_and_its_air_is_unchanged(payments: Document) -> None:
    assert not any(o.effect.declares_contract for o in payments.operations)
    air = json.loads(json.dumps(document_json(payments)))
    assert {"class", "inverse", "compensate", "lookup", "draft"}.isdisjoint(keys_of(air))
    assert check_effects(payments, None) == (payments, [])
    unmeasured = dataclasses.replace(
        payments, operations=tuple(dataclasses.replace(o, disclosure_cost=None) for o in payments.operations)
    )
    assert contract_hash(unmeasured) == PAYMENTS_CONTRACT_HASH
    assert all(o.disclosure_cost is not None for o in payments.operations)
    assert contract_hash(payments) == PAYMENTS_CONTRACT_HASH_MEASURED
