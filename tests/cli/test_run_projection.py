"""``anvil run --projection``: a JMESPath view of the answer, direct and through MCP, on the payments example."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.cli.fixtures.upstreams import HttpGateway, anvil_run, credential_env

REFUND = ("refunds", "create", "--payment-id", "pay_123", "--amount", "100", "--currency", "EUR", "--confirm")
CUSTOMER = ("customers", "get", "--customer-id", "cus_123")


def _dev(bundle: Path) -> dict[str, str]:
    return {"ANVIL_ENV": "dev", **credential_env(bundle, "payments.refunds.create", "tok-1")}


def _stored(path: Path) -> list[Any]:
    """Every result the SQLite ledger at ``path`` keeps."""
    with sqlite3.connect(path) as db:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return [json.loads(text) for table in tables for (text,) in db.execute(f"SELECT result_json FROM {table}")]


def test_a_projection_narrows_a_read_the_same_way_direct_and_through_mcp(payments: Path, mock: tuple[str, Any]) -> None:
    url, state = mock
    gateway = HttpGateway(payments, {**_dev(payments), "ANVIL_BASE_URL": url})
    try:
        direct = anvil_run(payments, *CUSTOMER, "--projection", "{who: name}", "--base-url", url, "--json",
                           env=_dev(payments))  # fmt: skip
        through = anvil_run(payments, *CUSTOMER, "--projection", "{who: name}", "--json", "--mcp", gateway.url)
    finally:
        gateway.stop()
    assert direct.code == through.code == 0, direct.err + through.err
    assert direct.json() == through.json() == {"who": "Ada Lovelace"}
    scalar = anvil_run(payments, *CUSTOMER, "--projection", "email", "--base-url", url, env=_dev(payments))
    assert scalar.out == "ada@example.com\n"  # a string view prints as is, like a string answer
    assert [r["method"] for r in state.requests] == ["GET", "GET", "GET"]
    assert all("anvil_projection" not in json.dumps(r) for r in state.requests)


def test_a_malformed_projection_exits_2_before_anything_is_sent_in_every_mode(
    payments: Path, mock: tuple[str, Any], tmp_path: Path
) -> None:
    url, state = mock
    env = {**_dev(payments), "ANVIL_LEDGER": f"sqlite:///{tmp_path / 'ledger.db'}"}
    for mode in ((), ("--mcp",), ("--validate-input",)):
        ran = anvil_run(payments, *REFUND, "--idempotency-key", "k-bad", "--projection", "id[", "--base-url", url,
                        *mode, env=env)  # fmt: skip
        assert ran.code == 2, (mode, ran.err)
        error = ran.envelope()
        assert (error["code"], error["details"]["code"]) == ("validation_error", "projection/invalid"), mode
    assert state.requests == [] and state.refunds == {}
    assert not (tmp_path / "ledger.db").exists() or _stored(tmp_path / "ledger.db") == []
    bare = anvil_run(payments, *CUSTOMER, "--projection")
    assert bare.code == 2 and bare.envelope()["details"]["field"] == "--projection"


def test_a_keyed_refund_replayed_with_another_projection_prints_its_own_view_and_the_ledger_keeps_the_whole(
    payments: Path, mock: tuple[str, Any], tmp_path: Path
) -> None:
    url, state = mock
    ledger = tmp_path / "ledger.db"
    env = {**_dev(payments), "ANVIL_LEDGER": f"sqlite:///{ledger}"}
    refund = (*REFUND, "--idempotency-key", "k-view", "--base-url", url, "--json")
    first = anvil_run(payments, *refund, "--projection", "id", env=env)
    second = anvil_run(payments, *refund, "--projection", "{amount: amount, status: status}", env=env)
    whole = anvil_run(payments, *refund, env=env)
    assert first.code == second.code == whole.code == 0, first.err + second.err + whole.err
    assert first.json() == "re_0001"
    assert second.json() == {"amount": 100, "status": "succeeded"}
    assert whole.json()["payment_id"] == "pay_123"  # no projection: the whole answer
    assert "anvil: replayed" in second.err and "anvil: replayed" in whole.err
    assert len(state.requests) == 1 and len(state.refunds) == 1
    assert _stored(ledger) == [whole.json()]


def test_a_projection_failing_after_a_refund_exits_2_and_still_prints_the_effect(
    payments: Path, mock: tuple[str, Any]
) -> None:
    url, state = mock
    gateway = HttpGateway(payments, {**_dev(payments), "ANVIL_BASE_URL": url})
    try:
        for mode, key in ((("--base-url", url), "k-fail-direct"), (("--mcp", gateway.url), "k-fail-mcp")):
            ran = anvil_run(payments, *REFUND, "--idempotency-key", key, "--projection", "length(amount)", *mode,
                            env=_dev(payments))  # fmt: skip
            assert ran.code == 2, (mode, ran.err)
            assert ran.envelope()["details"]["code"] == "projection/failed", mode
            assert ran.out == ""  # never the unprojected answer
            effect = ran.effect()
            assert effect is not None and (effect["class"], effect["idempotency_key"]) == ("irreversible", key), mode
    finally:
        gateway.stop()
    assert len(state.refunds) == 2  # both refunds happened: the effect lines said so
