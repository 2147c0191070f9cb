"""``anvil ledger init|inspect|resolve``: the operator's reconciliation of a quarantined row, as a reviewed tool."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import anyio
import pytest

from anvil.cli import main
from anvil.ledger.base import LedgerOptions, ReserveContext
from anvil.ledger.registry import open_ledger
from anvil.runtime.keys import reservation_key


def _quarantine(uri: str, key: str = "order-42") -> str:
    """Reserve ``key`` in a ledger that then goes away, as a process killed mid-call would."""

    async def reserve() -> str:
        ledger = open_ledger(uri)
        context = ReserveContext(operation_id="payments.refunds.create", trace_id="trace_1")
        found = await ledger.reserve(key, "f" * 64, context)
        await ledger.close()
        assert found.reference is not None
        return found.reference

    return anyio.run(reserve)


def _outcome(uri: str, key: str, fingerprint: str = "f" * 64) -> tuple[str, object]:
    async def reserve() -> tuple[str, object]:
        ledger = open_ledger(uri, options=LedgerOptions())
        found = await ledger.reserve(key, fingerprint)
        await ledger.close()
        return found.outcome, found.result

    return anyio.run(reserve)


def _started_at(uri: str, reference: str) -> float:
    async def read() -> float:
        ledger = open_ledger(uri)
        row = await ledger.inspect(reference)
        await ledger.close()
        assert row is not None and row.started_at is not None
        return row.started_at

    return anyio.run(read)


@pytest.fixture
def uri(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/ledger.db?namespace=payments"


def test_init_creates_the_ledger_file_owner_only_and_is_idempotent(
    uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "init", uri]) == 0
    assert main(["ledger", "init", uri]) == 0
    assert "sqlite/anvil_idempotency_df384ae97c77ad30" in capsys.readouterr().out
    assert stat.S_IMODE((tmp_path / "ledger.db").stat().st_mode) == 0o600


def test_inspect_prints_the_reservation_but_never_the_result_unless_asked(
    uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = _quarantine(uri)
    assert main(["ledger", "inspect", reference, "--ledger", uri, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["status"] == "in_progress" and shown["fingerprint"] == "f" * 64
    assert (shown["operation_id"], shown["trace_id"], shown["response_status"]) == (
        "payments.refunds.create",
        "trace_1",
        None,
    )
    assert shown["started_at"].endswith("Z") and "result" not in shown
    assert shown["derived_key"] == reservation_key("f" * 64, _started_at(uri, reference))  # what went upstream
    assert main(["ledger", "inspect", reference, "--ledger", uri, "--show-result"]) == 0
    assert "result: null" in capsys.readouterr().out


def test_resolve_not_committed_frees_the_key_and_writes_an_audit_line(
    uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    audit = tmp_path / "audit.jsonl"
    monkeypatch.setenv("ANVIL_AUDIT_FILE", str(audit))
    reference = _quarantine(uri)
    assert _outcome(uri, "order-42")[0] == "in_progress"
    assert main(["ledger", "resolve", reference, "--ledger", uri, "--fingerprint", "f" * 64, "--not-committed"]) == 0
    assert _outcome(uri, "order-42")[0] == "reserved"
    [line] = [json.loads(text) for text in audit.read_text(encoding="utf-8").splitlines()]
    assert (line["event"], line["resolution"], line["ledger_reference"]) == (
        "ledger_resolve",
        "not_committed",
        reference,
    )
    assert line["operation"] == "payments.refunds.create" and stat.S_IMODE(audit.stat().st_mode) == 0o600
    assert main(["ledger", "inspect", reference, "--ledger", uri]) == 0


def test_resolve_committed_stores_the_given_answer_for_retries_to_replay(uri: str, tmp_path: Path) -> None:
    reference = _quarantine(uri)
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"id": "re_1", "amount": 2500}), encoding="utf-8")
    argv = ["ledger", "resolve", reference, "--ledger", uri, "--fingerprint", "f" * 64, "--committed"]
    assert main([*argv, "--status", "201", "--result-file", str(answer)]) == 0
    assert _outcome(uri, "order-42") == ("replay", {"id": "re_1", "amount": 2500})
    assert main([*argv, "--status", "201", "--result-file", str(answer)]) == 3  # no longer in progress


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        (["--not-committed"], "ledger/fingerprint_mismatch"),
        (["--committed", "--status", "201", "--result-file", "{answer}"], "ledger/fingerprint_mismatch"),
    ],
)
def test_resolve_refuses_a_row_with_another_fingerprint_and_changes_nothing(
    uri: str, tmp_path: Path, extra: list[str], code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    reference = _quarantine(uri)
    answer = tmp_path / "answer.json"
    answer.write_text("{}", encoding="utf-8")
    argv = ["ledger", "resolve", reference, "--ledger", uri, "--fingerprint", "0" * 64]
    assert main([*argv, *(part.format(answer=answer) for part in extra)]) == 3
    assert f"error[{code}]" in capsys.readouterr().err
    assert _outcome(uri, "order-42")[0] == "in_progress"


def test_a_malformed_or_foreign_reference_is_refused_before_the_store_is_touched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"sqlite:///{tmp_path}/never.db?namespace=payments"
    foreign = "sqlite/anvil_idempotency_1c168adb00d208e4/" + "a" * 64  # the `orders` namespace
    assert main(["ledger", "inspect", "sqlite/x/not-hex", "--ledger", uri]) == 3
    assert "error[ledger/reference_invalid]" in capsys.readouterr().err
    argv = ["ledger", "resolve", foreign, "--ledger", uri, "--fingerprint", "f" * 64, "--not-committed"]
    assert main(argv) == 3
    assert "error[ledger/wrong_collection]" in capsys.readouterr().err
    assert not (tmp_path / "never.db").exists()


def test_resolve_without_proof_of_the_outcome_is_a_usage_error(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    reference = _quarantine(uri)
    assert main(["ledger", "resolve", reference, "--ledger", uri, "--fingerprint", "f" * 64]) == 2
    assert main(["ledger", "resolve", reference, "--ledger", uri, "--not-committed"]) == 2
    assert main(["ledger", "resolve", reference, "--ledger", uri, "--fingerprint", "f" * 64, "--committed"]) == 2
    assert main(["ledger"]) == 2
    assert capsys.readouterr().err.count("error[cli/usage]") == 4
    assert _outcome(uri, "order-42")[0] == "in_progress"


@pytest.mark.parametrize("status", ["500", "199", "300", "-200"])
def test_resolve_committed_with_a_status_that_is_not_2xx_is_a_usage_error_and_changes_nothing(
    uri: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], status: str
) -> None:
    reference = _quarantine(uri)
    answer = tmp_path / "answer.json"
    answer.write_text('{"id": "re_1"}', encoding="utf-8")
    argv = ["ledger", "resolve", reference, "--ledger", uri, "--fingerprint", "f" * 64, "--committed"]
    assert main([*argv, "--status", status, "--result-file", str(answer)]) == 2
    err = capsys.readouterr().err
    assert f"error[cli/usage]: --committed needs the upstream's 2xx status, not {status}." in err
    assert _outcome(uri, "order-42")[0] == "in_progress"


def test_inspect_of_a_missing_row_exits_4(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ledger", "init", uri]) == 0
    reference = "sqlite/anvil_idempotency_df384ae97c77ad30/" + "b" * 64
    assert main(["ledger", "inspect", reference, "--ledger", uri]) == 4


# --- the gateway's own URI: the table is the one the gateway uses ----------------------------------


def _gateway_reserve(uri: str, namespace: str = "payments") -> str:
    """Reserve a key as `anvil serve` does: the URI as given, the namespace from the bundle it serves."""

    async def reserve() -> str:
        ledger = open_ledger(uri, options=LedgerOptions(namespace=namespace))
        await ledger.initialize()
        found = await ledger.reserve("order-7", "f" * 64)
        await ledger.close()
        assert found.reference is not None
        return found.reference

    return anyio.run(reserve)


def test_inspect_and_resolve_with_the_gateways_own_uri_use_the_table_the_reference_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"sqlite:///{tmp_path}/ledger.db"  # exactly ANVIL_LEDGER: no namespace, the bundle gives it
    reference = _gateway_reserve(uri)
    assert reference.startswith("sqlite/anvil_idempotency_df384ae97c77ad30/")
    assert main(["ledger", "inspect", reference, "--ledger", uri, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "in_progress"
    assert main(["ledger", "resolve", reference, "--ledger", uri, "--fingerprint", "f" * 64, "--not-committed"]) == 0
    assert _outcome(f"{uri}?namespace=payments", "order-7")[0] == "reserved"  # freed in the gateway's table


def test_bundle_gives_init_inspect_and_resolve_the_namespace_the_gateway_derives_its_table_from(
    payments: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"sqlite:///{tmp_path}/ledger.db"
    assert main(["ledger", "init", uri, "--bundle", str(payments)]) == 0
    out = capsys.readouterr().out
    assert (
        "created a new ledger: sqlite host" in out and "ledger ready: sqlite/anvil_idempotency_df384ae97c77ad30" in out
    )
    assert main(["ledger", "init", uri, "--bundle", str(payments.parent)]) == 0  # a fleet folder, as serve takes it
    assert "created" not in capsys.readouterr().out
    reference = _gateway_reserve(uri)
    assert main(["ledger", "inspect", reference, "--ledger", uri, "--bundle", str(payments)]) == 0
    argv = ["ledger", "resolve", reference, "--ledger", uri, "--bundle", str(payments), "--fingerprint", "f" * 64]
    assert main([*argv, "--not-committed"]) == 0


def test_init_with_no_namespace_from_the_uri_or_a_bundle_is_refused_and_says_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "init", f"sqlite:///{tmp_path}/ledger.db"]) == 2
    err = capsys.readouterr().err
    assert "error[cli/usage]" in err and "--bundle DIR" in err and "?namespace=NS" in err
    assert not (tmp_path / "ledger.db").exists()


def test_a_reference_to_another_table_than_the_bundles_is_refused_with_a_hint_that_says_the_fix(
    payments: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"sqlite:///{tmp_path}/never.db"
    orders = "sqlite/anvil_idempotency_1c168adb00d208e4/" + "a" * 64  # the `orders` namespace
    assert main(["ledger", "inspect", orders, "--ledger", uri, "--bundle", str(payments)]) == 3
    err = capsys.readouterr().err
    assert "error[ledger/wrong_collection]" in err and "anvil_idempotency_df384ae97c77ad30" in err
    assert "hint:" in err and "--bundle DIR" in err and "ANVIL_LEDGER" in err
    for foreign in ("sqlite/users/" + "a" * 64, "postgresql/anvil_idempotency/" + "a" * 64):
        assert main(["ledger", "inspect", foreign, "--ledger", uri]) == 3  # never a table no namespace derives
        assert "error[ledger/wrong_collection]" in capsys.readouterr().err
    assert not (tmp_path / "never.db").exists()
