"""``anvil serve DIR_OR_BUNDLE... [--stdio | --http [HOST:]PORT] [--auth MODE] [--base-url URL] ...``.

Serves compiled bundles as MCP tools: over stdio (the default; nothing but protocol on stdout) or one
HTTP listener (``anvil.serve.listener``) with ``/mcp`` (Streamable HTTP), ``POST /call/<tool>``
(REST), ``GET /openapi`` (the operations catalog, same auth as ``/mcp``), ``/healthz``, ``/readyz`` and
``/metrics``. Once listening it prints ``{"url": "http://HOST:PORT/mcp"}`` on stdout and one line naming
the bundles and auth mode on stderr.

Bundles: each argument is a bundle directory (holding ``air.json``; its id is its AIR service id, or
the one the operator gives it as ``ID=DIR``) or a folder whose every bundle beneath is served (its id is
the path relative to that folder, e.g. ``team/github``). The id names the bundle in the start-up lines
and in a fleet (tool prefixes, connectors, ``ANVIL_BASE_URL_<ID>``); ledger rows never depend on it.
Two or more bundles are a fleet: tool names are prefixed ``<fold(id)>__<tool>``. One
bundle lists exactly as it always did, unless a caller's token carries a grant (then prefixed too).
Duplicate ids (``fleet/duplicate_bundle``), colliding tool names (``fleet/tool_collision``) and a folder
without bundles (``fleet/no_bundles``) are refused before the port is bound.

Flags: ``--http [HOST:]PORT`` (host 127.0.0.1 by default; port 0 picks one), ``--auth
none|static|jwt|branchyard|oidc`` (default ``ANVIL_INBOUND_AUTH_MODE``, else ``none``), ``--base-url URL``
(one bundle only), ``--rest-body-limit BYTES`` (default ``ANVIL_REST_BODY_LIMIT``, else 65536),
``--allow-remote`` (bind a non-loopback host with auth ``none``, for a listener behind an
authenticating proxy; without it such a bind is refused), ``--include-unapproved`` (``ANVIL_ENV=dev``
only), ``--workers N`` (N HTTP worker processes sharing one listening socket the supervisor bound,
each with its own upstream pool, all sharing the ledger, which therefore cannot be ``memory:``;
``/metrics`` sums the workers; see :mod:`anvil.cli.workers`), ``--header-timeout SECONDS``,
``--keep-alive SECONDS`` and ``--max-connections N`` (the listener's connection limits, see
:mod:`anvil.cli.listen`), ``--metrics-auth on|off`` (``/metrics`` behind the ``/mcp`` bearer; default
``ANVIL_METRICS_AUTH``, else on outside ``ANVIL_ENV=dev``), ``--disclosure auto|flat|search|laddered``,
``--surface-budget TOKENS`` and ``--result-token-budget TOKENS`` (what ``tools/list`` shows at rest and how
long one answer may be: :mod:`anvil.cli.serve_disclosure`, :mod:`anvil.serve.discovery`). Inbound auth
needs HTTP: ``--stdio`` with a mode other than ``none`` is refused.

Observing it (:mod:`anvil.cli.serve_telemetry`): ``ANVIL_OTEL_EXPORTER`` other than ``none`` starts the
telemetry (:mod:`anvil.telemetry`: one span per call and its children, metrics, exported in the background)
and says where it goes on stderr; ``ANVIL_LOG_FORMAT=json`` writes the gateway's own lines as JSON.

The HTTP listener runs on uvloop and httptools when they are installed (default dependencies on
Linux); the start-up line on stderr names the event loop and HTTP parser in use.

The flags and the environment are checked and built into one :class:`~anvil.cli.serve_config.ServeConfig`
(:mod:`anvil.cli.serve_config` lists every variable) before anything is bound or opened; this module
passes it ``os.environ``, then opens the ledger (creating its schema when the store lets us; ``anvil
ledger init`` does the same explicitly), the audit sink and the upstream pool, builds the fleet and
serves it, or starts and watches the HTTP workers.

Exit status: 0 after a clean shutdown (SIGINT/SIGTERM), 2 usage, 3 bundles or configuration that
cannot be served.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TextIO

from anvil.cli import collector
from anvil.cli.listen import inherited_listener, limit_argv, register_listener_flags
from anvil.cli.serve_config import HttpBind, ServeConfig, ServeSettings, config_from_env, ledger_options
from anvil.cli.serve_telemetry import Observation, observation
from anvil.errors import ConfigError

if TYPE_CHECKING:
    import httpx

    from anvil.air.model import Document
    from anvil.ledger.base import Ledger
    from anvil.runtime.audit import AuditSink, RecordSink
    from anvil.runtime.tracing import Tracer
    from anvil.runtime.upstream import UpstreamClient
    from anvil.serve.fleet import Fleet, FleetBundle
    from anvil.serve.metrics import FleetMetrics
    from anvil.telemetry.pipeline import Telemetry

__all__ = [
    "RESUMES_COLLECTOR",
    "disclosure_line",
    "ledger_scope_lines",
    "prepare_ledger",
    "register",
    "run",
    "warn_unless_ready",
]

_TOKEN_MODES: Final = frozenset({"jwt", "branchyard", "oidc"})
#: ``run`` runs the cyclic collector again itself, once the server is built (see :mod:`anvil.cli.collector`).
RESUMES_COLLECTOR: Final = True


def register(parser: argparse.ArgumentParser) -> None:
    """Add the ``serve`` flags to its subparser."""
    parser.add_argument(
        "bundles",
        metavar="DIR_OR_BUNDLE",
        nargs="+",
        help="a bundle directory written by `anvil compile` (ID=DIR names it, else its service id does), "
        "or a folder of bundles",
    )
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="serve over stdin/stdout (the default)")
    transport.add_argument(
        "--http", metavar="[HOST:]PORT", help="serve the HTTP listener (/mcp, /call, probes; host 127.0.0.1)"
    )
    parser.add_argument(
        "--base-url", metavar="URL", help="the upstream base URL (one bundle; overrides ANVIL_BASE_URL)"
    )
    parser.add_argument(
        "--auth",
        metavar="MODE",
        help="inbound auth: none, static, jwt, branchyard or oidc (default ANVIL_INBOUND_AUTH_MODE, else none)",
    )
    parser.add_argument(
        "--rest-body-limit", metavar="BYTES", help="largest POST /call body (default ANVIL_REST_BODY_LIMIT, else 65536)"
    )
    parser.add_argument(
        "--allow-remote", action="store_true", help="allow a non-loopback bind with auth none (behind a proxy)"
    )
    parser.add_argument(
        "--disclosure",
        metavar="MODE",
        help="what tools/list shows at rest: auto (default: flat when it fits the surface budget, else search), "
        "flat, search or laddered (default ANVIL_DISCLOSURE)",
    )
    parser.add_argument(
        "--surface-budget",
        metavar="TOKENS",
        help="the surface-at-rest budget in o200k tokens (default ANVIL_SURFACE_BUDGET, else 20000)",
    )
    parser.add_argument(
        "--result-token-budget",
        metavar="TOKENS",
        help="the response budget of one answer in tokens; 0 turns the cut off "
        "(default ANVIL_RESULT_TOKEN_BUDGET, else 8000)",
    )
    parser.add_argument(
        "--include-unapproved", action="store_true", help="also list unapproved operations (ANVIL_ENV=dev only)"
    )
    parser.add_argument(
        "--workers",
        metavar="N",
        type=int,
        default=1,
        help="HTTP worker processes sharing one listening socket and the ledger (default 1)",
    )
    parser.add_argument(
        "--metrics-auth",
        metavar="on|off",
        help="/metrics needs the /mcp bearer (default ANVIL_METRICS_AUTH, else on outside ANVIL_ENV=dev)",
    )
    parser.add_argument("--worker-index", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker-count", type=int, help=argparse.SUPPRESS)
    register_listener_flags(parser)


def _audit(settings: ServeSettings) -> AuditSink | RecordSink | None:
    from anvil.runtime.audit import FileAuditSink, GatewayAuditSink, StreamAuditSink

    if settings.audit_file == "-":
        return GatewayAuditSink(StreamAuditSink(sys.stderr))
    if settings.audit_file:
        return GatewayAuditSink(FileAuditSink(Path(settings.audit_file)))
    return None


def _fleet_bundles(
    sources: Sequence[tuple[str, Document]],
    settings: Sequence[ServeSettings],
    client: httpx.AsyncClient | UpstreamClient,
    ledger: Any,
    audit: AuditSink | RecordSink | None,
    skills: Sequence[tuple[tuple[str, str], ...]] = (),
    tracer: Tracer | None = None,
) -> list[FleetBundle]:
    from anvil.runtime.context import DEFAULT_DERIVED_KEY_WINDOW_SECONDS, DEFAULT_TIMEOUT_MS, RuntimeContext
    from anvil.serve.fleet import FleetBundle

    bundles = []
    for index, ((bundle_id, document), found) in enumerate(zip(sources, settings, strict=True)):
        window = found.derived_key_window_seconds
        context = RuntimeContext(
            derived_key_window_seconds=DEFAULT_DERIVED_KEY_WINDOW_SECONDS if window is None else window,
            service_id=document.service.id,
            base_url=found.base_url,
            client=client,
            env=found.env,  # type: ignore[arg-type]
            allowed_hosts=found.allowed_hosts,
            server_urls=found.server_urls,
            timeout_ms=found.timeout_ms if found.timeout_ms is not None else DEFAULT_TIMEOUT_MS,
            auth_profile=found.auth_profile,
            credentials=found.credentials,
            ledger=ledger,
            audit=audit,  # type: ignore[arg-type]
            tracer=tracer,
            propagate_trace=bool(document.service.propagate_trace),
        )
        skill = skills[index] if index < len(skills) else ()
        bundles.append(FleetBundle(id=bundle_id, document=document, context=context, skill=skill))
    return bundles


def ledger_scope_lines(fleet: Fleet) -> list[str]:
    """One line per bundle naming the ledger scope its keys live in, where its rows live, and a digest
    over both: two gateways share idempotency keys for a bundle exactly when they print the same digest."""
    from anvil.runtime.sharing import ledger_scope_line

    return [ledger_scope_line(bundle.id, bundle.document, bundle.context) for bundle in fleet.bundles]


def disclosure_line(fleet: Fleet) -> str:
    """The start-up line saying what an anonymous caller's ``tools/list`` shows and what it costs."""
    surface = fleet.default.surface
    budget = surface.settings.surface_budget
    flat = surface.measure
    requested = ""
    if surface.requested == "auto":
        requested = f" (chosen by auto: the flat list is {flat.shown(budget)})"
    elif surface.requested == "laddered" and surface.mode != "laddered" and surface.plan is not None:
        requested = (
            f" (laddered declined: {surface.plan.reason}; chosen as auto would: the flat list is {flat.shown(budget)})"
        )
    if surface.mode == "flat":
        listed = f"{flat.tools} tool{'s' if flat.tools != 1 else ''}, {flat.shown(budget)}"
        return f"anvil: disclosure flat{requested}: tools/list shows {listed} (surface budget {budget:,} tokens)"
    rest = surface.at_rest()
    if surface.mode == "laddered":
        cards = len(surface.cards)
        return (
            f"anvil: disclosure laddered: tools/list shows {rest.tools} tools "
            f"({cards} lane card{'s' if cards != 1 else ''}), "
            f"{rest.tokens:,} tokens at rest (surface budget {budget:,}); {flat.tools} tools are listed once their "
            "lane card is opened"
        )
    return (
        f"anvil: disclosure {surface.mode}{requested}: tools/list shows {rest.tools} tools, {rest.tokens:,} tokens "
        f"at rest (surface budget {budget:,}); {flat.tools} tools are found with anvil_search_tools"
    )


def _say(observe: Observation, line: str) -> None:
    """One start-up line on stderr: as it is, or as a JSON log line with ``ANVIL_LOG_FORMAT=json``."""
    if observe.log_format == "json":
        from anvil.telemetry.logs import log_line

        line = log_line(line)
    print(line, file=sys.stderr, flush=True)


def _lines(observe: Observation) -> TextIO | None:
    """Where printed start-up lines go: stderr (None), or stderr as JSON lines with ``ANVIL_LOG_FORMAT=json``."""
    if observe.log_format != "json":
        return None
    from typing import cast

    from anvil.telemetry.logs import JsonLines

    return cast(TextIO, JsonLines(sys.stderr))  # a text stream for print(), not a file


def _announce(
    fleet: Fleet, config: ServeConfig, observe: Observation, url: str | None, telemetry: Telemetry | None = None
) -> None:
    for line in ledger_scope_lines(fleet):
        _say(observe, line)
    _say(observe, disclosure_line(fleet))
    if telemetry is not None:
        _say(observe, telemetry.describe())
    if url is None:
        return
    from anvil.serve.mcp.http import server_stack

    ids = ", ".join(bundle.id for bundle in fleet.bundles)
    count = len(fleet.bundles)
    who = f"worker {config.worker[0]}/{config.worker[1]} " if config.worker is not None else ""
    print(json.dumps({"url": url}), flush=True)
    _say(
        observe,
        f"anvil: {who}serving {count} bundle{'s' if count != 1 else ''} ({ids}) at {url}, "
        f"inbound auth {config.inbound.mode}, /metrics {'behind it' if observe.metrics_auth else 'open'}, "
        f"on {server_stack()}",
    )


async def _serve(config: ServeConfig, observe: Observation) -> None:
    from anvil.ledger.registry import open_ledger
    from anvil.runtime.connections import PooledUpstream
    from anvil.serve.answer_store import keeper_for
    from anvil.serve.auth.middleware import build_authenticator
    from anvil.serve.fleet import Fleet
    from anvil.serve.metrics import FleetMetrics, ObservedAuditSink

    first = config.settings[0]
    telemetry = _telemetry(observe)
    ledger: Ledger | None = None
    if config.ledger_uri is not None:
        ledger = open_ledger(config.ledger_uri, options=ledger_options(first, config.ledger_namespace))
        await prepare_ledger(ledger, _lines(observe))
    lines = _audit(first)
    metrics: FleetMetrics | None = None
    if config.bind is not None:
        metrics = FleetMetrics(multiprocess_dir=config.metrics_dir)
        if telemetry is not None:
            metrics.add_collector(telemetry.prometheus())
    audit = ObservedAuditSink(metrics, lines) if metrics is not None else lines
    sock: socket.socket | None = None
    upstream = PooledUpstream()  # one keep-alive pool per upstream host, shared by every bundle
    jwks_client: httpx.AsyncClient | None = None
    try:
        if config.inbound.mode in _TOKEN_MODES:  # only a token mode fetches anything else (an https: JWKS)
            import httpx

            jwks_client = httpx.AsyncClient(follow_redirects=False)
        tracer = telemetry.tracer if telemetry is not None else None
        bundles = _fleet_bundles(config.bundles, config.settings, upstream, ledger, audit, config.skills, tracer)
        fleet = Fleet(
            bundles,
            include_unapproved=config.include_unapproved,
            observer=metrics,
            disclosure=config.disclosure,
            result_token_budget=config.result_token_budget,
            keeper=keeper_for(ledger),  # answers cut to the budget are kept where the ledger keeps its rows
        )
        if config.bind is None:
            from anvil.serve.mcp.server import build_server, run_stdio  # stdio is served by the SDK from the start

            _announce(fleet, config, observe, None, telemetry)  # stderr only: stdout carries nothing but the protocol
            server = build_server(fleet)
            collector.serving()
            await run_stdio(server)
            return
        authenticator = build_authenticator(config.inbound, client=jwks_client)  # refusals come before the bind
        from anvil.serve.listener import create_listener
        from anvil.serve.mcp.http import serve_http

        bind = config.bind
        app = create_listener(
            fleet,
            authenticator=authenticator,
            resource=config.inbound.resource,
            issuer=config.inbound.issuer,
            host=bind.host,
            metrics=metrics,
            rest_body_limit=config.body_limit,
            metrics_auth=observe.metrics_auth,
            trace_inbound=telemetry is not None,
        )
        sock = inherited_listener(config.listen_fd) if config.listen_fd is not None else _listen(bind)
        shown = f"[{bind.host}]" if ":" in bind.host else bind.host
        _announce(fleet, config, observe, f"http://{shown}:{sock.getsockname()[1]}/mcp", telemetry)
        await serve_http(
            app,
            sock=sock,
            handle_signals=True,
            limits=config.limits,
            json_logs=observe.log_format == "json",
            on_serving=collector.serving,
        )
    finally:
        if telemetry is not None:
            telemetry.shutdown()  # the last batch and the metrics, bounded
        await upstream.aclose()
        if jwks_client is not None:
            await jwks_client.aclose()
        if sock is not None:
            sock.close()
        if ledger is not None:
            await ledger.close()
        close = getattr(lines, "close", None)
        if callable(close):
            close()


def _telemetry(observe: Observation) -> Telemetry | None:
    """JSON logs when asked for, and the running telemetry when an exporter is configured (else None: nothing
    of OpenTelemetry is imported).

    Raises:
        ConfigError: ``config/invalid`` when the exporter cannot start (``cloud_trace`` without credentials).
    """
    if observe.log_format == "json":
        from anvil.telemetry.logs import configure_logging

        configure_logging("json")
    if not observe.telemetry.enabled:
        return None
    from anvil.telemetry.pipeline import start_telemetry

    service = dict(observe.telemetry.resource).get("service.name") or "anvil"
    try:
        telemetry = start_telemetry(observe.telemetry, service=service)
    except ValueError as exc:
        raise ConfigError(
            "config/invalid",
            f"ANVIL_OTEL_EXPORTER={observe.telemetry.exporter} cannot start: {exc}.",
            hint="Fix the exporter's settings, or set ANVIL_OTEL_EXPORTER=none.",
        ) from None
    if telemetry is not None and observe.log_format == "json" and telemetry.project:
        from anvil.telemetry.logs import configure_logging

        configure_logging("json", project=telemetry.project)  # Cloud Logging then links each line to its trace
    return telemetry


async def prepare_ledger(ledger: Ledger, stream: TextIO | None = None) -> bool:
    """Create the ledger's schema if the store lets us (idempotent; said on ``stream`` when something
    was created), then probe it once.

    A role that may not create tables is not an error here: readiness reports what is missing.

    Returns:
        Whether the ledger answered ready.
    """
    from anvil.errors import LedgerError

    try:
        if await ledger.initialize():  # a new, empty ledger where one was expected is often a typo: say so
            print(f"anvil: created a new ledger: {ledger.describe()}", file=stream or sys.stderr, flush=True)
    except LedgerError:
        pass  # readiness below tells the operator, without the backend's text
    return await warn_unless_ready(ledger, stream)


async def warn_unless_ready(ledger: Ledger, stream: TextIO | None = None) -> bool:
    """Probe the ledger once at start-up; serving goes on (``/readyz`` tells), but the operator hears now.

    Returns:
        Whether the ledger answered ready.
    """
    readiness = await ledger.check_readiness()
    if not readiness.ready:
        print(
            f"anvil: warning: the idempotency ledger is not ready ({readiness.code}); /readyz answers 503 and "
            "writes that need a key are refused until it is. Check ANVIL_LEDGER.",
            file=stream or sys.stderr,
            flush=True,
        )
    return readiness.ready


def _listen(bind: HttpBind) -> socket.socket:
    from anvil.serve.mcp.http import listen

    try:
        return listen(bind.host, bind.port)
    except OSError as exc:
        raise ConfigError(
            "config/invalid", f"Cannot listen on {bind.host}:{bind.port}: {exc.strerror or exc}."
        ) from exc


def run(args: argparse.Namespace) -> int:
    """Serve until the client disconnects (stdio) or the process is signalled (HTTP).

    Raises:
        UsageError: flags that cannot be served together (see :func:`~anvil.cli.serve_config.config_from_env`).
        BundleError: a bundle cannot be read.
        ConfigError: the environment cannot be used, the bundles cannot be served together (``fleet/*``),
            or the port cannot be bound.
    """
    import anyio

    config = config_from_env(os.environ, args)
    service = config.bundles[0][1].service.id if len(config.bundles) == 1 else "anvil-fleet"
    flag = getattr(args, "metrics_auth", None)
    observe = observation(os.environ, flag, service=service, env=config.settings[0].env)  # refused before a bind
    bind = config.bind
    if bind is not None and config.supervises:
        from anvil.cli.workers import supervise

        shown = f"[{bind.host}]" if ":" in bind.host else bind.host
        collector.serving()
        return supervise(
            _worker_argv(args),
            host=bind.host,
            port=bind.port,
            count=config.workers,
            environ=os.environ,
            shown_url=f"http://{shown}:{{port}}/mcp",
        )
    anyio.run(_serve, config, observe, **_backend_options())
    return 0


def _backend_options() -> dict[str, Any]:
    """Run on uvloop when it is installed (a default dependency on Linux)."""
    import importlib.util

    if importlib.util.find_spec("uvloop") is None:
        return {}
    return {"backend": "asyncio", "backend_options": {"use_uvloop": True}}


def _worker_argv(args: argparse.Namespace) -> list[str]:
    """The ``anvil serve`` arguments a worker gets: the same bundles and flags, without ``--http``."""
    argv = list(args.bundles)
    for flag, value in (
        ("--base-url", args.base_url),
        ("--auth", args.auth),
        ("--rest-body-limit", args.rest_body_limit),
        ("--disclosure", args.disclosure),
        ("--surface-budget", args.surface_budget),
        ("--result-token-budget", args.result_token_budget),
        ("--metrics-auth", getattr(args, "metrics_auth", None)),
    ):
        if value is not None:
            argv += [flag, value]
    if args.allow_remote:
        argv.append("--allow-remote")
    if args.include_unapproved:
        argv.append("--include-unapproved")
    return argv + limit_argv(args)
