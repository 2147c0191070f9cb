"""Disclosure measurement (original-core §3.7): every operation's tool is measured in AIR, and the tool budget."""

from __future__ import annotations

import json
from pathlib import Path

from anvil.air.disclosure_surface import measure_tool_surface, measured_surface_json
from anvil.air.model import DisclosureBudget
from anvil.air.surface import OUTPUT_SCHEMA_META
from anvil.air.tokens import count_tokens
from anvil.bundle.emit import emit_bundle
from anvil.compiler import build
from anvil.compiler.pipeline import CompileResult

REPO = Path(__file__).resolve().parents[2]
PAYMENTS = REPO / "examples" / "payments"


def _payments(manifest: Path = PAYMENTS / "anvil.yaml") -> CompileResult:
    return build(
        PAYMENTS / "openapi.yaml", manifest=manifest, service_id="payments", source_uri="examples/payments/openapi.yaml"
    )


def _with_disclosure(tmp_path: Path, block: str) -> Path:
    manifest = tmp_path / "anvil.yaml"
    manifest.write_text((PAYMENTS / "anvil.yaml").read_text(encoding="utf-8") + block, encoding="utf-8")
    return manifest


def test_every_operation_carries_the_o200k_token_cost_of_its_tool_as_the_original_measures_it() -> None:
    doc = _payments().document
    assert doc.operations
    for op in doc.operations:
        cost = op.disclosure_cost
        assert cost is not None, op.id
        assert cost == measure_tool_surface(op)
        assert cost.tool_tokens == count_tokens(measured_surface_json(op))
        assert (cost.estimator, cost.response_tokens, cost.response_item_tokens) == ("o200k_base", 0, 0)


def test_the_manifest_budgets_reach_air_and_a_tool_over_budget_without_output_is_a_warning(tmp_path: Path) -> None:
    assert _payments().document.disclosure is None  # nothing stated: nothing recorded, the defaults apply
    # Every tool publishes the reserved arguments (anvil_projection's description alone is ~120 tokens), so
    # the budget leaves the refund over it and the rest within.
    manifest = _with_disclosure(tmp_path, "disclosure:\n  tool_budget_tokens: 500\n  output_schema_percent: 50\n")
    result = _payments(manifest)
    assert result.document.disclosure == DisclosureBudget(tool_budget_tokens=500, output_schema_percent=50)
    warned = [d for d in result.diagnostics if d.code == "disclosure/input_over_budget"]
    assert [d.operation for d in warned] == ["payments.refunds.create"]
    assert warned[0].severity == "warning"
    assert "'payments_create_refund'" in warned[0].message and "500-token" in warned[0].message
    refund = result.document.operation("payments.refunds.create")
    assert refund is not None and refund.disclosure_cost is not None and refund.disclosure_cost.tool_tokens > 500
    tools = json.loads(emit_bundle(result.document)["tools.json"])["tools"]
    by_name = {tool["name"]: tool for tool in tools}
    assert by_name["payments_create_refund"]["_meta"][OUTPUT_SCHEMA_META] == "omitted"
    assert "outputSchema" not in by_name["payments_create_refund"]


def test_a_capability_review_allowing_large_tools_turns_the_over_budget_warning_into_a_recorded_waiver(
    tmp_path: Path,
) -> None:
    budget = "disclosure:\n  tool_budget_tokens: 500\n"
    plain = _payments(_with_disclosure(tmp_path, budget))
    (warned,) = [d for d in plain.diagnostics if d.code == "disclosure/input_over_budget"]
    assert warned.hint is not None and "`capabilities: {payments.refunds: {state: approved, allow_large: true" in (
        warned.hint
    )
    review = "capabilities:\n  payments.refunds: {state: approved, allow_large: true, note: Refunds carry a reason.}\n"
    waived = _payments(_with_disclosure(tmp_path, budget + review))
    assert not [d for d in waived.diagnostics if d.code == "disclosure/input_over_budget"]
    (said,) = [d for d in waived.diagnostics if d.code == "capability_tool_budget_waived"]
    assert (said.severity, said.operation) == ("info", "payments.refunds.create")
    assert said.message.endswith(
        'over the 500-token tool budget, waived by capability review payments.refunds ("Refunds carry a reason.").'
    )
    capability = next(c for c in waived.document.capabilities if c.id == "payments.refunds")
    assert (capability.lifecycle, capability.allow_large) == ("approved", True)


def test_a_budget_cut_bundle_recompiles_byte_for_byte(tmp_path: Path) -> None:
    manifest = _with_disclosure(tmp_path, "disclosure:\n  output_schema_percent: 40\n")
    first, second = emit_bundle(_payments(manifest).document), emit_bundle(_payments(manifest).document)
    assert first == second
    states = [tool["_meta"].get(OUTPUT_SCHEMA_META) for tool in json.loads(first["tools.json"])["tools"]]
    assert "summarised" in states
