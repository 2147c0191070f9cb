"""What ``anvil serve`` is told to serve, and how: the flags and the environment, checked and built
into one :class:`ServeConfig` by :func:`config_from_env` before anything is bound or opened.

Nothing here reads ``os.environ``: :mod:`anvil.cli.serve` passes it in, so the configuration can be
built (and tested) from any mapping. The environment it reads:

* ``ANVIL_ENV`` - ``dev``, ``staging``, anything else is ``prod``;
* the upstream of a bundle: ``--base-url`` (one bundle), else ``ANVIL_BASE_URL_<ID>`` (``<ID>`` = the
  connector upper-cased, runs of other characters than ``A-Z0-9`` as ``_``: ``ANVIL_BASE_URL_TEAM_GITHUB``),
  else ``ANVIL_BASE_URL`` (one bundle only), else the bundle's first AIR server URL (its variables at
  their defaults);
* an operation that declares its own server is sent there (its variables at their defaults), whatever
  the bundle's base URL, unless the operator re-points that server: ``ANVIL_BASE_URL_<ID>__<SERVER>``,
  or in a single bundle also ``ANVIL_BASE_URL__<SERVER>``, where ``<SERVER>`` is the server's host (and
  explicit port) folded the same way (``https://upload.example.com`` -> ``UPLOAD_EXAMPLE_COM``);
* ``ANVIL_ALLOWED_HOSTS`` - comma list for every bundle; ``ANVIL_ALLOWED_HOSTS_<ID>`` - one bundle's
  own list, which wins (every entry a host name or IP address, else ``config/invalid_host``; a
  one-label entry admits only itself, never a whole top-level domain); when neither is set, each
  bundle whose base URL the operator gave is pinned to the hosts of the URLs the operator gave it
  (the base URL and each re-pointed server). A request (and so a credential) only ever goes to its
  operation's server origin, and an approved operation whose server is outside the allowed hosts is
  refused at start-up (``config/server_not_allowed``), never redirected;
* ``ANVIL_LEDGER`` - the idempotency ledger URI shared by every bundle (``memory:``, ``sqlite:///PATH``,
  ...); when unset, ``memory:`` in dev and none elsewhere (required-key writes are then refused and
  ``/readyz`` answers 503 when some bundle needs the ledger);
* ``ANVIL_LEDGER_RESULT_TTL_SECONDS`` (default 604800), ``ANVIL_LEDGER_BINDING_TTL_SECONDS`` (how long a
  completed row keeps its fingerprint after its result expired; default 2592000),
  ``ANVIL_LEDGER_LOCK_TIMEOUT_MS`` (each ledger call's bounded wait; default 5000),
  ``ANVIL_UPSTREAM_TIMEOUT_MS``. Without ``namespace=`` in ``ANVIL_LEDGER`` the ledger table is derived
  from the first bundle's deployment namespace;
* ``ANVIL_AUTH_PROFILE`` (default ``default``) - credentials are the ``ANVIL_<PROFILE>_*`` variables the
  bundle names (:func:`credential_variables`); in a fleet of two or more bundles a variable namespaced by
  the connector (``ANVIL_<PROFILE>_<CONNECTOR>_<SCHEME>_TOKEN``, i.e. profile ``<profile>_<connector>``)
  wins over the plain one, so two bundles sharing a scheme name can hold different secrets. A plain
  variable that two or more bundles would read is never used in a fleet: when it is set and one of
  those bundles has no namespaced twin, serving is refused (``fleet/ambiguous_credential``);
* OAuth2 client credentials (:mod:`anvil.runtime.oauth`): ``ANVIL_<PROFILE>_CLIENT_ID``, ``..._CLIENT_SECRET``,
  ``..._TOKEN_ENDPOINT``, ``..._AUDIENCE``, ``..._SCOPES`` (namespaced in a fleet like the others) and
  ``ANVIL_CREDENTIAL_HOSTS``; a configured token endpoint the client secret may not go to is refused before
  binding (``config/token_endpoint_refused``);
* ``ANVIL_DERIVED_KEY_WINDOW_SECONDS`` - how long a result stored under a derived (request-fingerprint)
  key replays (default 300, 1 to 86400; the key sent upstream is unique to each reservation, so a repeat
  after the window is a new write upstream too); explicit caller keys keep ``ANVIL_LEDGER_RESULT_TTL_SECONDS``;
* ``ANVIL_AUDIT_FILE`` - one JSON line per executed call and per grant refusal (mode 0600; ``-``:
  stderr), fields as :mod:`anvil.runtime.audit` lists; unset: no audit;
* ``ANVIL_INBOUND_AUTH_MODE``; ``ANVIL_PRINCIPALS_FILE`` (static); ``ANVIL_INBOUND_ISSUER``,
  ``ANVIL_INBOUND_AUDIENCE``, ``ANVIL_INBOUND_JWKS_URI``, ``ANVIL_INBOUND_LEEWAY_SECONDS`` (token modes);
* ``ANVIL_REST_BODY_LIMIT``;
* ``ANVIL_DISCLOSURE`` (``auto``, ``flat``, ``search`` or ``laddered``; default ``auto``),
  ``ANVIL_SURFACE_BUDGET`` (the surface-at-rest budget in o200k tokens, default 20000) and
  ``ANVIL_RESULT_TOKEN_BUDGET`` (the response budget of one answer in tokens, default 8000; 0 turns the
  cut off): what ``tools/list`` shows at rest and how long an answer may be (:mod:`anvil.serve.discovery`);
* ``ANVIL_HEADER_TIMEOUT_SECONDS``, ``ANVIL_KEEP_ALIVE_SECONDS``, ``ANVIL_MAX_CONNECTIONS`` - the
  listener's connection limits (:mod:`anvil.cli.listen`; a flag wins);
* in a worker process, the folder its supervisor shares metrics through
  (:data:`anvil.cli.workers.METRICS_DIR_VARIABLE`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from anvil._dataclass import dataclass
from anvil.air.credential_names import auth_profile
from anvil.cli.listen import connection_limits
from anvil.cli.serve_disclosure import disclosure_settings, result_token_budget
from anvil.errors import ConfigError, UsageError
from anvil.serve.discovery.modes import DEFAULT_RESULT_TOKEN_BUDGET, DisclosureSettings
from anvil.serve.mcp.limits import DEFAULT_LIMITS, ConnectionLimits

if TYPE_CHECKING:
    import argparse

    from anvil.air.model import Document
    from anvil.ledger.base import LedgerOptions
    from anvil.serve.auth.middleware import InboundSettings
    from anvil.serve.fleet import BundleSource

__all__ = [
    "HttpBind",
    "ServeConfig",
    "ServeSettings",
    "allowed_hosts_variable",
    "base_url_variable",
    "bundle_settings",
    "config_from_env",
    "credential_variables",
    "derived_key_window",
    "inbound_from_env",
    "ledger_options",
    "parse_bind",
    "rest_body_limit",
    "server_urls",
    "server_variables",
    "settings_from_env",
]

_DEFAULT_HOST = "127.0.0.1"
_MAX_REST_BODY: Final = 16 * 1024 * 1024
_NON_ALNUM: Final = re.compile(r"[^A-Z0-9]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpBind:
    """Where the HTTP transport listens."""

    host: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    """One bundle's runtime settings, read from the environment and flags (everything but the HTTP client)."""

    env: str
    base_url: str
    allowed_hosts: tuple[str, ...]
    ledger_uri: str | None
    ledger_ttl_seconds: int | None
    ledger_binding_seconds: int | None = None
    ledger_lock_timeout_ms: int | None = None
    timeout_ms: int | None
    derived_key_window_seconds: int | None = None
    auth_profile: str
    credentials: Mapping[str, str]
    audit_file: str | None
    server_urls: Mapping[str, str] = field(default_factory=dict)
    """An operation server the operator re-pointed -> the URL its calls go to."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeConfig:
    """Everything ``anvil serve`` starts from, checked: built by :func:`config_from_env`."""

    bundles: tuple[tuple[str, Document], ...]
    """Each bundle's id and document, in the order served (never empty)."""
    settings: tuple[ServeSettings, ...]
    """Each bundle's runtime settings, in the order of :attr:`bundles`."""
    inbound: InboundSettings
    bind: HttpBind | None
    """Where the HTTP listener listens; None serves stdio."""
    body_limit: int
    """The largest ``POST /call`` body in bytes."""
    include_unapproved: bool
    skills: tuple[tuple[tuple[str, str], ...], ...] = ()
    """Each bundle's skill files read at start-up (served as MCP resources), in the order of :attr:`bundles`."""
    workers: int = 1
    """How many HTTP worker processes ``--workers`` asked for."""
    worker: tuple[int, int] | None = None
    """``(index, count)`` when this process is one of the workers, else None."""
    ledger_namespace: str | None = None
    """The first bundle's deployment namespace: the ledger table is derived from it."""
    metrics_dir: str | None = None
    """The folder a worker shares its metrics through, else None."""
    limits: ConnectionLimits = DEFAULT_LIMITS
    """The HTTP listener's inbound connection limits."""
    listen_fd: int | None = None
    """In a worker, the listening socket its supervisor handed down (``--listen-fd``), else None."""
    disclosure: DisclosureSettings = field(default_factory=DisclosureSettings)
    """What each caller's ``tools/list`` shows at rest (``--disclosure``, ``--surface-budget``)."""
    result_token_budget: int = DEFAULT_RESULT_TOKEN_BUDGET
    """The response budget of one answer, in tokens (``--result-token-budget``; 0: no cut)."""

    @property
    def ledger_uri(self) -> str | None:
        """The ledger every bundle shares: ``ANVIL_LEDGER``, else ``memory:`` in dev, else None (no ledger)."""
        return _effective_ledger(self.settings[0])

    @property
    def supervises(self) -> bool:
        """Whether this process starts and watches HTTP workers instead of serving itself."""
        return self.bind is not None and self.workers > 1 and self.worker is None


def config_from_env(environ: Mapping[str, str], args: argparse.Namespace) -> ServeConfig:
    """Check the ``anvil serve`` flags (``args``) and the environment, read the bundles, and build the config.

    Args:
        environ: The environment (``os.environ`` in production).
        args: The parsed ``anvil serve`` arguments (see :func:`anvil.cli.serve.register`).

    Raises:
        UsageError: a malformed ``--http``, an unknown auth mode, a remote bind with auth none and no
            ``--allow-remote``, inbound auth over stdio, ``--base-url`` with several bundles,
            ``--include-unapproved`` outside dev, or ``--workers`` that cannot be served.
        BundleError: a bundle cannot be read.
        ConfigError: the environment cannot be used, or the bundles cannot be served together
            (``fleet/*``).
    """
    from anvil.bundle.read import read_bundle
    from anvil.serve.fleet import bundle_argument, discover_bundles

    read: dict[Path, Document] = {}  # a bundle read for its service id (its name) is read once

    def service_id(path: Path) -> str:
        return read.setdefault(path, read_bundle(path)).service.id

    bind = parse_bind(args.http) if args.http else None
    inbound = inbound_from_env(environ, args.auth)
    _check_transport(bind, inbound, args.allow_remote)
    body_limit = rest_body_limit(environ, args.rest_body_limit)
    found = discover_bundles([bundle_argument(text) for text in args.bundles], service_id=service_id)
    bundles = tuple(
        (source.id, read[source.path] if source.path in read else read_bundle(source.path)) for source in found
    )
    settings = tuple(bundle_settings(environ, bundles, base_url=args.base_url))
    if args.include_unapproved and settings[0].env != "dev":
        raise UsageError("cli/usage", "--include-unapproved is allowed only with ANVIL_ENV=dev")
    worker = _check_workers(args, bind, settings[0])
    return ServeConfig(
        bundles=bundles,
        settings=settings,
        inbound=inbound,
        bind=bind,
        body_limit=body_limit,
        include_unapproved=args.include_unapproved,
        skills=_skills(found),
        workers=args.workers,
        worker=worker,
        ledger_namespace=_ledger_namespace(found[0].path, bundles[0][1]),
        metrics_dir=_metrics_dir(environ, worker),
        limits=connection_limits(environ, args),
        listen_fd=getattr(args, "listen_fd", None),
        disclosure=disclosure_settings(environ, args),
        result_token_budget=result_token_budget(environ, getattr(args, "result_token_budget", None)),
    )


def _effective_ledger(first: ServeSettings) -> str | None:
    return first.ledger_uri or ("memory:" if first.env == "dev" else None)


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


def _plain_http(url: str) -> bool:
    """Whether ``url`` is an ``http(s)://HOST[:PORT]`` URL the upstream client can send to (its host a host
    name or an IP address)."""
    from anvil.air.hosts import is_host

    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0  # reading the port checks its range
    except ValueError:
        return False
    host = parts.hostname or ""
    return parts.scheme.lower() in ("http", "https") and is_host(host) and parts.username is None and port_ok


def settings_from_env(
    environ: Mapping[str, str],
    *,
    base_url: str | None,
    default_base_url: str | None,
    server_urls: Mapping[str, str] | None = None,
) -> ServeSettings:
    """Read the runtime settings from ``environ`` (``os.environ`` in production) and the flags.

    Args:
        environ: The environment.
        base_url: ``--base-url``, if given (wins over ``ANVIL_BASE_URL``).
        default_base_url: The service's own first server URL, if any.
        server_urls: The operation servers the operator re-pointed (:func:`server_urls`).

    Raises:
        ConfigError: ``config/invalid`` when no base URL is known or a number is malformed;
            ``config/invalid_host`` for an entry of ``ANVIL_ALLOWED_HOSTS`` or ``ANVIL_CREDENTIAL_HOSTS``
            that is not a host name or IP address.
    """
    from anvil.air.servers import server_hosts
    from anvil.runtime.context import normalize_env

    repointed = dict(server_urls or {})
    operator_url = base_url or environ.get("ANVIL_BASE_URL") or None
    url = operator_url or default_base_url
    if not url:
        raise ConfigError(
            "config/invalid", "No upstream base URL is known for this bundle.", hint="Set ANVIL_BASE_URL or --base-url."
        )
    if operator_url and not _plain_http(operator_url):
        raise ConfigError(
            "config/invalid",
            "The upstream base URL must be http(s)://HOST[:PORT][/PATH], without user info.",
            hint="Fix ANVIL_BASE_URL (or --base-url, ANVIL_BASE_URL_<ID>); credentials belong in their "
            "ANVIL_* credential variables.",
        )
    from anvil.cli.host_lists import host_variable

    allowed = host_variable(environ, "ANVIL_ALLOWED_HOSTS")
    host_variable(environ, "ANVIL_CREDENTIAL_HOSTS")  # refused here, not silently ignored at the first call
    if not allowed and operator_url:
        allowed = server_hosts([operator_url, *repointed.values()])
    return ServeSettings(
        env=normalize_env(environ.get("ANVIL_ENV")),
        base_url=url,
        allowed_hosts=allowed,
        ledger_uri=environ.get("ANVIL_LEDGER") or None,
        ledger_ttl_seconds=_int_env(environ, "ANVIL_LEDGER_RESULT_TTL_SECONDS"),
        ledger_binding_seconds=_int_env(environ, "ANVIL_LEDGER_BINDING_TTL_SECONDS"),
        ledger_lock_timeout_ms=_int_env(environ, "ANVIL_LEDGER_LOCK_TIMEOUT_MS"),
        timeout_ms=_int_env(environ, "ANVIL_UPSTREAM_TIMEOUT_MS"),
        derived_key_window_seconds=derived_key_window(environ),
        auth_profile=auth_profile(environ),
        credentials={name: value for name, value in environ.items() if name.startswith("ANVIL_")},
        audit_file=environ.get("ANVIL_AUDIT_FILE") or None,
        server_urls=repointed,
    )


_MAX_DERIVED_WINDOW: Final = 86_400


def derived_key_window(environ: Mapping[str, str]) -> int | None:
    """``ANVIL_DERIVED_KEY_WINDOW_SECONDS`` (1 to 86400), or None for the runtime default (300).

    Raises:
        ConfigError: ``config/invalid`` for anything but a whole number in range.
    """
    found = _int_env(environ, "ANVIL_DERIVED_KEY_WINDOW_SECONDS")
    if found is not None and not 1 <= found <= _MAX_DERIVED_WINDOW:
        raise ConfigError(
            "config/invalid",
            f"ANVIL_DERIVED_KEY_WINDOW_SECONDS must be from 1 to {_MAX_DERIVED_WINDOW} seconds.",
            hint="Unset it for the default (300).",
        )
    return found


def base_url_variable(bundle_id: str) -> str:
    """``ANVIL_BASE_URL_<ID>``: the connector of ``bundle_id`` upper-cased, other runs as ``_``."""
    from anvil.serve.auth.naming import fold_bundle_id

    return "ANVIL_BASE_URL_" + (_NON_ALNUM.sub("_", fold_bundle_id(bundle_id).upper()).strip("_") or "BUNDLE")


def server_variables(bundle_id: str | None, server: str, *, fleet: bool = False) -> tuple[str, ...]:
    """The variables that re-point an operation ``server`` (its URL), the first set one winning:
    ``ANVIL_BASE_URL_<ID>__<SERVER>``, and unless in a fleet ``ANVIL_BASE_URL__<SERVER>`` (``anvil run``,
    with no bundle id, reads only that one)."""
    from anvil.air.servers import SERVER_VARIABLE_PREFIX, server_variable

    single = server_variable(server)
    names = (
        [] if bundle_id is None else [base_url_variable(bundle_id) + "__" + single.removeprefix(SERVER_VARIABLE_PREFIX)]
    )
    if not fleet:
        names.append(single)
    return tuple(names)


def server_urls(
    environ: Mapping[str, str], document: Document, bundle_id: str | None, *, fleet: bool = False
) -> dict[str, str]:
    """The operation servers of ``document`` the operator re-pointed (:func:`server_variables`) -> the URL.

    Raises:
        ConfigError: ``config/invalid`` for a value that is not an ``http(s)://HOST[:PORT][/PATH]`` URL.
    """
    from anvil.air.servers import own_servers

    out: dict[str, str] = {}
    for server in own_servers(document):
        for name in server_variables(bundle_id, server, fleet=fleet):
            value = environ.get(name) or None
            if value is None:
                continue
            if not _plain_http(value):
                raise ConfigError(
                    "config/invalid",
                    f"{name} must be http(s)://HOST[:PORT][/PATH], without user info.",
                    hint="Credentials belong in their ANVIL_* credential variables.",
                )
            out[server] = value
            break
    return out


def _repoint_variable(bundle_id: str, server: str, *, fleet: bool) -> str:
    """The variable a refusal tells the operator to set to re-point ``server`` (the one every mode reads)."""
    return server_variables(bundle_id, server, fleet=fleet)[-1]


def bundle_settings(
    environ: Mapping[str, str], bundles: Sequence[tuple[str, Document]], *, base_url: str | None
) -> list[ServeSettings]:
    """The settings of each bundle (``(id, document)`` pairs), as the module docstring describes.

    Raises:
        UsageError: ``--base-url`` with two or more bundles.
        ConfigError: ``config/invalid`` when a bundle has no known base URL or a number is malformed;
            ``config/server_not_allowed`` when approved operations' own servers are outside their
            bundle's allowed hosts (every such server of every bundle named in one refusal).
    """
    from anvil.air.servers import resolve_server
    from anvil.cli.host_lists import host_variable
    from anvil.cli.server_hosts import OutsideServer, outside_servers, server_refusal
    from anvil.serve.auth.naming import fold_bundle_id

    fleet = len(bundles) > 1
    if fleet and base_url:
        raise UsageError(
            "cli/usage",
            "--base-url applies to one bundle; a fleet reads ANVIL_BASE_URL_<ID> for each.",
            hint=f"For example {base_url_variable(bundles[0][0])}=https://...",
        )
    shared = {name: value for name, value in environ.items() if not (fleet and name == "ANVIL_BASE_URL")}
    contested = _contested_credentials(environ, bundles) if fleet else set()
    out: list[ServeSettings] = []
    outside: list[OutsideServer] = []
    for bundle_id, document in bundles:
        servers = document.service.servers
        operator = base_url or environ.get(base_url_variable(bundle_id)) or None
        default = resolve_server(servers[0]).url if servers else None
        repointed = server_urls(environ, document, bundle_id, fleet=fleet)
        try:
            found = settings_from_env(shared, base_url=operator, default_base_url=default, server_urls=repointed)
        except ConfigError as exc:
            if "base URL" not in exc.message:
                raise
            raise ConfigError(
                "config/invalid",
                f"No upstream base URL is known for bundle '{bundle_id}'.",
                hint=f"Set {base_url_variable(bundle_id)}" + ("." if fleet else ", ANVIL_BASE_URL or --base-url."),
            ) from None
        if fleet:
            overlay = _namespaced(document, found.auth_profile, fold_bundle_id(bundle_id), environ)
            own = {name: value for name, value in found.credentials.items() if name not in contested}
            found = replace(found, credentials={**own, **overlay})
        pinned = host_variable(environ, allowed_hosts_variable(bundle_id))  # refused like the shared list
        if pinned:
            found = replace(found, allowed_hosts=pinned)
        _check_token_endpoints(bundle_id, document, found)
        outside += outside_servers(
            bundle_id,
            document,
            env=found.env,
            allowed_hosts=found.allowed_hosts,
            server_urls=found.server_urls,
            repoint=partial(_repoint_variable, bundle_id, fleet=fleet),
            allowlist=allowed_hosts_variable(bundle_id) if fleet else "ANVIL_ALLOWED_HOSTS",
        )
        out.append(found)
    if outside:
        raise server_refusal(outside)
    return out


def _check_token_endpoints(bundle_id: str, document: Document, found: ServeSettings) -> None:
    """Refuse, before anything is bound, a configured OAuth2 client whose token endpoint may not receive
    its secret (the runtime would refuse every call with ``auth_required`` anyway).

    Raises:
        ConfigError: ``config/token_endpoint_refused``, or ``config/invalid`` for a client authentication
            the runtime cannot perform.
    """
    from anvil.runtime.credentials import credential_profile

    for op in document.operations:
        if not op.is_approved or op.auth.type != "oauth2_client_credentials":
            continue
        from anvil.runtime.oauth import TokenFailure, client_credentials  # only a client-credentials bundle

        profile = credential_profile(found.auth_profile, op.auth)
        try:
            client_credentials(op.auth, profile, found.credentials, env=found.env, allowed_hosts=found.allowed_hosts)
        except TokenFailure as failure:
            refused = failure.code == "oauth/token_endpoint_refused"
            raise ConfigError(
                "config/token_endpoint_refused" if refused else "config/invalid",
                f"Bundle '{bundle_id}', {op.id}: {failure.message}",
                hint="Add the endpoint's host to ANVIL_CREDENTIAL_HOSTS (exact host name), or point the "
                "TOKEN_ENDPOINT variable at an allowed https endpoint."
                if refused
                else "Serve it with client_secret_basic or client_secret_post.",
            ) from None


def allowed_hosts_variable(bundle_id: str) -> str:
    """``ANVIL_ALLOWED_HOSTS_<ID>``: one bundle's own host allowlist (wins over ``ANVIL_ALLOWED_HOSTS``)."""
    return "ANVIL_ALLOWED_HOSTS_" + base_url_variable(bundle_id).removeprefix("ANVIL_BASE_URL_")


def _contested_credentials(environ: Mapping[str, str], bundles: Sequence[tuple[str, Document]]) -> set[str]:
    """The plain credential variables two or more fleet bundles would read (they never cross bundles).

    Raises:
        ConfigError: ``fleet/ambiguous_credential`` when such a variable is set and a bundle that reads
            it has no connector-namespaced twin: which bundle's secret it is cannot be known.
    """
    from anvil.runtime.credentials import credential_env, credential_profile
    from anvil.serve.auth.naming import fold_bundle_id

    profile = auth_profile(environ)
    readers: dict[str, dict[str, str]] = {}  # plain name -> {bundle id: its twin}
    for bundle_id, document in bundles:
        connector = fold_bundle_id(bundle_id)
        for op in document.operations:
            if not op.is_approved or op.auth.type == "none":
                continue
            plain = credential_env(op.auth, credential_profile(profile, op.auth))
            twins = credential_env(op.auth, credential_profile(f"{profile}_{connector}", op.auth))
            for name, twin in zip(plain, twins, strict=True):
                readers.setdefault(name, {}).setdefault(bundle_id, twin)
    contested = {name for name, found in readers.items() if len(found) > 1}
    for name in sorted(contested):
        if not environ.get(name):
            continue
        lacking = [(bundle_id, twin) for bundle_id, twin in readers[name].items() if not environ.get(twin)]
        if lacking:
            ids = ", ".join(readers[name])
            raise ConfigError(
                "fleet/ambiguous_credential",
                f"{name} is read by several bundles ({ids}), so it is not used in a fleet.",
                hint="Set each bundle's own variable instead: " + ", ".join(twin for _, twin in lacking) + ".",
            )
    return contested


def _namespaced(document: Document, profile: str, connector: str, environ: Mapping[str, str]) -> dict[str, str]:
    """Plain credential variable -> the value of its connector-namespaced twin, where that twin is set."""
    from anvil.runtime.credentials import credential_env, credential_profile

    overlay: dict[str, str] = {}
    for op in document.operations:
        plain = credential_env(op.auth, credential_profile(profile, op.auth))
        twins = credential_env(op.auth, credential_profile(f"{profile}_{connector}", op.auth))
        for name, twin in zip(plain, twins, strict=True):
            if environ.get(twin):
                overlay[name] = environ[twin]
    return overlay


def credential_variables(document: Document, auth_profile: str) -> tuple[str, ...]:
    """Every credential variable the approved operations of ``document`` read under ``auth_profile``
    (a fleet member's profile is ``<profile>_<connector>``, e.g. ``default_github``)."""
    from anvil.runtime.credentials import credential_profile, expected_env

    names: list[str] = []
    for op in document.operations:
        if op.is_approved and op.auth.type != "none":
            names.extend(n for n in expected_env(op.auth, credential_profile(auth_profile, op.auth)) if n not in names)
    return tuple(names)


def inbound_from_env(environ: Mapping[str, str], mode: str | None) -> InboundSettings:
    """The inbound auth settings from ``--auth`` (``mode``) or ``ANVIL_INBOUND_AUTH_MODE`` and the rest.

    Raises:
        UsageError: an unknown mode.
        ConfigError: a malformed leeway.
    """
    from anvil.serve.auth.middleware import AUTH_MODES, InboundSettings

    chosen = (mode if mode is not None else environ.get("ANVIL_INBOUND_AUTH_MODE", "")).strip() or "none"
    if chosen not in AUTH_MODES:
        raise UsageError(
            "cli/usage", f"unknown inbound auth mode {chosen!r}", hint=f"Use one of {', '.join(AUTH_MODES)}."
        )
    leeway = _int_env(environ, "ANVIL_INBOUND_LEEWAY_SECONDS")
    principals = environ.get("ANVIL_PRINCIPALS_FILE") or None
    return InboundSettings(
        mode=chosen,  # type: ignore[arg-type]
        principals_file=Path(principals) if principals else None,
        issuer=environ.get("ANVIL_INBOUND_ISSUER") or None,
        audience=environ.get("ANVIL_INBOUND_AUDIENCE") or None,
        jwks_uri=environ.get("ANVIL_INBOUND_JWKS_URI") or None,
        leeway_seconds=60 if leeway is None else leeway,
    )


def rest_body_limit(environ: Mapping[str, str], flag: str | None) -> int:
    """``--rest-body-limit`` or ``ANVIL_REST_BODY_LIMIT`` (bytes, 1 to 16 MiB), default 65536.

    Raises:
        ConfigError: not a whole number in range.
    """
    from anvil.serve.rest import DEFAULT_BODY_LIMIT

    raw = (flag if flag is not None else environ.get("ANVIL_REST_BODY_LIMIT", "")).strip()
    if not raw:
        return DEFAULT_BODY_LIMIT
    if not raw.isdigit() or not 1 <= int(raw) <= _MAX_REST_BODY:
        raise ConfigError(
            "config/invalid", f"The REST body limit must be a whole number of bytes from 1 to {_MAX_REST_BODY}."
        )
    return int(raw)


def ledger_options(settings: ServeSettings, namespace: str | None) -> LedgerOptions:
    """The ledger options from the settings (unset values keep the defaults).

    Raises:
        ConfigError: a value out of range (``config/invalid``).
    """
    from anvil.ledger.base import LedgerOptions

    chosen: dict[str, Any] = {"namespace": namespace}
    if settings.ledger_ttl_seconds:
        chosen["result_ttl_seconds"] = settings.ledger_ttl_seconds
    if settings.ledger_binding_seconds:
        chosen["binding_ttl_seconds"] = settings.ledger_binding_seconds
    if settings.ledger_lock_timeout_ms:
        chosen["lock_timeout_seconds"] = settings.ledger_lock_timeout_ms / 1000
    return LedgerOptions(**chosen)


def _check_transport(bind: HttpBind | None, inbound: InboundSettings, allow_remote: bool) -> None:
    if bind is None:
        if inbound.mode != "none":
            raise UsageError(
                "cli/usage",
                f"inbound auth mode {inbound.mode!r} needs the HTTP listener",
                hint="Serve with --http [HOST:]PORT, or use --auth none over stdio.",
            )
        return
    from anvil.serve.mcp.http import is_loopback

    if inbound.mode == "none" and not allow_remote and not is_loopback(bind.host):
        raise UsageError(
            "cli/usage",
            f"refusing to serve on non-loopback host {bind.host!r} without inbound authentication",
            hint="Bind 127.0.0.1, set --auth static|jwt, or pass --allow-remote behind an authenticating proxy.",
        )


def _ledger_namespace(path: Path, document: Document) -> str | None:
    """The deployment namespace of a bundle (original-ledger §4.8): the ledger table is derived from it."""
    from anvil.bundle.read import ledger_namespace

    return ledger_namespace(path, document)


def _skills(sources: Sequence[BundleSource]) -> tuple[tuple[tuple[str, str], ...], ...]:
    from anvil.bundle.skillpack import read_skill_package

    return tuple(read_skill_package(source.path) for source in sources)


def _metrics_dir(environ: Mapping[str, str], worker: tuple[int, int] | None) -> str | None:
    from anvil.cli.workers import METRICS_DIR_VARIABLE

    return (environ.get(METRICS_DIR_VARIABLE) or None) if worker is not None else None


def _check_workers(args: argparse.Namespace, bind: HttpBind | None, first: ServeSettings) -> tuple[int, int] | None:
    """Refuse a worker count that cannot be served; the ``(index, count)`` of a worker process, else None.

    Raises:
        UsageError: ``--workers`` outside 1-64, over stdio, or with a per-process (``memory:``) ledger.
    """
    from anvil.cli.workers import MAX_WORKERS

    if not 1 <= args.workers <= MAX_WORKERS:
        raise UsageError("cli/usage", f"--workers must be from 1 to {MAX_WORKERS}")
    if args.worker_index is not None:
        return (args.worker_index, args.worker_count or args.workers)
    if args.workers == 1:
        return None
    if bind is None:
        raise UsageError("cli/usage", "--workers needs the HTTP listener", hint="Serve with --http [HOST:]PORT.")
    uri = _effective_ledger(first)
    if uri is not None and uri.startswith("memory:"):
        raise UsageError(
            "cli/usage",
            "--workers needs a ledger the workers share; memory: lives in one process",
            hint="Set ANVIL_LEDGER=sqlite:///PATH (or PostgreSQL, Firestore).",
        )
    return None
