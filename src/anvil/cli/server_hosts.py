"""Operation servers outside the allowed hosts: found for every bundle, refused once, all named.

``anvil serve`` checks every approved operation's own server against its bundle's allowed hosts before
anything is bound. One start-up names every server outside them (``config/server_not_allowed``): the
message has one sentence per server (which operations go there, and the allowed hosts), the hint one
line per host (the variables that re-point its servers, or the allowlist that would admit it), so an
operator fixes them all in one go instead of meeting them one start at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from anvil._dataclass import dataclass
from anvil.errors import ConfigError

if TYPE_CHECKING:
    from anvil.air.model import Document

__all__ = ["OutsideServer", "outside_servers", "server_refusal"]


@dataclass(frozen=True, slots=True)
class OutsideServer:
    """One operation server outside its bundle's allowed hosts.

    ``url`` is where its operations are sent (re-pointed or declared), ``repoint`` the variable that
    re-points it, ``allowlist`` the variable that would admit its host.
    """

    bundle_id: str
    url: str
    host: str
    operations: tuple[str, ...]
    allowed: tuple[str, ...]
    repoint: str
    allowlist: str

    def sentence(self) -> str:
        """What is refused, in one sentence."""
        ops = self.operations
        shown = ", ".join(ops[:3]) + (f" and {len(ops) - 3} more" if len(ops) > 3 else "")
        one = len(ops) == 1
        allowed = ", ".join(self.allowed) or "none: only ANVIL_ENV=dev allows any host"
        return (
            f"Bundle '{self.bundle_id}': {shown} {'is' if one else 'are'} sent to {self.url}, the server declared "
            f"for {'it' if one else 'them'}, whose host {self.host} is outside the allowed hosts ({allowed})."
        )


def outside_servers(
    bundle_id: str,
    document: Document,
    *,
    env: str,
    allowed_hosts: tuple[str, ...],
    server_urls: Mapping[str, str],
    repoint: Callable[[str], str],
    allowlist: str,
) -> list[OutsideServer]:
    """Every operation server of ``document`` an approved operation is sent to, outside ``allowed_hosts``.

    Args:
        bundle_id: The bundle, as the refusal names it.
        document: Its AIR.
        env: The runtime environment (``dev`` allows any host when no list is set).
        allowed_hosts: The bundle's allowed hosts.
        server_urls: The servers the operator re-pointed (declared URL -> URL).
        repoint: The variable that re-points a declared server URL.
        allowlist: The variable of the bundle's allowed hosts.
    """
    from anvil.air.hosts import host_allowed  # not the gates: they load the call path (cold start)
    from anvil.air.servers import own_servers

    found: list[OutsideServer] = []
    for server, ops in own_servers(document).items():
        url = server_urls.get(server, server)
        if not ops or host_allowed(url, env, allowed_hosts):
            continue
        host = urlsplit(url).hostname or url
        found.append(OutsideServer(bundle_id, url, host, tuple(ops), allowed_hosts, repoint(server), allowlist))
    return found


def server_refusal(found: Sequence[OutsideServer]) -> ConfigError:
    """The one ``config/server_not_allowed`` refusal naming every server in ``found`` (not empty).

    One server keeps the one-sentence message; several are listed one per line under a count. The hint
    has one line per (bundle, host): re-point that host's servers, or add the host to the allowlist.
    """
    if len(found) == 1:
        message = found[0].sentence()
    else:
        message = f"{len(found)} operation servers are outside the allowed hosts:\n" + "\n".join(
            "  " + server.sentence() for server in found
        )
    hosts: dict[tuple[str, str, str], list[str]] = {}
    for server in found:
        hosts.setdefault((server.bundle_id, server.host, server.allowlist), []).append(server.repoint)
    lines = []
    for (bundle_id, host, allowlist), variables in hosts.items():
        named = " and ".join(f"{variable}=URL" for variable in dict.fromkeys(variables))
        which = "that server" if len(variables) == 1 else "those servers"
        where = f" (bundle '{bundle_id}')" if len({key[0] for key in hosts}) > 1 else ""
        lines.append(f"Re-point {which} with {named}, or add {host} to {allowlist}{where}.")
    return ConfigError("config/server_not_allowed", message, hint="\n".join(lines))
