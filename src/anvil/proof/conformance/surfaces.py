"""The three executable surfaces conformance drives, and the wire as the upstream saw it.

* ``mcp``: ``tools/call`` over Streamable HTTP to a real ``anvil serve`` process (the key travels as
  ``_meta.idempotency_key``);
* ``rest``: ``POST /call/<tool>`` to the same process (the key as the ``Idempotency-Key`` header);
* ``cli``: ``anvil run BUNDLE <command> --input FILE [--confirm] [--idempotency-key K] --json`` as a
  child process in direct mode.

Each answers an :class:`Answer` (the data, or the error envelope's code). :func:`wire_requests` reads
what the upstream received from ``anvil mock``'s request log and normalizes it for comparison: the
caller-chosen key becomes ``<idempotency-key>``, and only the headers AIR names (its header
parameters, the key carrier, the credential carrier) and ``content-type`` are kept.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio
import httpx

from anvil._types import JSONObject, JSONValue
from anvil.air.carrier import effective_auth_carrier, resolve_carrier
from anvil.air.model import Operation
from anvil.client import AnvilClient, GatewayUnavailable

__all__ = ["KEY_PLACEHOLDER", "SURFACES", "Answer", "Driver", "Upstream", "wire_requests"]

#: The executable surfaces, in report order.
SURFACES: Final[tuple[str, ...]] = ("mcp", "rest", "cli")
#: What a caller-chosen idempotency key reads as once normalized.
KEY_PLACEHOLDER: Final = "<idempotency-key>"
_CLI_TIMEOUT_S: Final = 120.0
_MAX_OUTPUT: Final = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """What one surface answered: the data on success, else the error code."""

    ok: bool
    data: JSONValue = None
    code: str | None = None

    def to_json(self) -> JSONObject:
        """``{"ok": true, "data": ...}`` or ``{"ok": false, "code": ...}``."""
        return {"ok": True, "data": self.data} if self.ok else {"ok": False, "code": self.code}


def _code(envelope: Any) -> str:
    error = envelope.get("error") if isinstance(envelope, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return str(code) if code else "unknown_upstream_error"


class Upstream:
    """``anvil mock``'s control routes: reset its memory and read its request log."""

    def __init__(self, url: str, client: httpx.AsyncClient) -> None:
        """Args: url: the mock's base URL; client: the HTTP client to reach it with."""
        self.url = url.rstrip("/")
        self.client = client

    async def reset(self) -> None:
        """Forget every item, key, fault and logged request (so each call starts from the same state)."""
        answer = await self.client.post(f"{self.url}/__anvil/reset")
        answer.raise_for_status()

    async def requests(self) -> list[JSONObject]:
        """Every request logged since the last reset."""
        answer = await self.client.get(f"{self.url}/__anvil/requests")
        answer.raise_for_status()
        entries = answer.json().get("requests")
        return [entry for entry in entries if isinstance(entry, dict)] if isinstance(entries, list) else []


def _wire_headers(op: Operation) -> set[str]:
    names = {"content-type"}
    names |= {param.name.lower() for param in op.input.params if param.in_ == "header"}
    binding = resolve_carrier(op).binding
    if binding is not None and binding.mechanism == "header":
        names.add(binding.key.lower())
    auth = effective_auth_carrier(op.auth)
    if auth is not None and auth.in_ == "header":
        names.add(auth.name.lower())
    return names


def wire_requests(entries: Sequence[Mapping[str, Any]], op: Operation, key: str | None) -> list[JSONObject]:
    """The normalized wire requests of a call (see the module docstring)."""
    keep = _wire_headers(op)
    out: list[JSONObject] = []
    for entry in entries:
        raw_headers, raw_query = entry.get("headers"), entry.get("query")
        headers: dict[str, Any] = raw_headers if isinstance(raw_headers, dict) else {}
        query: list[Any] = raw_query if isinstance(raw_query, list) else []
        request: JSONObject = {
            "method": entry.get("method"),
            "path": entry.get("path"),
            "query": sorted(
                [str(pair[0]), str(pair[1])] for pair in query if isinstance(pair, list) and len(pair) == 2
            ),
            "headers": {name: value for name, value in sorted(headers.items()) if name.lower() in keep},
            "body": entry.get("body"),
        }
        if key:
            request = json.loads(json.dumps(request).replace(json.dumps(key)[1:-1], KEY_PLACEHOLDER))
        out.append(request)
    return out


class Driver:
    """Calls one operation through a surface.

    Args:
        bundle: The bundle directory (for ``anvil run``).
        mcp: An open MCP session with the served bundle.
        http: An HTTP client for the REST route.
        rest_url: The listener's base URL (``http://127.0.0.1:N``).
        env: The child environment for ``anvil run``.
    """

    def __init__(
        self,
        *,
        bundle: Path,
        mcp: AnvilClient,
        http: httpx.AsyncClient,
        rest_url: str,
        env: Mapping[str, str],
    ) -> None:
        self.bundle = bundle
        self.mcp = mcp
        self.http = http
        self.rest_url = rest_url.rstrip("/")
        self.env = dict(env)

    async def call(
        self,
        surface: str,
        op: Operation,
        arguments: JSONObject,
        *,
        key: str | None,
        confirm: str | None,
        upstream_url: str,
    ) -> Answer:
        """Call ``op`` through ``surface`` with business ``arguments``, the caller's ``key`` and, when
        ``confirm`` names the op's confirm input, confirmation; ``anvil run`` is pointed at ``upstream_url``
        (the served gateway has its own)."""
        if surface == "mcp":
            return await self._mcp(op, arguments, key, confirm)
        if surface == "rest":
            return await self._rest(op, arguments, key, confirm)
        return await self._cli(op, arguments, key, confirm, upstream_url)

    async def _mcp(self, op: Operation, arguments: JSONObject, key: str | None, confirm: str | None) -> Answer:
        args = {**arguments, **({confirm: True} if confirm else {})}
        try:
            result = await self.mcp.call_result(op.mcp.tool_name, args, idempotency_key=key)
        except GatewayUnavailable as exc:
            return Answer(ok=False, code=_code(exc.envelope))
        if result.is_error:
            return Answer(ok=False, code=_code(result.envelope))
        return Answer(ok=True, data=result.data)

    async def _rest(self, op: Operation, arguments: JSONObject, key: str | None, confirm: str | None) -> Answer:
        args = {**arguments, **({confirm: True} if confirm else {})}
        headers = {"Idempotency-Key": key} if key else {}
        try:
            answer = await self.http.post(
                f"{self.rest_url}/call/{op.mcp.tool_name}", json={"arguments": args}, headers=headers
            )
            body = answer.json() if answer.content else None
        except (httpx.HTTPError, ValueError):
            return Answer(ok=False, code="upstream_unavailable")
        if answer.status_code == 200:
            return Answer(ok=True, data=body)
        return Answer(ok=False, code=_code(body))

    async def _cli(
        self, op: Operation, arguments: JSONObject, key: str | None, confirm: str | None, upstream_url: str
    ) -> Answer:
        with tempfile.TemporaryDirectory(prefix="anvil-conformance-") as folder:
            given = Path(folder) / "input.json"
            given.write_text(json.dumps(arguments), encoding="utf-8")
            command = [sys.executable, "-m", "anvil", "run", str(self.bundle), *op.cli.command.split()]
            command += ["--input", str(given), "--json", "--base-url", upstream_url]
            if confirm:
                command.append("--confirm")
            if key:
                command += ["--idempotency-key", key]
            with anyio.fail_after(_CLI_TIMEOUT_S):
                done = await anyio.run_process(command, env=self.env, check=False)
        stdout = done.stdout[:_MAX_OUTPUT].decode("utf-8", errors="replace")
        stderr = done.stderr[:_MAX_OUTPUT].decode("utf-8", errors="replace")
        if done.returncode == 0:
            try:
                return Answer(ok=True, data=json.loads(stdout) if stdout.strip() else None)
            except ValueError:
                return Answer(ok=True, data=stdout)
        try:
            envelope, _end = json.JSONDecoder().raw_decode(stderr.lstrip())
        except ValueError:
            return Answer(ok=False, code=f"exit {done.returncode}")
        return Answer(ok=False, code=_code(envelope))
