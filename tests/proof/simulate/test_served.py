"""simulate's ``disclosure/response-page`` cell measures the answer as ``anvil serve`` hands it to the agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from anvil.bundle.read import read_bundle
from anvil.cli.compile import compile_bundle
from anvil.proof.simulate.lane import simulate
from anvil.proof.simulate.matrix import Cell, Simulator
from tests.cli.fixtures.upstreams import REPO

LIST = "bulky.things.list"
GET = "bulky.things.get"


def _spec() -> dict[str, Any]:
    """A list read whose default page (100 items of 40 fields) is far over 8,000 tokens, and a small read."""
    item = {"type": "object", "properties": {f"field_{n:03d}": {"type": "string"} for n in range(40)}}
    answer = {"type": "object", "properties": {"items": {"type": "array", "items": item}}}

    def read(op_id: str, schema: dict[str, Any], params: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "operationId": op_id,
            "summary": f"{op_id} things",
            "parameters": params,
            "responses": {"200": {"description": "Things.", "content": {"application/json": {"schema": schema}}}},
        }

    paging = [
        {"name": "offset", "in": "query", "schema": {"type": "integer"}},
        {"name": "limit", "in": "query", "schema": {"type": "integer", "default": 100}},
    ]
    small = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}}}
    by_id = [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}]
    return {
        "openapi": "3.0.3",
        "info": {"title": "Bulky", "version": "1.0"},
        "servers": [{"url": "https://bulky.example.com"}],
        "paths": {
            "/things": {"get": read("listThings", answer, paging)},
            "/things/{id}": {"get": read("getThing", small, by_id)},
        },
    }


@pytest.fixture(scope="module")
def bulky(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("served")
    source, manifest = root / "bulky.yaml", root / "bulky.anvil.yaml"
    source.write_text(yaml.safe_dump(_spec()), encoding="utf-8")
    operations = {"listThings": {"state": "approved"}, "getThing": {"state": "approved"}}
    manifest.write_text(yaml.safe_dump({"service": {"name": "bulky"}, "operations": operations}), encoding="utf-8")
    outcome = compile_bundle(source, out=root / "bulky", manifest=manifest, service_id="bulky", root=REPO)
    assert outcome.bundle_hash is not None, [d.code for d in outcome.diagnostics if d.severity == "error"]
    return root / "bulky"


def _page(record: dict[str, Any], op_id: str) -> dict[str, Any]:
    return next(
        c
        for c in record["coverage"]["cells"]
        if c["operationId"] == op_id and (c["dimension"], c["variant"]) == ("disclosure", "response-page")
    )


def test_a_page_over_the_budget_passes_as_the_gateway_serves_it_cut_and_the_figure_keeps_both_sizes(
    bulky: Path,
) -> None:
    record = simulate(bulky, seed=9)
    page = _page(record, LIST)
    assert (page["ok"], page["basis"], page["actual"]) == (True, "simulated-data", "within 8000 tokens")
    figure = page["figure"]
    assert figure["cut"] is True and figure["seed"] == 9
    assert figure["tokens"] <= figure["budgetTokens"] == 8000 < figure["rawTokens"]
    assert set(figure) == {"tokens", "budgetTokens", "estimator", "seed", "rawTokens", "cut"}
    # The same seed serves the same cut answer: the kept answer's link is named by its digest.
    assert _page(simulate(bulky, seed=9), LIST) == page


def test_an_answer_within_the_budget_is_served_whole_and_its_two_sizes_are_the_same(bulky: Path) -> None:
    figure = _page(simulate(bulky), GET)["figure"]
    assert figure["cut"] is False and figure["tokens"] == figure["rawTokens"] <= 8000


def test_an_answer_no_cut_brings_within_the_budget_fails_with_both_sizes_and_the_reason(bulky: Path) -> None:
    doc = read_bundle(bulky)
    simulator = Simulator(doc, seed=3, response_budget=40)  # the marker alone is longer than 40 tokens

    async def run() -> list[Cell]:
        return await simulator.matrix(doc, only=LIST)

    page = next(c for c in anyio.run(run) if c.name == "disclosure/response-page")
    assert page.figure is not None and page.figure.cut is True and page.figure.raw_tokens is not None
    assert not page.ok and page.expected == "within 40 tokens"
    assert page.actual == (
        f"{page.figure.tokens} tokens, over 40: the gateway's smallest cut of the "
        f"{page.figure.raw_tokens}-token answer is still over the budget"
    )
    assert 40 < page.figure.tokens < page.figure.raw_tokens
