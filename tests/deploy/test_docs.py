"""The ``[docs-tested]`` example of ``docs/deploy.md`` (seed 001 §2 with ``anvil`` for the node command) runs as
written, and ``anvil deploy ledger`` opens no socket at all."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _docs_tested_block() -> str:
    page = (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(# \[docs-tested\]\n.*?)```", page, flags=re.S)
    assert len(blocks) == 1, "docs/deploy.md carries exactly one [docs-tested] block"
    return blocks[0]


def test_the_deploy_page_carries_the_seeds_hermetic_example() -> None:
    block = _docs_tested_block()
    for needle in (
        "anvil compile examples/payments/openapi.yaml",
        "--database-mode shared --ttl-seconds 3600 --json",
        '"anvil_ledger_input_digest": "[a-f0-9]{64}"',
        'report["cloudCallsMade"] is False',
    ):
        assert needle in block


def test_the_docs_tested_example_passes(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "TMPDIR": str(tmp_path)}
    script = "set -euo pipefail\n" + _docs_tested_block() + "echo DOCS-TESTED-OK\n"
    done = subprocess.run(
        [bash, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("DOCS-TESTED-OK")
    assert list(tmp_path.iterdir()) == []  # the example cleaned up after itself


_GUARD = r"""
import sys
events = []
def hook(event, args):
    if event.startswith("socket.") or event in ("urllib.Request", "http.client.connect"):
        events.append(event)
        raise RuntimeError("socket opened by anvil deploy ledger: " + event)
sys.addaudithook(hook)
from anvil.cli import main
code = main(sys.argv[1:])
print("SOCKET-EVENTS", events, file=sys.stderr)
sys.exit(code)
"""


@pytest.mark.parametrize("output", [[], ["--json"], ["--tfvars"]])
def test_deploy_ledger_opens_no_socket(payments_bundle: Path, output: list[str]) -> None:
    args = [
        "deploy", "ledger", str(payments_bundle), "--project", "acme-prod-1",
        "--database", "bank-shared-ledger", *output,
    ]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", _GUARD, *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "SOCKET-EVENTS []" in done.stderr
    assert done.stdout


def test_the_socket_guard_does_catch_a_socket() -> None:
    """The guard is real: a process that opens a socket under it fails."""
    probe = _GUARD.replace(
        "from anvil.cli import main\ncode = main(sys.argv[1:])", "import socket\nsocket.socket()\ncode = 0"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0 and "socket opened" in done.stderr
