"""The manifest's ``credential_hosts``: a reviewer's consent that an operation's own host gets its credential."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anvil.air.codec import document_json, load_document
from anvil.compiler import build
from anvil.compiler.manifest.parse import parse_manifest
from anvil.errors import AirError

SPEC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Status", "version": "1"},
    "servers": [{"url": "https://api.example.com/v1"}],
    "components": {"securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "X-Api-Key"}}},
    "security": [{"key": []}],
    "paths": {
        "/incidents": {
            "get": {
                "operationId": "listIncidents",
                "servers": [{"url": "https://status.example.net/v1"}],
                "responses": {"200": {"description": "ok"}},
            }
        },
        "/items": {"get": {"operationId": "listItems", "responses": {"200": {"description": "ok"}}}},
    },
}


def _build(tmp_path: Path, entry: str = "") -> Any:
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    manifest = tmp_path / "anvil.yaml"
    manifest.write_text(f"operations:\n  status.incidents.list:\n    state: approved\n{entry}", encoding="utf-8")
    return build(spec, manifest=manifest, service_id="status")


def test_entries_are_host_names_or_ip_addresses_lower_cased() -> None:
    text = "operations:\n  x:\n    credential_hosts: [Upload.Example.COM, 10.0.0.1, '[::1]']\n"
    manifest, found = parse_manifest(text, "anvil.yaml")
    assert found == [] and manifest is not None
    assert manifest.operations[0].credential_hosts == ("upload.example.com", "10.0.0.1", "::1")


@pytest.mark.parametrize("entry", ["status.example.net,com", "https://status.example.net", "*.example.net", "a b"])
def test_an_entry_that_is_no_host_is_refused(entry: str) -> None:
    manifest, found = parse_manifest(f"operations:\n  x:\n    credential_hosts: ['{entry}']\n", "anvil.yaml")
    assert [d.code for d in found] == ["manifest/wrong_type"]
    assert manifest is not None and manifest.operations[0].credential_hosts is None


def test_without_consent_the_compiler_warns_and_the_air_keeps_no_new_field(tmp_path: Path) -> None:
    result = _build(tmp_path)
    op = next(op for op in result.document.operations if op.id == "status.incidents.list")
    assert op.credential_hosts is None
    [warning] = [d for d in result.diagnostics if d.code == "server/operation_server"]
    assert warning.severity == "warning" and "withheld there unless ANVIL_CREDENTIAL_HOSTS" in warning.message
    assert "credentialHosts" not in json.dumps(document_json(result.document))  # existing bundles unchanged


def test_consent_is_compiled_into_the_air_and_loads_back(tmp_path: Path) -> None:
    result = _build(tmp_path, "    credential_hosts: [status.example.net]\n")
    op = next(op for op in result.document.operations if op.id == "status.incidents.list")
    assert op.credential_hosts == ("status.example.net",)
    data = document_json(result.document)
    loaded = load_document(json.loads(json.dumps(data)))
    assert loaded.operations == result.document.operations
    [warning] = [d for d in result.diagnostics if d.code == "server/operation_server"]
    assert warning.message.endswith("its credential goes there (credential_hosts names status.example.net).")


def test_an_air_credential_host_that_is_no_host_does_not_load(tmp_path: Path) -> None:
    data = document_json(_build(tmp_path, "    credential_hosts: [status.example.net]\n").document)
    index = next(i for i, op in enumerate(data["operations"]) if op["id"] == "status.incidents.list")
    data["operations"][index]["credentialHosts"] = ["status.example.net,com"]
    with pytest.raises(AirError) as refused:
        load_document(data)
    assert refused.value.code == "air/invalid" and "credentialHosts" in refused.value.message
