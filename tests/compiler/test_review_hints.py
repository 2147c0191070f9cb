"""What ``anvil init`` tells a reviewer: POSTs that may only read, and browser pages answering HTML."""

from __future__ import annotations

from typing import Any

from anvil.compiler import compile_source
from anvil.compiler.review_hints import page_hints, read_hints, source_facts
from anvil.load.result import LoadResult

_JSON = {"application/json": {"schema": {"type": "object", "properties": {"id": {"type": "string"}}}}}


def _post(summary: str, operation_id: str | None = None, description: str | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = {"summary": summary, "responses": {"200": {"description": "ok", "content": _JSON}}}
    if operation_id:
        raw["operationId"] = operation_id
    if description:
        raw["description"] = description
    return {"post": raw}


def _hints(paths: dict[str, Any]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    spec = {"openapi": "3.0.3", "info": {"title": "Shop", "version": "1"}, "paths": paths}
    doc = compile_source(LoadResult(document=spec, version="3.0.3"), None, service_id="shop").document
    facts = source_facts(spec)
    by_path = {op.id: op.source_ref.path or "" for op in doc.operations}
    reads = {by_path[k]: v for k, v in read_hints(doc.operations, facts).items()}
    pages = {by_path[k]: v for k, v in page_hints(doc.operations, facts).items()}
    return reads, pages, by_path


def test_a_post_whose_summary_says_it_reads_and_describes_no_change_gets_a_read_reason() -> None:
    reads, _, _ = _hints(
        {
            "/paymentMethods": _post("Get a list of available payment methods", "post-paymentMethods"),
            "/paymentMethods/balance": _post("Check the balance of a gift card"),
            "/fees": _post("Calculate the fees of a payment"),
            "/payments": _post("Start a transaction", "post-payments"),
            "/sessions": _post("Get or create a session"),
            "/cards": _post("Retrieve a card", description="Retrieves the card, then cancels its holds."),
            "/metrics": _post(
                "Get aggregated incident data",
                description="Provides aggregated metrics.\n\nScoped OAuth requires: `analytics.write`",
            ),
            "/tokens": _post(
                "Returns input token counts of the request.\n\nReturns an object with `object` set to it."
            ),
        }
    )
    assert sorted(reads) == ["/fees", "/metrics", "/paymentMethods", "/paymentMethods/balance", "/tokens"]
    assert (
        reads["/tokens"]
        == "its summary 'Returns input token counts of the request.' says returns and it describes no state change"
    )
    assert reads["/paymentMethods"] == (
        "its summary 'Get a list of available payment methods' says get and it describes no state change"
    )


def test_a_read_answering_only_html_is_a_browser_page_and_one_answering_json_is_not() -> None:
    html = {"text/html": {"schema": {"type": "string"}}}
    _, pages, _ = _hints(
        {
            "/authorize": {
                "get": {"summary": "Authorize user", "responses": {"200": {"description": "page", "content": html}}}
            },
            "/users": {"get": {"summary": "List users", "responses": {"200": {"description": "ok", "content": _JSON}}}},
            "/both": {
                "get": {"summary": "Either", "responses": {"200": {"description": "ok", "content": {**html, **_JSON}}}}
            },
        }
    )
    assert list(pages) == ["/authorize"]
    assert "text/html" in pages["/authorize"]
