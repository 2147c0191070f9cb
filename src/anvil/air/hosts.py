"""Host names: what a server URL, an allowlist entry or a credential host may name.

A host is a DNS name of letters-digits-hyphen labels (``api.example.com``, ``xn--bcher-kva.example``) or
an IP literal (``127.0.0.1``, ``::1``). Anything else is refused where hosts enter: a spec's server URL
(``https://status.example.net,com,net,io`` has the "host" ``status.example.net,com,net,io``, which,
joined into a comma list, would admit every ``.com``), an operator's URL, and every entry of
``ANVIL_ALLOWED_HOSTS`` and ``ANVIL_CREDENTIAL_HOSTS``.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "HOST_RULE",
    "host_allowed",
    "host_list",
    "host_matches",
    "host_problem",
    "is_host",
    "is_ip",
    "normalize_host",
]

#: How a valid host is described in messages.
HOST_RULE: Final = "a host name of letters, digits and '-' labels, or an IP address"

_LABEL: Final = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_MAX_NAME: Final = 253


def normalize_host(host: str) -> str:
    """``host`` as hosts are compared: trimmed, lower-cased, an IPv6 literal without its brackets."""
    found = host.strip().lower()
    return found[1:-1] if found.startswith("[") and found.endswith("]") else found


def host_problem(host: str) -> str | None:
    """Why ``host`` (as :func:`normalize_host` gives it) is not a host, or None when it is one."""
    if not host:
        return "it is empty"
    if ":" in host or host.replace(".", "").isdigit():
        try:
            ipaddress.ip_address(host)
        except ValueError:
            return f"{host!a} is not {HOST_RULE}"
        return None
    if len(host) > _MAX_NAME:
        return f"it is longer than {_MAX_NAME} characters"
    if not all(_LABEL.fullmatch(label) for label in host.split(".")):
        return f"{host!a} is not {HOST_RULE}"
    return None


def is_host(host: str) -> bool:
    """True when ``host`` is a host name or an IP literal (see :func:`host_problem`)."""
    return host_problem(host) is None


def host_list(value: str | None, variable: str) -> tuple[str, ...]:
    """A comma list of hosts (``ANVIL_ALLOWED_HOSTS``, ``ANVIL_CREDENTIAL_HOSTS``): each entry normalized
    (:func:`normalize_host`), empty entries dropped, duplicates once, in order.

    Raises:
        ValueError: naming ``variable`` and the first entry that is not a host (a port, a scheme, a
            wildcard, a space): it would otherwise be silently ignored, or match what it should not.
    """
    out: list[str] = []
    for entry in (value or "").split(","):
        host = normalize_host(entry)
        if not host:
            continue
        problem = host_problem(host)
        if problem is not None:
            raise ValueError(f"{variable} entry {entry.strip()!a} is refused: {problem}")
        if host not in out:
            out.append(host)
    return tuple(out)


def host_matches(host: str, entry: str) -> bool:
    """The allowlist rule: ``host`` is ``entry`` or, when ``entry`` has two labels or more, a subdomain of
    it. A one-label entry (``localhost``, or ``com`` from a careless list) matches only itself, so no entry
    admits a whole top-level domain."""
    return host == entry or ("." in entry and not is_ip(entry) and host.endswith("." + entry))


def is_ip(host: str) -> bool:
    """True when ``host`` is an IP literal."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def host_allowed(base_url: str, env: str, allowed_hosts: tuple[str, ...]) -> bool:
    """True when the base URL's host is allowlisted (equal to an entry or a subdomain of one of two labels
    or more: :func:`anvil.air.hosts.host_matches`).

    An empty allowlist allows any host only in ``dev``; an unparseable URL is never allowed.
    """
    try:
        host = urlsplit(base_url).hostname
    except ValueError:
        return False
    if not host:
        return False
    if not allowed_hosts:
        return env == "dev"
    return any(host_matches(host.lower(), entry) for entry in allowed_hosts)
