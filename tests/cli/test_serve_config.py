"""`anvil serve` configuration: the flags and an environment mapping, checked and built into one ServeConfig."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from anvil.cli.serve import register
from anvil.cli.serve_config import HttpBind, ServeConfig, config_from_env, ledger_options, server_variables
from anvil.cli.workers import METRICS_DIR_VARIABLE
from anvil.errors import ConfigError, UsageError
from anvil.serve.rest import DEFAULT_BODY_LIMIT


def _args(*argv: str) -> argparse.Namespace:
    """The ``anvil serve`` arguments, parsed by the command's own parser."""
    parser = argparse.ArgumentParser()
    register(parser)
    return parser.parse_args(list(argv))


def _config(environ: dict[str, str], *argv: str) -> ServeConfig:
    return config_from_env(environ, _args(*argv))


def test_with_nothing_set_one_bundle_is_served_over_stdio_in_prod_against_its_own_server_without_a_ledger(
    payments: Path,
) -> None:
    config = _config({}, str(payments))
    assert [bundle_id for bundle_id, _ in config.bundles] == ["payments"]
    assert (config.bind, config.inbound.mode, config.body_limit) == (None, "none", DEFAULT_BODY_LIMIT)
    assert (config.include_unapproved, config.workers, config.worker, config.supervises) == (False, 1, None, False)
    assert (config.ledger_uri, config.ledger_namespace, config.metrics_dir) == (None, "payments", None)
    [settings] = config.settings
    assert (settings.env, settings.base_url, settings.allowed_hosts) == (
        "prod",
        "https://payments.internal.example.com",
        (),
    )
    assert (settings.timeout_ms, settings.derived_key_window_seconds, settings.auth_profile) == (None, None, "default")
    assert (settings.audit_file, dict(settings.credentials)) == (None, {})


def test_the_environment_is_read_only_from_the_mapping_given(payments: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANVIL_ENV", "dev")
    monkeypatch.setenv("ANVIL_BASE_URL", "http://127.0.0.1:9")
    config = _config({"ANVIL_ENV": "staging"}, str(payments))
    assert (config.settings[0].env, config.settings[0].base_url) == ("staging", "https://payments.internal.example.com")


def test_a_bad_upstream_timeout_is_a_config_invalid_error_naming_the_variable(payments: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        _config({"ANVIL_UPSTREAM_TIMEOUT_MS": "soon"}, str(payments))
    assert refused.value.code == "config/invalid" and "ANVIL_UPSTREAM_TIMEOUT_MS" in refused.value.message


def test_a_bundles_own_base_url_wins_over_the_shared_one_and_pins_its_host(payments: Path) -> None:
    environ = {"ANVIL_BASE_URL": "http://shared.example", "ANVIL_BASE_URL_PAYMENTS": "http://127.0.0.1:9/v1"}
    [settings] = _config(environ, str(payments)).settings
    assert (settings.base_url, settings.allowed_hosts) == ("http://127.0.0.1:9/v1", ("127.0.0.1",))


def test_a_fleet_keeps_its_bundles_in_order_each_with_its_own_upstream_and_host_list(
    github: Path, payments: Path
) -> None:
    environ = {
        "ANVIL_BASE_URL_GITHUB": "http://127.0.0.1:1",
        "ANVIL_ALLOWED_HOSTS": "shared.example",
        "ANVIL_ALLOWED_HOSTS_PAYMENTS": "pay.example",
    }
    config = _config(environ, str(github), str(payments))
    assert [bundle_id for bundle_id, _ in config.bundles] == ["github", "payments"]
    assert [(s.base_url, s.allowed_hosts) for s in config.settings] == [
        ("http://127.0.0.1:1", ("shared.example",)),
        ("https://payments.internal.example.com", ("pay.example",)),
    ]
    assert config.ledger_namespace == "github"  # the ledger table follows the first bundle


def test_flags_win_over_their_environment_variables(payments: Path) -> None:
    environ = {"ANVIL_INBOUND_AUTH_MODE": "static", "ANVIL_REST_BODY_LIMIT": "1000"}
    config = _config(environ, str(payments), "--auth", "none", "--rest-body-limit", "2000", "--http", "8080")
    assert (config.inbound.mode, config.body_limit, config.bind) == (
        "none",
        2000,
        HttpBind(host="127.0.0.1", port=8080),
    )
    assert _config(environ, str(payments), "--http", "0").body_limit == 1000


def test_dev_without_a_ledger_uses_memory_which_several_workers_cannot_share(payments: Path) -> None:
    assert _config({"ANVIL_ENV": "dev"}, str(payments)).ledger_uri == "memory:"
    with pytest.raises(UsageError) as refused:
        _config({"ANVIL_ENV": "dev"}, str(payments), "--http", "0", "--workers", "2")
    assert refused.value.code == "cli/usage" and "memory:" in refused.value.message


def test_workers_over_a_shared_ledger_make_this_process_their_supervisor(payments: Path) -> None:
    environ = {"ANVIL_LEDGER": "sqlite:///tmp/ledger.db", METRICS_DIR_VARIABLE: "/tmp/metrics"}
    parent = _config(environ, str(payments), "--http", "0", "--workers", "2")
    assert (parent.supervises, parent.workers, parent.worker, parent.metrics_dir) == (True, 2, None, None)
    worker = _config(environ, str(payments), "--http", "0", "--worker-index", "1", "--worker-count", "2")
    assert (worker.supervises, worker.worker, worker.metrics_dir) == (False, (1, 2), "/tmp/metrics")
    assert worker.ledger_uri == "sqlite:///tmp/ledger.db"


@pytest.mark.parametrize(
    ("environ", "argv", "error", "code"),
    [
        ({}, ["--auth", "static"], UsageError, "cli/usage"),  # inbound auth needs the HTTP listener
        ({}, ["--auth", "kerberos", "--http", "0"], UsageError, "cli/usage"),
        ({}, ["--http", "0.0.0.0:0"], UsageError, "cli/usage"),  # remote, unauthenticated, no --allow-remote
        ({}, ["--include-unapproved"], UsageError, "cli/usage"),  # prod
        ({}, ["--workers", "2"], UsageError, "cli/usage"),  # workers need HTTP
        ({}, ["--workers", "0", "--http", "0"], UsageError, "cli/usage"),
        ({"ANVIL_REST_BODY_LIMIT": "0"}, [], ConfigError, "config/invalid"),
        ({"ANVIL_INBOUND_LEEWAY_SECONDS": "a minute"}, [], ConfigError, "config/invalid"),
        ({"ANVIL_DERIVED_KEY_WINDOW_SECONDS": "86401"}, [], ConfigError, "config/invalid"),
        ({"ANVIL_BASE_URL": "https://user:pw@api.example"}, [], ConfigError, "config/invalid"),
        ({"ANVIL_DISCLOSURE": "hidden"}, [], ConfigError, "config/invalid"),
        ({}, ["--disclosure", "ladder"], ConfigError, "config/invalid"),
        ({}, ["--surface-budget", "0"], ConfigError, "config/invalid"),
        ({"ANVIL_SURFACE_BUDGET": "20k"}, [], ConfigError, "config/invalid"),
        ({"ANVIL_RESULT_TOKEN_BUDGET": "-1"}, [], ConfigError, "config/invalid"),
        ({}, ["--result-token-budget", "2000001"], ConfigError, "config/invalid"),
    ],
)
def test_flags_and_variables_that_cannot_be_served_are_refused_with_their_code(
    payments: Path, environ: dict[str, str], argv: list[str], error: type[Exception], code: str
) -> None:
    with pytest.raises(error) as refused:
        _config(environ, str(payments), *argv)
    assert getattr(refused.value, "code", None) == code and "pw" not in str(refused.value)


def test_disclosure_defaults_to_auto_within_20000_tokens_with_an_8000_token_answer_budget(payments: Path) -> None:
    config = _config({}, str(payments))
    assert (config.disclosure.mode, config.disclosure.surface_budget, config.result_token_budget) == (
        "auto",
        20_000,
        8_000,
    )


def test_disclosure_flags_win_over_their_variables(payments: Path) -> None:
    environ = {"ANVIL_DISCLOSURE": "flat", "ANVIL_SURFACE_BUDGET": "5000", "ANVIL_RESULT_TOKEN_BUDGET": "0"}
    from_env = _config(environ, str(payments))
    assert (from_env.disclosure.mode, from_env.disclosure.surface_budget, from_env.result_token_budget) == (
        "flat",
        5000,
        0,
    )
    flags = ["--disclosure", "search", "--surface-budget", "3000", "--result-token-budget", "4000"]
    from_flags = _config(environ, str(payments), *flags)
    assert (from_flags.disclosure.mode, from_flags.disclosure.surface_budget, from_flags.result_token_budget) == (
        "search",
        3000,
        4000,
    )


def test_a_base_url_flag_is_refused_for_a_fleet(github: Path, payments: Path) -> None:
    with pytest.raises(UsageError) as refused:
        _config({}, str(github), str(payments), "--base-url", "http://127.0.0.1:1")
    assert refused.value.code == "cli/usage" and "ANVIL_BASE_URL_GITHUB" in (refused.value.hint or "")


def test_the_ledger_options_carry_the_configured_lifetimes_lock_wait_and_namespace(payments: Path) -> None:
    environ = {
        "ANVIL_LEDGER_RESULT_TTL_SECONDS": "60",
        "ANVIL_LEDGER_BINDING_TTL_SECONDS": "120",
        "ANVIL_LEDGER_LOCK_TIMEOUT_MS": "250",
    }
    config = _config(environ, str(payments))
    options = ledger_options(config.settings[0], config.ledger_namespace)
    assert (options.namespace, options.result_ttl_seconds, options.binding_ttl_seconds) == ("payments", 60, 120)
    assert options.lock_timeout_seconds == 0.25
    defaults = ledger_options(_config({}, str(payments)).settings[0], None)
    assert (defaults.result_ttl_seconds, defaults.lock_timeout_seconds) == (604_800, 5.0)


def _client_variables(bundle: Path, profile: str) -> tuple[str, str, str, str, str]:
    from anvil.bundle.read import read_bundle
    from anvil.runtime.credentials import client_credentials_env, credential_profile

    op = read_bundle(bundle).operations[0]
    return client_credentials_env(credential_profile(profile, op.auth))


def test_a_configured_token_endpoint_the_secret_may_not_go_to_is_refused_before_serving(payments: Path) -> None:
    client_id, secret, endpoint, _, _ = _client_variables(payments, "default")
    environ = {
        "ANVIL_BASE_URL": "http://127.0.0.1:9",
        client_id: "gateway",
        secret: "never-shown-secret",
        endpoint: "https://auth.elsewhere.example/token",
    }
    with pytest.raises(ConfigError) as refused:
        _config(environ, str(payments))
    assert refused.value.code == "config/token_endpoint_refused"
    assert endpoint in refused.value.message and "auth.elsewhere.example" in refused.value.message
    assert "never-shown-secret" not in str(refused.value) + (refused.value.hint or "")
    # admitted by ANVIL_CREDENTIAL_HOSTS (an exact host), or on an allowed host, it serves
    _config({**environ, "ANVIL_CREDENTIAL_HOSTS": "auth.elsewhere.example"}, str(payments))
    _config({**environ, "ANVIL_ALLOWED_HOSTS": "127.0.0.1,elsewhere.example"}, str(payments))
    # without a client nothing is exchanged, so nothing is checked
    _config({"ANVIL_BASE_URL": "http://127.0.0.1:9", endpoint: "https://auth.elsewhere.example/token"}, str(payments))


def test_each_fleet_bundle_reads_its_own_client_credentials(github: Path, payments: Path) -> None:
    plain = _client_variables(payments, "default")
    twins = _client_variables(payments, "default_payments")
    environ = {
        "ANVIL_BASE_URL_GITHUB": "http://127.0.0.1:1",
        "ANVIL_BASE_URL_PAYMENTS": "http://127.0.0.1:2",
        "ANVIL_CREDENTIAL_HOSTS": "payments.internal.example.com",
        twins[0]: "payments-client",
        twins[1]: "payments-secret",
        twins[4]: "payments.read",
    }
    _, settings = _config(environ, str(github), str(payments)).settings
    assert {name: settings.credentials.get(name) for name in (plain[0], plain[1], plain[4])} == {
        plain[0]: "payments-client",
        plain[1]: "payments-secret",
        plain[4]: "payments.read",
    }
    assert settings.credentials["ANVIL_CREDENTIAL_HOSTS"] == "payments.internal.example.com"


UPLOAD = "https://upload.files.example/api/2.0"


def test_an_operation_server_keeps_its_own_url_and_the_deployments_allowlist_admits_it(files: Path) -> None:
    [settings] = _config({"ANVIL_ALLOWED_HOSTS": "api.files.example,upload.files.example"}, str(files)).settings
    assert (settings.base_url, dict(settings.server_urls)) == ("https://api.files.example/2.0", {})


def test_a_server_outside_what_the_operator_allowed_is_refused_at_start_up_naming_what_to_set(files: Path) -> None:
    environ = {"ANVIL_ENV": "dev", "ANVIL_BASE_URL": "http://127.0.0.1:9"}  # pins the allowlist to 127.0.0.1
    with pytest.raises(ConfigError) as refused:
        _config(environ, str(files))
    assert refused.value.code == "config/server_not_allowed"
    assert refused.value.message == (
        "Bundle 'files': files.content.create.direct, files.content.create.by_file_id are sent to "
        f"{UPLOAD}, the server declared for them, whose host upload.files.example is outside the allowed hosts "
        "(127.0.0.1)."
    )
    assert refused.value.hint == (
        "Re-point that server with ANVIL_BASE_URL__UPLOAD_FILES_EXAMPLE=URL, or add upload.files.example to "
        "ANVIL_ALLOWED_HOSTS."
    )
    with pytest.raises(ConfigError) as prod:  # outside dev an empty allowlist allows no host
        _config({}, str(files))
    assert prod.value.code == "config/server_not_allowed" and "(none: only ANVIL_ENV=dev" in prod.value.message


def test_the_operator_re_points_a_server_by_its_host_and_the_allowlist_is_pinned_to_both_hosts(files: Path) -> None:
    environ = {
        "ANVIL_ENV": "dev",
        "ANVIL_BASE_URL": "http://127.0.0.1:9",
        "ANVIL_BASE_URL__UPLOAD_FILES_EXAMPLE": "http://127.0.0.2:7/up",
    }
    [settings] = _config(environ, str(files)).settings
    assert dict(settings.server_urls) == {UPLOAD: "http://127.0.0.2:7/up"}
    assert settings.allowed_hosts == ("127.0.0.1", "127.0.0.2")
    bundle_own = {**environ, "ANVIL_BASE_URL_FILES__UPLOAD_FILES_EXAMPLE": "http://127.0.0.1:8"}
    [settings] = _config(bundle_own, str(files)).settings
    assert dict(settings.server_urls) == {UPLOAD: "http://127.0.0.1:8"}  # the bundle's own variable wins


def test_a_re_pointed_server_url_with_user_info_is_refused(files: Path) -> None:
    environ = {"ANVIL_ENV": "dev", "ANVIL_BASE_URL__UPLOAD_FILES_EXAMPLE": "http://user:pw@127.0.0.1:7"}
    with pytest.raises(ConfigError) as refused:
        _config(environ, str(files))
    assert refused.value.code == "config/invalid"
    assert "ANVIL_BASE_URL__UPLOAD_FILES_EXAMPLE" in refused.value.message and "pw" not in refused.value.message


def test_a_fleet_re_points_a_server_only_through_the_bundles_own_variable(files: Path, payments: Path) -> None:
    assert server_variables("files", UPLOAD) == (
        "ANVIL_BASE_URL_FILES__UPLOAD_FILES_EXAMPLE",
        "ANVIL_BASE_URL__UPLOAD_FILES_EXAMPLE",
    )
    assert server_variables("files", UPLOAD, fleet=True) == ("ANVIL_BASE_URL_FILES__UPLOAD_FILES_EXAMPLE",)
    environ = {
        "ANVIL_ENV": "dev",
        "ANVIL_BASE_URL_FILES": "http://127.0.0.1:9",
        "ANVIL_BASE_URL__UPLOAD_FILES_EXAMPLE": "http://127.0.0.1:7",
    }
    with pytest.raises(ConfigError) as refused:
        _config(environ, str(files), str(payments))
    assert refused.value.code == "config/server_not_allowed"
    assert "ANVIL_BASE_URL_FILES__UPLOAD_FILES_EXAMPLE=URL" in (refused.value.hint or "")
    assert "ANVIL_ALLOWED_HOSTS_FILES" in (refused.value.hint or "")
    fleet = {**environ, "ANVIL_BASE_URL_FILES__UPLOAD_FILES_EXAMPLE": "http://127.0.0.1:7"}
    files_settings, _ = _config(fleet, str(files), str(payments)).settings
    assert dict(files_settings.server_urls) == {UPLOAD: "http://127.0.0.1:7"}


def test_each_fleet_bundle_reads_its_own_composite_factors_and_a_plain_factor_both_would_read_is_refused(
    tmp_path: Path,
) -> None:
    from anvil.bundle.read import read_bundle
    from anvil.cli.compile import compile_bundle
    from anvil.cli.serve_config import credential_variables
    from tests.cli.fixtures.upstreams import VAULT_MANIFEST, VAULT_SPEC, compile_vault

    us = compile_vault(tmp_path / "us" / "vault")
    eu = tmp_path / "eu" / "vaulteu"
    assert compile_bundle(VAULT_SPEC, out=eu, manifest=VAULT_MANIFEST, service_id="vaulteu").bundle_hash
    plain = credential_variables(read_bundle(us), "default")
    assert plain == credential_variables(read_bundle(eu), "default") and len(plain) == 3
    twins = {
        name: credential_variables(read_bundle(path), f"default_{name}")
        for name, path in (("vault", us), ("vaulteu", eu))
    }
    environ = {"ANVIL_BASE_URL_VAULT": "http://127.0.0.1:1", "ANVIL_BASE_URL_VAULTEU": "http://127.0.0.1:2"}
    for name, names in twins.items():
        environ |= {twin: f"{name}-{index}" for index, twin in enumerate(names)}
    first, second = _config(environ, str(us), str(eu)).settings
    assert [first.credentials[name] for name in plain] == ["vault-0", "vault-1", "vault-2"]
    assert [second.credentials[name] for name in plain] == ["vaulteu-0", "vaulteu-1", "vaulteu-2"]
    shared = {key: value for key, value in environ.items() if key != twins["vaulteu"][1]} | {plain[1]: "whose?"}
    with pytest.raises(ConfigError) as refused:
        _config(shared, str(us), str(eu))
    assert refused.value.code == "fleet/ambiguous_credential" and twins["vaulteu"][1] in str(refused.value.hint)
    assert "whose?" not in str(refused.value)


@pytest.mark.parametrize(
    ("variable", "value", "entry"),
    [
        ("ANVIL_ALLOWED_HOSTS", "payments.internal.example.com,api.example.com:443", "api.example.com:443"),
        ("ANVIL_ALLOWED_HOSTS", "*.example.com", "*.example.com"),
        ("ANVIL_ALLOWED_HOSTS", "https://api.example.com", "https://api.example.com"),
        ("ANVIL_ALLOWED_HOSTS_PAYMENTS", "pay ments.example", "pay ments.example"),
        ("ANVIL_CREDENTIAL_HOSTS", "auth.example.com/token", "auth.example.com/token"),
    ],
)
def test_a_host_list_entry_that_is_no_host_is_refused_at_start_up_naming_it(
    payments: Path, variable: str, value: str, entry: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        _config({variable: value}, str(payments))
    assert refused.value.code == "config/invalid_host"
    assert f"{variable} entry '{entry}' is refused" in refused.value.message


def test_the_reviewers_comma_list_never_admits_a_whole_top_level_domain(payments: Path) -> None:
    from anvil.runtime.gates import host_allowed

    environ = {"ANVIL_ALLOWED_HOSTS": "payments.internal.example.com,com,net,io"}
    [settings] = _config(environ, str(payments)).settings
    assert settings.allowed_hosts == ("payments.internal.example.com", "com", "net", "io")
    assert host_allowed("https://payments.internal.example.com/v1", "prod", settings.allowed_hosts)
    for url in ("https://evil.com", "https://attacker.net/x", "https://a.b.io"):
        assert not host_allowed(url, "prod", settings.allowed_hosts)


def test_an_operator_url_whose_host_is_no_host_is_refused(payments: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        _config({"ANVIL_BASE_URL": "https://api.example.net,com,net,io/v1"}, str(payments))
    assert refused.value.code == "config/invalid"


def test_a_bundle_in_a_folder_named_bundle_is_called_by_its_service_and_its_ledger_scope_is_unchanged(
    payments: Path, tmp_path: Path
) -> None:
    import shutil

    image = tmp_path / "srv" / "bundle"  # where the generated image keeps it
    shutil.copytree(payments, image)
    environ = {"ANVIL_BASE_URL": "http://127.0.0.1:9"}
    served, named = _config(environ, str(image)), _config(environ, f"refunds={image}")
    assert [bundle_id for bundle_id, _ in served.bundles] == ["payments"]
    assert [bundle_id for bundle_id, _ in named.bundles] == ["refunds"]  # the operator's name wins
    # rows never were keyed by the bundle's name: the ledger scope names the service id, the table the
    # deployment namespace, both read from the bundle, so existing rows stay where they were
    before = _config(environ, str(payments))
    for config in (served, named):
        assert config.ledger_namespace == before.ledger_namespace == "payments"
        assert config.bundles[0][1].service.id == "payments"
