"""Probes: /healthz is liveness; /readyz is 200 only after a live read of the ledger that must carry the writes."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from anvil.air.model import Document
from anvil.ledger.registry import open_ledger
from anvil.serve.health import BundleReadiness, ReadinessProbe, artifact_hash, durable_required, health_body
from anvil.serve.listener import create_listener, default_readiness
from tests.serve.test_fleet import Rig

pytestmark = pytest.mark.anyio


def test_a_durable_ledger_is_required_only_outside_dev_for_an_approved_required_key_write(
    github: Document, payments: Document
) -> None:
    assert durable_required([payments], "prod") is True
    assert durable_required([payments], "staging") is True
    assert durable_required([payments], "dev") is False
    assert durable_required([github], "prod") is False
    assert durable_required([github, payments], "prod") is True


async def probe(app: Any, path: str = "/readyz") -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        return await client.get(path)


async def test_readyz_answers_503_while_the_sqlite_file_cannot_be_read_and_200_once_it_can(
    github: Document, payments: Document, tmp_path: Path
) -> None:
    path = tmp_path / "ledger.db"
    path.write_bytes(b"this is not a database, just bytes " * 200)
    ledger = open_ledger(f"sqlite:///{path}")
    rig = Rig(github, payments, ledger=ledger, env="prod")
    fleet = rig.fleet("payments")
    app = create_listener(fleet, readiness=default_readiness(fleet, cache_seconds=0))
    try:
        broken = await probe(app)
        path.unlink()
        missing = await probe(app)  # a probe never creates the missing file
        assert not path.exists()
        await ledger.initialize()  # `anvil ledger init` (or `anvil serve` at start-up) does
        mended = await probe(app)
    finally:
        await ledger.close()
        await rig.aclose()
    assert broken.status_code == 503
    assert broken.json() == {"ready": False, "service": "payments", "code": "ledger_unavailable"}
    assert broken.headers["cache-control"] == "no-store"
    assert missing.status_code == 503
    assert (mended.status_code, mended.json()) == (200, {"ready": True, "service": "payments"})


async def test_readyz_is_503_when_the_ledger_path_is_a_directory(tmp_path: Path) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path}")
    try:
        assert await ReadinessProbe(ledger, required=False, cache_seconds=0).ready() is False
    finally:
        await ledger.close()


async def test_without_a_durable_ledger_readiness_is_whether_one_is_required(
    github: Document, payments: Document
) -> None:
    memory = open_ledger("memory:")
    assert await ReadinessProbe(None, required=True).ready() is False
    assert await ReadinessProbe(memory, required=True).ready() is False
    assert await ReadinessProbe(memory, required=False).ready() is True
    assert await ReadinessProbe(None, required=False).ready() is True
    rig = Rig(github, payments, env="prod")
    try:
        fleet = rig.fleet()
        answer = await probe(create_listener(fleet))
        health = await probe(create_listener(fleet), "/healthz")
    finally:
        await rig.aclose()
    assert answer.status_code == 503
    assert {name: answer.json()[name] for name in ("ready", "service", "code")} == {
        "ready": False,
        "service": ["github", "payments"],
        "code": "ledger_unavailable",
    }
    hashes = [artifact_hash(github), artifact_hash(payments)]
    assert (health.status_code, health.json()) == (200, health_body(["github", "payments"], hashes))
    assert health.json() == {
        "status": "ok",
        "service": ["github", "payments"],
        "fleet": True,
        "bundles": 2,
        "artifactHashes": hashes,
    }


async def test_a_successful_probe_is_reused_within_its_cache_window(tmp_path: Path) -> None:
    ledger = open_ledger(f"sqlite:///{tmp_path / 'ok.db'}")
    await ledger.initialize()
    now = [100.0]
    probe_ = ReadinessProbe(ledger, required=True, cache_seconds=5, clock=lambda: now[0])
    try:
        assert await probe_.ready() is True
        await ledger.close()
        (tmp_path / "ok.db").unlink()
        (tmp_path / "ok.db").mkdir()  # now unreadable, but the answer is still fresh
        assert await probe_.ready() is True
        now[0] += 6
        assert await probe_.ready() is False
    finally:
        await ledger.close()


async def test_healthz_of_one_bundle_names_its_service_and_unknown_routes_are_json_404s(
    github: Document, payments: Document
) -> None:
    rig = Rig(github, payments)
    try:
        app = create_listener(rig.fleet("github"))
        health = await probe(app, "/healthz")
        missing = await probe(app, "/nowhere")
    finally:
        await rig.aclose()
    assert (health.status_code, health.json()) == (
        200,
        {"status": "ok", "service": "github", "artifactHash": artifact_hash(github)},
    )
    assert (missing.status_code, missing.json()) == (404, {"error": {"code": "not_found", "message": "No such route."}})


async def test_a_fleets_readyz_reports_each_bundle_and_whether_it_needs_the_durable_ledger(
    github: Document, payments: Document, tmp_path: Path
) -> None:
    rig = Rig(github, payments, env="prod")
    try:
        fleet = rig.fleet()
        answer = await probe(create_listener(fleet, readiness=default_readiness(fleet, cache_seconds=0)))
    finally:
        await rig.aclose()
    assert answer.status_code == 503
    assert answer.json()["bundles"] == [
        {"id": "github", "service": "github", "ready": True, "durable_ledger_required": False},
        {"id": "payments", "service": "payments", "ready": False, "durable_ledger_required": True},
    ]
    ledger = open_ledger(f"sqlite:///{tmp_path / 'fleet.db'}")
    await ledger.initialize()
    rig = Rig(github, payments, ledger=ledger, env="prod")
    try:
        fleet = rig.fleet()
        ready = await probe(create_listener(fleet, readiness=default_readiness(fleet, cache_seconds=0)))
    finally:
        await ledger.close()
        await rig.aclose()
    assert ready.status_code == 200 and ready.json()["ready"] is True
    assert [bundle["ready"] for bundle in ready.json()["bundles"]] == [True, True]


async def test_readyz_answers_503_within_two_seconds_while_another_process_holds_the_ledger_locked(
    github: Document, payments: Document, tmp_path: Path
) -> None:
    path = tmp_path / "locked.db"
    ledger = open_ledger(f"sqlite:///{path}")
    await ledger.initialize()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    rig = Rig(github, payments, ledger=ledger, env="prod")
    try:
        fleet = rig.fleet("payments")
        app = create_listener(fleet, readiness=default_readiness(fleet, cache_seconds=0))
        started = time.monotonic()
        answer = await probe(app)
        elapsed = time.monotonic() - started
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        await ledger.close()
        await rig.aclose()
    assert answer.status_code == 503 and elapsed < 2.5


async def test_a_requirement_a_listener_adds_makes_the_probe_not_ready_with_its_code_after_the_ledgers() -> None:
    serving = {"sdk": False}
    bundles = [BundleReadiness("a", "a", False), BundleReadiness("b", "b", True)]
    probe_ = ReadinessProbe(None, required=False, bundles=bundles)
    probe_.require("mcp_unavailable", lambda: serving["sdk"])
    unserved = (await probe_.reason(), await probe_.ready(), [b["ready"] for b in await probe_.detail()])
    serving["sdk"] = True
    served = (await probe_.reason(), await probe_.ready(), [b["ready"] for b in await probe_.detail()])
    both = ReadinessProbe(None, required=True)
    both.require("mcp_unavailable", lambda: False)
    assert unserved == ("mcp_unavailable", False, [False, False])  # the SDK serves every bundle
    assert served == (None, True, [True, False])
    assert await both.reason() == "ledger_unavailable"  # the ledger's code comes first
