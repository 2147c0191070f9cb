"""The fleet listener: inbound auth answers, and a real uvicorn listener over two compiled bundles.

The real listener serves ``tmp/ws/github`` and ``tmp/ws/payments`` (compiled from the examples) over
Streamable HTTP to the official ``mcp`` client and over REST, with the examples' mocks on loopback;
``anvil serve`` itself is started as a process over the same workspace.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import jwt
import pytest
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ed25519
from jwt.algorithms import OKPAlgorithm
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.read import read_bundle
from anvil.bundle.writer import install_bundle
from anvil.cli import main
from anvil.cli.serve_config import base_url_variable, bundle_settings, credential_variables
from anvil.compiler import build
from anvil.errors import ConfigError
from anvil.ledger.registry import open_ledger
from anvil.runtime.audit import GatewayAuditSink, MemoryAuditSink
from anvil.runtime.context import RuntimeContext
from anvil.serve.auth.middleware import InboundSettings, build_authenticator
from anvil.serve.auth.principals import hash_token, parse_principals
from anvil.serve.auth.tokens import StaticTokenAuthenticator
from anvil.serve.fleet import Fleet, FleetBundle, discover_bundles
from anvil.serve.listener import create_listener
from anvil.serve.mcp.http import listen, serve_http
from tests.serve.support import GITHUB, OWNER_REPO, PAYMENTS, mock_module
from tests.serve.test_fleet import COMMENT, Rig, payments_mock, read_grant

pytestmark = pytest.mark.anyio

ISSUER = "https://yard.example"
AUDIENCE = "http://127.0.0.1/mcp"


# --- inbound auth answers (in-process) -------------------------------------------------------------


class Yard:
    """An Ed25519 signing key, its JWKS file, and a minter of turn tokens."""

    def __init__(self, folder: Path) -> None:
        self.key = ed25519.Ed25519PrivateKey.generate()
        jwk = {**OKPAlgorithm.to_jwk(self.key.public_key(), as_dict=True), "kid": "yard-1", "alg": "EdDSA"}
        self.jwks = folder / "jwks.json"
        self.jwks.write_text(json.dumps({"keys": [jwk]}), encoding="utf-8")

    def mint(self, key: Any = None, **claims: Any) -> str:
        now = int(time.time())
        payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": "local:ada", "iat": now, "exp": now + 600, "jti": "j1"}
        payload["by_grants"] = read_grant()
        payload.update(claims)
        return jwt.encode(payload, key or self.key, algorithm="EdDSA", headers={"kid": "yard-1"})


@pytest.fixture
def yard(tmp_path: Path) -> Yard:
    return Yard(tmp_path)


@pytest.fixture
async def jwt_app(github: Document, payments: Document, yard: Yard) -> AsyncIterator[httpx.AsyncClient]:
    rig = Rig(github, payments)
    settings = InboundSettings(mode="jwt", issuer=ISSUER, audience=AUDIENCE, jwks_uri=yard.jwks.as_uri())
    app = create_listener(rig.fleet(), authenticator=build_authenticator(settings), resource=AUDIENCE, issuer=ISSUER)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as client:
        yield client
    await rig.aclose()


def _other_key() -> ed25519.Ed25519PrivateKey:
    return ed25519.Ed25519PrivateKey.generate()


@pytest.mark.parametrize(
    ("case", "claims", "status", "code"),
    [
        ("no bearer", None, 401, "invalid_request"),
        ("expired", {"exp": -120, "iat": -700}, 401, "invalid_token"),
        ("wrong issuer", {"iss": "https://other.example"}, 401, "invalid_token"),
        ("wrong audience", {"aud": "https://other.example/mcp"}, 401, "invalid_token"),
        ("bad signature", {"__key": "other"}, 401, "invalid_token"),
        ("over-long lifetime", {"exp": 7200}, 401, "invalid_token"),
        (
            "bad grant",
            {"by_grants": [{"connector": "git hub", "operations": ["*"], "mode": "read"}]},
            401,
            "invalid_token",
        ),
        ("connect token", {"by_purpose": "connect", "by_grants": [], "exp": 300}, 403, "turn_token_required"),
    ],
)
@pytest.mark.parametrize("path", ["/mcp", "/call/github__github_list_issue", "/openapi"])
async def test_inbound_auth_refusals_carry_the_code_and_a_bearer_challenge(
    jwt_app: httpx.AsyncClient, yard: Yard, case: str, claims: dict[str, Any] | None, status: int, code: str, path: str
) -> None:
    headers = {"content-type": "application/json"}
    if claims is not None:
        now = int(time.time())
        shifted = {name: now + value if name in ("exp", "iat") else value for name, value in claims.items()}
        key = _other_key() if shifted.pop("__key", None) == "other" else None
        headers["authorization"] = f"Bearer {yard.mint(key, **shifted)}"
    answer = await jwt_app.post(path, headers=headers, content=b"{}")
    assert answer.status_code == status, case
    assert answer.json()["error"]["code"] == code
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith('Bearer realm="mcp"') and f'error="{code}"' in challenge
    assert answer.headers["cache-control"] == "no-store"


async def test_a_valid_turn_token_reaches_the_route_and_probes_need_no_token(
    jwt_app: httpx.AsyncClient, yard: Yard
) -> None:
    bearer = {"authorization": f"Bearer {yard.mint()}"}
    listed = await jwt_app.post("/call/github__github_list_issue", json={"arguments": OWNER_REPO}, headers=bearer)
    assert listed.status_code == 200
    assert (await jwt_app.get("/healthz")).status_code == 200
    assert (await jwt_app.get("/readyz")).status_code == 200
    document = await jwt_app.get("/.well-known/oauth-protected-resource")
    assert document.json() == {"resource": AUDIENCE, "authorization_servers": [ISSUER]}


def test_an_incomplete_or_unusable_inbound_auth_set_is_a_configuration_error(tmp_path: Path) -> None:
    refused = [
        InboundSettings(mode="static"),
        InboundSettings(mode="static", principals_file=tmp_path / "missing.json"),
        InboundSettings(mode="jwt", audience=AUDIENCE, jwks_uri="file:///x"),
        InboundSettings(mode="branchyard", issuer=ISSUER, audience="http://gw.example/mcp", jwks_uri="file:///x"),
        InboundSettings(mode="oidc", issuer=ISSUER, audience=AUDIENCE, jwks_uri="http://keys.example/jwks"),
    ]
    codes = []
    for settings in refused:
        with pytest.raises(ConfigError) as caught:
            build_authenticator(settings)
        codes.append(caught.value.code)
    assert codes == ["config/invalid"] * len(refused)


# --- the real listener --------------------------------------------------------------------------


class ThreadServer:
    """An ASGI app under uvicorn on 127.0.0.1 in a background thread."""

    def __init__(self, app: Any) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="off", ws="none")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the mock did not start"
            time.sleep(0.005)
        return f"http://127.0.0.1:{self.server.servers[0].sockets[0].getsockname()[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tmp") / "ws"
    for folder, service in ((GITHUB, "github"), (PAYMENTS, "payments")):
        result = build(folder / "openapi.yaml", manifest=folder / "anvil.yaml", service_id=service)
        assert [d.code for d in result.diagnostics if d.severity == "error"] == []
        install_bundle(root / service, emit_bundle(result.document))
    return root


@pytest.fixture
def upstreams() -> Iterator[tuple[dict[str, str], Any, Any]]:
    github_app, github_state = mock_module.create_app(token=None)
    payments_state = payments_mock.State()
    with ThreadServer(github_app) as github_url, ThreadServer(payments_mock.create_app(payments_state)) as pay_url:
        yield {"github": github_url, "payments": pay_url}, github_state, payments_state


TOKENS = {"ops": "tok-ops", "reader": "tok-reader"}


def bearer_client(who: str) -> Any:
    return create_mcp_http_client(headers={"authorization": f"Bearer {TOKENS[who]}"})


@pytest.mark.parametrize("stateless", [True, False], ids=["stateless", "sessions"])
async def test_a_real_listener_serves_two_bundles_to_the_official_client_and_to_rest(
    workspace: Path, upstreams: tuple[dict[str, str], Any, Any], stateless: bool
) -> None:
    urls, github_state, payments_state = upstreams
    memory = MemoryAuditSink()
    ledger = open_ledger("memory:")
    async with httpx.AsyncClient() as http:
        bundles = []
        for source in discover_bundles([workspace]):
            doc = read_bundle(source.path)
            context = RuntimeContext(
                service_id=doc.service.id,
                base_url=urls[source.id],
                client=http,
                env="dev",
                allowed_hosts=("127.0.0.1",),
                credentials=dict.fromkeys(credential_variables(doc, "default"), "t"),
                ledger=ledger,
                audit=GatewayAuditSink(memory),
            )
            bundles.append(FleetBundle(id=source.id, document=doc, context=context))
        records = parse_principals(
            {
                "principals": [
                    {"id": "ops", "token_sha256": hash_token(TOKENS["ops"])},
                    {"id": "reader", "token_sha256": hash_token(TOKENS["reader"]), "grants": read_grant()},
                ]
            }
        )
        app = create_listener(
            Fleet(bundles),
            authenticator=StaticTokenAuthenticator(records),
            stateless=stateless,
            json_response=stateless,
        )
        sock = listen("127.0.0.1", 0)
        base = f"http://127.0.0.1:{sock.getsockname()[1]}"
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: serve_http(app, sock=sock))
                async with (
                    bearer_client("ops") as ops_http,
                    streamable_http_client(f"{base}/mcp", http_client=ops_http) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    listed = [tool.name for tool in (await session.list_tools()).tools]
                    created = await session.call_tool(
                        "github__github_create_comment", COMMENT, meta={"idempotency_key": "real-01"}
                    )
                    customer = await session.call_tool("payments__payments_get_customer", {"customer_id": "cus_123"})
                async with (
                    bearer_client("reader") as reader_http,
                    streamable_http_client(f"{base}/mcp", http_client=reader_http) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    narrowed = [tool.name for tool in (await session.list_tools()).tools]
                    hidden = await session.call_tool("payments__payments_get_customer", {"customer_id": "cus_123"})
                rest = await http.post(
                    f"{base}/call/payments__payments_get_payment",
                    json={"arguments": {"payment_id": "pay_123"}},
                    headers={"authorization": f"Bearer {TOKENS['ops']}"},
                )
                probes = [(await http.get(f"{base}{path}")).status_code for path in ("/healthz", "/readyz")]
                group.cancel_scope.cancel()
    sock.close()
    assert "github__github_create_comment" in listed and "payments__payments_create_refund" in listed
    assert created.is_error is False and created.meta is not None
    assert created.meta["effect"]["undo"]["tool"] == "github__github_delete_comment"
    assert created.meta["effect"]["idempotency_key"] == "real-01"
    assert github_state.requests[-1]["idempotency_key"] == "real-01"
    assert customer.is_error is False and customer.structured_content["id"] == "cus_123"
    assert narrowed and all(name.startswith("github__") for name in narrowed)
    assert hidden.is_error is True and hidden.structured_content is None
    assert json.loads(hidden.content[0].text)["error"]["details"]["code"] == "policy/grant_denied"
    assert (rest.status_code, rest.json()["id"]) == (200, "pay_123")
    assert probes == [200, 200]
    assert [line["sub"] for line in memory.records()] == ["ops", "ops", "reader", "ops"]
    assert len(payments_state.requests) == 2


# --- the command ---------------------------------------------------------------------------------


@pytest.fixture
def serve_env(workspace: Path, upstreams: tuple[dict[str, str], Any, Any]) -> dict[str, str]:
    urls = upstreams[0]
    env = {name: value for name, value in os.environ.items() if not name.startswith("ANVIL_")}
    env["ANVIL_ENV"] = "dev"
    for service, url in urls.items():
        env[base_url_variable(service)] = url
        for name in credential_variables(read_bundle(workspace / service), f"default_{service}"):
            env[name] = "t"
    return env


async def test_the_command_serves_a_workspace_fleet_with_namespaced_settings(
    workspace: Path, serve_env: dict[str, str], upstreams: tuple[dict[str, str], Any, Any], tmp_path: Path
) -> None:
    audit_file = tmp_path / "audit.jsonl"
    serve_env = {**serve_env, "ANVIL_AUDIT_FILE": str(audit_file)}
    command = [sys.executable, "-m", "anvil", "serve", str(workspace), "--http", "127.0.0.1:0"]
    with anyio.fail_after(60):
        process = await anyio.open_process(command, env=serve_env, stderr=subprocess.PIPE)
        async with process:
            assert process.stdout is not None and process.stderr is not None
            line = b""
            while not line.endswith(b"\n"):
                line += await process.stdout.receive()
            url = json.loads(line)["url"]
            async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                refund = await session.call_tool(
                    "payments__payments_create_refund",
                    {"payment_id": "pay_123", "amount": 100, "currency": "EUR", "confirm": True},
                    meta={"idempotency_key": "cli-refund-1"},
                )
                issues = await session.call_tool("github__github_list_issue", OWNER_REPO)
            async with httpx.AsyncClient() as http:
                ready = await http.get(url.removesuffix("/mcp") + "/readyz")
            process.send_signal(signal.SIGTERM)
            assert await process.wait() == 0
            err = (await process.stderr.receive()).decode()
    assert refund.is_error is False, refund.structured_content
    assert issues.is_error is False
    assert upstreams[2].requests[-1]["idempotency_key"] == "cli-refund-1"
    assert "serving 2 bundles (github, payments)" in err and "inbound auth none" in err
    scopes = [line for line in err.splitlines() if line.startswith("anvil: ledger scope ")]
    assert [line.split(":")[1].split()[-1] for line in scopes] == ["github", "payments"]
    assert all("digest sha256:" in line for line in scopes)
    assert ready.status_code == 200
    assert {name: ready.json()[name] for name in ("ready", "service")} == {
        "ready": True,
        "service": ["github", "payments"],
    }
    assert [bundle["id"] for bundle in ready.json()["bundles"]] == ["github", "payments"]
    lines = [json.loads(line) for line in audit_file.read_text(encoding="utf-8").splitlines()]
    assert [(line["connector"], line["operation"]) for line in lines] == [
        ("payments", "payments.refunds.create"),
        ("github", "github.issues.list"),
    ]
    assert stat.S_IMODE(audit_file.stat().st_mode) == 0o600
    assert lines[0]["ledger_id"] == "cli-refund-1"  # the caller's key itself (ADR-0030 §5)


@pytest.mark.parametrize(
    ("layout", "extra", "code", "exit_code"),
    [
        ({"svc/a": "github", "svc_a": "github"}, [], "fleet/tool_collision", 3),
        ({"empty": None}, [], "fleet/no_bundles", 3),
        ({"github": "github"}, ["SAME"], "fleet/duplicate_bundle", 3),
        ({"github": "github", "payments": "payments"}, ["--base-url", "http://127.0.0.1:1"], "cli/usage", 2),
        ({"github": "github"}, ["--http", "0.0.0.0:0"], "cli/usage", 2),
        ({"github": "github"}, ["--stdio", "--auth", "static"], "cli/usage", 2),
        ({"github": "github"}, ["--auth", "kerberos"], "cli/usage", 2),
        ({"github": "github"}, ["--http", "127.0.0.1:0", "--auth", "static"], "config/invalid", 3),
    ],
)
def test_the_command_refuses_unservable_fleets_before_binding(
    workspace: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    layout: dict[str, str | None],
    extra: list[str],
    code: str,
    exit_code: int,
) -> None:
    root = tmp_path / "fleet"
    for bundle_id, service in layout.items():
        if service is None:
            (root / bundle_id).mkdir(parents=True)
        else:
            install_bundle(root / bundle_id, _files(workspace / service))
    for name in [n for n in os.environ if n.startswith("ANVIL_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ANVIL_ENV", "dev")
    paths = [str(root / "github"), str(root)] if extra == ["SAME"] else [str(root)]
    flags = [] if extra == ["SAME"] else extra
    assert main(["serve", *paths, *flags]) == exit_code
    assert f"error[{code}]" in capsys.readouterr().err


def _files(bundle: Path) -> dict[str, bytes]:
    return {path.relative_to(bundle).as_posix(): path.read_bytes() for path in bundle.rglob("*") if path.is_file()}


def test_fleet_settings_read_per_bundle_upstreams_and_prefer_namespaced_credentials(
    github: Document, payments: Document
) -> None:
    [github_plain] = credential_variables(github, "default")
    [payments_plain] = credential_variables(payments, "default")
    [payments_twin] = credential_variables(payments, "default_payments")
    environ = {
        "ANVIL_BASE_URL": "http://ignored.example",
        base_url_variable("github"): "http://127.0.0.1:1",
        github_plain: "plain-github",
        payments_plain: "plain-payments",
        payments_twin: "namespaced-payments",
    }
    gh, pay = bundle_settings(environ, [("github", github), ("payments", payments)], base_url=None)
    assert (gh.base_url, gh.allowed_hosts) == ("http://127.0.0.1:1", ("127.0.0.1",))
    assert (pay.base_url, pay.allowed_hosts) == ("https://payments.internal.example.com", ())
    assert gh.credentials[github_plain] == "plain-github"
    assert pay.credentials[payments_plain] == "namespaced-payments"
    [alone] = bundle_settings(environ, [("payments", payments)], base_url=None)
    assert (alone.base_url, alone.credentials[payments_plain]) == ("http://ignored.example", "plain-payments")
    assert base_url_variable("team/git-hub.v2") == "ANVIL_BASE_URL_TEAM_GIT_HUB_V2"


def test_the_listener_stack_loads_no_http_client_jwt_or_yaml_library_until_one_is_needed() -> None:
    """Cold start: ``anvil serve --http`` with auth none imports neither httpx, PyJWT, PyYAML nor aiohttp."""
    modules = (
        "anvil.cli.serve, anvil.serve.listener, anvil.serve.mcp.hotpath, anvil.runtime.connections, anvil.bundle.read"
    )
    code = (
        f"import sys, {modules}\n"
        "print(sorted(name for name in ('httpx', 'jwt', 'yaml', 'aiohttp') if name in sys.modules))"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert shown.stdout.strip() == "[]"
