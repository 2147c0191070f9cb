"""Deployment coordinates every deploy artifact shares (original-ledger §4.8, §5).

The deployment namespace (persisted in ``generation.json``, else the AIR service id) keys the Cloud Run
service and service account names, the Terraform state prefix, the ledger URI namespace and the hashed
collection group; the AIR service id, which agents see, never changes. The environment selects the
``ANVIL_ENV`` default, the credential profile and the minimum instance count.
"""

from __future__ import annotations

import re

from anvil._dataclass import dataclass
from anvil.air.canonical import sha256_hex
from anvil.air.model import Document
from anvil.air.servers import own_servers, resolve_server, server_hosts
from anvil.bundle.generation import Generation
from anvil.bundle.store import collection_group, deployment_namespace, store_operation_ids
from anvil.errors import BundleError

__all__ = ["ENVIRONMENT_PATTERN", "Coordinates", "coordinates", "resource_prefix"]

#: An AIR service environment usable as ``ANVIL_ENV`` and as a credential profile.
ENVIRONMENT_PATTERN = re.compile(r"^[A-Za-z0-9_.~-]{1,64}$")
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_MAX_PLAIN_PREFIX = 24


def resource_prefix(namespace: str) -> str:
    """The GCP resource prefix of a namespace: its slug when short and exact, else a hashed short form.

    ``<prefix>-tools`` names the service account (6-30 characters) and the Cloud Run service.
    """
    slug = _NON_SLUG.sub("-", namespace.lower()).strip("-")
    if len(slug) <= _MAX_PLAIN_PREFIX and slug == namespace:
        return slug
    return f"{slug[:11].rstrip('-')}-{sha256_hex(namespace)[:12]}".lstrip("-")


@dataclass(frozen=True, slots=True, kw_only=True)
class Coordinates:
    """The names one bundle deploys under."""

    service_id: str
    namespace: str
    prefix: str
    environment: str
    allowed_hosts: str
    """Every upstream host the deployment calls, comma-separated (``ANVIL_ALLOWED_HOSTS``)."""
    ledger: bool
    collection_group: str

    @property
    def service_name(self) -> str:
        """The Cloud Run service and service-account id: ``<prefix>-tools``."""
        return f"{self.prefix}-tools"

    @property
    def state_prefix(self) -> str:
        """The Terraform state prefix, keyed by the full namespace: ``anvil/<namespace>-tools``."""
        return f"anvil/{self.namespace}-tools"


def _allowed_hosts(doc: Document) -> str:
    """The hosts the deployment calls, comma-separated: the service's first server, then the own server
    of every approved operation that declares one (variables at their defaults). Only valid hosts are
    joined (:func:`anvil.air.servers.server_hosts`), so no server can widen the list; an allowed host is
    where requests may go, not where the credential goes (that takes consent: ``credential_hosts``)."""
    urls = [resolve_server(doc.service.servers[0]).url or ""] if doc.service.servers else []
    urls += [url for url, approved in own_servers(doc).items() if approved]
    return ",".join(server_hosts(urls))


def coordinates(doc: Document, generation: Generation) -> Coordinates:
    """The deployment coordinates of ``doc`` under the persisted generator inputs.

    Raises:
        BundleError: ``bundle/invalid`` for an unusable namespace or an AIR environment that cannot be
            an ``ANVIL_ENV`` value.
    """
    namespace = deployment_namespace(doc, generation)
    environment = doc.service.environment or "prod"
    if not ENVIRONMENT_PATTERN.fullmatch(environment):
        raise BundleError(
            "bundle/invalid",
            f"service environment {environment!r} is not usable as ANVIL_ENV (1-64 of A-Z a-z 0-9 _ . ~ -).",
            hint="Set service.environment in anvil.yaml to a short id such as prod or staging.",
        )
    return Coordinates(
        service_id=doc.service.id,
        namespace=namespace,
        prefix=resource_prefix(namespace),
        environment=environment,
        allowed_hosts=_allowed_hosts(doc),
        ledger=bool(store_operation_ids(doc)),
        collection_group=collection_group(namespace),
    )
