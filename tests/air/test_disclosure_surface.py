"""The surface ``disclosureCost`` measures, and the figures it gives: the original's (original-core §3.7).

The corpus tests compare with ``spec/golden/disclosure``: the original's figures for 13 corpus specs,
compiled without a manifest.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from anvil.air.disclosure_surface import measure_tool_surface, measured_surface, measured_surface_json
from anvil.air.model import Document
from anvil.air.tokens import count_tokens
from anvil.air.tools import published_input_schema
from anvil.compiler import build

REPO = Path(__file__).resolve().parents[2]

#: The corpus specs with the original's figures, every row of which must be equal (``bench/disclosure_diff.py``
#: says which rows differ and by how much).
SMALL = ("callback-example", "link-example", "petstore", "petstore-expanded", "uspto")
LARGER = ("asana", "jira", "netlify", "openai", "pagerduty", "plaid", "sentry", "slack")


def _payments() -> Document:
    return build(
        REPO / "examples" / "payments" / "openapi.yaml",
        manifest=REPO / "examples" / "payments" / "anvil.yaml",
        service_id="payments",
        source_uri="examples/payments/openapi.yaml",
    ).document


def test_the_measured_surface_is_the_originals_tool_with_both_reserved_arguments() -> None:
    doc = _payments()
    op = doc.operation("payments.refunds.create")
    assert op is not None
    surface = measured_surface(op)
    assert list(surface) == ["name", "title", "description", "inputSchema", "annotations", "_meta"]
    schema = surface["inputSchema"]
    assert isinstance(schema, dict)
    assert list(schema) == ["$schema", "type", "properties", "required", "additionalProperties"]
    assert list(schema["properties"])[-2:] == ["anvil_dry_run", "anvil_projection"]
    assert schema["additionalProperties"] is False
    assert "anvil/effect_class" not in surface["_meta"]  # type: ignore[operator]


def test_the_payments_refund_measures_516_tokens_as_the_original_describes_its_required_key() -> None:
    doc = _payments()
    refund = doc.operation("payments.refunds.create")
    assert refund is not None and refund.disclosure_cost is not None
    assert refund.disclosure_cost.tool_tokens == 516  # the original's figure for this example's refund tool
    measured = measured_surface(refund)["inputSchema"]["properties"]
    assert measured["idempotency_key"]["description"] == (
        "Idempotency key. Required \u2014 repeating this operation with the same key is safe; a new key is a new "
        "operation."
    )
    # What the gateway lists keeps this project's wording (it names the key's alphabet).
    published = published_input_schema(refund)["properties"]
    assert published["idempotency_key"]["description"].startswith("Idempotency key (required): 1-255 visible ASCII")


def test_an_optional_key_is_measured_with_the_originals_sentence_for_a_derived_key() -> None:
    doc = _payments()
    refund = doc.operation("payments.refunds.create")
    assert refund is not None
    derived = dataclasses.replace(
        refund,
        idempotency=dataclasses.replace(refund.idempotency, key_derivation="request_fingerprint"),
        input=dataclasses.replace(refund.input, schema=None),
    )
    measured = measured_surface(derived)["inputSchema"]
    assert measured["properties"]["idempotency_key"]["description"] == (
        "Optional explicit idempotency key. When omitted, Anvil derives a deterministic request-fingerprint key; "
        "an explicit business-operation key is easier to audit and reuse deliberately."
    )
    assert "idempotency_key" not in measured["required"]


def test_a_confirmation_without_a_reason_is_measured_with_the_originals_fixed_sentence() -> None:
    doc = _payments()
    read = doc.operation("payments.customers.get")
    assert read is not None
    confirmed = dataclasses.replace(
        read,
        confirmation=dataclasses.replace(read.confirmation, required=True, reason=None),
        input=dataclasses.replace(read.input, schema=None),
    )
    measured = measured_surface(confirmed)["inputSchema"]["properties"]
    assert measured["confirm"] == {
        "type": "boolean",
        "const": True,
        "description": "Explicit confirmation. This operation has side effects and will not run without confirm=true.",
    }
    reason = dataclasses.replace(confirmed.confirmation, reason="Moves money.")
    stated = measured_surface(dataclasses.replace(confirmed, confirmation=reason))["inputSchema"]
    assert stated["properties"]["confirm"]["description"] == "Moves money."


def test_every_figure_is_the_o200k_count_of_the_surface_with_the_ratio_rounded_half_up() -> None:
    doc = _payments()
    for op in doc.operations:
        cost = measure_tool_surface(op)
        text = measured_surface_json(op)
        assert cost.tool_tokens == count_tokens(text) != -(-len(text) // 4)
        assert (cost.estimator, cost.response_tokens, cost.response_item_tokens) == ("o200k_base", 0, 0)
        assert abs(cost.chars_per_token - len(text) / cost.tool_tokens) <= 0.0005


def _golden(corpus: Path, name: str) -> tuple[str, dict[str, object]]:
    path = corpus.parent / "spec" / "golden" / "disclosure" / f"{name}.tsv"
    if not path.is_file():
        pytest.skip(f"disclosure goldens not found at {path}")
    lines = path.read_text(encoding="utf-8").splitlines()
    spec = lines[0].split("corpus file ", 1)[1].split(",", 1)[0]
    rows = {line.split("\t")[2]: json.loads(line.split("\t")[3]) for line in lines[2:]}
    return spec, rows


def _equal_rows(corpus: Path, name: str) -> tuple[int, int, list[str]]:
    spec, golden = _golden(corpus, name)
    doc = build(corpus / spec, service_id=name, source_uri=spec).document
    assert sorted(op.id for op in doc.operations) == sorted(golden)
    equal, differing = 0, []
    for op in doc.operations:
        cost = op.disclosure_cost
        assert cost is not None
        ours = {
            "charsPerToken": cost.chars_per_token,
            "estimator": cost.estimator,
            "responseItemTokens": cost.response_item_tokens,
            "responseTokens": cost.response_tokens,
            "toolTokens": cost.tool_tokens,
        }
        if ours == golden[op.id]:
            equal += 1
        else:
            differing.append(f"{op.id}: {ours} != {golden[op.id]}")
    return equal, len(golden), differing


@pytest.mark.corpus
@pytest.mark.parametrize("name", SMALL)
def test_every_row_of_the_small_corpus_specs_has_the_originals_figure(corpus: Path, name: str) -> None:
    equal, total, differing = _equal_rows(corpus, name)
    assert differing == []
    assert equal == total > 0


@pytest.mark.corpus
@pytest.mark.slow
@pytest.mark.parametrize("name", LARGER)
def test_every_row_of_the_larger_corpus_specs_has_the_originals_figure(corpus: Path, name: str) -> None:
    equal, total, differing = _equal_rows(corpus, name)
    assert differing == []
    assert equal == total > 0


@pytest.mark.corpus
def test_every_spec_with_the_originals_figures_is_compared(corpus: Path) -> None:
    goldens = corpus.parent / "spec" / "golden" / "disclosure"
    if not goldens.is_dir():
        pytest.skip(f"disclosure goldens not found at {goldens}")
    assert sorted(path.stem for path in goldens.glob("*.tsv")) == sorted(SMALL + LARGER)
