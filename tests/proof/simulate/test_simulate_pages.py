"""simulate's pagination dimension: every paged read is driven to page 2 with the continuation page 1 gave."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import pytest

from anvil.air.model import Document
from anvil.bundle.read import read_bundle
from anvil.cli.compile import compile_bundle
from anvil.proof.simulate.lane import simulate
from anvil.proof.simulate.matrix import Cell, Simulator
from tests.cli.fixtures.upstreams import REPO

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PAGED = ("pages.events.list", "pages.customers.list", "pages.orders.list", "pages.logs.list")


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("proof") / "pages"
    outcome = compile_bundle(
        FIXTURES / "pages.yaml", out=out, manifest=FIXTURES / "pages.anvil.yaml", service_id="pages", root=REPO
    )
    assert outcome.bundle_hash is not None
    return out


def _cells(record: dict[str, Any], op_id: str) -> dict[str, dict[str, Any]]:
    return {
        c["variant"]: c
        for c in record["coverage"]["cells"]
        if c["operationId"] == op_id and c["dimension"] == "pagination"
    }


def _matrix(reference: Document, doc: Document, seed: int = 1) -> tuple[Simulator, list[Cell]]:
    simulator = Simulator(reference, seed=seed)

    async def run() -> list[Cell]:
        return await simulator.matrix(doc)

    return simulator, anyio.run(run)


def test_every_paged_read_gets_first_next_and_last_page_cells_that_pass(pages: Path) -> None:
    record = simulate(pages)
    assert record["summary"]["ok"] is True
    dimension = next(d for d in record["coverage"]["dimensions"] if d["dimension"] == "pagination")
    assert dimension == {"dimension": "pagination", "operations": 4, "cells": 12, "passed": 12}
    for op_id in PAGED:
        cells = _cells(record, op_id)
        assert sorted(cells) == ["first-page", "last-page", "next-page"]
        assert all(cell["ok"] and cell["basis"] == "contract" for cell in cells.values())
        assert cells["first-page"]["actual"].endswith(", continues")
        assert cells["last-page"]["actual"] == "page 2: 1 item(s), ends"


def test_the_second_page_is_requested_with_the_cursor_the_first_page_returned(pages: Path) -> None:
    doc = read_bundle(pages)
    simulator, cells = _matrix(doc, doc, seed=5)
    served = simulator.upstream.pages["pages.events.list"]
    at = next(i for i, page in enumerate(served) if page.page == 2)
    token = served[at - 1].handed_out
    assert token is not None and token.startswith("sim-cursor-")
    # Page 2 was asked for exactly once, right after a page 1, carrying the token that page 1 handed out in
    # response_metadata.next_cursor; every other request started from page 1.
    assert [(page.page, page.received) for page in served if page.page != 1] == [(2, token)]
    assert served[at - 1].page == 1
    next_page = next(c for c in cells if c.operation_id == "pages.events.list" and c.name == "pagination/next-page")
    assert next_page.ok and next_page.actual == f"page 2 requested with cursor={token}"


@pytest.mark.parametrize(
    ("op_id", "continuation"),
    [("pages.orders.list", "page=2"), ("pages.logs.list", "offset=4")],
)
def test_page_number_and_offset_reads_continue_where_page_one_ended(pages: Path, op_id: str, continuation: str) -> None:
    cells = _cells(simulate(pages), op_id)
    assert cells["next-page"]["actual"] == f"page 2 requested with {continuation}"
    assert cells["first-page"]["expected"] == cells["first-page"]["actual"]


def test_a_starting_after_read_continues_from_the_last_items_id(pages: Path) -> None:
    doc = read_bundle(pages)
    simulator, _ = _matrix(doc, doc)
    served = simulator.upstream.pages["pages.customers.list"]
    at = next(i for i, page in enumerate(served) if page.page == 2)
    assert served[at].received == served[at - 1].handed_out
    assert served[at].received is not None and served[at].received.startswith("sim-")


def test_a_surface_that_names_the_wrong_next_token_field_fails_the_pagination_cells(pages: Path) -> None:
    reference = read_bundle(pages)
    events = reference.operation("pages.events.list")
    assert events is not None and events.pagination is not None
    wrong = dataclasses.replace(events, pagination=dataclasses.replace(events.pagination, next_field="next"))
    doc = dataclasses.replace(
        reference, operations=tuple(wrong if op.id == wrong.id else op for op in reference.operations)
    )
    _simulator, cells = _matrix(reference, doc)
    failed = {c.name: c.actual for c in cells if c.operation_id == "pages.events.list" and not c.ok}
    assert failed == {
        "pagination/first-page": "page 1: 3 item(s), ends",
        "pagination/next-page": "no continuation in page 1",
    }


def test_a_surface_without_the_cursor_input_never_reaches_page_two(pages: Path) -> None:
    reference = read_bundle(pages)
    orders = reference.operation("pages.orders.list")
    assert orders is not None
    params = tuple(p for p in orders.input.params if p.name != "page")
    schema = dict(orders.input.schema or {})
    schema["properties"] = {k: v for k, v in (schema.get("properties") or {}).items() if k != "page"}
    narrowed = dataclasses.replace(orders, input=dataclasses.replace(orders.input, params=params, schema=schema))
    doc = dataclasses.replace(
        reference, operations=tuple(narrowed if op.id == narrowed.id else op for op in reference.operations)
    )
    simulator, cells = _matrix(reference, doc)
    next_page = next(c for c in cells if c.operation_id == "pages.orders.list" and c.name == "pagination/next-page")
    assert (next_page.ok, next_page.actual) == (False, "no input carries page")
    assert all(page.page == 1 for page in simulator.upstream.pages["pages.orders.list"])


def test_an_unknown_cursor_is_refused_by_the_simulated_upstream(pages: Path) -> None:
    import httpx

    doc = read_bundle(pages)
    simulator = Simulator(doc)
    request = httpx.Request("GET", "https://simulated.anvil.test/events?cursor=made-up")
    assert simulator.upstream.answer(request).status_code == 400
    assert "pages.events.list" not in simulator.upstream.pages


def test_the_paged_record_is_deterministic_for_a_seed_and_the_cursor_follows_the_seed(pages: Path) -> None:
    first, second, other = simulate(pages, seed=3), simulate(pages, seed=3), simulate(pages, seed=4)
    for record in (first, second, other):
        record.pop("simulatedAt")
    assert first == second
    token = _cells(first, "pages.events.list")["next-page"]["actual"]
    assert token != _cells(other, "pages.events.list")["next-page"]["actual"]


def test_a_page_or_offset_read_whose_items_the_contract_does_not_locate_claims_no_next_page() -> None:
    from anvil.air.model import Pagination
    from anvil.proof.simulate.pages import locatable

    for style in ("page", "offset"):
        paging = Pagination(style=style, cursor_param="start")  # type: ignore[arg-type]
        assert not locatable(paging, None)  # a short page ends the pages: without items, nothing says so
        assert locatable(paging, {"type": "object"})
