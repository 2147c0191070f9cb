"""``anvil deploy``: the command's help names the ledger subcommand and its offline promise."""

from __future__ import annotations

import pytest

from anvil.cli import main


def test_deploy_help_mentions_ledger_durable_idempotency_and_no_cloud_call(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["deploy", "--help"])
    assert exited.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "ledger" in out and "durable idempotency" in out
    assert "does not call Cloud Run, Firestore" in out


def test_deploy_ledger_help_lists_every_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["deploy", "ledger", "--help"])
    out = capsys.readouterr().out
    for flag in ("--project", "--database", "--database-mode", "--location", "--ttl-seconds", "--json", "--tfvars"):
        assert flag in out


def test_deploy_without_a_subcommand_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deploy"]) == 2
    assert "anvil deploy ledger" in capsys.readouterr().err


def test_an_unknown_deploy_flag_is_a_coded_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deploy", "ledger", "x", "--frobnicate"]) == 2
    assert "error[cli/usage]" in capsys.readouterr().err
