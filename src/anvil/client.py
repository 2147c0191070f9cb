"""A small caller for an Anvil MCP gateway: ``(data, effect)`` from one tool call.

It wraps the official MCP client (``mcp.ClientSession`` over stdio or Streamable HTTP) and speaks the
gateway's conventions (ADR-0030): the caller's ledger id travels as ``_meta.idempotency_key``, staging
as ``_meta.stage``; a result's ``_meta.effect`` comes back beside the data; a tool error comes back as
a :class:`ToolError` carrying the gateway's error envelope::

    async with AnvilClient.stdio("build/payments", env={"ANVIL_ENV": "dev"}) as gateway:
        data, effect = await gateway.call("payments_get_customer", {"customer_id": "cus_123"})

Every wait (connect and initialize, each call, closing) is bounded by ``timeout`` seconds. Nothing
here reads the environment: a spawned server gets exactly the ``env`` it is given (over the MCP SDK's
minimal safe defaults such as ``PATH`` and ``HOME``).

What a failure is, is said as it is: only a transport that fails or times out is
:class:`GatewayUnavailable`; a JSON-RPC error answer (an unknown tool, invalid params) is a
:class:`ToolError` with ``details.code`` ``client/unknown_tool`` or ``client/jsonrpc_error`` and the
JSON-RPC code, and a result the official client refuses against the tool's ``outputSchema`` is
``schema_mismatch`` (``client/invalid_structured_content``). Against a fleet, a bundle's own tool name
(``github_create_comment``) resolves to the one prefixed tool the fleet lists for it
(``github__github_create_comment``).
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Collection, Mapping
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, TextIO

import anyio

from anvil._dataclass import dataclass
from anvil._types import JSONObject, JSONValue
from anvil.errors import ExecutionError
from anvil.runtime.envelope import CODE_TABLE
from anvil.serve.auth.naming import FLEET_SEPARATOR

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "AnvilClient",
    "CallResult",
    "GatewayUnavailable",
    "ToolError",
    "envelope_of",
    "exit_code_for",
    "resolve_tool_name",
    "result_data",
]

#: The default bound on every wait, in seconds.
DEFAULT_TIMEOUT_S: Final = 30.0
_RETRYABLE: Final = frozenset(code for code, info in CODE_TABLE.items() if info.retryable)

Transport = Literal["stdio", "http", "sse"]


def exit_code_for(code: str) -> int:
    """The CLI exit code for an envelope ``code`` (7 for a code outside the taxonomy)."""
    info = CODE_TABLE.get(code)
    return info.exit_code if info else 7


def _synthetic_envelope(code: str, message: str, operation: str, details: JSONObject | None = None) -> JSONObject:
    error: JSONObject = {
        "code": code,
        "message": message,
        "retryable": code in _RETRYABLE,
        "safe_to_retry": False,
        "operation": operation,
        "trace_id": f"trace_{uuid.uuid4()}",
    }
    if details:
        error["details"] = details
    return {"error": error}


class ToolError(ExecutionError):
    """The gateway answered a tool call with an error.

    Attributes:
        envelope: the error envelope ``{"error": {code, message, ...}}``; a non-envelope error text
            (for example the SDK's own argument validation) is wrapped as ``unknown_upstream_error``
            with the text under ``details.text``.
        effect: the result's ``_meta.effect`` (a failed call still reports its class and key), or None.
    """

    def __init__(self, envelope: JSONObject, *, effect: JSONObject | None = None) -> None:
        found = envelope.get("error")
        error: JSONObject = found if isinstance(found, dict) else {}
        code = error.get("code")
        message = error.get("message")
        code = code if isinstance(code, str) else "unknown_upstream_error"
        message = message if isinstance(message, str) else "The tool call failed."
        super().__init__(code, message)
        self.envelope = envelope
        self.effect = effect

    @property
    def exit_code(self) -> int:
        """The CLI exit code for this error's code."""
        return exit_code_for(self.code)


class GatewayUnavailable(ToolError):
    """The gateway could not be reached or did not answer in time (``upstream_unavailable``/``upstream_timeout``).

    The message never names the target: a URL may carry credentials.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class CallResult:
    """One tool call's answer.

    Attributes:
        data: the call's data (the parsed text content, else the structured content); the plan for a
            dry run; the envelope's JSON on error.
        effect: ``_meta.effect`` as the gateway reported it, or None (dry runs carry none).
        is_error: the result was a tool error.
        envelope: the error envelope when ``is_error``.
    """

    data: JSONValue
    effect: JSONObject | None
    is_error: bool
    envelope: JSONObject | None = None


def _text_of(result: Any) -> str | None:
    texts = [block.text for block in result.content or () if getattr(block, "type", None) == "text"]
    return "".join(texts) if texts else None


def result_data(result: Any) -> JSONValue:
    """The data of a successful ``CallToolResult``.

    The first text block is the data as JSON (a budget-cut answer's too: the ``[truncated: ...]``
    marker and any notice follow it in blocks of their own); when it does not parse, the structured
    content stands in, unwrapped from the ``{"result": ...}`` shape non-objects take.
    """
    texts = [block.text for block in result.content or () if getattr(block, "type", None) == "text"]
    text = texts[0] if texts else None
    if text is not None:
        try:
            return json.loads(text)
        except ValueError:
            pass
    structured = result.structured_content
    if structured is not None:
        if (
            isinstance(structured, dict)
            and list(structured) == ["result"]
            and not isinstance(structured["result"], dict)
        ):
            return structured["result"]
        return structured
    return text


def envelope_of(result: Any, operation: str) -> JSONObject:
    """The error envelope of an ``isError`` result; a non-envelope text is wrapped (see :class:`ToolError`)."""
    text = _text_of(result) or ""
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), dict) and "code" in parsed["error"]:
        return parsed
    return _synthetic_envelope(
        "unknown_upstream_error", "The gateway refused the call without an error envelope.", operation, {"text": text}
    )


def _effect_of(result: Any) -> JSONObject | None:
    meta = result.meta
    effect = meta.get("effect") if isinstance(meta, Mapping) else None
    return dict(effect) if isinstance(effect, Mapping) else None


_INVALID_PARAMS: Final = -32602


def resolve_tool_name(tool: str, listed: Collection[str]) -> str:
    """The tool to dial for ``tool`` among the ``listed`` names (see :meth:`AnvilClient.resolve_tool`).

    ``tool`` itself when listed; else the one fleet-prefixed name ``<connector>__<tool>``; else
    ``tool`` unchanged (the gateway answers for a name it does not serve).

    Raises:
        ToolError: several prefixed names end in ``tool`` (``validation_error``, ``client/ambiguous_tool``).
    """
    if tool in listed:
        return tool
    suffix = FLEET_SEPARATOR + tool
    matches = sorted(name for name in listed if name.endswith(suffix))
    if len(matches) == 1:
        return matches[0]
    if matches:
        details: JSONObject = {"code": "client/ambiguous_tool", "candidates": matches}
        message = f"Several fleet tools end in '{tool}'; call one by its prefixed name."
        raise ToolError(_synthetic_envelope("validation_error", message, tool, details))
    return tool


def _is_confirm(schema: JSONValue) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "boolean" and schema.get("const") is True


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


async def _unwind(stack: AsyncExitStack, exc: BaseException) -> BaseException:
    """Exit ``stack`` with ``exc`` in flight; return what is left to raise (``exc``, or what replaced it)."""
    try:
        suppressed = await stack.__aexit__(type(exc), exc, exc.__traceback__)
    except BaseException as raised:
        return raised
    return exc if not suppressed else _Suppressed()


class _Suppressed(Exception):
    """Internal: the transport swallowed the in-flight exception while closing (reported as unavailable)."""


class AnvilClient:
    """One MCP session with an Anvil gateway; use :meth:`stdio` or :meth:`http`, then ``async with``."""

    def __init__(
        self,
        transport: Transport,
        *,
        target: Any,
        timeout: float = DEFAULT_TIMEOUT_S,
        headers: Mapping[str, str] | None = None,
        errlog: TextIO | None = None,
    ) -> None:
        """Prefer the :meth:`stdio` and :meth:`http` constructors; ``target`` is their parameters."""
        self.transport: Transport = transport
        self.timeout = timeout
        self._target = target
        self._headers = dict(headers or {})
        self._errlog = errlog
        self._stack: AsyncExitStack | None = None
        self._session: Any = None
        self._tools: dict[str, JSONObject] | None = None

    @classmethod
    def stdio(
        cls,
        bundle: Path | str,
        *,
        env: Mapping[str, str] | None = None,
        python: str | None = None,
        server_args: tuple[str, ...] = (),
        cwd: Path | str | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        errlog: TextIO | None = None,
    ) -> AnvilClient:
        """A client that spawns ``<python> -m anvil serve BUNDLE --stdio`` and talks to it over stdio.

        Args:
            bundle: the compiled bundle directory.
            env: the server's environment (over the SDK's safe defaults); pass the ``ANVIL_*`` settings here.
            python: the interpreter to run (default: this one).
            server_args: extra arguments after ``--stdio``.
            cwd: the server's working directory.
            timeout: the bound on every wait, in seconds.
            errlog: where the server's stderr goes (default: this process's stderr).
        """
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(
            command=python or sys.executable,
            args=["-m", "anvil", "serve", str(bundle), "--stdio", *server_args],
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
        return cls("stdio", target=params, timeout=timeout, errlog=errlog)

    @classmethod
    def http(
        cls, url: str, *, headers: Mapping[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT_S
    ) -> AnvilClient:
        """A client for a Streamable HTTP gateway at ``url`` (for example ``http://127.0.0.1:8080/mcp``).

        Args:
            url: the MCP endpoint.
            headers: extra request headers (for example ``Authorization``).
            timeout: the bound on every wait, in seconds.
        """
        return cls("http", target=url, timeout=timeout, headers=headers)

    @classmethod
    def sse(
        cls, url: str, *, headers: Mapping[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT_S
    ) -> AnvilClient:
        """A client for a legacy SSE gateway whose event stream is at ``url`` (for example ``.../sse``)."""
        return cls("sse", target=url, timeout=timeout, headers=headers)

    async def __aenter__(self) -> AnvilClient:
        """Connect and initialize the session.

        Raises:
            GatewayUnavailable: the server could not be spawned or reached, or did not initialize in time.
        """
        from mcp import ClientSession

        stack = AsyncExitStack()
        try:
            if self.transport == "stdio":
                from mcp.client.stdio import stdio_client

                errlog = self._errlog or sys.stderr
                try:
                    errlog.fileno()
                except (AttributeError, OSError, ValueError):  # an in-memory stream: the child cannot write to it
                    errlog = stack.enter_context(open(os.devnull, "w", encoding="utf-8"))
                streams = await stack.enter_async_context(stdio_client(self._target, errlog=errlog))
            elif self.transport == "sse":
                from mcp.client.sse import sse_client

                streams = await stack.enter_async_context(
                    sse_client(self._target, headers=self._headers, timeout=self.timeout, sse_read_timeout=self.timeout)
                )
            else:
                import httpx2
                from mcp.client.streamable_http import streamable_http_client

                http = await stack.enter_async_context(
                    httpx2.AsyncClient(headers=self._headers, timeout=httpx2.Timeout(self.timeout))
                )
                streams = await stack.enter_async_context(streamable_http_client(self._target, http_client=http))
            read, write = streams
            session = await stack.enter_async_context(ClientSession(read, write, read_timeout_seconds=self.timeout))
            with anyio.fail_after(self.timeout):
                await session.initialize()
        except BaseException as exc:
            # A transport failure cancels this task from the transport's task group: exiting the
            # stack with that cancellation is what turns it back into the failure that caused it.
            failure = await _unwind(stack, exc)
            if isinstance(failure, Exception):
                raise self._unavailable(failure, "") from None
            raise failure from None
        self._stack = stack
        self._session = session
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the session (and stop a spawned server).

        Raises:
            GatewayUnavailable: the transport failed (while closing, or under the block that is closing).
        """
        stack, self._stack, self._session = self._stack, None, None
        if stack is None:
            return
        if exc is None:
            try:
                await stack.aclose()
            except Exception as closing:
                raise self._unavailable(closing, "") from None
            return
        left = await _unwind(stack, exc)
        if left is exc or isinstance(left, _Suppressed) or any(leaf is exc for leaf in _leaves(left)):
            return  # the caller's own exception propagates unchanged (the transport may have wrapped it)
        if isinstance(left, Exception):
            raise self._unavailable(left, "") from None
        raise left from None

    def _unavailable(self, exc: BaseException, operation: str) -> GatewayUnavailable:
        leaves = _leaves(exc)
        timed_out = any(isinstance(leaf, TimeoutError) for leaf in leaves)
        code = "upstream_timeout" if timed_out else "upstream_unavailable"
        what = "did not answer in time" if timed_out else "could not be reached"
        envelope = _synthetic_envelope(code, f"The MCP gateway ({self.transport}) {what}.", operation)
        envelope["error"]["details"] = {"transport": self.transport}
        return GatewayUnavailable(envelope)

    def _failure(self, exc: BaseException, tool: str) -> ToolError:
        """What an exception from the session means: a JSON-RPC answer, a refused result, or a dead transport."""
        from mcp.shared.exceptions import MCPError

        leaves = _leaves(exc)
        rpc = next((leaf for leaf in leaves if isinstance(leaf, MCPError)), None)
        if rpc is not None:
            unknown = rpc.code == _INVALID_PARAMS and "unknown tool" in rpc.message.lower()
            code = "unsupported_operation" if unknown else "validation_error"
            what = f"The gateway serves no tool named '{tool}'." if unknown else "The gateway refused the request."
            details: JSONObject = {
                "code": "client/unknown_tool" if unknown else "client/jsonrpc_error",
                "jsonrpc_code": rpc.code,
                "text": rpc.message[:500],
            }
            return ToolError(_synthetic_envelope(code, what, tool, details))
        refused = next(
            (leaf for leaf in leaves if isinstance(leaf, RuntimeError) and "structured content" in str(leaf)), None
        )
        if refused is not None:
            details = {"code": "client/invalid_structured_content", "text": str(refused)[:500]}
            message = "The gateway's result does not match the tool's published output schema."
            return ToolError(_synthetic_envelope("schema_mismatch", message, tool, details))
        return self._unavailable(exc, tool)

    async def list_tools(self) -> list[JSONObject]:
        """Every tool the gateway lists, as wire-shaped dicts (``name``, ``inputSchema``, ``_meta``, ...)."""
        session = self._require()
        try:
            with anyio.fail_after(self.timeout):
                listed = await session.list_tools()
        except Exception as exc:
            raise self._failure(exc, "") from None
        tools = [tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in listed.tools]
        self._tools = {str(tool["name"]): tool for tool in tools}
        return tools

    async def resolve_tool(self, tool: str) -> str:
        """The name to dial for ``tool``: itself when listed, else the one fleet-prefixed tool ending in it.

        Raises:
            ToolError: several prefixed tools end in ``tool`` (``validation_error``, ``client/ambiguous_tool``).
            GatewayUnavailable: the listing failed.
        """
        if self._tools is None:
            await self.list_tools()
        return resolve_tool_name(tool, list(self._tools or {}))

    async def validate_input(
        self, tool: str, arguments: Mapping[str, JSONValue] | None = None, *, idempotency_key: str | None = None
    ) -> JSONObject:
        """Check ``arguments`` against the tool's published schema and key contract, calling nothing upstream.

        The check is the gateway's argument validation (the safety controls left to the gates), then
        the gates the listing states: a tool that requires ``confirm`` gets it, and a tool whose key is
        required and cannot be derived gets one (as an argument or ``idempotency_key``).

        Returns:
            ``{"valid": true, "tool": <the name dialed>}``.

        Raises:
            ToolError: the call would be refused (``validation_error``, ``confirmation_required``,
                ``idempotency_required``, or ``unsupported_operation`` for a tool the gateway does not list).
        """
        from anvil.serve.mcp.validation import ArgumentCheck, call_schema

        name = await self.resolve_tool(tool)
        listed = (self._tools or {}).get(name)
        if listed is None:
            details: JSONObject = {"code": "client/unknown_tool"}
            raise ToolError(_synthetic_envelope("unsupported_operation", f"No tool named '{tool}'.", tool, details))
        schema: JSONObject = listed.get("inputSchema") or {}
        properties: JSONObject = schema.get("properties") or {}
        required = [str(key) for key in schema.get("required") or ()]
        confirm = next((key for key, value in properties.items() if _is_confirm(value)), None)
        key_input = next((key for key in properties if key.endswith("idempotency_key")), None)
        relaxed = [key for key in (confirm, key_input) if key is not None]
        args = dict(arguments or {})
        violation = ArgumentCheck(call_schema(schema, relaxed)).check(args)
        if violation is not None:
            raise ToolError(_synthetic_envelope("validation_error", violation.message, name, violation.details))
        if confirm is not None and confirm in required and args.get(confirm) is not True:
            envelope = _synthetic_envelope("confirmation_required", f"'{name}' requires {confirm}=true.", name)
            envelope["error"]["required_flags"] = ["--confirm"]
            raise ToolError(envelope)
        if key_input is not None and key_input in required and not (args.get(key_input) or idempotency_key):
            envelope = _synthetic_envelope("idempotency_required", f"'{name}' requires an idempotency key.", name)
            envelope["error"]["required_flags"] = ["--idempotency-key"]
            raise ToolError(envelope)
        return {"valid": True, "tool": name}

    async def call_result(
        self,
        tool: str,
        arguments: Mapping[str, JSONValue] | None = None,
        *,
        idempotency_key: str | None = None,
        stage: bool = False,
    ) -> CallResult:
        """Call ``tool`` and return its answer without raising for a tool error.

        Args:
            tool: the tool name (``payments_create_refund``).
            arguments: the tool's arguments.
            idempotency_key: the caller's ledger id, sent as ``_meta.idempotency_key``.
            stage: ask for the draft form (``_meta.stage: true``).

        A JSON-RPC error answer and a result the official client refuses are error results here
        (``is_error``), not :class:`GatewayUnavailable`; see the module docstring.

        Raises:
            GatewayUnavailable: the gateway failed or did not answer within the timeout.
        """
        session = self._require()
        meta: dict[str, Any] = {}
        if idempotency_key is not None:
            meta["idempotency_key"] = idempotency_key
        if stage:
            meta["stage"] = True
        try:
            name = await self.resolve_tool(tool)
        except ToolError as refused:
            return CallResult(data=refused.envelope, effect=None, is_error=True, envelope=refused.envelope)
        try:
            with anyio.fail_after(self.timeout):
                result = await session.call_tool(name, dict(arguments or {}), meta=meta or None)
        except Exception as exc:
            failure = self._failure(exc, tool)
            if isinstance(failure, GatewayUnavailable):
                raise failure from None
            return CallResult(data=failure.envelope, effect=None, is_error=True, envelope=failure.envelope)
        effect = _effect_of(result)
        if result.is_error:
            envelope = envelope_of(result, tool)
            return CallResult(data=envelope, effect=effect, is_error=True, envelope=envelope)
        return CallResult(data=result_data(result), effect=effect, is_error=False)

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, JSONValue] | None = None,
        *,
        idempotency_key: str | None = None,
        stage: bool = False,
    ) -> tuple[JSONValue, JSONObject | None]:
        """Call ``tool``; return ``(data, effect)``.

        Raises:
            ToolError: the gateway answered with an error (``.envelope``, ``.effect``, ``.exit_code``).
            GatewayUnavailable: the gateway failed or did not answer within the timeout.
        """
        answer = await self.call_result(tool, arguments, idempotency_key=idempotency_key, stage=stage)
        if answer.is_error:
            raise ToolError(answer.envelope or {}, effect=answer.effect)
        return answer.data, answer.effect

    def _require(self) -> Any:
        if self._session is None:
            raise RuntimeError("AnvilClient is not connected: use `async with`")
        return self._session
