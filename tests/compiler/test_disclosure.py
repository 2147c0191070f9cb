"""Disclosure measurement (original-core §3.7): every operation's tool surface is measured in AIR."""

from __future__ import annotations

import json
import math
from pathlib import Path

from anvil.air.tools import tool_definition
from anvil.compiler import build

REPO = Path(__file__).resolve().parents[2]


def test_every_operation_carries_the_estimated_token_cost_of_its_tool_surface() -> None:
    result = build(
        REPO / "examples" / "payments" / "openapi.yaml",
        manifest=REPO / "examples" / "payments" / "anvil.yaml",
        service_id="payments",
        source_uri="examples/payments/openapi.yaml",
    )
    doc = result.document
    assert doc.operations
    for op in doc.operations:
        cost = op.disclosure_cost
        assert cost is not None, op.id
        surface = json.dumps(tool_definition(op, doc.schemas), separators=(",", ":"), ensure_ascii=False)
        assert cost.tool_tokens == math.ceil(len(surface) / 4)
        assert cost.chars_per_token == round(len(surface) / cost.tool_tokens, 3)
        assert (cost.estimator, cost.response_tokens, cost.response_item_tokens) == ("chars/4", 0, 0)
