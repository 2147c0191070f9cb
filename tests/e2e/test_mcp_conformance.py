"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``) against a real ``anvil serve``.

The suite's server scenarios run against the payments bundle served over Streamable HTTP (auth none, a
SQLite ledger, the payments mock as upstream). ``fixtures/mcp-conformance-expected-failures.yml`` lists
the scenarios that need the suite's own reference server (its tools, prompts and resources), each with
the reason; the suite fails on any other failure and on a listed scenario that passes, so the list is
exact. ``.ci/services.sh start`` installs the suite and the Node.js it needs (22 or later) and exports
``ANVIL_TEST_MCP_CONFORMANCE`` (the suite's entry) and ``ANVIL_TEST_NODE22`` (that node); without them
the test skips with a reason, and fails under ``ANVIL_TEST_REQUIRE_SERVICES=1``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import missing
from tests.e2e.support import GatewayProcess

EXPECTED_FAILURES = Path(__file__).resolve().parent / "fixtures" / "mcp-conformance-expected-failures.yml"
#: The whole suite against one gateway: about 30 scenarios of a second or two each.
SUITE_TIMEOUT_S = 300.0


def _installed(variable: str) -> Path:
    value = os.environ.get(variable)
    if not value:
        missing(f'{variable} is not set; install the MCP conformance suite with eval "$(bash .ci/services.sh start)"')
    path = Path(str(value))
    if not path.is_file():
        missing(f"{variable} names no file: {path}")
    return path


def test_the_official_conformance_suite_passes_every_scenario_a_gateway_can_serve(
    single_gateways: dict[str, GatewayProcess], tmp_path: Path
) -> None:
    suite, node = _installed("ANVIL_TEST_MCP_CONFORMANCE"), _installed("ANVIL_TEST_NODE22")
    url = single_gateways["payments"].url
    argv = [str(node), str(suite), "server", "--url", url, "--expected-failures", str(EXPECTED_FAILURES)]
    argv += ["-o", str(tmp_path / "results")]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "NO_COLOR": "1", "CI": "1"}
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=SUITE_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL, check=False
    )
    summary = done.stdout[done.stdout.rfind("=== SUMMARY ===") :]
    assert done.returncode == 0, summary + done.stderr[-2000:]
    for scenario in ("server-initialize", "ping", "tools-list", "resources-list", "dns-rebinding-protection"):
        assert f"✓ {scenario}:" in summary, summary
