"""Which server a request goes to: a server URL template resolved, and an operation's own server.

OpenAPI servers are URL templates (``https://{region}.api.example.com/v1``) whose variables each declare
a ``default`` (and may restrict it to an ``enum``). The service's servers, and an operation's own (its
``servers``, else its path item's), are kept in AIR as declared; :func:`resolve_server` fills every
placeholder with its variable's default and proves the result is an absolute ``http(s)`` URL, or says in
one sentence why it is not. Shared by the compiler (which blocks an operation whose own server does not
resolve), the runtime (which sends each call to its operation's server), the deployment generator (whose
host allowlist names every server an approved operation uses) and the CLI (operator overrides).
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit

from anvil._dataclass import dataclass
from anvil._types import JSONValue
from anvil.air.hosts import host_problem
from anvil.air.model import Document, Operation, Server

__all__ = [
    "SERVER_VARIABLE_PREFIX",
    "ResolvedServer",
    "operation_server",
    "own_servers",
    "repoint_all",
    "resolve_server",
    "server_hosts",
    "server_key",
    "server_variable",
]

#: ``ANVIL_BASE_URL__<SERVER>``: where a single-bundle gateway or ``anvil run`` sends an operation server.
SERVER_VARIABLE_PREFIX: Final = "ANVIL_BASE_URL__"

_PLACEHOLDER: Final = re.compile(r"\{([^{}]*)\}")
_NON_ALNUM: Final = re.compile(r"[^A-Z0-9]+")


@dataclass(frozen=True, slots=True)
class ResolvedServer:
    """A server URL with its variables at their defaults (``url``), or why it has none (``issue``;
    ``bad_host`` when the reason is a host that is not a host name or an IP address)."""

    url: str | None = None
    issue: str | None = None
    bad_host: bool = False


def _default(name: str, variables: JSONValue) -> tuple[str | None, str | None]:
    spec = variables.get(name) if isinstance(variables, dict) else None
    if not isinstance(spec, dict):
        return None, f"the server variable {{{name}}} is not declared"
    value = spec.get("default")
    if not isinstance(value, str):
        return None, f"the server variable {{{name}}} has no default"
    allowed = spec.get("enum")
    if isinstance(allowed, list) and allowed and value not in allowed:
        return None, f"the default {value!r} of the server variable {{{name}}} is not one of its enum"
    return value, None


def resolve_server(server: Server) -> ResolvedServer:
    """``server``'s URL with every ``{name}`` replaced by its variable's default.

    Returns:
        The URL, or the issue: an undeclared variable, one without a default or whose default is outside
        its enum, a result that is not an absolute ``http(s)://HOST`` URL (a relative server URL is
        relative to where the document was served, which a compiled bundle does not know), or a host
        that is not a host name or IP address (:mod:`anvil.air.hosts`: a comma in it would widen an
        allowlist joined from it).
    """
    parts: list[str] = []
    last = 0
    for found in _PLACEHOLDER.finditer(server.url):
        value, issue = _default(found.group(1), server.variables)
        if issue is not None:
            return ResolvedServer(issue=f"server {server.url!r}: {issue}")
        parts += [server.url[last : found.start()], value or ""]
        last = found.end()
    url = "".join(parts) + server.url[last:]
    try:
        split = urlsplit(url)
        host = split.hostname or ""
        absolute = split.scheme in ("http", "https") and bool(host) and split.port != 0
    except ValueError:  # a port out of range, a malformed IPv6 literal
        absolute = False
    if not absolute:
        return ResolvedServer(issue=f"server {server.url!r} is not an absolute http(s) URL")
    problem = host_problem(host)
    if problem is not None:
        return ResolvedServer(issue=f"the host of server {server.url!r} is refused: {problem}", bad_host=True)
    return ResolvedServer(url=url)


def operation_server(op: Operation) -> Server | None:
    """The server ``op`` declares for itself (the first of its own), or None when it uses the service's."""
    return op.servers[0] if op.servers else None


def own_servers(document: Document) -> dict[str, list[str]]:
    """Each resolvable operation server URL of ``document`` -> the approved operations sent there (an
    empty list when only unapproved operations declare it), in operation order."""
    found: dict[str, list[str]] = {}
    for op in document.operations:
        own = operation_server(op)
        url = resolve_server(own).url if own is not None else None
        if url is not None:
            found.setdefault(url, [])
            if op.is_approved:
                found[url].append(op.id)
    return found


def server_variable(url: str) -> str:
    """The variable that re-points the operation server ``url``: ``ANVIL_BASE_URL__`` + :func:`server_key`."""
    return SERVER_VARIABLE_PREFIX + (server_key(url) or "SERVER")


def repoint_all(document: Document, url: str) -> dict[str, str]:
    """The variables sending every operation server of ``document`` to ``url`` (a mock, a sandbox)."""
    return {server_variable(server): url for server in own_servers(document)}


def server_key(url: str) -> str:
    """How an operator variable names a server: its host (and explicit port) upper-cased, every run of other
    characters than ``A-Z0-9`` as ``_`` (``https://upload.example.com`` -> ``UPLOAD_EXAMPLE_COM``)."""
    try:
        split = urlsplit(url)
        host = split.hostname or ""
        port = split.port
    except ValueError:
        return ""
    text = host if port is None else f"{host}_{port}"
    return _NON_ALNUM.sub("_", text.upper()).strip("_")


def server_hosts(urls: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The distinct lower-cased hosts of ``urls``, in first-seen order (unparseable URLs, and URLs whose
    host is not a host name or IP address, left out: none may widen an allowlist joined from them)."""
    hosts: list[str] = []
    for url in urls:
        try:
            host = (urlsplit(url).hostname or "").lower()
        except ValueError:
            continue
        if host and host_problem(host) is None and host not in hosts:
            hosts.append(host)
    return tuple(hosts)
