"""The end-to-end stage: both examples compiled into one workspace, their mocks, and one fleet gateway process.

Everything heavy is session-scoped (one compile, one pair of mocks, one gateway process for the whole
run); the ``fleet`` fixture hands each test a handle with fresh mock memories, its own audit-file offset
and tokens minted for it. The gateway runs as ``python -m anvil serve WORKSPACE --http 127.0.0.1:PORT``
with JWT inbound auth (a ``file:`` JWKS), a SQLite ledger and an audit file in the session's temporary
folder, and both bundles' upstreams pointed at the loopback mocks. ``search_fleet`` is the same fleet served
``--disclosure search`` by a second gateway process (its own keys, ledger and audit file) on the same mocks.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.support import (
    GatewayProcess,
    ThreadedMock,
    YardKeys,
    compile_workspace,
    load_mock,
    token_variable,
)

UPSTREAM_TOKEN = "e2e-upstream-token"
#: Everything on both connectors, writes confirmed by the grant (the caller still sends ``confirm``).
WRITE_GRANTS = (
    {"connector": "github", "operations": ["*"], "mode": "write", "confirm": "allow"},
    {"connector": "payments", "operations": ["*"], "mode": "write", "confirm": "allow"},
)
#: How many free ports the session tries before giving up on starting the gateway.
PORT_ATTEMPTS = 3
#: The examples, each also served alone (``single_gateways``).
SERVICES = ("payments", "github")
#: Reads on github only.
READ_GRANTS = ({"connector": "github", "operations": ["*"], "mode": "read"},)


@dataclass
class Fleet:
    """One test's view of the running stack."""

    process: GatewayProcess
    keys: YardKeys
    github: Any
    payments: Any
    audit_path: Path
    audit_offset: int

    @property
    def url(self) -> str:
        """The ``/mcp`` endpoint."""
        return self.process.url

    @property
    def base(self) -> str:
        """The listener's origin, for ``/call/<tool>``, ``/healthz``..."""
        return self.process.base

    def token(self, grants: tuple[dict[str, Any], ...] = WRITE_GRANTS, **claims: Any) -> str:
        """A fresh turn token carrying ``grants``."""
        return self.keys.mint(grants, **claims)

    def auth(self, grants: tuple[dict[str, Any], ...] = WRITE_GRANTS) -> dict[str, str]:
        """An ``Authorization`` header for a token carrying ``grants``."""
        return {"Authorization": f"Bearer {self.token(grants)}"}

    def audit(self) -> list[dict[str, Any]]:
        """The audit lines written since this test began."""
        if not self.audit_path.exists():
            return []
        with self.audit_path.open("rb") as handle:
            handle.seek(self.audit_offset)
            return [json.loads(line) for line in handle.read().decode("utf-8").splitlines() if line.strip()]

    def github_requests(self, method: str | None = None, suffix: str = "") -> list[dict[str, Any]]:
        """Requests the github mock received since this test began (optionally one method and path end)."""
        return [
            r for r in self.github.requests if (method is None or r["method"] == method) and r["path"].endswith(suffix)
        ]


def _free_port() -> int:
    # The audience names the gateway's own /mcp URL, so the port is chosen before the gateway starts.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def e2e_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("e2e")


@pytest.fixture(scope="session")
def bundles(e2e_dir: Path) -> dict[str, Path]:
    return compile_workspace(e2e_dir / "workspace")


@pytest.fixture(scope="session")
def github_mock() -> Iterator[tuple[ThreadedMock, Any]]:
    app, state = load_mock("github-mini").create_app(token=UPSTREAM_TOKEN)
    mock = ThreadedMock(app, "github-mini").start()
    try:
        yield mock, state
    finally:
        mock.stop()


@pytest.fixture(scope="session")
def payments_mock() -> Iterator[tuple[ThreadedMock, Any]]:
    module = load_mock("payments")
    state = module.State()
    mock = ThreadedMock(module.create_app(state), "payments").start()
    try:
        yield mock, state
    finally:
        mock.stop()


def local_gateway_env(folder: Path) -> dict[str, str]:
    """A gateway's environment with no inherited ``ANVIL_*``: dev, loopback egress only, and a SQLite ledger
    and an audit file in ``folder``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
    env.update(
        {
            "ANVIL_ENV": "dev",
            "ANVIL_ALLOWED_HOSTS": "127.0.0.1",
            "ANVIL_LEDGER": f"sqlite:///{folder / 'ledger.db'}",
            "ANVIL_AUDIT_FILE": str(folder / "audit.jsonl"),
        }
    )
    return env


def fleet_env(bundles: dict[str, Path], urls: dict[str, str], keys: YardKeys, folder: Path) -> dict[str, str]:
    """:func:`local_gateway_env` with JWT inbound auth and the per-bundle upstreams and their tokens."""
    env = local_gateway_env(folder)
    env.update(
        {
            "ANVIL_INBOUND_AUTH_MODE": "jwt",
            "ANVIL_INBOUND_ISSUER": keys.issuer,
            "ANVIL_INBOUND_AUDIENCE": keys.audience,
            "ANVIL_INBOUND_JWKS_URI": keys.jwks_uri,
        }
    )
    for service, bundle in bundles.items():
        env[f"ANVIL_BASE_URL_{service.upper()}"] = urls[service]
        env[token_variable(bundle)] = UPSTREAM_TOKEN
    return env


def start_fleet_gateway(
    folder: Path, bundles: dict[str, Path], urls: dict[str, str], extra: tuple[str, ...] = ()
) -> tuple[GatewayProcess, YardKeys]:
    """A fleet gateway over ``bundles`` on a free port, its JWKS, ledger, audit file and log in ``folder``.

    Raises:
        RuntimeError: it did not start (after :data:`PORT_ATTEMPTS` ports when another process took one).
    """
    keys = YardKeys(folder)
    for attempt in range(PORT_ATTEMPTS):
        port = _free_port()
        keys.audience = f"http://127.0.0.1:{port}/mcp"
        env = fleet_env(bundles, urls, keys, folder)
        args = [str(bundles["github"].parent), "--http", f"127.0.0.1:{port}", *extra]
        process = GatewayProcess(args, env=env, log=folder / "gateway.log")
        try:
            return process.start(), keys
        except RuntimeError:
            # Another process may have taken the port between choosing it and the gateway binding it.
            if attempt + 1 == PORT_ATTEMPTS or "Cannot listen" not in process.stderr():
                raise
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


def _mock_urls(github_mock: tuple[ThreadedMock, Any], payments_mock: tuple[ThreadedMock, Any]) -> dict[str, str]:
    return {"github": github_mock[0].url, "payments": payments_mock[0].url}


@pytest.fixture(scope="session")
def gateway_process(
    e2e_dir: Path,
    bundles: dict[str, Path],
    github_mock: tuple[ThreadedMock, Any],
    payments_mock: tuple[ThreadedMock, Any],
) -> Iterator[tuple[GatewayProcess, YardKeys]]:
    process, keys = start_fleet_gateway(e2e_dir, bundles, _mock_urls(github_mock, payments_mock))
    try:
        yield process, keys
    finally:
        process.stop()


@pytest.fixture(scope="session")
def search_gateway_process(
    e2e_dir: Path,
    bundles: dict[str, Path],
    github_mock: tuple[ThreadedMock, Any],
    payments_mock: tuple[ThreadedMock, Any],
) -> Iterator[tuple[GatewayProcess, YardKeys]]:
    """The same fleet served ``--disclosure search`` (three meta-tools at rest), with its own keys, ledger
    and audit file in ``e2e_dir/search``, on the same mocks."""
    folder = e2e_dir / "search"
    folder.mkdir(exist_ok=True)
    urls = _mock_urls(github_mock, payments_mock)
    process, keys = start_fleet_gateway(folder, bundles, urls, ("--disclosure", "search"))
    try:
        yield process, keys
    finally:
        process.stop()


def _fleet_view(process: GatewayProcess, keys: YardKeys, github: Any, payments: Any, audit: Path) -> Fleet:
    assert process.url, "the gateway is not running"
    return Fleet(
        process=process,
        keys=keys,
        github=github,
        payments=payments,
        audit_path=audit,
        audit_offset=audit.stat().st_size if audit.exists() else 0,
    )


def _fresh_mocks(github_mock: tuple[ThreadedMock, Any], payments_mock: tuple[ThreadedMock, Any]) -> tuple[Any, Any]:
    """Both mocks' states, back at their seed state."""
    github_state, payments_state = github_mock[1], payments_mock[1]
    github_state.__dict__.update(load_mock("github-mini").State().__dict__)
    payments_state.reset()
    return github_state, payments_state


@pytest.fixture
def fleet(
    gateway_process: tuple[GatewayProcess, YardKeys],
    github_mock: tuple[ThreadedMock, Any],
    payments_mock: tuple[ThreadedMock, Any],
    e2e_dir: Path,
) -> Fleet:
    """The running stack with both mocks back at their seed state and the audit read from here on."""
    states = _fresh_mocks(github_mock, payments_mock)
    return _fleet_view(*gateway_process, *states, e2e_dir / "audit.jsonl")


@pytest.fixture
def search_fleet(
    search_gateway_process: tuple[GatewayProcess, YardKeys],
    github_mock: tuple[ThreadedMock, Any],
    payments_mock: tuple[ThreadedMock, Any],
    e2e_dir: Path,
) -> Fleet:
    """The ``--disclosure search`` gateway, both mocks back at their seed state, its audit read from here on."""
    states = _fresh_mocks(github_mock, payments_mock)
    return _fleet_view(*search_gateway_process, *states, e2e_dir / "search" / "audit.jsonl")


@pytest.fixture(scope="session")
def single_gateways(
    e2e_dir: Path,
    bundles: dict[str, Path],
    github_mock: tuple[ThreadedMock, Any],
    payments_mock: tuple[ThreadedMock, Any],
) -> Iterator[dict[str, GatewayProcess]]:
    """``anvil serve BUNDLE --http 127.0.0.1:0 --auth none`` for each example, on the shared mocks."""
    folder = e2e_dir / "single"
    folder.mkdir(exist_ok=True)
    mocks = {"github": github_mock[0], "payments": payments_mock[0]}
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANVIL_")}
    env.update(
        {
            "ANVIL_ENV": "dev",
            "ANVIL_ALLOWED_HOSTS": "127.0.0.1",
            "ANVIL_LEDGER": f"sqlite:///{folder / 'ledger.db'}",
            "ANVIL_AUDIT_FILE": str(folder / "audit.jsonl"),
        }
    )
    env.update({token_variable(bundle): UPSTREAM_TOKEN for bundle in bundles.values()})
    started: dict[str, GatewayProcess] = {}
    try:
        for service in SERVICES:
            args = [str(bundles[service]), "--http", "127.0.0.1:0", "--auth", "none", "--base-url", mocks[service].url]
            started[service] = GatewayProcess(args, env=env, log=folder / f"{service}.log").start()
        yield started
    finally:
        for process in started.values():
            process.stop()
