"""What the Firestore backend adds to the contract: the URI grammar of original-ledger §1.10 and the collection."""

from __future__ import annotations

import pytest

from anvil.errors import ConfigError
from anvil.ledger.firestore import FirestoreLedger, firestore_location
from anvil.ledger.registry import open_ledger


def test_a_firestore_uri_opens_a_durable_cluster_ledger_in_the_namespace_hashed_collection() -> None:
    ledger = open_ledger("firestore://my-project/payments-ledger/payments")
    assert isinstance(ledger, FirestoreLedger) and (ledger.durable, ledger.sharing) == (True, "cluster")
    assert ledger.table == "anvil_idempotency_df384ae97c77ad30"
    other = open_ledger("firestore://my-project/payments-ledger/other-service")
    assert other.table != ledger.table


def test_the_location_is_the_project_the_database_and_the_namespace_collection() -> None:
    ledger = open_ledger("firestore://my-project/payments-ledger/payments")
    assert ledger.location == {
        "backend": "firestore",
        "project": "my-project",
        "database": "payments-ledger",
        "table": "anvil_idempotency_df384ae97c77ad30",
    }
    assert ledger.namespace == "payments" and ledger.describe().endswith("(namespace payments)")
    assert open_ledger("firestore://my-project//payments-ledger/payments/").location == ledger.location
    for other in ("firestore://other/payments-ledger/payments", "firestore://my-project/(default)/payments"):
        assert open_ledger(other).location != ledger.location


def test_the_grammar_tolerates_empty_segments_an_empty_query_and_the_default_database() -> None:
    assert firestore_location("firestore://acme-prod-1/(default)/payments") == ("acme-prod-1", "(default)", "payments")
    assert firestore_location("firestore://p1//db-one//ns.v1~x/?") == ("p1", "db-one", "ns.v1~x")
    assert firestore_location("firestore://p1/db-one/a%2Db") == ("p1", "db-one", "a-b")


@pytest.mark.parametrize(
    "uri",
    [
        "firestore://project",
        "firestore://bad_project/(default)/namespace",
        "firestore://project/database",
        "firestore://project/database/namespace/child",
        "firestore://project/UPPERCASE/namespace",
        "https://project/(default)/namespace",
        "firestore://project/(default)/namespace?unsafe=true",
        "firestore://MyProj/(default)/namespace",
        "firestore://user:secret@project/(default)/namespace",
        "firestore://project:8080/(default)/namespace",
        "firestore://project/(default)/namespace#frag",
        "firestore://project/(default)/bad%2Fns",
    ],
)
def test_a_malformed_uri_is_refused_at_boot_without_echoing_it(uri: str) -> None:
    with pytest.raises(ConfigError) as refused:
        open_ledger(uri)
    assert refused.value.code == "config/invalid"
    assert "ANVIL_LEDGER" in refused.value.message
    assert "secret" not in refused.value.message and uri not in refused.value.message
