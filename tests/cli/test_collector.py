"""The cyclic collector is paused while ``anvil serve`` starts, and runs again (start-up frozen) once it serves."""

from __future__ import annotations

import gc
import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from anvil.cli import main
from anvil.cli.compile import compile_bundle

REPO = Path(__file__).resolve().parents[2]

#: ``anvil serve --http`` in this interpreter; a thread waits for its first ``tools/list`` answer, notes
#: the collector's state, then stops the server with SIGTERM.
SERVE = textwrap.dedent(
    """
    import gc, json, os, signal, socket, sys, threading, time

    port = int(sys.argv[2])
    seen = {}

    def listing():
        body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
        head = (
            f"POST /mcp HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\nContent-Type: application/json\\r\\n"
            f"Accept: application/json, text/event-stream\\r\\nContent-Length: {len(body)}\\r\\n\\r\\n"
        ).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(head + body)
            return conn.recv(65536).split(b"\\r\\n", 1)[0]

    def watch():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                seen["status"] = listing().decode()
                break
            except OSError:
                time.sleep(0.01)
        seen["enabled"] = gc.isenabled()
        seen["frozen"] = gc.get_freeze_count()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True).start()
    from anvil.cli import main

    seen["exit"] = main(["serve", sys.argv[1], "--http", f"127.0.0.1:{port}"])
    print(json.dumps(seen))
    """
)


@pytest.fixture(scope="module")
def payments(tmp_path_factory: pytest.TempPathFactory) -> Path:
    example = REPO / "examples" / "payments"
    out = tmp_path_factory.mktemp("collector") / "payments"
    outcome = compile_bundle(
        example / "openapi.yaml", out=out, manifest=example / "anvil.yaml", service_id="payments", root=REPO
    )
    assert outcome.bundle_hash is not None
    return out


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_serve_runs_the_collector_again_once_it_serves_with_what_start_up_made_frozen(
    payments: Path, tmp_path: Path
) -> None:
    from anvil.bundle.read import read_bundle
    from anvil.runtime.credentials import credential_profile, expected_env

    environ = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(REPO / "src"),
        "ANVIL_ENV": "prod",
        "ANVIL_ALLOWED_HOSTS": "127.0.0.1",
        "ANVIL_BASE_URL": "http://127.0.0.1:9",
        "ANVIL_LEDGER": f"sqlite:///{tmp_path / 'ledger.db'}",
    }
    for op in read_bundle(payments).operations:
        for name in expected_env(op.auth, credential_profile("default", op.auth)):
            environ[name] = "token-for-the-test"
    shown = subprocess.run(
        [sys.executable, "-c", SERVE, str(payments), str(_free_port())],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    seen: dict[str, Any] = json.loads(shown.stdout.strip().splitlines()[-1])
    assert seen["status"] == "HTTP/1.1 200 OK"
    assert seen["enabled"] is True
    assert seen["frozen"] > 10_000  # the modules, classes and model start-up made: paused, then frozen
    assert seen["exit"] == 0


def test_a_command_that_fails_to_start_leaves_the_collector_running(tmp_path: Path) -> None:
    assert gc.isenabled()
    assert main(["serve", str(tmp_path / "nothing")]) == 3
    assert gc.isenabled()
    assert main(["inspect", str(tmp_path / "nothing")]) == 3
    assert gc.isenabled()
