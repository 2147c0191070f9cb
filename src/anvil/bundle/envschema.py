"""``deploy/env.schema.json``: the runtime environment the gateway container reads (original-ledger §5.8).

A JSON Schema over the environment as a string map. Names only: no value here is a secret.
"""

from __future__ import annotations

from typing import Any

from anvil.air.model import Document
from anvil.air.runtime_env import OTEL_ENV
from anvil.bundle.coordinates import coordinates
from anvil.bundle.encoding import json_file
from anvil.bundle.generation import Generation

__all__ = ["ENV_SCHEMA_PATH", "emit_env_schema", "env_schema"]

ENV_SCHEMA_PATH = "deploy/env.schema.json"
_POSITIVE = "^[1-9][0-9]*$"


def env_schema(doc: Document, generation: Generation) -> dict[str, Any]:
    """The schema object (key order as written)."""
    coords = coordinates(doc, generation)
    environments = list(dict.fromkeys(("dev", "staging", "prod", coords.environment)))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Runtime environment of the Anvil gateway for {coords.service_id}",
        "type": "object",
        "required": ["ANVIL_SERVICE_ID", "ANVIL_ENV", "ANVIL_ALLOWED_HOSTS"],
        "properties": {
            "ANVIL_SERVICE_ID": {
                "type": "string",
                "const": coords.service_id,
                "description": "The AIR service id agents see; unchanged by the deployment namespace.",
            },
            "ANVIL_ENV": {
                "type": "string",
                "enum": environments,
                "default": coords.environment,
                "description": "Runtime environment; everything but dev fails closed without a durable ledger.",
            },
            "ANVIL_ALLOWED_HOSTS": {
                "type": "string",
                "default": coords.allowed_hosts,
                "description": "Comma-separated upstream hosts the executor may call.",
            },
            "ANVIL_AUTH_PROFILE": {
                "type": "string",
                "default": coords.environment,
                "description": "The outbound credential profile: credentials are read from ANVIL_<PROFILE>_*.",
            },
            "ANVIL_LEDGER": {
                "type": "string",
                "description": (
                    "The durable idempotency ledger URI (firestore://PROJECT/DATABASE/NAMESPACE), required "
                    "outside dev for required-idempotency mutations."
                ),
            },
            "ANVIL_LEDGER_RESULT_TTL_SECONDS": {
                "type": "string",
                "pattern": _POSITIVE,
                "default": "604800",
                "description": "How long a completed result is replayed, in seconds.",
            },
            "ANVIL_UPSTREAM_TIMEOUT_MS": {
                "type": "string",
                "pattern": _POSITIVE,
                "default": "20000",
                "description": "Per-attempt upstream deadline in milliseconds, 100..30000.",
            },
            "ANVIL_OTEL_EXPORTER": {
                "type": "string",
                "enum": ["none", "otlp", "cloud_trace", "console"],
                "default": "cloud_trace",
                "description": (
                    "Traces and metrics: cloud_trace exports OTLP to telemetry.googleapis.com as the runtime "
                    "identity; otlp follows the OTEL_EXPORTER_OTLP_* variables; none exports nothing."
                ),
            },
            "ANVIL_LOG_FORMAT": {
                "type": "string",
                "enum": ["text", "json"],
                "default": "json",
                "description": "The gateway's log lines on stderr; json carries Cloud Logging's trace fields.",
            },
            "ANVIL_METRICS_AUTH": {
                "type": "string",
                "enum": ["on", "off"],
                "default": "on",
                "description": "on: /metrics needs the same bearer as /mcp.",
            },
            "ANVIL_CREDENTIALS": {
                "type": "string",
                "enum": ["", "env", "secret_manager"],
                "description": "Where outbound credentials come from.",
            },
            "ANVIL_SECRET_PROJECT": {"type": "string", "description": "The project holding credential secrets."},
            **{var.name: {"type": "string", "description": var.summary} for var in OTEL_ENV},
        },
    }


def emit_env_schema(doc: Document, generation: Generation) -> dict[str, bytes]:
    """``{"deploy/env.schema.json": bytes}``."""
    return {ENV_SCHEMA_PATH: json_file(env_schema(doc, generation))}
