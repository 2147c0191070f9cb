from __future__ import annotations

from dataclasses import replace

import yaml

from anvil.air.model import Document, Effect, FollowUp
from anvil.bundle.reference import effect_label, idempotency_markdown, operations_markdown, semantics_line
from anvil.bundle.skill import skill_markdown


def _front_matter(text: str) -> dict[str, str]:
    assert text.startswith("---\n")
    head = text.split("---\n")[1]
    loaded: dict[str, str] = yaml.safe_load(head)
    return loaded


def _pending(doc: Document) -> Document:
    ops = list(doc.operations)
    ops[3] = replace(ops[3], state="review_required")
    return replace(doc, operations=tuple(ops))


def test_operations_md_has_the_exact_approved_entry_shape(payments_doc: Document) -> None:
    text = operations_markdown(payments_doc)
    assert _front_matter(text)["name"] == "payments-operations"
    assert "# Operations\n\n`*` marks a required input.\n\n## Approved operations\n\n" in text
    entry = (
        "### `payments refunds create`  (id: `payments.refunds.create`, tool: `payments_create_refund`)\n"
        "Creates a refund for a captured payment. Irreversible.\n"
        "\n"
        "> ⚠ **Confirmation required** — financial-risk mutation: "
        "This operation creates an irreversible financial mutation.\n"
        "\n"
        "- Semantics: mutation, financial, confirm-required, idempotency-key-required, retry-safe\n"
        "- Auth: oauth2_client_credentials (payments.write)\n"
        "- Inputs: `payment_id`*, `amount`*, `currency`*, `reason`, `idempotency_key`*, `confirm`*\n"
        "- Schema: `../schemas/create_refund.schema.json` · Example: `../examples/create_refund.json`\n"
    )
    assert entry in text
    read_entry = (
        "### `payments customers get`  (id: `payments.customers.get`, tool: `payments_get_customer`)\n"
        "Get a customer\n"
        "- Semantics: read, retry-safe\n"
    )
    assert read_entry in text


def test_operations_md_lists_unapproved_operations_as_pending_and_not_callable(payments_doc: Document) -> None:
    text = operations_markdown(_pending(payments_doc))
    approved, pending = text.split("## Pending approval (not callable)\n")
    assert "payments capture create" not in approved
    assert "- `payments capture create` — Capture a payment [review_required] (payment_id*)" in pending
    assert operations_markdown(payments_doc).endswith("## Pending approval (not callable)\n\nNone.")


def test_semantics_line_marks_a_key_required_even_with_a_fingerprint_derivation(payments_doc: Document) -> None:
    refund = payments_doc.operations[2]
    derived = replace(refund, idempotency=replace(refund.idempotency, key_derivation="request_fingerprint"))
    assert "idempotency-key-required" in semantics_line(derived)
    assert (
        semantics_line(payments_doc.operations[3]) == "- Semantics: mutation, financial, confirm-required, retry-safe"
    )


def test_human_approval_gets_the_do_not_self_confirm_block(payments_doc: Document) -> None:
    refund = payments_doc.operations[2]
    gated = replace(refund, confirmation=replace(refund.confirmation, human_approval=True))
    doc = replace(payments_doc, operations=(gated,))
    assert "> ⛔ **Human approval required** — financial-risk mutation:" in operations_markdown(doc)
    assert "Do not self-confirm;" in operations_markdown(doc)


def test_an_undo_line_appears_only_for_operations_that_declare_a_contract(payments_doc: Document) -> None:
    assert "- Undo:" not in operations_markdown(payments_doc)
    refund = payments_doc.operations[2]
    declared = replace(
        refund,
        effect=replace(
            refund.effect, class_="reversible", inverse=FollowUp(operation="payments.capture.create", arguments={})
        ),
    )
    doc = replace(payments_doc, operations=(*payments_doc.operations[:2], declared, payments_doc.operations[3]))
    lines = operations_markdown(doc).splitlines()
    undo = [line for line in lines if line.startswith("- Undo:")]
    assert undo == ["- Undo: This action can be undone with `payments capture create`."]
    inputs = "- Inputs: `payment_id`*, `amount`*, `currency`*, `reason`, `idempotency_key`*, `confirm`*"
    assert lines.index(undo[0]) == lines.index(inputs) + 1


def test_a_description_with_headings_is_one_line_under_the_entry_heading(payments_doc: Document) -> None:
    refund = replace(payments_doc.operations[2], description="# Refunds\n\n# Notes\n\nSee docs.")
    text = operations_markdown(replace(payments_doc, operations=(refund,)))
    assert "(id: `payments.refunds.create`, tool: `payments_create_refund`)\n\\# Refunds # Notes See docs.\n" in text
    assert "\n# Notes" not in text and "\n# Refunds" not in text


def test_idempotency_md_has_one_line_per_approved_mutation(payments_doc: Document) -> None:
    lines = idempotency_markdown(payments_doc).splitlines()
    assert (
        "- `payments refunds create`: required (key via header Idempotency-Key); retry-safe; "
        "confirmation required — This operation creates an irreversible financial mutation."
    ) in lines
    assert sum(line.startswith("- `") for line in lines) == 2


def test_skill_md_counts_approved_operations_and_labels_effects(payments_doc: Document) -> None:
    text = skill_markdown(_pending(payments_doc))
    front = _front_matter(text)
    assert front["name"] == "payments"
    assert "3 approved operation(s) out of 4 compiled" in text
    assert "payments_create_refund" in text and "payments_capture_payment" not in text
    assert "(write, cannot be undone; confirm required; idempotency key required)" in text
    assert "`payments.refunds.refund_customer`" in text
    assert "## The ladder" in text and "**Dry-run.**" in text


def test_effect_labels_follow_the_declared_class_or_the_kind(payments_doc: Document) -> None:
    read, refund = payments_doc.operations[0], payments_doc.operations[2]
    assert effect_label(read) == "read"
    assert effect_label(refund) == "write, cannot be undone"
    reversible = replace(refund, effect=Effect(kind="mutation", class_="reversible"))
    compensable = replace(refund, effect=Effect(kind="mutation", class_="compensable"))
    assert effect_label(reversible) == "write, can be undone"
    assert effect_label(compensable) == "write, can be compensated (not undone)"


def test_skill_md_says_how_to_page_a_paginated_read(payments_doc: Document) -> None:
    from dataclasses import replace

    from anvil.air.model import Pagination

    ops = tuple(
        replace(op, pagination=Pagination(style="cursor", cursor_param="starting_after", items_field="data"))
        if op.id == "payments.customers.get"
        else op
        for op in payments_doc.operations
    )
    text = skill_markdown(replace(payments_doc, operations=ops))
    line = next(row for row in text.splitlines() if row.startswith("- `payments_get_customer`"))
    assert line.endswith("Paginated (cursor): pass 'starting_after'; items at 'data'.")
