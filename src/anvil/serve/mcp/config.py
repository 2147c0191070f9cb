"""What the SDK's server is built from, without importing the SDK.

:class:`ServerSpec` and :class:`Security` are read by :mod:`.deferred` (before the SDK loads) and by
:mod:`.server` (after), so they live apart from both.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

from anvil._dataclass import dataclass
from anvil.serve.mcp.provider import ToolProvider

__all__ = ["Security", "ServerSpec"]


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """What to build the SDK's low-level server from, once the SDK is loaded (see ``build_server``)."""

    provider: ToolProvider
    select: Callable[[Any], ToolProvider | None] | None = None
    instructions: str | None = None


@dataclass(frozen=True, slots=True)
class Security:
    """The SDK's DNS-rebinding settings (``TransportSecuritySettings``), without the SDK."""

    enable_dns_rebinding_protection: bool
    allowed_hosts: list[str] = field(default_factory=list)
    allowed_origins: list[str] = field(default_factory=list)
