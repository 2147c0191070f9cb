"""Backend selection by ``ANVIL_LEDGER`` scheme, and the URI grammar of the built-in backends."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.errors import ConfigError
from anvil.ledger.base import Ledger, LedgerOptions
from anvil.ledger.memory import MemoryLedger
from anvil.ledger.registry import open_ledger, register_scheme, registered_schemes, scheme_of
from anvil.ledger.sqlite import SqliteLedger, sqlite_path


def test_memory_and_an_empty_uri_open_the_per_process_ledger() -> None:
    for uri in ("memory:", "memory://", ""):
        ledger = open_ledger(uri)
        assert isinstance(ledger, MemoryLedger) and ledger.durable is False


def test_sqlite_uris_are_spelled_as_sqlalchemy_spells_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert sqlite_path("sqlite:///relative.db") == "relative.db"
    assert sqlite_path(f"sqlite:///{tmp_path}/abs.db") == f"{tmp_path}/abs.db"
    assert sqlite_path("sqlite:////var/lib/anvil/ledger.db") == "/var/lib/anvil/ledger.db"
    ledger = open_ledger("sqlite:///relative.db")
    assert isinstance(ledger, SqliteLedger) and ledger.durable is True and ledger.sharing == "host"


@pytest.mark.parametrize(
    "uri",
    ["sqlite:", "sqlite://", "sqlite:///", "sqlite:///:memory:", "sqlite://host/x.db", "sqlite:///x.db?mode=ro"],
)
def test_a_sqlite_uri_that_names_no_single_file_is_refused(uri: str) -> None:
    with pytest.raises(ConfigError) as refused:
        open_ledger(uri)
    assert refused.value.code == "config/invalid"


@pytest.mark.parametrize("uri", ["unregistered://x", "postgres-typo://user:pw@host/db", "memory"])
def test_an_unknown_scheme_is_a_boot_error_that_does_not_echo_the_uri(uri: str) -> None:
    with pytest.raises(ConfigError) as refused:
        open_ledger(uri)
    assert refused.value.code == "config/invalid"
    assert uri not in str(refused.value) and "pw" not in str(refused.value)


def test_a_registered_scheme_gets_the_exact_uri_and_options() -> None:
    seen: list[tuple[str, LedgerOptions]] = []

    def factory(uri: str, options: LedgerOptions) -> Ledger:
        seen.append((uri, options))
        return MemoryLedger(options)

    register_scheme("faux", factory)
    options = LedgerOptions(result_ttl_seconds=120)
    ledger = open_ledger("faux://tenant/ledger?x=1", options=options)
    assert isinstance(ledger, MemoryLedger) and seen == [("faux://tenant/ledger?x=1", options)]
    assert "faux" in registered_schemes() and scheme_of("faux://a") == "faux"


def test_a_scheme_can_be_registered_by_a_lazy_import_path() -> None:
    register_scheme("lazymem", "anvil.ledger.memory:MemoryLedger")
    with pytest.raises(ConfigError):  # MemoryLedger.from_uri accepts only memory: itself
        open_ledger("lazymem:")
    register_scheme("missingdriver", "anvil_nonexistent_driver:Backend")
    with pytest.raises(ConfigError) as refused:
        open_ledger("missingdriver://x")
    assert refused.value.code == "config/invalid"


def test_a_factory_that_returns_no_ledger_is_refused() -> None:
    register_scheme("notaledger", lambda uri, options: object())  # type: ignore[arg-type, return-value]
    with pytest.raises(ConfigError) as refused:
        open_ledger("notaledger://x")
    assert refused.value.code == "config/invalid"


@pytest.mark.parametrize("scheme", ["", "Upper", "1st", "has space"])
def test_a_malformed_scheme_cannot_be_registered(scheme: str) -> None:
    with pytest.raises(ConfigError) as refused:
        register_scheme(scheme, "anvil.ledger.memory:MemoryLedger")
    assert refused.value.code == "config/invalid"


@pytest.mark.parametrize("ttl", [59, 31_536_001, 0, True])
def test_the_result_ttl_is_bounded(ttl: int) -> None:
    with pytest.raises(ConfigError) as refused:
        LedgerOptions(result_ttl_seconds=ttl)
    assert refused.value.code == "config/invalid"
    assert LedgerOptions(result_ttl_seconds=60).result_ttl_seconds == 60


def test_two_memory_ledgers_never_share_a_location() -> None:
    one, two = open_ledger("memory:"), open_ledger("memory:")
    assert one.location != two.location and one.location["backend"] == "memory"


@pytest.mark.parametrize("table", ["users", "anvil_idempotency_1C168ADB00D208E4", "anvil_idempotency_1c16", "pg_class"])
def test_a_table_option_names_only_a_table_a_namespace_derives(table: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        LedgerOptions(table=table)
    assert refused.value.code == "config/invalid"
    named = open_ledger(f"sqlite:///{tmp_path}/l.db", options=LedgerOptions(table="anvil_idempotency_1c168adb00d208e4"))
    assert named.table == "anvil_idempotency_1c168adb00d208e4" and named.namespace is None
