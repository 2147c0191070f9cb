"""The CLI's command names are a public contract: each has help text and is documented in the README."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from anvil import __version__
from anvil.cli import BROKEN_PIPE_EXIT, COMMANDS, main

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def test_the_commands_are_the_pipeline_the_deploy_evidence_and_the_proof_lanes() -> None:
    assert sorted(COMMANDS) == [
        "approve",
        "certify",
        "compile",
        "conformance",
        "deploy",
        "init",
        "inspect",
        "ledger",
        "mock",
        "run",
        "selftest",
        "serve",
        "simulate",
        "status",
    ]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_text_and_is_documented_in_the_readme(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([name, "--help"])
    assert exited.value.code == 0
    assert COMMANDS[name][1] in capsys.readouterr().out
    assert f"anvil {name}" in README


def test_the_module_entry_point_prints_the_version() -> None:
    done = subprocess.run([sys.executable, "-m", "anvil", "--version"], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, f"anvil {__version__}")


def test_an_unknown_command_is_a_coded_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert "error[cli/usage]" in capsys.readouterr().err


def test_no_command_prints_the_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "status"),
    [
        (["--version"], BROKEN_PIPE_EXIT),
        (["status", "{bundle}"], BROKEN_PIPE_EXIT),
        (["status", "{bundle}", "--json"], BROKEN_PIPE_EXIT),
        (["certify", "{bundle}"], BROKEN_PIPE_EXIT),
        (["status", "--help"], 0),  # argparse itself ignores a closed stream for help text
    ],
)
def test_a_closed_stdout_ends_the_command_quietly_with_the_sigpipe_status(
    args: list[str], status: int, payments: Path, tmp_path: Path
) -> None:
    bundle = tmp_path / "payments"
    shutil.copytree(payments, bundle)
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the command writes a byte, as `| head -0` would leave it
    try:
        done = subprocess.run(
            [sys.executable, "-m", "anvil", *(arg.format(bundle=bundle) for arg in args)],
            stdout=write,
            stderr=subprocess.PIPE,
            check=False,
            timeout=120,
        )
    finally:
        os.close(write)
    assert BROKEN_PIPE_EXIT == 141
    assert done.returncode == status
    assert done.stderr == b""  # no error[internal_error], no "Exception ignored" from the exit flush
