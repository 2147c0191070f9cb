"""The namespace-hashed ledger collection: one derivation for the store contract and every ledger backend."""

from __future__ import annotations

import pytest

from anvil.air.deployment import NAMESPACE_PATTERN, collection_group
from anvil.bundle import store


@pytest.mark.parametrize(
    ("namespace", "group"),
    [
        ("payments", "anvil_idempotency_df384ae97c77ad30"),
        ("wso2-prod-payments-v1", "anvil_idempotency_92ebf664dcd91fcf"),
        ("wso2-test-payments-v1", "anvil_idempotency_3864779cdf4e1f1f"),
        ("orders", "anvil_idempotency_1c168adb00d208e4"),
    ],
)
def test_the_collection_group_is_the_first_16_hex_of_the_namespace_digest(namespace: str, group: str) -> None:
    assert collection_group(namespace) == group
    assert store.collection_group is collection_group  # the store contract re-exports the same function


def test_a_namespace_is_1_to_128_url_unreserved_characters() -> None:
    assert NAMESPACE_PATTERN.match("a.b_c~d-1") and NAMESPACE_PATTERN.match("x" * 128)
    assert not NAMESPACE_PATTERN.match("") and not NAMESPACE_PATTERN.match("x" * 129)
    assert not NAMESPACE_PATTERN.match("bad/ns")
