"""Which gateways share idempotency keys, said once at start-up so an operator can compare them.

Two gateways run one caller key once only when both compute the same ledger key (the ledger scope:
service, environment, upstream, auth and credential profile; :func:`~anvil.runtime.keys.ledger_scope`)
*and* both keep rows in the same place (the ledger's :attr:`~anvil.ledger.base.Ledger.location`: the
backend, the store's identity such as a database server, database and schema or a file on a host,
and the table the namespace derives). :func:`ledger_scope_line` prints both and one digest over both,
so gateways share a bundle's keys exactly when they print the same digest for it.
"""

from __future__ import annotations

from typing import Any

from anvil.air.canonical import hash_canonical
from anvil.air.model import Document
from anvil.runtime.context import RuntimeContext
from anvil.runtime.credentials import credential_profile
from anvil.runtime.keys import ledger_scope

__all__ = ["ledger_scope_line", "sharing_digest"]

#: The location of a gateway without a ledger: it shares nothing (keyed writes are refused outside dev).
_NO_LEDGER: dict[str, str] = {"backend": "none"}


def _scopes(document: Document, context: RuntimeContext) -> dict[str, Any]:
    """Every ledger scope the bundle's approved operations use (one per credential profile), by hash."""
    scopes: dict[str, Any] = {}
    for op in document.operations:
        if op.is_approved:
            scope = ledger_scope(
                service_id=document.service.id,
                environment=context.env,
                base_url=context.base_url,
                auth_profile=context.auth_profile,
                credential_profile=credential_profile(context.auth_profile, op.auth),
            )
            scopes[hash_canonical(scope)] = scope
    return scopes


def sharing_digest(document: Document, context: RuntimeContext) -> str:
    """``sha256:`` + the digest over the ledger's location and every ledger scope the bundle uses:
    equal for two gateways exactly when they share the bundle's keys (rows)."""
    ledger = context.ledger
    location = ledger.location if ledger is not None else _NO_LEDGER
    return "sha256:" + hash_canonical({"ledger": location, "scopes": sorted(_scopes(document, context))})


def ledger_scope_line(bundle_id: str, document: Document, context: RuntimeContext) -> str:
    """One start-up line naming the bundle's ledger scope, where its rows live and the sharing digest."""
    scopes = _scopes(document, context)
    shown = next(iter(scopes.values()), None) or ledger_scope(
        service_id=document.service.id,
        environment=context.env,
        base_url=context.base_url,
        auth_profile=context.auth_profile,
        credential_profile=context.auth_profile,
    )
    where = context.ledger.describe() if context.ledger is not None else "none"
    return (
        f"anvil: ledger scope {bundle_id}: service {shown['serviceId']}, env {shown['environment']}, "
        f"upstream {shown['upstream']}, auth profile {shown['authProfile']}, "
        f"{len(scopes)} credential profile{'s' if len(scopes) != 1 else ''}, "
        f"ledger {where}, digest {sharing_digest(document, context)}"
    )
