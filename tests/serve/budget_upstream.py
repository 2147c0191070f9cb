"""The catalog fixture for the response budget: its compiled document and an upstream (``httpx.MockTransport``).

The upstream answers each read from a table the test sets (``answers[path]``: a JSON value, or a
callable of the request) and records every request it receives.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from anvil.air.model import Document
from anvil.compiler import build
from anvil.ledger.base import Ledger
from anvil.ledger.registry import open_ledger
from anvil.runtime.context import RuntimeContext

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "budget"
BASE_URL = "http://catalog.test"


def catalog_document() -> Document:
    """The catalog fixture compiled with its manifest (every operation approved)."""
    result = build(FIXTURE / "openapi.yaml", manifest=FIXTURE / "anvil.yaml", service_id="catalog")
    assert [d.code for d in result.diagnostics if d.severity == "error"] == []
    assert result.document is not None
    return result.document


def item_list(count: int, *, width: int = 420, prefix: str = "item") -> list[dict[str, Any]]:
    """``count`` items of about ``width + 80`` bytes each, ids ``<prefix>_000000`` up."""
    filler = ("lorem ipsum dolor sit amet consectetur " * (width // 39 + 1))[:width]
    return [{"id": f"{prefix}_{i:06d}", "name": f"Item {i}", "description": filler} for i in range(count)]


@dataclass
class Upstream:
    """What the catalog upstream answers, and what it received."""

    answers: dict[str, Any] = field(default_factory=dict)
    requests: list[httpx.Request] = field(default_factory=list)
    status: dict[str, int] = field(default_factory=dict)
    _encoded: dict[int, bytes] = field(default_factory=dict)

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.get(request.url.path)
        if callable(answer):
            answer = answer(request)
        body = self._encoded.get(id(answer))
        if body is None:
            body = json.dumps(answer).encode()
            if not callable(self.answers.get(request.url.path)):
                self._encoded[id(answer)] = body  # a fixed answer is encoded once (a 5 MB list is slow to dump)
        status = self.status.get(request.url.path, 201 if request.method == "POST" else 200)
        return httpx.Response(status, content=body, headers={"content-type": "application/json"})

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handler))

    def last(self, path: str) -> httpx.Request:
        return [request for request in self.requests if request.url.path == path][-1]


def catalog_context(client: httpx.AsyncClient, ledger: Ledger | None = None) -> RuntimeContext:
    """A development context over the catalog upstream (no credentials: the spec declares no auth)."""
    return RuntimeContext(
        service_id="catalog",
        base_url=BASE_URL,
        client=client,
        env="dev",
        allowed_hosts=("catalog.test",),
        ledger=ledger if ledger is not None else open_ledger("memory:"),
    )


Answer = Callable[[httpx.Request], Any]
