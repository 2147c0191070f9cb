"""The ``anvil deploy ledger`` inputs and their validation, in the order of original-ledger §4.1.

:func:`check_flags` runs before the filesystem is touched (format only); :func:`parse_ttl` and
:func:`check_mode` run after the store contract is proven fresh, so a stale bundle reports staleness
even when the flags are also inconsistent. Every refusal is a :class:`DeployError` with a registered code.
"""

from __future__ import annotations

import re

from anvil._dataclass import dataclass
from anvil.errors import AnvilError

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "MAX_TTL_SECONDS",
    "MIN_TTL_SECONDS",
    "DeployError",
    "LedgerFlags",
    "check_flags",
    "check_mode",
    "parse_ttl",
]

MIN_TTL_SECONDS = 60
MAX_TTL_SECONDS = 31_536_000
#: The completed-result retention when ``--ttl-seconds`` is omitted (the contract's default).
DEFAULT_TTL_SECONDS = 604_800
_PROJECT = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")
_DATABASE = re.compile(r"^[a-z][a-z0-9-]{2,61}[a-z0-9]$")
_LOCATION = re.compile(r"^[a-z][a-z0-9-]{1,31}[a-z0-9]$")
_DIGITS = re.compile(r"^[0-9]{1,9}$")
DEFAULT_DATABASE = "(default)"


class DeployError(AnvilError):
    """A refused ``anvil deploy`` input or a bundle that cannot be planned (exit 1, nothing on stdout)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerFlags:
    """The raw flags (strings as given; None when omitted)."""

    project: str | None = None
    database: str | None = None
    database_mode: str | None = None
    location: str | None = None
    ttl_seconds: str | None = None
    json: bool = False
    tfvars: bool = False

    @property
    def mode(self) -> str:
        """The effective provisioning mode (``shared`` unless ``dedicated`` was given)."""
        return self.database_mode or "shared"

    @property
    def resolved(self) -> bool:
        """True when both store coordinates were given."""
        return self.project is not None and self.database is not None


def check_flags(flags: LedgerFlags) -> None:
    """Step 1: output choice and the format of mode, project, database and location.

    Raises:
        DeployError: ``deploy/output_conflict``, ``deploy/invalid_database_mode``, ``deploy/invalid_project``,
            ``deploy/invalid_database`` or ``deploy/invalid_location``.
    """
    if flags.json and flags.tfvars:
        raise DeployError("deploy/output_conflict", "Choose either --json or --tfvars, not both.")
    if flags.database_mode is not None and flags.database_mode not in ("shared", "dedicated"):
        raise DeployError("deploy/invalid_database_mode", "Invalid --database-mode: expected shared or dedicated.")
    if flags.project is not None and not _PROJECT.fullmatch(flags.project):
        raise DeployError(
            "deploy/invalid_project",
            "Invalid --project: expected a lowercase GCP project id (6-30 characters, starting with a letter and "
            "ending with a letter or digit).",
        )
    if flags.database is not None and flags.database != DEFAULT_DATABASE and not _DATABASE.fullmatch(flags.database):
        raise DeployError(
            "deploy/invalid_database",
            "Invalid --database: expected (default) or a 4-63 character Firestore database id.",
        )
    if flags.location is not None and not _LOCATION.fullmatch(flags.location):
        raise DeployError(
            "deploy/invalid_location",
            "Invalid --location: expected a Firestore regional or multi-region location id (lowercase letters, "
            "digits, and hyphens).",
        )


def parse_ttl(flags: LedgerFlags, default: int = DEFAULT_TTL_SECONDS) -> int:
    """Step 5: the completed-result retention in seconds (``default``: the contract's, else 604800).

    Raises:
        DeployError: ``deploy/invalid_ttl`` unless digits only, from 60 to 31536000.
    """
    if flags.ttl_seconds is None:
        return default
    text = flags.ttl_seconds
    if not _DIGITS.fullmatch(text) or not MIN_TTL_SECONDS <= int(text) <= MAX_TTL_SECONDS:
        raise DeployError("deploy/invalid_ttl", "--ttl-seconds must be an integer from 60 to 31536000.")
    return int(text)


def check_mode(flags: LedgerFlags) -> None:
    """Step 6: mode consistency (runs for every backend, the ``none`` variant included).

    Raises:
        DeployError: ``deploy/dedicated_default_database``, ``deploy/dedicated_requires_database``,
            ``deploy/dedicated_requires_location`` or ``deploy/shared_location``.
    """
    if flags.mode == "dedicated":
        if flags.database == DEFAULT_DATABASE:
            raise DeployError(
                "deploy/dedicated_default_database", "Dedicated mode requires a named --database id, not (default)."
            )
        if flags.database is None:
            raise DeployError(
                "deploy/dedicated_requires_database",
                "Dedicated mode requires --database so Terraform can create the exact named database.",
            )
        if flags.location is None:
            raise DeployError(
                "deploy/dedicated_requires_location",
                "Dedicated mode requires --location because a Firestore database location is immutable after creation.",
            )
    elif flags.location is not None:
        raise DeployError(
            "deploy/shared_location",
            "--location is not accepted in shared mode: the platform-owned database already has an immutable location.",
        )
