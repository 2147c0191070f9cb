"""`anvil serve`: flags, the environment it reads, and its refusals (the transports are in test_transports)."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.writer import install_bundle
from anvil.cli import main
from anvil.cli.serve_config import HttpBind, parse_bind, settings_from_env
from anvil.errors import ConfigError, UsageError


def test_the_http_bind_defaults_to_loopback() -> None:
    assert parse_bind("8080") == HttpBind(host="127.0.0.1", port=8080)
    assert parse_bind(":0") == HttpBind(host="127.0.0.1", port=0)
    assert parse_bind("0.0.0.0:9000") == HttpBind(host="0.0.0.0", port=9000)
    assert parse_bind("[::1]:7000") == HttpBind(host="::1", port=7000)


@pytest.mark.parametrize("value", ["", "host:", "host:http", "70000"])
def test_a_malformed_http_bind_is_a_usage_error(value: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_bind(value)
    assert caught.value.code == "cli/usage"


def test_the_environment_gives_the_runtime_settings() -> None:
    environ = {
        "ANVIL_ENV": "staging",
        "ANVIL_LEDGER": "sqlite:///tmp/x.db",
        "ANVIL_UPSTREAM_TIMEOUT_MS": "5000",
        "ANVIL_AUTH_PROFILE": "prod",
        "ANVIL_PROD_TOKEN": "secret",
        "HOME": "/root",
    }
    settings = settings_from_env(environ, base_url=None, default_base_url="https://api.example.com")
    assert (settings.env, settings.base_url, settings.allowed_hosts) == ("staging", "https://api.example.com", ())
    assert (settings.ledger_uri, settings.timeout_ms, settings.auth_profile) == ("sqlite:///tmp/x.db", 5000, "prod")
    assert dict(settings.credentials) == {k: v for k, v in environ.items() if k.startswith("ANVIL_")}
    assert settings_from_env({}, base_url=None, default_base_url="https://a.example").env == "prod"


def test_an_operator_base_url_pins_the_allowlist_unless_one_is_set() -> None:
    pinned = settings_from_env({"ANVIL_BASE_URL": "http://127.0.0.1:9/v1"}, base_url=None, default_base_url=None)
    assert (pinned.base_url, pinned.allowed_hosts) == ("http://127.0.0.1:9/v1", ("127.0.0.1",))
    flagged = settings_from_env(
        {"ANVIL_BASE_URL": "http://ignored", "ANVIL_ALLOWED_HOSTS": "a.example, b.example"},
        base_url="https://flag.example",
        default_base_url=None,
    )
    assert (flagged.base_url, flagged.allowed_hosts) == ("https://flag.example", ("a.example", "b.example"))


def test_unusable_settings_are_configuration_errors() -> None:
    with pytest.raises(ConfigError) as no_url:
        settings_from_env({}, base_url=None, default_base_url=None)
    with pytest.raises(ConfigError) as bad_number:
        settings_from_env({"ANVIL_UPSTREAM_TIMEOUT_MS": "soon"}, base_url="https://a.example", default_base_url=None)
    assert (no_url.value.code, bad_number.value.code) == ("config/invalid", "config/invalid")


@pytest.mark.parametrize(
    "url",
    ["ftp://files.example/x", "https://user:pw@api.example", "http:///v1", "https://api.example:99999", "api.example"],
)
def test_an_operator_base_url_the_upstream_client_cannot_send_to_is_refused_at_start(url: str) -> None:
    with pytest.raises(ConfigError) as refused:
        settings_from_env({"ANVIL_BASE_URL": url}, base_url=None, default_base_url=None)
    assert refused.value.code == "config/invalid" and "pw" not in str(refused.value)
    assert "http(s)://HOST" in str(refused.value)


@pytest.fixture
def bundle(github: Document, tmp_path: Path) -> Path:
    out = tmp_path / "github"
    install_bundle(out, emit_bundle(github))
    return out


def test_a_remote_bind_without_allow_remote_is_refused(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(bundle), "--http", "0.0.0.0:0"]) == 2
    assert "error[cli/usage]" in capsys.readouterr().err


def test_unapproved_operations_are_listed_only_in_dev(
    bundle: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANVIL_ENV", "prod")
    assert main(["serve", str(bundle), "--include-unapproved"]) == 2
    assert "error[cli/usage]" in capsys.readouterr().err


def test_a_missing_bundle_is_reported_without_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(tmp_path / "nothing")]) == 3
    err = capsys.readouterr().err
    assert "error[bundle/invalid]" in err and "Traceback" not in err


def test_stdio_and_http_are_exclusive(bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", str(bundle), "--stdio", "--http", "0"]) == 2
    assert "error[cli/usage]" in capsys.readouterr().err
