"""The ``_meta`` and effect-report key registry is the public contract: what the source uses is registered."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from anvil.air.input_summary import INPUT_SCHEMA_META
from anvil.air.meta_keys import EFFECT_REPORT_KEYS, META_KEYS
from anvil.air.surface import OUTPUT_SCHEMA_META
from anvil.serve.controls import IDEMPOTENCY_KEY_META, STAGE_META
from anvil.serve.discovery.ladder import CAPABILITY_META, LANE_META, LANE_TOKENS_META, LANE_TOOLS_META
from anvil.serve.discovery.meta import INPUTS_FROM_META
from anvil.serve.report import EffectPlan, FollowUpPlan, call_report
from anvil.serve.responses import PAGE_CAP_META, TRUNCATED_META
from anvil.serve.traces import TRACEPARENT_META

SRC = Path(__file__).resolve().parents[2] / "src" / "anvil"
_ANVIL_KEY = re.compile(r"""["'](anvil/[a-z_]+)["']""")


def _registered(place: str) -> set[str]:
    return {key.name for key in META_KEYS if key.place == place}


def _used_anvil_keys() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "meta_keys.py":
            continue
        for key in _ANVIL_KEY.findall(path.read_text(encoding="utf-8")):
            found.setdefault(key, []).append(str(path.relative_to(SRC)))
    return found


def test_every_anvil_meta_key_the_source_uses_is_registered() -> None:
    names = {key.name for key in META_KEYS}
    assert {key: where for key, where in _used_anvil_keys().items() if key not in names} == {}


def test_every_registered_anvil_key_is_used_by_the_source() -> None:
    used = _used_anvil_keys()
    assert sorted(key.name for key in META_KEYS if key.name.startswith("anvil/") and key.name not in used) == []


def test_the_named_meta_constants_are_registered_in_their_place() -> None:
    listing = {INPUT_SCHEMA_META, OUTPUT_SCHEMA_META, INPUTS_FROM_META, LANE_META, CAPABILITY_META}
    assert listing | {LANE_TOOLS_META, LANE_TOKENS_META} <= _registered("listing")
    assert {TRUNCATED_META, PAGE_CAP_META, "effect"} <= _registered("result")
    assert _registered("request") == {IDEMPOTENCY_KEY_META, STAGE_META, TRACEPARENT_META}


def _report_source_keys() -> tuple[list[str], set[str]]:
    """The always-present keys of the report literal in ``serve/report.py``, and every key it ever sets."""
    tree = ast.parse((SRC / "serve" / "report.py").read_text(encoding="utf-8"))
    literals = [
        [key.value for key in node.keys if isinstance(key, ast.Constant)]
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        and any(isinstance(key, ast.Constant) and key.value == "class" for key in node.keys)
    ]
    assigned = {
        node.slice.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in {"report", "out"}
        and isinstance(node.slice, ast.Constant)
    }
    return literals[0], {key for literal in literals for key in literal} | assigned


def test_the_effect_report_keys_are_the_ones_the_report_builder_sets() -> None:
    always, every = _report_source_keys()
    assert always == [key.name for key in EFFECT_REPORT_KEYS if key.always]
    assert every == {key.name for key in EFFECT_REPORT_KEYS}


def test_a_built_report_carries_the_always_keys_in_order_and_only_registered_keys() -> None:
    undo = FollowUpPlan("s.comments.delete", "s_delete_comment", {"comment_id": "response.id"})
    report = call_report(
        EffectPlan("s.comments.create", "reversible", inverse=undo),
        succeeded=True,
        idempotency_key="k-1",
        answered_at_ms=1000,
        request={},
        response={"id": 9},
        replayed=True,
    )
    always = [key.name for key in EFFECT_REPORT_KEYS if key.always]
    assert list(report)[: len(always)] == always
    assert set(report) <= {key.name for key in EFFECT_REPORT_KEYS}
    assert report["replayed"] is True
