"""Host lists an operator sets (``ANVIL_ALLOWED_HOSTS[_<ID>]``, ``ANVIL_CREDENTIAL_HOSTS``), read and refused.

Each entry must be a host name or an IP address (:mod:`anvil.air.hosts`): one with a port, a scheme, a
wildcard or a space would otherwise be silently ignored, or match what it should not.
"""

from __future__ import annotations

from collections.abc import Mapping

from anvil.errors import ConfigError

__all__ = ["host_variable"]


def host_variable(environ: Mapping[str, str], variable: str) -> tuple[str, ...]:
    """The hosts of the comma list ``variable`` (``ANVIL_ALLOWED_HOSTS[_<ID>]``, ``ANVIL_CREDENTIAL_HOSTS``).

    Raises:
        ConfigError: ``config/invalid_host`` naming the entry that is not a host name or IP address.
    """
    from anvil.runtime.context import parse_allowed_hosts

    try:
        return parse_allowed_hosts(environ.get(variable), variable)
    except ValueError as exc:
        raise ConfigError(
            "config/invalid_host",
            f"{exc}.",
            hint=f"List bare host names or IP addresses in {variable}, separated by commas (no scheme, port or *).",
        ) from None
