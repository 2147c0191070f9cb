"""``deploy/env.schema.json``: the runtime environment, with the environment's defaults."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema

from anvil.air.model import Document
from anvil.air.runtime_env import OTEL_ENV
from anvil.bundle.emit import emit_bundle


def test_the_schema_names_the_required_settings_and_their_defaults(payments_doc: Document) -> None:
    schema = json.loads(emit_bundle(payments_doc)["deploy/env.schema.json"])
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["required"] == ["ANVIL_SERVICE_ID", "ANVIL_ENV", "ANVIL_ALLOWED_HOSTS"]
    props = schema["properties"]
    assert props["ANVIL_ENV"]["enum"] == ["dev", "staging", "prod"] and props["ANVIL_ENV"]["default"] == "prod"
    assert props["ANVIL_LEDGER_RESULT_TTL_SECONDS"] == {
        "type": "string",
        "pattern": "^[1-9][0-9]*$",
        "default": "604800",
        "description": props["ANVIL_LEDGER_RESULT_TTL_SECONDS"]["description"],
    }
    assert props["ANVIL_UPSTREAM_TIMEOUT_MS"]["default"] == "20000"
    assert "100..30000" in props["ANVIL_UPSTREAM_TIMEOUT_MS"]["description"]
    assert "required outside dev" in props["ANVIL_LEDGER"]["description"]
    validator = jsonschema.Draft202012Validator(schema)
    good = {"ANVIL_SERVICE_ID": "payments", "ANVIL_ENV": "prod", "ANVIL_ALLOWED_HOSTS": "payments.internal.example.com"}
    assert validator.is_valid(good)
    assert not validator.is_valid({**good, "ANVIL_LEDGER_RESULT_TTL_SECONDS": "0"})


def test_a_custom_environment_joins_the_enum_and_is_the_default(payments_doc: Document) -> None:
    doc = replace(payments_doc, service=replace(payments_doc.service, environment="test"))
    props = json.loads(emit_bundle(doc)["deploy/env.schema.json"])["properties"]
    assert props["ANVIL_ENV"]["enum"] == ["dev", "staging", "prod", "test"]
    assert props["ANVIL_ENV"]["default"] == props["ANVIL_AUTH_PROFILE"]["default"] == "test"


def test_the_schema_lists_the_telemetry_settings_and_the_standard_otel_variables(payments_doc: Document) -> None:
    schema = json.loads(emit_bundle(payments_doc)["deploy/env.schema.json"])
    props = schema["properties"]
    assert props["ANVIL_OTEL_EXPORTER"]["enum"] == ["none", "otlp", "cloud_trace", "console"]
    assert props["ANVIL_OTEL_EXPORTER"]["default"] == "cloud_trace"
    assert (props["ANVIL_LOG_FORMAT"]["default"], props["ANVIL_METRICS_AUTH"]["default"]) == ("json", "on")
    assert {name for name in props if name.startswith("OTEL_")} == {var.name for var in OTEL_ENV}
    validator = jsonschema.Draft202012Validator(schema)
    good = {"ANVIL_SERVICE_ID": "payments", "ANVIL_ENV": "prod", "ANVIL_ALLOWED_HOSTS": "payments.internal.example.com"}
    assert validator.is_valid({**good, "ANVIL_OTEL_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"})
    assert not validator.is_valid({**good, "ANVIL_OTEL_EXPORTER": "jaeger"})
    assert not validator.is_valid({**good, "ANVIL_METRICS_AUTH": "yes"})
