"""The conformance lane's long-lived `anvil run` worker: the CLI's own entry point, call after call."""

from __future__ import annotations

import io
import json
from pathlib import Path

from anvil.cli.run_worker import main


def _answers(lines: list[object]) -> list[dict[str, object]]:
    source = io.StringIO("".join((json.dumps(line) if not isinstance(line, str) else line) + "\n" for line in lines))
    channel = io.StringIO()
    assert main(source, channel) == 0
    return [json.loads(line) for line in channel.getvalue().splitlines()]


def test_each_request_answers_the_exit_code_and_output_anvil_run_gives(payments: Path) -> None:
    listing, refused = _answers(
        [
            {"argv": ["run", str(payments), "--help"]},
            {"argv": ["run", str(payments), "refunds", "create", "--json", "--base-url", "http://127.0.0.1:9"]},
        ]
    )
    assert listing["code"] == 0 and "refunds create" in str(listing["stdout"])
    assert refused["code"] != 0 and "error" in str(refused["stderr"])


def test_anything_but_a_run_request_is_refused_and_the_worker_carries_on(payments: Path) -> None:
    shell, garbage, listing = _answers(
        [{"argv": ["compile", "x"]}, "not json", {"argv": ["run", str(payments), "--help"]}]
    )
    assert shell["code"] == 2 and garbage["code"] == 2
    assert listing["code"] == 0
