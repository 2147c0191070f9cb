"""``anvil conformance --live CONFIG.json``: read-only checks against a deployed gateway (original-core §8.3).

The config is ``{"mcpUrl": "https://.../mcp", "headers": {"Authorization": "Bearer ${TOKEN}"},
"probeReads": ["<operation id>", ...], "inputs": {"<operation id>": {...}}}``. It is validated
completely before any connection: every probe must name an approved **read** of this bundle, and a
config that names a mutation anywhere (in ``probeReads`` or ``inputs``) is refused
(``proof/live_mutation_refused``): the live lane never drives a write. Any other key is refused
(``proof/live_config_invalid``), so a misspelt one is never ignored. ``${NAME}`` in a header value is
replaced from the environment at connect time; header values are never written to the record.

Checks, in order; the first failure stops the lane (later checks are ``skipped``), because nothing a
gateway says can be trusted before it proves what it runs:

* ``artifact-attestation``: ``GET /healthz`` reports ``artifactHash`` equal to the local bundle's
  (:func:`anvil.serve.health.artifact_hash`);
* ``surface-live``: the live ``tools/list`` equals the local ``tools.json`` (names, schemas, annotations);
* ``gate-live``: a confirming operation, called as a dry run without confirmation, is refused with
  ``confirmation_required`` (a dry run never reaches the upstream, even on a gateway that failed to gate);
* ``read-live`` per opted-in read: it answers without an error;
* ``identity-live``: every credential group of a delegated operation had at least one successful read
  (``skipped`` when no approved operation acts for a delegated user).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx

from anvil._dataclass import dataclass
from anvil._types import JSONObject
from anvil.air.inputs import safety_keys
from anvil.air.model import Document, Operation
from anvil.air.tools import DRY_RUN_ARGUMENT
from anvil.bundle.example import example_input
from anvil.bundle.hash import bundle_hash
from anvil.bundle.read import read_bundle
from anvil.client import AnvilClient, GatewayUnavailable
from anvil.errors import ConfigError
from anvil.proof.conformance.lane import summarize
from anvil.proof.conformance.static import divergence
from anvil.proof.records import timestamp
from anvil.serve.health import artifact_hash

__all__ = ["LIVE_CHECK_IDS", "LIVE_FILE", "LiveConfig", "live_conformance", "parse_live_config"]

LIVE_FILE: Final = "conformance.live.report.json"
#: Every live check id, in order (a public contract).
LIVE_CHECK_IDS: Final[tuple[str, ...]] = (
    "artifact-attestation",
    "surface-live",
    "gate-live",
    "read-live",
    "identity-live",
)
_CONFIG_KEYS: Final = frozenset({"mcpUrl", "headers", "probeReads", "inputs"})
_MAX_CONFIG_BYTES: Final = 1024 * 1024
_MAX_PROBES: Final = 100
_VARIABLE: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TIMEOUT_S: Final = 30.0
_DELEGATED: Final = frozenset({"delegated", "end_user", "impersonation"})


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveConfig:
    """A validated live config: the endpoint, header templates, and the opted-in reads with inputs."""

    mcp_url: str
    headers: dict[str, str]
    probe_reads: tuple[str, ...]
    inputs: dict[str, JSONObject]

    @property
    def origin(self) -> str:
        """``scheme://host[:port]`` of the endpoint (no credentials, path or query)."""
        parts = urlsplit(self.mcp_url)
        host = parts.hostname or ""
        shown = f"[{host}]" if ":" in host else host
        return urlunsplit((parts.scheme, shown + (f":{parts.port}" if parts.port else ""), "", "", ""))


def _invalid(message: str) -> ConfigError:
    return ConfigError(
        "proof/live_config_invalid", message, hint="See `anvil conformance --help` for the config shape."
    )


def _resolve(doc: Document, name: str) -> Operation | None:
    return next((op for op in doc.operations if name in (op.id, op.mcp.tool_name)), None)


def parse_live_config(text: str | bytes, doc: Document) -> LiveConfig:
    """Validate a live config against the bundle's AIR.

    Raises:
        ConfigError: ``proof/live_config_invalid`` for a malformed config, an unknown key, an unknown
            operation or a probe that is not approved; ``proof/live_mutation_refused`` for a config naming a mutation.
    """
    if len(text) > _MAX_CONFIG_BYTES:
        raise _invalid("the live config is larger than 1 MiB")
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        raise _invalid("the live config is not JSON") from None
    if not isinstance(data, dict):
        raise _invalid("the live config must be a JSON object")
    # A misspelt key (``probeRead``) would otherwise be dropped silently and the lane run with less
    # than the operator asked for.
    unknown = sorted(set(data) - _CONFIG_KEYS)
    if unknown:
        named = ", ".join(repr(key[:40]) for key in unknown[:5])
        raise _invalid(f"unknown live config key(s) {named}; the keys are {', '.join(sorted(_CONFIG_KEYS))}")
    url = data.get("mcpUrl")
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        raise _invalid("mcpUrl must be an http(s) URL without credentials")
    headers = data.get("headers", {})
    if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise _invalid("headers must map header names to strings")
    probes = data.get("probeReads", [])
    inputs = data.get("inputs", {})
    if not isinstance(probes, list) or not all(isinstance(p, str) for p in probes) or len(probes) > _MAX_PROBES:
        raise _invalid(f"probeReads must be a list of at most {_MAX_PROBES} operation ids")
    if not isinstance(inputs, dict) or not all(isinstance(v, dict) for v in inputs.values()):
        raise _invalid("inputs must map operation ids to argument objects")
    resolved: list[str] = []
    for name in [*probes, *inputs]:
        op = _resolve(doc, name)
        if op is None:
            raise _invalid(f"'{name}' names no operation of this bundle")
        if not op.is_read:
            raise ConfigError(
                "proof/live_mutation_refused",
                f"'{name}' is a mutation ({op.id}); the live lane drives opted-in reads only, never a write.",
                hint="Remove every mutation from probeReads and inputs.",
            )
        if not op.is_approved:
            raise _invalid(f"'{name}' is not approved in this bundle ({op.state})")
        if name in probes and op.id not in resolved:
            resolved.append(op.id)
    by_id = {_resolve(doc, name).id: dict(args) for name, args in inputs.items()}  # type: ignore[union-attr]
    unprobed = sorted(set(by_id) - set(resolved))
    if unprobed:
        raise _invalid(f"inputs names operations that are not probeReads: {', '.join(unprobed)}")
    return LiveConfig(mcp_url=str(url), headers=dict(headers), probe_reads=tuple(resolved), inputs=by_id)


def _expand(headers: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    def one(value: str) -> str:
        def swap(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in environ:
                raise _invalid(f"header variable ${{{name}}} is not set")
            return environ[name]

        return _VARIABLE.sub(swap, value)

    return {name: one(value) for name, value in headers.items()}


def _check(check_id: str, status: str, detail: str, **extra: Any) -> JSONObject:
    return {"id": check_id, "surfaces": ["live", "local"], "status": status, "detail": detail, **extra}


async def _attest(http: httpx.AsyncClient, config: LiveConfig, expected: str) -> tuple[JSONObject, str | None]:
    try:
        answer = await http.get(f"{config.origin}/healthz")
        body = answer.json()
    except (httpx.HTTPError, ValueError):
        return _check("artifact-attestation", "fail", "GET /healthz did not answer JSON"), None
    observed = body.get("artifactHash") if isinstance(body, dict) else None
    if answer.status_code != 200 or not isinstance(observed, str):
        return _check(
            "artifact-attestation", "fail", f"/healthz answered {answer.status_code} without artifactHash"
        ), None
    if observed != expected:
        divergences = [divergence("healthz.artifactHash", "live", "local", observed, expected)]
        detail = f"the gateway runs {observed[:12]}…, not the local bundle {expected[:12]}…"
        return _check("artifact-attestation", "fail", detail, divergences=divergences), observed
    return _check("artifact-attestation", "pass", f"the gateway runs this bundle ({expected[:12]}…)"), observed


def _surface(live: list[JSONObject], directory: Path) -> JSONObject:
    try:
        local = json.loads((directory / "tools.json").read_text(encoding="utf-8")).get("tools", [])
    except (OSError, ValueError, AttributeError):
        return _check("surface-live", "fail", "the local tools.json is unreadable")
    keys = ("inputSchema", "annotations")
    mine = {t.get("name"): {k: t.get(k) for k in keys} for t in local if isinstance(t, dict)}
    theirs = {t.get("name"): {k: t.get(k) for k in keys} for t in live if isinstance(t, dict)}
    divergences = [
        divergence(f"tools.{name}", "live", "local", name in theirs and theirs[name], name in mine and mine[name])
        for name in sorted(set(mine) | set(theirs), key=str)
        if mine.get(name) != theirs.get(name)
    ]
    if divergences:
        return _check("surface-live", "fail", "the live tools/list differs from tools.json", divergences=divergences)
    return _check("surface-live", "pass", f"{len(mine)} tool(s) listed live exactly as in tools.json")


async def _gate(client: AnvilClient, doc: Document) -> JSONObject:
    op = next((op for op in doc.operations if op.is_approved and op.confirmation.required), None)
    if op is None:
        return _check("gate-live", "skipped", "no approved operation requires confirmation")
    keys = safety_keys(op)
    arguments = {k: v for k, v in example_input(op).items() if k not in (keys.confirm, keys.idempotency)}
    arguments[DRY_RUN_ARGUMENT] = True
    result = await client.call_result(op.mcp.tool_name, arguments)
    error = (result.envelope or {}).get("error") if result.is_error else None
    code = error.get("code") if isinstance(error, dict) else None
    if code == "confirmation_required":
        return _check(
            "gate-live",
            "pass",
            f"{op.id} (dry run, no confirm) was refused with confirmation_required",
            operationId=op.id,
        )
    detail = f"{op.id} without confirmation answered {code or 'success'} instead of confirmation_required"
    return _check(
        "gate-live",
        "fail",
        detail,
        operationId=op.id,
        divergences=[divergence("answer.code", "live", "local", code, "confirmation_required")],
    )


async def _read(client: AnvilClient, op: Operation, arguments: JSONObject) -> JSONObject:
    result = await client.call_result(op.mcp.tool_name, arguments)
    if result.is_error:
        error = (result.envelope or {}).get("error")
        code = error.get("code") if isinstance(error, dict) else "unknown_upstream_error"
        return _check("read-live", "fail", f"the read answered {code}", operationId=op.id)
    return _check("read-live", "pass", "the opted-in read answered", operationId=op.id)


def _identity(doc: Document, reads: list[JSONObject]) -> JSONObject:
    delegated = [op for op in doc.operations if op.is_approved and op.auth.principal in _DELEGATED]
    if not delegated:
        return _check("identity-live", "skipped", "no approved operation acts for a delegated user")
    passed = {check.get("operationId") for check in reads if check["status"] == "pass"}
    by_id = {op.id: op for op in doc.operations}
    proven = {by_id[op_id].auth.credential_profile for op_id in passed if op_id in by_id}
    missing = sorted({str(op.auth.credential_profile) for op in delegated} - {str(p) for p in proven})
    if missing:
        return _check("identity-live", "fail", "no successful read for credential group(s) " + ", ".join(missing))
    return _check("identity-live", "pass", "every delegated credential group answered a read")


async def _live(directory: Path, doc: Document, config: LiveConfig, headers: dict[str, str]) -> list[JSONObject]:
    checks: list[JSONObject] = []
    expected = artifact_hash(doc)
    async with httpx.AsyncClient(timeout=_TIMEOUT_S, headers=headers, follow_redirects=False) as http:
        attestation, _observed = await _attest(http, config, expected)
    checks.append(attestation)
    if attestation["status"] != "pass":
        return checks
    try:
        async with AnvilClient.http(config.mcp_url, headers=headers, timeout=_TIMEOUT_S) as client:
            checks.append(_surface(await client.list_tools(), directory))
            if checks[-1]["status"] != "pass":
                return checks
            checks.append(await _gate(client, doc))
            if checks[-1]["status"] == "fail":
                return checks
            by_id = {op.id: op for op in doc.operations}
            reads = [await _read(client, by_id[op_id], config.inputs.get(op_id, {})) for op_id in config.probe_reads]
            checks += reads
            checks.append(_identity(doc, reads))
    except GatewayUnavailable:
        listed = any(check["id"] == "surface-live" for check in checks)
        checks.append(_check("read-live" if listed else "surface-live", "fail", "the MCP endpoint stopped answering"))
    return checks


def live_conformance(
    directory: Path,
    config_text: str | bytes,
    *,
    environ: Mapping[str, str],
    clock: Callable[[], datetime] | None = None,
) -> dict[str, Any]:
    """Run the live lane for ``directory`` against the gateway ``config_text`` names; return its record.

    Raises:
        BundleError: ``bundle/invalid`` when the bundle cannot be read.
        ConfigError: ``proof/live_config_invalid`` or ``proof/live_mutation_refused`` before any
            connection (see :func:`parse_live_config`).
    """
    doc = read_bundle(directory)
    config = parse_live_config(config_text, doc)
    headers = _expand(config.headers, environ)
    started = timestamp(clock)
    checks = anyio.run(_live, directory, doc, config, headers)
    ran = {check["id"] for check in checks}
    checks += [
        _check(check_id, "skipped", "not reached: an earlier check failed")
        for check_id in LIVE_CHECK_IDS
        if check_id not in ran and check_id != "read-live"
    ]
    return {
        "schemaVersion": 1,
        "bundle": directory.name,
        "startedAt": started,
        "mode": "live",
        "endpoint": config.origin,
        "probeReads": list(config.probe_reads),
        "surfaces": ["live", "local"],
        "checks": checks,
        "identity": {
            "delegatedOperations": sum(
                1 for op in doc.operations if op.is_approved and op.auth.principal in _DELEGATED
            ),
            "proof": "live-read"
            if any(c["id"] == "identity-live" and c["status"] == "pass" for c in checks)
            else "none",
            "liveIdpReadiness": "unverified",
            "detail": "only opted-in reads ran; no mutation was sent",
        },
        "summary": summarize(checks),
        "bundleHash": bundle_hash(directory),
    }
