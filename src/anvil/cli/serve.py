"""``anvil serve BUNDLE [--stdio | --http [HOST:]PORT] [--base-url URL] [--allow-remote]``.

Serves a compiled bundle as MCP tools: over stdio (the default; nothing but protocol on stdout) or
Streamable HTTP at ``/mcp`` with ``/healthz`` (loopback unless ``--allow-remote``; once listening it
prints ``{"url": "http://HOST:PORT/mcp"}`` on stdout).

The runtime context comes from the environment, read here and nowhere else:

* ``ANVIL_ENV`` - ``dev``, ``staging``, anything else is ``prod``;
* ``ANVIL_BASE_URL`` (or ``--base-url``) - the upstream; default the service's first server URL;
* ``ANVIL_ALLOWED_HOSTS`` - comma list; when unset and a base URL was given, pinned to its host;
* ``ANVIL_LEDGER`` - the idempotency ledger URI (``memory:``, ``sqlite:///PATH``, ...); when unset,
  ``memory:`` in dev and none elsewhere (required-key writes are then refused);
* ``ANVIL_LEDGER_RESULT_TTL_SECONDS`` - how long a completed result replays;
* ``ANVIL_UPSTREAM_TIMEOUT_MS`` - per-attempt upstream timeout (100-30000);
* ``ANVIL_AUTH_PROFILE`` - the credential profile (default ``default``); credentials are the
  ``ANVIL_<PROFILE>_*`` variables the bundle names;
* ``ANVIL_AUDIT_FILE`` - append one JSON line per call to this file (``-``: stderr); unset: no audit.

Exit status: 0 after a clean shutdown, 2 usage, 3 a bundle or configuration that cannot be served.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from anvil.errors import ConfigError, UsageError

if TYPE_CHECKING:
    from anvil.air.model import Document

__all__ = ["HttpBind", "ServeSettings", "parse_bind", "register", "run", "settings_from_env"]

_DEFAULT_HOST = "127.0.0.1"


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpBind:
    """Where the HTTP transport listens."""

    host: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    """The runtime settings read from the environment and flags (everything but the HTTP client)."""

    env: str
    base_url: str
    allowed_hosts: tuple[str, ...]
    ledger_uri: str | None
    ledger_ttl_seconds: int | None
    timeout_ms: int | None
    auth_profile: str
    credentials: Mapping[str, str]
    audit_file: str | None


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``serve`` flags to its subparser."""
    parser.add_argument("bundle", metavar="BUNDLE", help="the bundle directory written by `anvil compile`")
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="serve over stdin/stdout (the default)")
    transport.add_argument("--http", metavar="[HOST:]PORT", help="serve Streamable HTTP at /mcp (host 127.0.0.1)")
    parser.add_argument("--base-url", metavar="URL", help="the upstream base URL (overrides ANVIL_BASE_URL)")
    parser.add_argument("--allow-remote", action="store_true", help="allow --http to bind a non-loopback host")
    parser.add_argument(
        "--include-unapproved", action="store_true", help="also list unapproved operations (ANVIL_ENV=dev only)"
    )


def parse_bind(value: str) -> HttpBind:
    """Parse ``--http``: ``PORT``, ``:PORT``, ``HOST:PORT`` or ``[IPv6]:PORT``.

    Raises:
        UsageError: ``cli/usage`` for anything else or a port outside 0-65535.
    """
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = "", value
    host = host.strip("[]") or _DEFAULT_HOST
    if not port_text.isdigit() or int(port_text) > 65535:
        raise UsageError("cli/usage", f"--http expects [HOST:]PORT, got {value!r}", hint="For example --http 8080.")
    return HttpBind(host=host, port=int(port_text))


def _int_env(environ: Mapping[str, str], name: str) -> int | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        raise ConfigError("config/invalid", f"{name} must be a whole number.", hint=f"Unset {name} or fix it.")
    return int(raw)


def settings_from_env(
    environ: Mapping[str, str], *, base_url: str | None, default_base_url: str | None
) -> ServeSettings:
    """Read the runtime settings from ``environ`` (``os.environ`` in production) and the flags.

    Args:
        environ: The environment.
        base_url: ``--base-url``, if given (wins over ``ANVIL_BASE_URL``).
        default_base_url: The service's own first server URL, if any.

    Raises:
        ConfigError: ``config/invalid`` when no base URL is known or a number is malformed.
    """
    from anvil.runtime.context import normalize_env, parse_allowed_hosts

    operator_url = base_url or environ.get("ANVIL_BASE_URL") or None
    url = operator_url or default_base_url
    if not url:
        raise ConfigError(
            "config/invalid", "No upstream base URL is known for this bundle.", hint="Set ANVIL_BASE_URL or --base-url."
        )
    allowed = parse_allowed_hosts(environ.get("ANVIL_ALLOWED_HOSTS"))
    if not allowed and operator_url:
        pinned = urlsplit(operator_url).hostname
        allowed = (pinned.lower(),) if pinned else ()
    return ServeSettings(
        env=normalize_env(environ.get("ANVIL_ENV")),
        base_url=url,
        allowed_hosts=allowed,
        ledger_uri=environ.get("ANVIL_LEDGER") or None,
        ledger_ttl_seconds=_int_env(environ, "ANVIL_LEDGER_RESULT_TTL_SECONDS"),
        timeout_ms=_int_env(environ, "ANVIL_UPSTREAM_TIMEOUT_MS"),
        auth_profile=environ.get("ANVIL_AUTH_PROFILE") or "default",
        credentials={name: value for name, value in environ.items() if name.startswith("ANVIL_")},
        audit_file=environ.get("ANVIL_AUDIT_FILE") or None,
    )


async def _serve(document: Document, args: argparse.Namespace, settings: ServeSettings, bind: HttpBind | None) -> None:
    import httpx

    from anvil.ledger.base import Ledger, LedgerOptions
    from anvil.ledger.registry import open_ledger
    from anvil.runtime.audit import AuditSink, FileAuditSink, StreamAuditSink
    from anvil.runtime.context import DEFAULT_TIMEOUT_MS, RuntimeContext
    from anvil.serve.gateway import Gateway
    from anvil.serve.server import build_server, run_stdio

    ledger: Ledger | None = None
    uri = settings.ledger_uri or ("memory:" if settings.env == "dev" else None)
    if uri is not None:
        options = LedgerOptions(result_ttl_seconds=settings.ledger_ttl_seconds) if settings.ledger_ttl_seconds else None
        ledger = open_ledger(uri, options=options)
    audit: AuditSink | None = None
    if settings.audit_file == "-":
        audit = StreamAuditSink(sys.stderr)
    elif settings.audit_file:
        audit = FileAuditSink(Path(settings.audit_file))
    sock = _listen(bind) if bind is not None else None
    try:
        async with httpx.AsyncClient(follow_redirects=False) as client:
            context = RuntimeContext(
                service_id=document.service.id,
                base_url=settings.base_url,
                client=client,
                env=settings.env,  # type: ignore[arg-type]
                allowed_hosts=settings.allowed_hosts,
                timeout_ms=settings.timeout_ms if settings.timeout_ms is not None else DEFAULT_TIMEOUT_MS,
                auth_profile=settings.auth_profile,
                credentials=settings.credentials,
                ledger=ledger,
                audit=audit,
            )
            gateway = Gateway(document, context, include_unapproved=args.include_unapproved)
            server = build_server(gateway)
            if sock is None:
                await run_stdio(server)
                return
            from anvil.serve.http import create_app, serve_http

            assert bind is not None
            app = create_app(server, service=gateway.service_id, host=bind.host)
            address = sock.getsockname()
            shown = f"[{bind.host}]" if ":" in bind.host else bind.host
            print(json.dumps({"url": f"http://{shown}:{address[1]}/mcp"}), flush=True)
            await serve_http(app, sock=sock, handle_signals=True)
    finally:
        if sock is not None:
            sock.close()
        if ledger is not None:
            await ledger.close()
        if isinstance(audit, FileAuditSink):
            audit.close()


def _listen(bind: HttpBind) -> socket.socket:
    from anvil.serve.http import listen

    try:
        return listen(bind.host, bind.port)
    except OSError as exc:
        raise ConfigError(
            "config/invalid", f"Cannot listen on {bind.host}:{bind.port}: {exc.strerror or exc}."
        ) from exc


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the process is signalled (HTTP).

    Raises:
        UsageError: a malformed ``--http``, a remote bind without ``--allow-remote``, or
            ``--include-unapproved`` outside dev.
        BundleError: the bundle cannot be read.
        ConfigError: the environment cannot be used.
    """
    import anyio

    bind = parse_bind(args.http) if args.http else None
    if bind is not None and not args.allow_remote:
        from anvil.serve.http import is_loopback

        if not is_loopback(bind.host):
            raise UsageError(
                "cli/usage",
                f"refusing to serve on non-loopback host {bind.host!r} without inbound authentication",
                hint="Bind 127.0.0.1, or pass --allow-remote behind an authenticating proxy.",
            )
    from anvil.bundle.read import read_bundle

    document = read_bundle(Path(args.bundle))
    servers = document.service.servers
    settings = settings_from_env(
        os.environ, base_url=args.base_url, default_base_url=servers[0].url if servers else None
    )
    if args.include_unapproved and settings.env != "dev":
        raise UsageError("cli/usage", "--include-unapproved is allowed only with ANVIL_ENV=dev")
    anyio.run(_serve, document, args, settings, bind)
    return 0
