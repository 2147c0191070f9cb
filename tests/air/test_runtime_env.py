"""The registry of the ANVIL_* variables the runtime reads: complete, and the source of the refused set."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from anvil.air.runtime_env import (
    CREDENTIAL_NAMESPACE,
    RUNTIME_ENV,
    RUNTIME_ENV_FAMILIES,
    is_registered,
    names_owned_by,
    prefixes_owned_by,
    registered,
)
from anvil.bundle.terraform import COMPILER_OWNED_ENV, FIXED_RUNTIME_ENV, FIXED_RUNTIME_ENV_PREFIXES

CLI = Path(__file__).resolve().parents[2] / "src" / "anvil" / "cli"
_NAME = re.compile(r"ANVIL_[A-Z0-9_]*")
#: The controls var.env could once shadow because they were missing from a hand-kept list.
ESCAPED = {"ANVIL_LEDGER_BINDING_TTL_SECONDS", "ANVIL_DERIVED_KEY_WINDOW_SECONDS", "ANVIL_LEDGER_LOCK_TIMEOUT_MS"}


def variable_names(folder: Path) -> dict[str, list[str]]:
    """Every string constant spelling a whole ANVIL_* name (or a family prefix) in ``folder``'s modules."""
    found: dict[str, list[str]] = {}
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAME.fullmatch(node.value):
                if node.value != CREDENTIAL_NAMESPACE:  # ANVIL_<PROFILE>_*: credentials, a namespace
                    found.setdefault(node.value, []).append(path.name)
    return found


def test_every_anvil_variable_the_cli_reads_is_registered() -> None:
    names = variable_names(CLI)
    assert ESCAPED <= set(names)  # the scan sees the reads in cli/serve.py
    assert {name: where for name, where in names.items() if not is_registered(name)} == {}


def test_a_variable_the_cli_starts_reading_fails_until_it_is_registered(tmp_path: Path) -> None:
    (tmp_path / "serve.py").write_text(
        'import os\nTIMEOUT = os.environ.get("ANVIL_HEADER_TIMEOUT_MS")\n', encoding="utf-8"
    )
    names = variable_names(tmp_path)
    assert [name for name in names if not is_registered(name)] == ["ANVIL_HEADER_TIMEOUT_MS"]
    with pytest.raises(KeyError, match="ANVIL_HEADER_TIMEOUT_MS"):
        registered("ANVIL_HEADER_TIMEOUT_MS")
    assert registered("ANVIL_MAX_FILE_BYTES") == "ANVIL_MAX_FILE_BYTES"


def test_terraform_refuses_every_compiler_owned_and_fixed_variable_the_registry_names() -> None:
    assert ESCAPED <= set(FIXED_RUNTIME_ENV)
    assert FIXED_RUNTIME_ENV == names_owned_by("fixed") and COMPILER_OWNED_ENV == names_owned_by("compiler")
    assert FIXED_RUNTIME_ENV_PREFIXES == prefixes_owned_by("fixed") == ("ANVIL_ALLOWED_HOSTS_",)
    # every fixed control is one the runtime really reads, so the refused set is not a stale list either
    assert set(FIXED_RUNTIME_ENV) <= set(variable_names(CLI))
    operator = set(names_owned_by("operator"))
    assert "ANVIL_BASE_URL" in operator and "ANVIL_INBOUND_AUTH_MODE" in operator  # settable through var.env


def test_each_name_is_registered_once_with_one_owner() -> None:
    names = [var.name for var in (*RUNTIME_ENV, *RUNTIME_ENV_FAMILIES)]
    assert len(names) == len(set(names))
    assert all(var.name.endswith("_") for var in RUNTIME_ENV_FAMILIES)
    assert all(var.summary and var.owner in ("compiler", "fixed", "operator", "client") for var in RUNTIME_ENV)
