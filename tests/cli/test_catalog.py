"""``anvil inspect``: the operation catalog and the disclosure (what ``anvil serve`` lists at rest in each mode)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from anvil.bundle.read import read_bundle
from anvil.cli import main
from anvil.proof.disclosure import INSPECT_KEYS, served_surfaces, served_tools, tokens_of
from anvil.serve.discovery.ladder import card_name


def _inspect(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(["inspect", *argv]) == 0
    return capsys.readouterr().out


def test_inspect_reports_the_mode_auto_picks_and_the_tokens_at_rest_in_each_mode(
    github: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = json.loads(_inspect(capsys, str(github), "--json"))
    disclosure = shown["disclosure"]
    assert tuple(disclosure) == INSPECT_KEYS
    tools = served_tools(read_bundle(github)).values()
    flat = sum(tokens_of(tool) for tool in tools)
    assert disclosure["auto"] == "flat" and disclosure["surfaceBudgetTokens"] == 20_000
    assert (disclosure["flatTools"], disclosure["flatTokens"]) == (len(tools), flat)
    assert 0 < disclosure["searchTokens"] < 3_000 and 0 < disclosure["ladderedTokens"] < flat
    doc = read_bundle(github)
    assert disclosure["lanes"] == len({op.capability_id for op in doc.operations if op.is_approved})
    assert disclosure["estimator"] == "o200k_base"
    text = _inspect(capsys, str(github)).splitlines()[-1]
    assert text == (
        f"disclosure: auto serves flat (the flat list of {len(tools)} tool(s) is {flat:,} tokens, within the "
        f"20,000-token budget); at rest: search {disclosure['searchTokens']:,}, laddered "
        f"{disclosure['ladderedTokens']:,} ({disclosure['lanes']} lane(s)) tokens (o200k_base)"
    )


def test_inspect_of_an_api_over_the_budget_says_auto_searches_and_a_card_collision_voids_the_ladder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.proof.test_disclosure import _compile, _spec

    bundle = _compile(tmp_path, _spec(26, description="Explains. " * 120), "wide")
    disclosure = json.loads(_inspect(capsys, str(bundle), "--json"))["disclosure"]
    assert disclosure["auto"] == "search" and disclosure["flatTokens"] > 20_000
    assert disclosure["searchTokens"] < 3_000 and disclosure["ladderedTokens"] < 20_000
    doc = read_bundle(bundle)
    first = doc.operations[0]
    card = card_name(doc.operations[1].capability_id or "")
    renamed = dataclasses.replace(first, mcp=dataclasses.replace(first.mcp, tool_name=card))
    clash = served_surfaces(dataclasses.replace(doc, operations=(renamed, *doc.operations[1:])))
    assert clash.to_json()["ladderedTokens"] is None
    assert "laddered refused (a card collides)" in clash.line()
