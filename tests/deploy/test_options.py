"""Every flag refusal of original-ledger §4.1 and the mode-consistency refusals, table-driven, through the CLI.

Each refusal exits 1 with its registered code on stderr and nothing on stdout. Flag-format errors win over
a nonexistent bundle path (they run before the filesystem is touched); TTL errors win over incomplete
dedicated flags; mode consistency applies to the none variant too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.cli import main
from anvil.deploy.options import LedgerFlags, check_flags, parse_ttl

FORMAT_ERRORS = [
    (["--json", "--tfvars"], "deploy/output_conflict"),
    (["--database-mode", "spanner"], "deploy/invalid_database_mode"),
    (["--project", "UPPER_CASE_NOT_ALLOWED"], "deploy/invalid_project"),
    (["--project", "ab1"], "deploy/invalid_project"),
    (["--project", "acme-prod-1-"], "deploy/invalid_project"),
    (["--project", "acme-prod-1\n"], "deploy/invalid_project"),
    (["--database", "x"], "deploy/invalid_database"),
    (["--database", "Bank_Ledger"], "deploy/invalid_database"),
    (["--location", "US_EAST"], "deploy/invalid_location"),
    (["--location", "n"], "deploy/invalid_location"),
]

CONSISTENCY_ERRORS = [
    (
        ["--database-mode", "dedicated", "--database", "(default)", "--location", "nam5"],
        "deploy/dedicated_default_database",
    ),
    (["--database-mode", "dedicated", "--location", "nam5"], "deploy/dedicated_requires_database"),
    (["--database-mode", "dedicated", "--database", "payments-ledger"], "deploy/dedicated_requires_location"),
    (["--database", "bank-shared-ledger", "--location", "nam5"], "deploy/shared_location"),
    (["--database-mode", "shared", "--location", "nam5"], "deploy/shared_location"),
    (["--ttl-seconds", "soon"], "deploy/invalid_ttl"),
    (["--ttl-seconds", "-60"], "deploy/invalid_ttl"),
    (["--ttl-seconds", "59"], "deploy/invalid_ttl"),
    (["--ttl-seconds", "31536001"], "deploy/invalid_ttl"),
    (["--ttl-seconds", "60.5"], "deploy/invalid_ttl"),
    (["--ttl-seconds", "59", "--database-mode", "dedicated"], "deploy/invalid_ttl"),
]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["deploy", "ledger", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize(("flags", "code"), FORMAT_ERRORS)
def test_a_malformed_flag_is_refused_before_the_filesystem_is_touched(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flags: list[str], code: str
) -> None:
    status, out, err = _run(capsys, str(tmp_path / "does-not-exist"), *flags)
    assert (status, out) == (1, "")
    assert err.startswith(f"error[{code}]")


def test_valid_flags_pass_the_format_checks_and_then_a_missing_bundle_is_not_found(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for flags in (
        ["--database", "(default)"],
        ["--project", "acme-prod-1", "--database", "trust-ledger", "--location", "nam5"],
    ):
        status, out, err = _run(capsys, str(tmp_path / "does-not-exist"), *flags)
        assert (status, out) == (1, "")
        assert err.startswith(f"error[{'deploy/bundle_not_found'}]") and "ENOENT" in err


@pytest.mark.parametrize(("flags", "code"), CONSISTENCY_ERRORS)
@pytest.mark.parametrize("variant", ["ledger", "none"])
def test_an_inconsistent_mode_or_retention_is_refused_for_every_backend(
    capsys: pytest.CaptureFixture[str],
    payments_bundle: Path,
    none_bundle: Path,
    variant: str,
    flags: list[str],
    code: str,
) -> None:
    bundle = payments_bundle if variant == "ledger" else none_bundle
    status, out, err = _run(capsys, str(bundle), *flags)
    assert (status, out) == (1, "")
    assert err.startswith(f"error[{code}]")


def test_a_stale_bundle_reports_staleness_even_when_the_flags_are_also_inconsistent(
    capsys: pytest.CaptureFixture[str], payments_bundle: Path
) -> None:
    main_tf = payments_bundle / "deploy/terraform/main.tf"
    main_tf.write_bytes(main_tf.read_bytes().replace(b"/payments", b"/elsewhere", 1))
    status, out, err = _run(capsys, str(payments_bundle), "--database-mode", "dedicated", "--ttl-seconds", "1")
    assert (status, out) == (1, "")
    assert err.startswith(f"error[{'deploy/contract_stale'}]")


def test_tfvars_for_a_firestore_bundle_needs_both_coordinates(
    capsys: pytest.CaptureFixture[str], payments_bundle: Path
) -> None:
    status, out, err = _run(capsys, str(payments_bundle), "--tfvars", "--project", "acme-prod-1")
    assert (status, out) == (1, "")
    assert err.startswith(f"error[{'deploy/tfvars_unresolved'}]")


@pytest.mark.parametrize(("text", "seconds"), [(None, 604800), ("60", 60), ("3600", 3600), ("31536000", 31536000)])
def test_the_retention_bounds_are_inclusive_and_the_default_is_a_week(text: str | None, seconds: int) -> None:
    assert parse_ttl(LedgerFlags(ttl_seconds=text)) == seconds


def test_check_flags_accepts_the_documented_coordinates() -> None:
    check_flags(LedgerFlags(project="acme-prod-1", database="(default)", database_mode="shared"))
    check_flags(LedgerFlags(project="acme-prod-1", database="trust-ledger", database_mode="dedicated", location="nam5"))
