"""One JSON audit line per call, and no secret anywhere a caller or operator can see."""

from __future__ import annotations

import dataclasses
import json
import stat
from pathlib import Path

import pytest
from runtime_support import ContextFactory, Scripted, UpstreamState, keyed_write, read_op, unkeyed_write

from anvil.air.model import Auth
from anvil.errors import ConfigError, LedgerError
from anvil.ledger.base import MAX_RESULT_BYTES
from anvil.ledger.registry import open_ledger
from anvil.runtime.audit import FileAuditSink, MemoryAuditSink, StreamAuditSink
from anvil.runtime.context import CallOptions
from anvil.runtime.executor import execute

pytestmark = pytest.mark.anyio

REFUND = {"payment_id": "pay_1", "amount": 2500}
RAW_KEY = "sk-RAW-caller-key-7f3a"
SUBJECT = "alice-subject-9c1e"
ISSUER = "https://idp.secret-issuer.example"
TOKEN = "tok-CREDENTIAL-5d2b"
SECRETS = (RAW_KEY, SUBJECT, ISSUER, TOKEN, "secret-ledger-dir")


async def test_every_call_writes_one_audit_line_with_the_documented_fields(
    make_context: ContextFactory, upstream: UpstreamState, audit: MemoryAuditSink
) -> None:
    await execute(read_op(), {"payment_id": "p"}, make_context())
    await execute(keyed_write(), REFUND, make_context(), CallOptions(idempotency_key="k-1", staged_for="x.y.z"))
    await execute(keyed_write(), REFUND, make_context(), CallOptions(dry_run=True, idempotency_key="k-2"))
    await execute(keyed_write(), REFUND, make_context())
    lines = audit.records()
    assert len(lines) == 4
    assert list(lines[0]) == [
        "trace_id",
        "operation",
        "principal",
        "outcome",
        "error_code",
        "status",
        "attempts",
        "duration_ms",
        "effect_class",
        "ledger",
        "ledger_id",
        "idempotency_key_forwarded",
        "staged_for",
        "dry_run",
    ]
    read, write, dry, refused = lines
    assert (read["outcome"], read["effect_class"], read["ledger_id"], read["principal"]) == (
        "success",
        "read",
        None,
        "anonymous",
    )
    assert write["idempotency_key_forwarded"] is True and write["staged_for"] == "x.y.z"
    assert write["ledger_id"] == "k-1"  # the caller's key itself (ADR-0030 §5)
    assert write["effect_class"] == "irreversible" and write["status"] == 200 and write["attempts"] == 1
    assert dry["outcome"] == "dry_run" and dry["dry_run"] is True and dry["idempotency_key_forwarded"] is False
    assert (refused["outcome"], refused["error_code"]) == ("error", "idempotency_required")


async def test_a_failing_audit_sink_never_fails_the_call(make_context: ContextFactory, upstream: UpstreamState) -> None:
    class Broken:
        def write(self, line: str) -> None:
            raise OSError("disk full")

    outcome = await execute(read_op(), {"payment_id": "p"}, make_context(audit=Broken()))
    assert outcome.kind == "success"


def test_the_file_sink_appends_lines_to_a_file_only_its_owner_can_read(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    sink = FileAuditSink(path)
    sink.write('{"a":1}')
    sink.write('{"a":2}')
    sink.close()
    assert path.read_text(encoding="utf-8") == '{"a":1}\n{"a":2}\n'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_stream_sink_writes_one_line_per_record(tmp_path: Path) -> None:
    path = tmp_path / "stream.jsonl"
    with path.open("w", encoding="utf-8") as stream:
        StreamAuditSink(stream).write('{"b":1}')
    assert path.read_text(encoding="utf-8") == '{"b":1}\n'


async def test_references_audit_lines_and_messages_never_hold_a_key_principal_credential_or_path(
    make_context: ContextFactory, upstream: UpstreamState, audit: MemoryAuditSink, tmp_path: Path
) -> None:
    folder = tmp_path / "secret-ledger-dir"
    folder.mkdir()
    uri = f"sqlite:///{folder}/ledger.db"
    ledger = open_ledger(uri)
    identity = {"iss": ISSUER, "sub": SUBJECT}
    keyed = CallOptions(idempotency_key=RAW_KEY, identity=identity)
    authed = dataclasses.replace(keyed_write(), auth=Auth(type="jwt_bearer"))
    context = make_context(ledger=ledger, env="prod", credentials={"ANVIL_DEFAULT_TOKEN": TOKEN})
    upstream.answer(
        Scripted(status=201, body={"id": "re_1"}), Scripted(status=200, body={"big": "x" * MAX_RESULT_BYTES})
    )
    outcomes = [
        await execute(authed, REFUND, context, keyed),  # success
        await execute(authed, REFUND, context, keyed),  # replay
        await execute(authed, {**REFUND, "amount": 1}, context, keyed),  # conflict
        await execute(authed, {**REFUND, "amount": 2}, context, CallOptions(idempotency_key="k2", identity=identity)),
        await execute(authed, {**REFUND, "amount": 2}, context, CallOptions(idempotency_key="k2", identity=identity)),
        await execute(authed, REFUND, context, CallOptions(idempotency_key=RAW_KEY, identity=identity, dry_run=True)),
        await execute(authed, REFUND, make_context(ledger=ledger, env="prod"), keyed),  # auth_required
        await execute(unkeyed_write(), REFUND, context, keyed),  # key without carrier
        await execute(authed, REFUND, context, CallOptions(idempotency_key=RAW_KEY + " x", identity=identity)),
        await execute(authed, REFUND, context, CallOptions(idempotency_key=RAW_KEY, identity={"iss": ISSUER})),
    ]
    await ledger.close()
    assert outcomes[0].kind == "success" and outcomes[4].code == "conflict"
    surfaces = [json.dumps(o.envelope.to_json()) for o in outcomes if o.envelope is not None]
    plans = [json.dumps(o.plan) for o in outcomes if o.plan is not None]
    assert plans and TOKEN not in plans[0]  # a plan shows the caller's own key, never a credential
    # The audit line names the caller's key in ledger_id (ADR-0030 §5: the id audits join on) and nowhere else.
    lines = [json.loads(line) for line in audit.lines]
    assert RAW_KEY in {line["ledger_id"] for line in lines}
    surfaces += [json.dumps({name: value for name, value in line.items() if name != "ledger_id"}) for line in lines]
    with pytest.raises(LedgerError) as unreachable:
        await open_ledger(f"sqlite:////nonexistent/{folder.name}/x.db").reserve("k", "f")
    assert unreachable.value.code == "ledger/unavailable"
    surfaces.append(f"{unreachable.value} {unreachable.value.hint}")
    for bad in (f"nosuch://{RAW_KEY}@{folder}", f"sqlite://db-host{folder}/x.db", f"sqlite:///{folder}/x.db?mode=ro"):
        with pytest.raises(ConfigError) as refused:
            open_ledger(bad)
        assert refused.value.code == "config/invalid"
        surfaces.append(f"{refused.value} {refused.value.hint}")
    assert len(surfaces) > 15
    leaks = [(secret, text) for text in surfaces for secret in SECRETS if secret in text]
    assert leaks == []
    assert any("ledger_reference" in text for text in surfaces)
