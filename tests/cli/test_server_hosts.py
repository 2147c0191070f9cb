"""`anvil serve` names every operation server outside the allowed hosts in one refusal, one hint line per host."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from anvil.cli import main
from anvil.cli.serve import register
from anvil.cli.serve_config import config_from_env
from anvil.errors import ConfigError
from tests.cli.fixtures.upstreams import compile_files

UPLOAD = "https://upload.files.example/api/2.0"
VERSIONS = "https://versions.files.example/api/2.0"
PINNED = {"ANVIL_ENV": "dev", "ANVIL_BASE_URL": "http://127.0.0.1:9"}  # the allowlist is pinned to 127.0.0.1


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """files, with its new-version upload sent to a second host (versions.files.example)."""
    return compile_files(tmp_path_factory.mktemp("hosts") / "files", servers={UPLOAD: VERSIONS})


def _refusal(environ: dict[str, str], *bundles: Path | str) -> ConfigError:
    parser = argparse.ArgumentParser()
    register(parser)
    with pytest.raises(ConfigError) as refused:
        config_from_env(environ, parser.parse_args([str(bundle) for bundle in bundles]))
    assert refused.value.code == "config/server_not_allowed"
    return refused.value


def test_every_refused_server_of_a_bundle_is_named_in_one_refusal_with_a_hint_line_per_host(two_hosts: Path) -> None:
    refused = _refusal(PINNED, two_hosts)
    assert refused.message == (
        "2 operation servers are outside the allowed hosts:\n"
        f"  Bundle 'files': files.content.create.direct is sent to {UPLOAD}, the server declared for it, whose "
        "host upload.files.example is outside the allowed hosts (127.0.0.1).\n"
        f"  Bundle 'files': files.content.create.by_file_id is sent to {VERSIONS}, the server declared for it, "
        "whose host versions.files.example is outside the allowed hosts (127.0.0.1)."
    )
    assert (refused.hint or "").splitlines() == [
        "Re-point that server with ANVIL_BASE_URL__UPLOAD_FILES_EXAMPLE=URL, or add upload.files.example to "
        "ANVIL_ALLOWED_HOSTS.",
        "Re-point that server with ANVIL_BASE_URL__VERSIONS_FILES_EXAMPLE=URL, or add versions.files.example to "
        "ANVIL_ALLOWED_HOSTS.",
    ]


def test_a_fleet_names_the_refused_servers_of_every_bundle_at_once(
    files: Path, two_hosts: Path, tmp_path: Path
) -> None:
    other = compile_files(tmp_path / "other", servers={UPLOAD: VERSIONS})  # service files too: named 'store'
    environ = {
        "ANVIL_ENV": "dev",
        "ANVIL_BASE_URL_FILES": "http://127.0.0.1:9",
        "ANVIL_BASE_URL_STORE": "http://127.0.0.1:8",
    }
    refused = _refusal(environ, files, f"store={other}")
    assert refused.message.startswith("3 operation servers are outside the allowed hosts:\n")
    assert refused.message.count("Bundle 'files'") == 1 and refused.message.count("Bundle 'store'") == 2
    assert (refused.hint or "").splitlines() == [
        "Re-point that server with ANVIL_BASE_URL_FILES__UPLOAD_FILES_EXAMPLE=URL, or add upload.files.example to "
        "ANVIL_ALLOWED_HOSTS_FILES (bundle 'files').",
        "Re-point that server with ANVIL_BASE_URL_STORE__UPLOAD_FILES_EXAMPLE=URL, or add upload.files.example to "
        "ANVIL_ALLOWED_HOSTS_STORE (bundle 'store').",
        "Re-point that server with ANVIL_BASE_URL_STORE__VERSIONS_FILES_EXAMPLE=URL, or add versions.files.example "
        "to ANVIL_ALLOWED_HOSTS_STORE (bundle 'store').",
    ]


def test_anvil_serve_prints_each_hint_line_as_its_own_hint(
    two_hosts: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, value in PINNED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("ANVIL_ALLOWED_HOSTS", raising=False)
    assert main(["serve", str(two_hosts), "--http", "127.0.0.1:0"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error[config/server_not_allowed]: 2 operation servers are outside the allowed hosts:\n")
    hints = [line for line in err.splitlines() if line.startswith("hint: ")]
    assert [hint.split(" with ")[1].split("=")[0] for hint in hints] == [
        "ANVIL_BASE_URL__UPLOAD_FILES_EXAMPLE",
        "ANVIL_BASE_URL__VERSIONS_FILES_EXAMPLE",
    ]
