"""The persisted generator inputs (``generation.json``, original-ledger §3.7).

Every compiler-owned byte is a pure function of (AIR, :class:`Generation`). Persisting the second half
lets a freshness check regenerate the bundle and compare bytes without knowing the original flags.
"""

from __future__ import annotations

import json
import re
from typing import Any

from anvil._dataclass import dataclass
from anvil.errors import BundleError

__all__ = ["DEPLOYMENT_NAMESPACE_PATTERN", "Generation", "parse_generation"]

#: A persisted deployment namespace: a lowercase provider-safe id (original-ledger §4.8).
DEPLOYMENT_NAMESPACE_PATTERN = re.compile(r"^[a-z][a-z0-9-]{0,127}$")

_STRING_OPTIONS = ("mcpEndpoint", "cliNpmPackage", "cliOci")


@dataclass(frozen=True, slots=True, kw_only=True)
class Generation:
    """Generator inputs that are not in AIR. ``None`` means unset (written as JSON ``null``).

    ``deployment_namespace`` keys deployment resources and the ledger namespace; when unset the AIR
    service id is used.
    """

    mcp_endpoint: str | None = None
    cli_npm_package: str | None = None
    cli_oci: str | None = None
    deployment_namespace: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``generation.json`` object, keys in the original's order."""
        return {
            "schemaVersion": 1,
            "resourceOptions": {
                "mcpEndpoint": self.mcp_endpoint,
                "cliNpmPackage": self.cli_npm_package,
                "cliOci": self.cli_oci,
                "deploymentNamespace": self.deployment_namespace,
            },
        }


def _invalid(detail: str) -> BundleError:
    return BundleError(
        "bundle/invalid",
        f"generation.json is invalid: {detail}",
        hint="Recompile the bundle with `anvil compile` to persist the generator inputs.",
    )


def parse_generation(text: str | bytes) -> Generation:
    """Parse and validate ``generation.json`` bytes.

    Raises:
        BundleError: ``bundle/invalid`` when the text is not JSON, the schema version is not 1, an
            option has the wrong type, or the deployment namespace is not provider-safe.
    """
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _invalid("not valid JSON") from exc
    if not isinstance(data, dict) or data.get("schemaVersion") != 1:
        raise _invalid("schemaVersion must be 1")
    options = data.get("resourceOptions")
    if not isinstance(options, dict):
        raise _invalid("resourceOptions must be an object")
    for key in _STRING_OPTIONS:
        if options.get(key) is not None and not isinstance(options.get(key), str):
            raise _invalid(f"resourceOptions.{key} must be a string or null")
    namespace = options.get("deploymentNamespace")
    if namespace is not None and (not isinstance(namespace, str) or not DEPLOYMENT_NAMESPACE_PATTERN.match(namespace)):
        raise _invalid(
            "deploymentNamespace must be a 1-128 character lowercase provider-safe id starting with a letter"
        )
    return Generation(
        mcp_endpoint=options.get("mcpEndpoint"),
        cli_npm_package=options.get("cliNpmPackage"),
        cli_oci=options.get("cliOci"),
        deployment_namespace=namespace,
    )
