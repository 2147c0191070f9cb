"""The flags selftest, conformance and simulate share: a subset, a time cap, a start-up bound, progress
lines on stderr, and a partial record marked incomplete when stopped (never fresh for `anvil status`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from anvil.cli import main
from anvil.proof.records import judge_record

RECORDS = {
    "selftest": "selftest.report.json",
    "conformance": "conformance.report.json",
    "simulate": "simulation.report.json",
}


def _env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}


@pytest.mark.parametrize("lane", ["selftest", "conformance", "simulate"])
def test_a_subset_run_prints_a_progress_line_per_operation_and_writes_a_record_marked_incomplete(
    payments: Path, lane: str, capsys: pytest.CaptureFixture[str]
) -> None:
    main([lane, str(payments), "--operations", "payments.customers.*"])
    err = capsys.readouterr().err
    assert f"[1/1] {lane} payments.customers.get" in err
    record = json.loads((payments / RECORDS[lane]).read_text(encoding="utf-8"))
    assert record["incomplete"]["reason"].startswith("--operations payments.customers.* selected 1 of 4")
    assert judge_record(payments, lane).state == "incomplete"


def test_a_time_cap_stops_the_lane_and_leaves_a_partial_record(
    payments: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["conformance", str(payments), "--time-cap", "0.000001", "--quiet"])
    assert "[1/" not in capsys.readouterr().err
    record = json.loads((payments / RECORDS["conformance"]).read_text(encoding="utf-8"))
    assert record["incomplete"]["reason"] == "stopped (the time cap of 1e-06 s was reached) after 0 of 4 operations"
    assert judge_record(payments, "conformance").state == "incomplete"


def test_sigint_stops_selftest_after_the_operation_in_flight_and_it_writes_what_it_has(payments: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "anvil", "selftest", str(payments)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    ) as child:
        assert child.stderr is not None
        for line in child.stderr:
            if line.startswith("[1/4] selftest"):
                child.send_signal(signal.SIGINT)
                break
        child.stderr.read()
        assert child.wait(timeout=120) in (0, 1)
    record = json.loads((payments / RECORDS["selftest"]).read_text(encoding="utf-8"))
    assert "stopped (SIGINT received) after" in record["incomplete"]["reason"]
    assert record["incomplete"]["operationsRun"] < 4
    assert judge_record(payments, "selftest").state == "incomplete"


@pytest.mark.parametrize("flag", ["--time-cap", "--startup-timeout"])
def test_a_bad_time_is_a_usage_error(payments: Path, flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", str(payments), flag, "soon"]) == 2
    assert "error[cli/usage]" in capsys.readouterr().err
