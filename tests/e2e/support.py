"""Real parts for the end-to-end tests: compiled bundles, mock upstreams on loopback, the gateway process, tokens.

* :class:`ThreadedMock` serves an example's mock upstream under uvicorn on ``127.0.0.1:0`` in a daemon
  thread, so a test reads the mock's memory directly.
* :class:`GatewayProcess` runs ``python -m anvil serve ...`` as a child (it prints ``{"url": ...}`` once it
  listens); every wait is bounded and :meth:`GatewayProcess.stop` always ends it.
* :class:`YardKeys` is the fixture's stand-in for Branchyard's broker: an Ed25519 key, its JWKS file, and
  tokens minted with PyJWT carrying ``by_grants``.
* :func:`connect` opens an MCP session through :class:`anvil.client.AnvilClient` and lets an exception
  raised in its block (a failed assertion) through unchanged.
* :func:`rest_call` is one ``POST /call/<tool>`` with httpx, returning status, body and the parsed
  ``X-Anvil-Effect``.
"""

from __future__ import annotations

import importlib.util
import json
import select
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ed25519
from jwt.algorithms import OKPAlgorithm

from anvil.bundle.read import read_bundle
from anvil.cli.compile import compile_bundle
from anvil.client import AnvilClient
from anvil.runtime.credentials import credential_profile, expected_env

__all__ = [
    "EXAMPLES",
    "ISSUER",
    "OWNER_REPO",
    "GatewayProcess",
    "RestAnswer",
    "ThreadedMock",
    "YardKeys",
    "compile_workspace",
    "connect",
    "load_mock",
    "rest_call",
    "token_variable",
]

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
ISSUER = "branchyard:local:e2e"
OWNER_REPO = {"owner": "octo", "repo": "hello"}
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


def load_mock(example: str) -> ModuleType:
    """Import ``examples/<example>/mock_upstream.py`` under a private module name."""
    name = f"e2e_{example.replace('-', '_')}_mock"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / example / "mock_upstream.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def compile_workspace(root: Path) -> dict[str, Path]:
    """Compile github-mini and payments into ``root/github`` and ``root/payments``; both must be clean."""
    bundles = {}
    for example, service in (("github-mini", "github"), ("payments", "payments")):
        folder = EXAMPLES / example
        out = root / service
        outcome = compile_bundle(
            folder / "openapi.yaml", out=out, manifest=folder / "anvil.yaml", service_id=service, root=REPO
        )
        assert outcome.bundle_hash is not None and outcome.ok, [d.code for d in outcome.diagnostics]
        bundles[service] = out
    return bundles


def token_variable(bundle: Path) -> str:
    """The credential variable the bundle's first authenticated operation reads (default profile)."""
    for op in read_bundle(bundle).operations:
        names = expected_env(op.auth, credential_profile("default", op.auth))
        if names:
            return names[0]
    raise AssertionError(f"{bundle} names no credential variable")


class ThreadedMock:
    """An ASGI app under uvicorn on a free loopback port, in a daemon thread."""

    def __init__(self, app: Any, name: str) -> None:
        self.name = name
        # IPPROTO_TCP lets asyncio set TCP_NODELAY on accepted connections (no delayed-ACK stalls).
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(128)
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="error", lifespan="off", ws="none")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    def start(self, timeout: float = START_TIMEOUT_S) -> ThreadedMock:
        """Serve, and return once uvicorn reports it started."""
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the {self.name} mock upstream did not start")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """Ask uvicorn to exit and wait for its thread."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        self._sock.close()


class GatewayProcess:
    """``python -m anvil serve ARGS...`` as a child: the URL it prints, its stderr in a log file."""

    def __init__(self, args: Sequence[str], *, env: Mapping[str, str], log: Path) -> None:
        self.argv = [sys.executable, "-m", "anvil", "serve", *args]
        self.env = dict(env)
        self.log = log
        self.url = ""
        self._process: subprocess.Popen[str] | None = None

    @property
    def base(self) -> str:
        """The listener's origin (the URL without ``/mcp``)."""
        return self.url.removesuffix("/mcp")

    def start(self, timeout: float = START_TIMEOUT_S) -> GatewayProcess:
        """Start the child and read the ``{"url": ...}`` line it prints once listening.

        Raises:
            RuntimeError: it exited or printed nothing usable within ``timeout`` seconds (stderr attached).
        """
        with self.log.open("w", encoding="utf-8") as errors:
            self._process = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, env=self.env, text=True
            )
        assert self._process.stdout is not None
        ready, _, _ = select.select([self._process.stdout], [], [], timeout)
        line = self._process.stdout.readline() if ready else ""
        try:
            self.url = str(json.loads(line)["url"])
        except (ValueError, KeyError, TypeError):
            self.stop()
            raise RuntimeError(f"the gateway did not start: {line!r}\n{self.stderr()}") from None
        return self

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM, then SIGKILL if it lingers; returns the exit status."""
        process, self._process = self._process, None
        if process is None:
            return None
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        if process.stdout is not None:
            process.stdout.close()
        return process.returncode

    def stderr(self) -> str:
        """Everything the child wrote to stderr so far."""
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""


@dataclass
class YardKeys:
    """An Ed25519 signing key and its JWKS file; mints turn tokens like Branchyard's broker."""

    directory: Path
    issuer: str = ISSUER
    audience: str = ""
    kid: str = field(default_factory=lambda: "yard-" + uuid.uuid4().hex[:8])

    def __post_init__(self) -> None:
        self._key = ed25519.Ed25519PrivateKey.generate()
        public = OKPAlgorithm.to_jwk(self._key.public_key(), as_dict=True)
        jwk = {**public, "kid": self.kid, "alg": "EdDSA", "use": "sig"}
        self.jwks_path = self.directory / "jwks.json"
        self.jwks_path.write_text(json.dumps({"keys": [jwk]}, indent=2) + "\n", encoding="utf-8")

    @property
    def jwks_uri(self) -> str:
        """The JWKS as a ``file:`` URL."""
        return self.jwks_path.as_uri()

    def mint(
        self, grants: Sequence[Mapping[str, Any]], *, sub: str = "local:ada", ttl: int = 600, **claims: Any
    ) -> str:
        """A compact EdDSA JWS for ``sub`` carrying ``grants`` as ``by_grants``."""
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": self.issuer,
            "aud": self.audience,
            "sub": sub,
            "iat": now,
            "exp": now + ttl,
            "jti": str(uuid.uuid4()),
            "by_tenant": "t1",
            "by_branch": "feature-x",
            "by_turn": "7",
            "by_grants": [dict(grant) for grant in grants],
            **claims,
        }
        return jwt.encode(payload, self._key, algorithm="EdDSA", headers={"kid": self.kid, "typ": "JWT"})


@dataclass(frozen=True)
class RestAnswer:
    """One answer of ``POST /call/<tool>``."""

    status: int
    body: Any
    effect: dict[str, Any] | None
    raw_effect: str | None
    headers: httpx.Headers


async def rest_call(
    http: httpx.AsyncClient,
    base: str,
    tool: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    token: str | None = None,
    key: str | None = None,
    stage: bool | None = None,
    body: Any = None,
) -> RestAnswer:
    """``POST {base}/call/{tool}`` with ``{"arguments", "stage"?}`` (or a raw ``body``) and the headers given."""
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    if key is not None:
        headers["idempotency-key"] = key
    if body is None:
        payload: dict[str, Any] = {"arguments": dict(arguments or {})}
        if stage is not None:
            payload["stage"] = stage
        content = json.dumps(payload).encode("utf-8")
    else:
        content = body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode("utf-8")
    response = await http.post(f"{base}/call/{tool}", content=content, headers=headers)
    raw = response.headers.get("x-anvil-effect")
    try:
        parsed: Any = response.json()
    except ValueError:
        parsed = response.text
    return RestAnswer(
        status=response.status_code,
        body=parsed,
        effect=json.loads(raw) if raw is not None else None,
        raw_effect=raw,
        headers=response.headers,
    )


@asynccontextmanager
async def connect(
    url: str, headers: Mapping[str, str] | None = None, *, timeout: float = 30.0
) -> AsyncIterator[AnvilClient]:
    """An MCP session with the gateway; an exception raised in the block is re-raised as it was.

    The client reports any exception that interrupts its block as the gateway being unreachable, which
    would hide a failed assertion's message; so the block's exception is held until the session closed.
    """
    failure: Exception | None = None
    async with AnvilClient.http(url, headers=headers, timeout=timeout) as client:
        try:
            yield client
        except Exception as exc:
            failure = exc
    if failure is not None:
        raise failure
