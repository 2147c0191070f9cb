"""The start-up scope line: gateways print one digest for a bundle exactly when they share its keys."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import httpx
import pytest

from anvil.air.model import Document
from anvil.bundle.read import read_bundle
from anvil.ledger.base import Ledger, LedgerOptions
from anvil.ledger.registry import open_ledger
from anvil.runtime.context import RuntimeContext
from anvil.runtime.sharing import ledger_scope_line, sharing_digest
from tests.cli.fixtures.upstreams import compile_example

UPSTREAM = "http://127.0.0.1:9/v1"


@pytest.fixture(scope="module")
def payments(tmp_path_factory: pytest.TempPathFactory) -> Document:
    return read_bundle(compile_example("payments", "payments", tmp_path_factory.mktemp("sharing") / "payments"))


def _digest(document: Document, ledger: Ledger | None, base_url: str = UPSTREAM) -> str:
    context = RuntimeContext(service_id="payments", base_url=base_url, client=httpx.AsyncClient(), ledger=ledger)
    return sharing_digest(document, context)


def test_one_file_reached_two_ways_gives_one_digest_and_another_file_table_or_scope_another(
    payments: Document, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link.db").symlink_to(tmp_path / "ledger.db")
    gateway = LedgerOptions(namespace="payments")  # what `anvil serve` passes for the payments bundle
    first = _digest(payments, open_ledger(f"sqlite:///{tmp_path}/ledger.db", options=gateway))
    assert _digest(payments, open_ledger("sqlite:///ledger.db", options=gateway)) == first
    assert _digest(payments, open_ledger("sqlite:///link.db", options=gateway)) == first
    assert _digest(payments, open_ledger("sqlite:///ledger.db?namespace=payments")) == first
    others = [
        _digest(payments, open_ledger("sqlite:///other.db", options=gateway)),
        _digest(payments, open_ledger("sqlite:///ledger.db?namespace=orders")),
        _digest(payments, open_ledger("sqlite:///ledger.db")),  # the default table
        _digest(payments, open_ledger("sqlite:///ledger.db", options=gateway), base_url="http://127.0.0.1:9/v2"),
        _digest(payments, open_ledger("memory:")),
        _digest(payments, None),
    ]
    assert first not in others and len(set(others)) == len(others)


def test_one_memory_ledger_shares_its_digest_only_with_the_gateways_that_hold_that_instance(
    payments: Document,
) -> None:
    ledger = open_ledger("memory:")
    assert _digest(payments, ledger) == _digest(payments, ledger) != _digest(payments, open_ledger("memory:"))


def test_the_line_names_where_the_rows_live_and_ends_with_the_digest(payments: Document, tmp_path: Path) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path}/ledger.db", options=LedgerOptions(namespace="payments"))
    context = RuntimeContext(service_id="payments", base_url=UPSTREAM, client=httpx.AsyncClient(), ledger=ledger)
    line = ledger_scope_line("payments", payments, context)
    assert line.startswith("anvil: ledger scope payments: service payments, env prod, upstream http://127.0.0.1:9/v1")
    assert (
        f"ledger sqlite host {socket.gethostname()}, file {os.path.realpath(tmp_path / 'ledger.db')}, "
        "table anvil_idempotency_df384ae97c77ad30 (namespace payments), "
    ) in line
    assert line.endswith(f"digest {sharing_digest(payments, context)}")
