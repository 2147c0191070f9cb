"""The three executable surfaces conformance drives, and the wire as the upstream saw it.

* ``mcp``: ``tools/call`` over Streamable HTTP to a real ``anvil serve`` process (the key travels as
  ``_meta.idempotency_key``);
* ``rest``: ``POST /call/<tool>`` to the same process (the key as the ``Idempotency-Key`` header);
* ``cli``: ``anvil run BUNDLE <command> --<flag>=<value>... [--confirm] [--idempotency-key K] --json`` in
  direct mode, each input given as its own flag as a person types it (:func:`cli_arguments`), so the
  CLI's flag names, grammar and value typing are compared too; run by one long-lived child process
  (``python -m anvil.cli.run_worker``, the CLI's own entry point call after call: :class:`CliWorker`)
  rather than one process per call, which cost about a second each in interpreter start, imports and
  reading the bundle.

Each answers an :class:`Answer` (the data, or the error envelope's code). :func:`wire_requests` reads
what the upstream received from ``anvil mock``'s request log and normalizes it for comparison: the
caller-chosen key becomes ``<idempotency-key>``, and only the headers AIR names (its header
parameters, the key carrier, the credential carrier) and ``content-type`` are kept.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import httpx
from anyio.abc import Process

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.air.carrier import effective_auth_carriers, resolve_carrier
from anvil.air.inputs import cli_flags
from anvil.air.model import Operation
from anvil.client import AnvilClient, GatewayUnavailable

__all__ = [
    "KEY_PLACEHOLDER",
    "SURFACES",
    "Answer",
    "CliWorker",
    "Driver",
    "Upstream",
    "cli_arguments",
    "wire_requests",
]

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
    names |= {auth.name.lower() for auth in effective_auth_carriers(op.auth) if auth.in_ == "header"}
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


class CliWorker:
    """One ``python -m anvil.cli.run_worker`` child: ``anvil run`` argument lists in, exit code and output out.

    Started on first use; a call that does not answer in time stops the child (the next call starts a
    fresh one). :meth:`aclose` stops it.
    """

    def __init__(self, env: Mapping[str, str]) -> None:
        """Args: env: the child's whole environment (the CLI reads its settings from it)."""
        self.env = dict(env)
        self._process: Process | None = None
        self._buffer = b""
        self._lock = anyio.Lock()

    async def _start(self) -> Process:
        if self._process is None or self._process.returncode is not None:
            self._process = await anyio.open_process(
                [sys.executable, "-m", "anvil.cli.run_worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=self.env,
                start_new_session=True,
            )
            self._buffer = b""
        return self._process

    async def _line(self, process: Process) -> bytes:
        assert process.stdout is not None
        while b"\n" not in self._buffer:
            if len(self._buffer) > _MAX_OUTPUT * 2:
                raise ValueError("answer too long")
            self._buffer += await process.stdout.receive()
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    async def run(self, argv: list[str], timeout: float) -> tuple[int, str, str]:
        """``(exit code, stdout, stderr)`` of ``anvil <argv>``; ``(-1, "", reason)`` when the worker fails."""
        async with self._lock:
            process = await self._start()
            assert process.stdin is not None
            try:
                with anyio.fail_after(timeout):
                    await process.stdin.send((json.dumps({"argv": argv}) + "\n").encode())
                    answer = json.loads(await self._line(process))
                return int(answer["code"]), str(answer["stdout"]), str(answer["stderr"])
            except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, ValueError, KeyError, TypeError) as exc:
                await self.aclose()
                return -1, "", f"the CLI worker failed: {type(exc).__name__}"
            except BaseException:  # cancelled mid-call: an answer may still be on its way, so never reuse it
                with anyio.CancelScope(shield=True):
                    await self.aclose()
                raise

    async def aclose(self) -> None:
        """Stop the child (SIGTERM, then SIGKILL if it lingers)."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(anyio.BrokenResourceError, OSError):
                await process.stdin.aclose()
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        if process.returncode is None:
            process.kill()
            with anyio.move_on_after(5, shield=True):
                await process.wait()
        if process.stdout is not None:
            await process.stdout.aclose()


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
        cli: CliWorker | None = None,
    ) -> None:
        self.bundle = bundle
        self.mcp = mcp
        self.http = http
        self.rest_url = rest_url.rstrip("/")
        self.env = dict(env)
        self.cli = cli or CliWorker(env)

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
            command = ["run", str(self.bundle), *op.cli.command.split(), *cli_arguments(op, arguments, Path(folder))]
            command += ["--json", "--base-url", upstream_url]
            if confirm:
                command.append("--confirm")
            if key:
                command += ["--idempotency-key", key]
            returncode, stdout, stderr = await self.cli.run(command, _CLI_TIMEOUT_S)
        stdout, stderr = stdout[:_MAX_OUTPUT], stderr[:_MAX_OUTPUT]
        if returncode < 0:
            return Answer(ok=False, code=f"no answer from anvil run ({stderr})")
        if returncode == 0:
            try:
                return Answer(ok=True, data=json.loads(stdout) if stdout.strip() else None)
            except ValueError:
                return Answer(ok=True, data=stdout)
        try:
            envelope, _end = json.JSONDecoder().raw_decode(stderr.lstrip())
        except ValueError:
            return Answer(ok=False, code=f"exit {returncode}")
        return Answer(ok=False, code=_code(envelope))


def cli_arguments(op: Operation, arguments: JSONObject, folder: Path) -> list[str]:
    """``arguments`` as a person types them to ``anvil run``: one ``--<flag>=<value>`` per input (a
    string as it is, anything else as JSON text), so the CLI's flag names, grammar and typing are what
    is compared; a value no flag can say (null) goes in an ``--input`` file written to ``folder``."""
    flags = cli_flags(op)
    said = {name: value for name, value in arguments.items() if name in flags and value is not None}
    out = [f"{flags[name]}={value if isinstance(value, str) else json.dumps(value)}" for name, value in said.items()]
    rest = {name: value for name, value in arguments.items() if name not in said}
    if rest:
        given = folder / "input.json"
        given.write_text(json.dumps(rest), encoding="utf-8")
        out += ["--input", str(given)]
    return out
