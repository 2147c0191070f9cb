"""Deployment identity shared by run time and deploy time: the namespace-hashed ledger collection.

``collection_group(namespace)`` names the table or collection every durable ledger backend keeps its
rows in (original-ledger §4.7). It lives in ``air/`` because both the bundle emitters (the store
contract) and the ledger backends (run time) must derive exactly the same name, and the ledger must
not import ``bundle/``.
"""

from __future__ import annotations

import re
from typing import Final

from anvil.air.canonical import sha256_hex

__all__ = ["COLLECTION_PREFIX", "NAMESPACE_PATTERN", "collection_group"]

#: Every ledger table/collection name starts with this.
COLLECTION_PREFIX: Final = "anvil_idempotency_"
#: A ledger namespace (original-ledger §1.10): 1-128 URL-unreserved characters.
NAMESPACE_PATTERN: Final = re.compile(r"^[a-zA-Z0-9_.~-]{1,128}$")


def collection_group(namespace: str) -> str:
    """``anvil_idempotency_`` + the first 16 hex of sha256(namespace) (original-ledger §4.7).

    ``payments`` -> ``anvil_idempotency_df384ae97c77ad30``.
    """
    return COLLECTION_PREFIX + sha256_hex(namespace)[:16]
