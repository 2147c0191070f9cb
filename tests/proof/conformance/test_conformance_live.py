"""anvil conformance --live: the config is judged before any connection; a mutation is never driven."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from anvil.bundle.read import read_bundle
from anvil.cli import main
from anvil.errors import ConfigError
from anvil.proof.conformance.lane import child_environment
from anvil.proof.conformance.live import LIVE_CHECK_IDS, LIVE_FILE, live_conformance, parse_live_config
from anvil.serve.health import artifact_hash

OWNER_REPO = {"owner": "octo", "repo": "hello"}
_CLOSED = "http://127.0.0.1:9/mcp"  # nothing listens on the discard port: a connection would fail loudly


def _config(**fields: object) -> str:
    return json.dumps({"mcpUrl": _CLOSED, "headers": {}, "probeReads": [], "inputs": {}, **fields})


def test_the_live_check_ids_are_the_public_registry() -> None:
    assert LIVE_CHECK_IDS == ("artifact-attestation", "surface-live", "gate-live", "read-live", "identity-live")


def test_a_config_of_approved_reads_parses_with_ids_pinned_from_tool_names(github: Path) -> None:
    config = parse_live_config(
        _config(
            probeReads=["github_list_issue", "github.issues.get"], inputs={"github.issues.get": {"issue_number": 1}}
        ),
        read_bundle(github),
    )
    assert config.probe_reads == ("github.issues.list", "github.issues.get")
    assert config.inputs == {"github.issues.get": {"issue_number": 1}}
    assert config.origin == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    "fields",
    [
        {"probeReads": ["github.comments.create"]},
        {"probeReads": ["github.issues.list"], "inputs": {"github_delete_comment": {}}},
    ],
)
def test_a_config_naming_a_mutation_is_refused(github: Path, fields: dict[str, object]) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_live_config(_config(**fields), read_bundle(github))
    assert refused.value.code == "proof/live_mutation_refused"


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[]",
        json.dumps({"mcpUrl": "ftp://example.test/mcp"}),
        json.dumps({"mcpUrl": "https://user:secret@example.test/mcp"}),
        _config(headers={"Authorization": 1}),
        _config(probeReads=["github.nothing.here"]),
        _config(probeReads=["github.issues.list"], inputs={"github.issues.get": {}}),
    ],
)
def test_a_malformed_config_is_a_coded_refusal(github: Path, text: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_live_config(text, read_bundle(github))
    assert refused.value.code == "proof/live_config_invalid"


def test_the_cli_refuses_a_mutation_before_connecting_and_writes_no_record(
    github: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "live.json"
    config.write_text(_config(probeReads=["github.releases.create"]), encoding="utf-8")
    assert main(["conformance", str(github), "--live", str(config)]) == 3
    assert "error[proof/live_mutation_refused]" in capsys.readouterr().err
    assert not (github / "conformance.live.report.json").exists()


def test_an_unset_header_variable_is_refused_by_name(
    github: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "live.json"
    config.write_text(_config(headers={"Authorization": "Bearer ${ANVIL_TEST_UNSET_TOKEN_VARIABLE}"}), encoding="utf-8")
    assert main(["conformance", str(github), "--live", str(config)]) == 3
    err = capsys.readouterr().err
    assert "error[proof/live_config_invalid]" in err and "ANVIL_TEST_UNSET_TOKEN_VARIABLE" in err


def test_a_misspelt_config_key_is_refused_before_connecting_and_writes_no_record(
    github: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "live.json"
    config.write_text(_config(probeRead=["github.issues.list"]), encoding="utf-8")
    assert main(["conformance", str(github), "--live", str(config)]) == 3
    err = capsys.readouterr().err
    assert "error[proof/live_config_invalid]" in err
    assert "unknown live config key(s) 'probeRead'" in err and "probeReads" in err
    assert not (github / "conformance.live.report.json").exists()


@contextmanager
def _announced(command: list[str], env: dict[str, str]) -> Iterator[str]:
    """A child that prints ``{"url": ...}`` first (anvil mock, anvil serve); stopped with SIGTERM."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        assert child.stdout is not None
        ready, _, _ = select.select([child.stdout], [], [], 60)
        assert ready, f"{command[3]} did not start"
        yield json.loads(child.stdout.readline())["url"]
    finally:
        child.terminate()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()


@contextmanager
def _deployed(bundle: Path) -> Iterator[str]:
    """``anvil serve BUNDLE`` on loopback against ``anvil mock BUNDLE``: a stand-in for a deployed gateway."""
    doc = read_bundle(bundle)
    env = child_environment(doc, dict(os.environ))
    with _announced([sys.executable, "-m", "anvil", "mock", str(bundle), "--port", "0"], env) as upstream:
        serve = [sys.executable, "-m", "anvil", "serve", str(bundle), "--http", "127.0.0.1:0", "--base-url", upstream]
        with _announced(serve, env) as url:
            yield url


def test_the_live_lane_attests_the_gateway_then_runs_only_the_opted_in_reads(
    github: Path,
    copy_bundle: Callable[[Path], Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bundle = copy_bundle(github)
    monkeypatch.setenv("ANVIL_TEST_LIVE_TOKEN", "s3cret-live-token")
    with _deployed(bundle) as url:
        config = bundle.parent / "live.json"
        config.write_text(
            _config(
                mcpUrl=url,
                headers={"X-Probe": "Bearer ${ANVIL_TEST_LIVE_TOKEN}"},
                probeReads=["github.issues.list", "github.pulls.list"],
                inputs={"github.issues.list": OWNER_REPO, "github.pulls.list": OWNER_REPO},
            ),
            encoding="utf-8",
        )
        assert main(["conformance", str(bundle), "--live", str(config)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("PASSED — ")
    text = (bundle / LIVE_FILE).read_text(encoding="utf-8")
    assert "s3cret-live-token" not in text
    record = json.loads(text)
    status = {(c["id"], c.get("operationId")): c["status"] for c in record["checks"]}
    assert status[("artifact-attestation", None)] == "pass"
    assert status[("surface-live", None)] == "pass"
    assert status[("gate-live", "github.issues.create")] == "pass"
    assert status[("read-live", "github.issues.list")] == "pass"
    assert status[("identity-live", None)] == "skipped"  # github-mini acts as a service, not for a user
    assert record["endpoint"].startswith("http://127.0.0.1:")


def test_a_gateway_that_runs_another_bundle_fails_attestation_and_nothing_else_runs(
    github: Path, payments: Path, copy_bundle: Callable[[Path], Path]
) -> None:
    bundle = copy_bundle(github)
    with _deployed(payments) as url:
        record = live_conformance(bundle, _config(mcpUrl=url, probeReads=["github.issues.list"]), environ={})
    (attestation,) = [c for c in record["checks"] if c["id"] == "artifact-attestation"]
    assert attestation["status"] == "fail"
    assert attestation["divergences"][0]["between"] == ["live", "local"]
    assert attestation["divergences"][0]["right"] == artifact_hash(read_bundle(bundle))
    assert {c["id"]: c["status"] for c in record["checks"] if c["id"] != "artifact-attestation"} == {
        "surface-live": "skipped",
        "gate-live": "skipped",
        "identity-live": "skipped",
    }
    assert record["summary"]["fail"] == 1
