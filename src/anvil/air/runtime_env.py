"""Every ``ANVIL_*`` variable Anvil reads from its environment, and who may set it in a deployment.

One registry for the two sides that must agree: the CLI (the only code that reads the environment) and
the deployment generator, whose Terraform refuses ``var.env`` and ``credential_secret_refs`` keys that
shadow a runtime control. The refused set is derived from here (the ``compiler`` and ``fixed`` owners), so
a control the runtime starts reading is refused as soon as it is registered, and ``tests/air/test_runtime_env.py``
fails while a name the CLI reads is missing from this table.

Owners:

* ``compiler`` - the generated Terraform sets it from reviewed inputs; external maps may not.
* ``fixed`` - a runtime control the reviewed deployment leaves at its default (retention, timeout,
  connection and allowlist controls); external maps may not set it either.
* ``operator`` - an operator input ``var.env`` may carry (the upstream base URL, which the compiler-owned
  host allowlist still bounds; inbound identity; the audit sink; limits).
* ``client`` - read only by client commands (``anvil run``, ``anvil compile``), never by the gateway.

Credentials are the ``ANVIL_<PROFILE>_*`` variables an operation's auth names: a namespace, not entries
(:data:`CREDENTIAL_NAMESPACE`).
"""

from __future__ import annotations

from typing import Final, Literal

from anvil._dataclass import dataclass

__all__ = [
    "CREDENTIAL_NAMESPACE",
    "OTEL_ENV",
    "RUNTIME_ENV",
    "RUNTIME_ENV_FAMILIES",
    "EnvVar",
    "Owner",
    "is_registered",
    "names_owned_by",
    "prefixes_owned_by",
    "registered",
]

Owner = Literal["compiler", "fixed", "operator", "client"]
#: The prefix every Anvil variable shares; what follows it for credentials is ``<PROFILE>_<SUFFIX>``.
CREDENTIAL_NAMESPACE: Final = "ANVIL_"


@dataclass(frozen=True, slots=True)
class EnvVar:
    """One variable (or, in :data:`RUNTIME_ENV_FAMILIES`, a prefix naming one variable per bundle)."""

    name: str
    owner: Owner
    summary: str


#: Every variable by name, grouped by owner. Keep each group sorted.
RUNTIME_ENV: Final[tuple[EnvVar, ...]] = (
    EnvVar("ANVIL_ALLOWED_HOSTS", "compiler", "Upstream hosts the executor may call (comma list)."),
    EnvVar("ANVIL_AUTH_PROFILE", "compiler", "The outbound credential profile: credentials are ANVIL_<PROFILE>_*."),
    EnvVar("ANVIL_CREDENTIALS", "compiler", "Where outbound credentials come from: '', env or secret_manager."),
    EnvVar("ANVIL_ENV", "compiler", "dev, staging or prod; everything but dev fails closed."),
    EnvVar("ANVIL_LEDGER", "compiler", "The durable idempotency ledger URI."),
    EnvVar("ANVIL_LEDGER_RESULT_TTL_SECONDS", "compiler", "How long a completed result is replayed."),
    EnvVar("ANVIL_LOG_FORMAT", "compiler", "The gateway's log lines on stderr: text or json (Cloud Logging's shape)."),
    EnvVar("ANVIL_METRICS_AUTH", "compiler", "on: /metrics needs the /mcp bearer; off: open (default on but in dev)."),
    EnvVar("ANVIL_OTEL_EXPORTER", "compiler", "Traces and metrics: none, otlp, cloud_trace or console."),
    EnvVar("ANVIL_SECRET_PROJECT", "compiler", "The project holding credential secrets."),
    EnvVar("ANVIL_SERVICE_ID", "compiler", "The AIR service id the deployment serves."),
    EnvVar("ANVIL_UPSTREAM_TIMEOUT_MS", "compiler", "The per-attempt upstream deadline."),
    EnvVar("ANVIL_DERIVED_KEY_WINDOW_SECONDS", "fixed", "How long a result under a derived key replays."),
    EnvVar("ANVIL_HEADER_TIMEOUT_SECONDS", "fixed", "How long a connection may take to send its request head."),
    EnvVar("ANVIL_KEEP_ALIVE_SECONDS", "fixed", "How long an idle kept-alive connection stays open."),
    EnvVar("ANVIL_LEDGER_BINDING_TTL_SECONDS", "fixed", "How long a completed row keeps its fingerprint."),
    EnvVar("ANVIL_LEDGER_LOCK_TIMEOUT_MS", "fixed", "Each ledger call's bounded wait."),
    EnvVar("ANVIL_MAX_CONNECTIONS", "fixed", "Inbound connections open at once."),
    EnvVar("ANVIL_AUDIT_FILE", "operator", "Where audit lines go (a file, or - for stderr)."),
    EnvVar("ANVIL_BASE_URL", "operator", "The upstream base URL (default: the AIR server URL), within the allowlist."),
    EnvVar("ANVIL_CREDENTIAL_HOSTS", "operator", "Hosts a declared OAuth2 token endpoint may be on (comma list)."),
    EnvVar("ANVIL_DEBUG", "operator", "1: print a traceback for an internal error."),
    EnvVar("ANVIL_DISCLOSURE", "operator", "What tools/list shows at rest: auto, flat, search or laddered."),
    EnvVar("ANVIL_INBOUND_AUDIENCE", "operator", "The audience inbound tokens must carry."),
    EnvVar("ANVIL_INBOUND_AUTH_MODE", "operator", "Inbound auth: none, static, jwt, branchyard or oidc."),
    EnvVar("ANVIL_INBOUND_ISSUER", "operator", "The issuer inbound tokens must carry."),
    EnvVar("ANVIL_INBOUND_JWKS_URI", "operator", "Where inbound token keys are fetched."),
    EnvVar("ANVIL_INBOUND_LEEWAY_SECONDS", "operator", "Clock-skew leeway for inbound tokens."),
    EnvVar("ANVIL_PRINCIPALS_FILE", "operator", "Static bearer-token principals and their grants."),
    EnvVar("ANVIL_REST_BODY_LIMIT", "operator", "The largest POST /call body in bytes."),
    EnvVar("ANVIL_RESULT_TOKEN_BUDGET", "operator", "The response budget of one answer in tokens (0: no cut)."),
    EnvVar("ANVIL_SURFACE_BUDGET", "operator", "The surface-at-rest budget of tools/list in o200k tokens."),
    EnvVar("ANVIL_MAX_FILE_BYTES", "client", "anvil compile: the largest spec, $ref or manifest file."),
    EnvVar("ANVIL_MCP_TARGET", "client", "anvil run: the MCP server to route through."),
    EnvVar("ANVIL_MCP_TOKEN_ENV", "client", "anvil run: the variable holding the MCP bearer token."),
)

#: Per-bundle variables: the prefix followed by the bundle's connector id (``ANVIL_BASE_URL_TEAM_GITHUB``).
RUNTIME_ENV_FAMILIES: Final[tuple[EnvVar, ...]] = (
    EnvVar("ANVIL_ALLOWED_HOSTS_", "fixed", "One bundle's own host allowlist (wins over ANVIL_ALLOWED_HOSTS)."),
    EnvVar("ANVIL_BASE_URL_", "operator", "One bundle's upstream base URL."),
    EnvVar("ANVIL_BASE_URL__", "operator", "Where an operation server (named by its host) is re-pointed."),
)


#: The standard OpenTelemetry variables ``anvil serve`` reads (:mod:`anvil.cli.serve_telemetry`), with an
#: exporter other than ``none``. Not Anvil's to own: an operator may set them through ``var.env``.
OTEL_ENV: Final[tuple[EnvVar, ...]] = (
    EnvVar("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "operator", "Spans per export batch (512)."),
    EnvVar("OTEL_BSP_MAX_QUEUE_SIZE", "operator", "Spans queued at most; more are dropped and counted (2048)."),
    EnvVar("OTEL_BSP_SCHEDULE_DELAY", "operator", "The longest a span waits for its batch, ms (5000)."),
    EnvVar("OTEL_EXPORTER_OTLP_CERTIFICATE", "operator", "The collector's CA certificate file (OTLP/HTTPS)."),
    EnvVar("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", "operator", "The client certificate file (mTLS)."),
    EnvVar("OTEL_EXPORTER_OTLP_CLIENT_KEY", "operator", "The client certificate's key file (mTLS)."),
    EnvVar("OTEL_EXPORTER_OTLP_COMPRESSION", "operator", "gzip or none."),
    EnvVar("OTEL_EXPORTER_OTLP_ENDPOINT", "operator", "The OTLP base URL (http://localhost:4318; gRPC 4317)."),
    EnvVar("OTEL_EXPORTER_OTLP_HEADERS", "operator", "Extra export request headers (k=v,k2=v2)."),
    EnvVar("OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE", "operator", "The CA certificate file, for metrics."),
    EnvVar("OTEL_EXPORTER_OTLP_METRICS_CLIENT_CERTIFICATE", "operator", "The client certificate file, for metrics."),
    EnvVar("OTEL_EXPORTER_OTLP_METRICS_CLIENT_KEY", "operator", "The client key file, for metrics."),
    EnvVar("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "operator", "The metrics URL, used as it is."),
    EnvVar("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "operator", "Extra headers of metric exports."),
    EnvVar("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "operator", "http/protobuf or grpc, for metrics."),
    EnvVar("OTEL_EXPORTER_OTLP_PROTOCOL", "operator", "http/protobuf (default) or grpc."),
    EnvVar("OTEL_EXPORTER_OTLP_TIMEOUT", "operator", "The bound on one export request, ms (10000)."),
    EnvVar("OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "operator", "The CA certificate file, for traces."),
    EnvVar("OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE", "operator", "The client certificate file, for traces."),
    EnvVar("OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY", "operator", "The client key file, for traces."),
    EnvVar("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "operator", "The traces URL, used as it is."),
    EnvVar("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "operator", "Extra headers of span exports."),
    EnvVar("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "operator", "http/protobuf or grpc, for traces."),
    EnvVar("OTEL_METRIC_EXPORT_INTERVAL", "operator", "How often metrics are exported, ms (60000)."),
    EnvVar("OTEL_RESOURCE_ATTRIBUTES", "operator", "Resource attributes (k=v,...; gcp.project_id for cloud_trace)."),
    EnvVar("OTEL_SERVICE_NAME", "operator", "The service.name spans and metrics carry."),
    EnvVar("OTEL_TRACES_SAMPLER", "operator", "Which traces are exported (parentbased_always_on; traceidratio...)."),
    EnvVar("OTEL_TRACES_SAMPLER_ARG", "operator", "The traceidratio samplers' ratio, 0..1 (1)."),
)


def is_registered(name: str) -> bool:
    """True when ``name`` is a registered variable or a registered family prefix."""
    return any(var.name == name for var in (*RUNTIME_ENV, *RUNTIME_ENV_FAMILIES))


def registered(name: str) -> str:
    """``name``, once checked against the registry: how the CLI spells a variable it reads.

    Raises:
        KeyError: ``name`` is not registered (a bug: register it, and decide who may set it).
    """
    if not is_registered(name):
        raise KeyError(f"{name} is not in anvil.air.runtime_env.RUNTIME_ENV")
    return name


def names_owned_by(*owners: Owner) -> tuple[str, ...]:
    """The registered variables with one of ``owners``, sorted."""
    return tuple(sorted(var.name for var in RUNTIME_ENV if var.owner in owners))


def prefixes_owned_by(*owners: Owner) -> tuple[str, ...]:
    """The registered family prefixes with one of ``owners``, sorted."""
    return tuple(sorted(var.name for var in RUNTIME_ENV_FAMILIES if var.owner in owners))
