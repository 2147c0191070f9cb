"""Disclosure budgets (original-core §3.7): certify's static checks and simulate's ``disclosure`` cells."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from anvil.air.codec import contract_hash
from anvil.bundle.read import read_bundle
from anvil.cli import main
from anvil.cli.compile import compile_bundle
from anvil.proof.certify.lane import CERTIFICATION_FILE, certify
from anvil.proof.disclosure import served_tools, tokens_of
from anvil.proof.simulate.lane import SIMULATION_FILE, simulate
from tests.cli.fixtures.upstreams import REPO

TOOL = "contract.certification-core.static.tool_surface_within_disclosure_budget"
AT_REST = "contract.certification-core.static.surface_at_rest_within_disclosure_budget"


def _spec(reads: int, *, description: str = "") -> JSONish:
    paths: dict[str, Any] = {}
    for i in range(reads):
        item = {"type": "object", "properties": {"field_000": {"type": "string"}}}
        paths[f"/things{i}"] = {
            "get": {
                "operationId": f"listThings{i}",
                "summary": f"List things of kind {i}",
                "description": f"Kind {i}. {description}".strip(),
                "parameters": [],
                "responses": {
                    "200": {
                        "description": "The things.",
                        "content": {
                            "application/json": {
                                "schema": {"type": "object", "properties": {"items": {"type": "array", "items": item}}}
                            }
                        },
                    }
                },
            }
        }
    return {
        "openapi": "3.0.3",
        "info": {"title": "Wide", "version": "1.0"},
        "servers": [{"url": "https://wide.example.com"}],
        "paths": paths,
    }


JSONish = dict[str, Any]


def _compile(tmp_path: Path, spec: JSONish, name: str, **extra: Any) -> Path:
    source = tmp_path / f"{name}.yaml"
    source.write_text(yaml.safe_dump(spec), encoding="utf-8")
    manifest = tmp_path / f"{name}.anvil.yaml"
    operations = {op["get"]["operationId"]: {"state": "approved"} for op in spec["paths"].values()}
    manifest.write_text(
        yaml.safe_dump({"service": {"name": "wide"}, "operations": operations, **extra}), encoding="utf-8"
    )
    outcome = compile_bundle(source, out=tmp_path / name, manifest=manifest, service_id="wide", root=REPO)
    assert outcome.bundle_hash is not None, [d.code for d in outcome.diagnostics if d.severity == "error"]
    return tmp_path / name


def _check(record: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(c for c in record["checks"] if c["id"] == check_id)


def _cell(record: dict[str, Any], op_id: str, variant: str) -> dict[str, Any]:
    return next(
        c
        for c in record["coverage"]["cells"]
        if c["operationId"] == op_id and c["dimension"] == "disclosure" and c["variant"] == variant
    )


@pytest.fixture(scope="module")
def verbose(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two reads, one with a description long enough to exceed the 1200-token tool budget on its own."""
    spec = _spec(2)
    spec["paths"]["/things1"]["get"]["description"] = "Kind 1. " + "Explains at length. " * 300
    return _compile(tmp_path_factory.mktemp("disclosure"), spec, "verbose")


def test_certify_states_the_budgets_it_met_on_the_examples(github: Path) -> None:
    record = certify(github)
    approved = len(served_tools(read_bundle(github)))
    assert (_check(record, TOOL)["status"], _check(record, TOOL)["detail"]) == (
        "passed",
        f"{approved} operation(s) within 1200 tokens",
    )
    at_rest = _check(record, AT_REST)
    assert at_rest["status"] == "passed"
    assert at_rest["detail"].startswith(f"served flat (auto: the flat list fits): {approved} tool(s) at rest: ")
    assert at_rest["detail"].endswith("/20000 tokens (o200k_base)")


def test_a_tool_surface_over_the_budget_fails_certify_with_that_check(
    verbose: Path, copy_bundle: Callable[[Path], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = copy_bundle(verbose)
    assert main(["certify", str(bundle)]) == 1
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("FAILED — ")
    record = json.loads((bundle / CERTIFICATION_FILE).read_text(encoding="utf-8"))
    check = _check(record, TOOL)
    tokens = tokens_of(served_tools(read_bundle(bundle))["wide.things1.list"])
    assert tokens > 1200
    assert check["status"] == "failed"
    assert check["detail"] == (
        f"over the 1200-token tool budget (o200k_base): wide.things1.list ({tokens} tokens); to publish every "
        f"tool as it is, set `disclosure: tool_budget_tokens: {tokens}` in anvil.yaml (the smallest budget every "
        "tool fits) and recompile, or narrow the inputs of the tools over it in the spec; or, to accept these "
        "tools as they are, waive the budget per capability in anvil.yaml with `capabilities: {<id>: {state: "
        "approved, allow_large: true, note: <why>}}` (over it: wide.things1)"
    )
    assert _check(record, AT_REST)["status"] == "passed"  # one long tool is far from the 20,000 at rest


def test_a_tool_surface_over_the_budget_fails_its_simulated_disclosure_cell(verbose: Path) -> None:
    record = simulate(verbose)
    assert record["summary"]["ok"] is False
    over = _cell(record, "wide.things1.list", "tool-surface")
    tokens = over["figure"]["tokens"]
    assert over["figure"] == {"tokens": tokens, "budgetTokens": 1200, "estimator": "o200k_base"}
    assert (over["ok"], over["basis"], over["expected"]) == (False, "contract", "within 1200 tokens")
    assert over["actual"] == f"{tokens} tokens, over 1200"
    fine = _cell(record, "wide.things0.list", "tool-surface")
    assert fine["ok"] is True and fine["figure"]["tokens"] <= 1200


def test_many_small_tools_over_the_budget_flat_are_served_searched_and_pass_at_rest(tmp_path: Path) -> None:
    bundle = _compile(tmp_path, _spec(26, description="Explains. " * 120), "many")
    record = certify(bundle)
    assert _check(record, TOOL)["status"] == "passed"
    at_rest = _check(record, AT_REST)
    assert at_rest["status"] == "passed"
    assert at_rest["detail"].startswith(
        "served search (auto: the flat list is over 20000): 3 meta-tool(s) + 0 pinned tool(s) at rest: "
    )
    flat = sum(tokens_of(tool) for tool in served_tools(read_bundle(bundle)).values())
    assert flat > 20000
    assert at_rest["detail"].endswith(f"(o200k_base); the flat list of 26 tool(s) is {flat}")


def test_pinned_tools_that_alone_exceed_the_budget_fail_the_surface_at_rest(tmp_path: Path) -> None:
    bundle = _compile(tmp_path, _spec(26, description="Explains. " * 120), "pinned", disclosure={"pinned": ["*"]})
    record = certify(bundle)
    at_rest = _check(record, AT_REST)
    assert at_rest["status"] == "failed"
    assert at_rest["detail"].startswith("over the surface budget, served search: 3 meta-tool(s) + 26 pinned tool(s) ")
    assert record["status"] == "failed"


def test_every_approved_operation_has_a_tool_surface_cell_and_answers_with_data_a_response_page(
    payments: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(payments)
    assert main(["simulate", str(bundle)]) == 0
    record = json.loads((bundle / SIMULATION_FILE).read_text(encoding="utf-8"))
    doc = read_bundle(bundle)
    approved = [op for op in doc.operations if op.is_approved]
    for op in approved:
        surface = _cell(record, op.id, "tool-surface")
        assert surface["figure"]["tokens"] == tokens_of(served_tools(doc)[op.id])
        if op.output.schema is not None:
            assert _cell(record, op.id, "response-page")["figure"]["seed"] == 1
    dimension = next(d for d in record["coverage"]["dimensions"] if d["dimension"] == "disclosure")
    expected = len(approved) + sum(1 for op in approved if op.output.schema is not None)
    assert dimension == {"dimension": "disclosure", "operations": len(approved), "cells": expected, "passed": expected}


def test_the_budget_certify_names_for_a_tool_over_it_is_the_smallest_that_passes(tmp_path: Path) -> None:
    spec = _spec(2)
    spec["paths"]["/things1"]["get"]["description"] = "Kind 1. " + "Explains at length. " * 300
    detail = _check(certify(_compile(tmp_path, spec, "over")), TOOL)["detail"]
    named = int(detail.split("tool_budget_tokens: ", 1)[1].split("`", 1)[0])
    lifted = _compile(tmp_path, spec, "lifted", disclosure={"tool_budget_tokens": named})
    assert _check(certify(lifted), TOOL)["status"] == "passed"
    short = _compile(tmp_path, spec, "short", disclosure={"tool_budget_tokens": named - 1})
    assert _check(certify(short), TOOL)["status"] == "failed"


def _verbose_spec() -> JSONish:
    spec = _spec(2)
    spec["paths"]["/things1"]["get"]["description"] = "Kind 1. " + "Explains at length. " * 300
    return spec


_NOTE = "Reviewed: the long description is the API's own."


def test_a_capability_review_allowing_large_tools_passes_certify_and_simulate_naming_the_review_and_its_note(
    tmp_path: Path,
) -> None:
    review = {"wide.things1": {"state": "approved", "allow_large": True, "note": _NOTE}}
    bundle = _compile(tmp_path, _verbose_spec(), "waived", capabilities=review)
    air = json.loads((bundle / "air.json").read_text(encoding="utf-8"))
    (capability,) = [c for c in air["capabilities"] if c["id"] == "wide.things1"]
    assert (capability["lifecycle"], capability["reviewNote"], capability["allowLarge"]) == ("approved", _NOTE, True)
    assert all("allowLarge" not in c for c in air["capabilities"] if c["id"] != "wide.things1")
    tokens = tokens_of(served_tools(read_bundle(bundle))["wide.things1.list"])
    assert tokens > 1200
    record = certify(bundle)
    check = _check(record, TOOL)
    assert (check["status"], check["detail"]) == (
        "passed",
        f"1 operation(s) within 1200 tokens; 1 over it waived: wide.things1.list ({tokens} tokens) by capability "
        f'review wide.things1 ("{_NOTE}")',
    )
    simulated = simulate(bundle)
    cell = _cell(simulated, "wide.things1.list", "tool-surface")
    waived = f'{tokens} tokens, over 1200, waived by capability review wide.things1 ("{_NOTE}")'
    assert (cell["ok"], cell["expected"], cell["actual"]) == (True, waived, waived)
    assert cell["figure"]["tokens"] == tokens and cell["figure"]["budgetTokens"] == 1200
    assert _cell(simulated, "wide.things0.list", "tool-surface")["actual"] == "within 1200 tokens"


@pytest.mark.parametrize(
    "review",
    [
        {"wide.things1": {"state": "approved", "note": _NOTE}},  # approved, but no allow_large
        {"wide.things0": {"state": "approved", "allow_large": True, "note": _NOTE}},  # another capability's waiver
    ],
)
def test_without_its_own_capabilitys_waiver_a_tool_over_the_budget_still_fails_certify_and_simulate(
    tmp_path: Path, review: JSONish
) -> None:
    bundle = _compile(tmp_path, _verbose_spec(), "unwaived", capabilities=review)
    check = _check(certify(bundle), TOOL)
    assert check["status"] == "failed"
    assert check["detail"].startswith("over the 1200-token tool budget (o200k_base): wide.things1.list (")
    assert check["detail"].endswith("(over it: wide.things1)")
    assert _cell(simulate(bundle), "wide.things1.list", "tool-surface")["ok"] is False


def test_a_waiver_is_part_of_the_contract_hash(tmp_path: Path) -> None:
    approved = {"wide.things1": {"state": "approved", "note": _NOTE}}
    (tmp_path / "plain").mkdir()
    (tmp_path / "waived").mkdir()
    plain = _compile(tmp_path / "plain", _verbose_spec(), "wide", capabilities=approved)
    again = _compile(tmp_path / "waived", _verbose_spec(), "wide", capabilities=approved)
    assert contract_hash(read_bundle(plain)) == contract_hash(read_bundle(again))
    waived = {"wide.things1": {**approved["wide.things1"], "allow_large": True}}
    (tmp_path / "other").mkdir()
    other = _compile(tmp_path / "other", _verbose_spec(), "wide", capabilities=waived)
    assert contract_hash(read_bundle(plain)) != contract_hash(read_bundle(other))
