"""`anvil serve`'s connection flags and variables, and the listening socket a worker inherits."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import pytest

from anvil.cli import main
from anvil.cli.listen import connection_limits, inherited_listener, limit_argv, register_listener_flags
from anvil.errors import ConfigError
from anvil.serve.mcp.http import listen
from anvil.serve.mcp.limits import DEFAULT_LIMITS, ConnectionLimits


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register_listener_flags(parser)
    return parser.parse_args(list(argv))


def test_the_connection_limits_default_come_from_the_variables_and_a_flag_wins() -> None:
    environ = {"ANVIL_HEADER_TIMEOUT_SECONDS": "2.5", "ANVIL_MAX_CONNECTIONS": "300", "ANVIL_KEEP_ALIVE_SECONDS": " "}
    assert connection_limits({}, _args()) == DEFAULT_LIMITS
    assert connection_limits(environ, _args("--max-connections", "50")) == ConnectionLimits(
        header_timeout_seconds=2.5, keep_alive_seconds=DEFAULT_LIMITS.keep_alive_seconds, max_connections=50
    )
    assert DEFAULT_LIMITS == ConnectionLimits(
        header_timeout_seconds=10, keep_alive_seconds=5, max_connections=4096, max_head_bytes=65536
    )


@pytest.mark.parametrize(
    ("environ", "argv", "named"),
    [
        ({"ANVIL_HEADER_TIMEOUT_SECONDS": "soon"}, (), "ANVIL_HEADER_TIMEOUT_SECONDS"),
        ({"ANVIL_HEADER_TIMEOUT_SECONDS": "nan"}, (), "ANVIL_HEADER_TIMEOUT_SECONDS"),
        ({}, ("--header-timeout", "0"), "--header-timeout"),
        ({"ANVIL_KEEP_ALIVE_SECONDS": "inf"}, (), "ANVIL_KEEP_ALIVE_SECONDS"),
        ({"ANVIL_MAX_CONNECTIONS": "1.5"}, (), "ANVIL_MAX_CONNECTIONS"),
        ({}, ("--max-connections", "0"), "--max-connections"),
    ],
)
def test_a_connection_limit_that_is_not_a_number_in_range_is_refused(
    environ: dict[str, str], argv: tuple[str, ...], named: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        connection_limits(environ, _args(*argv))
    assert refused.value.code == "config/invalid" and named in refused.value.message


def test_anvil_serve_refuses_a_bad_connection_limit_before_it_binds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], payments: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANVIL_ENV", "dev")
    assert main(["serve", str(payments), "--http", "127.0.0.1:0", "--keep-alive", "-1"]) == 3
    err = capsys.readouterr().err
    assert "error[config/invalid]" in err and "--keep-alive" in err and "Traceback" not in err


def test_a_worker_gets_the_connection_flags_given_on_the_command_line() -> None:
    assert limit_argv(_args("--keep-alive", "2", "--max-connections", "9")) == [
        "--keep-alive",
        "2",
        "--max-connections",
        "9",
    ]
    assert limit_argv(_args()) == []


def test_an_inherited_descriptor_must_be_a_listening_tcp_socket() -> None:
    listening = listen("127.0.0.1", 0)
    bound = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    bound.bind(("127.0.0.1", 0))
    try:
        adopted = inherited_listener(listening.fileno())
        assert adopted.getsockname() == listening.getsockname()
        adopted.detach()  # the same descriptor: closed once, below
        with pytest.raises(ConfigError) as not_listening:
            inherited_listener(bound.fileno())
        assert not_listening.value.code == "config/invalid"
        assert bound.fileno() != -1  # a refused descriptor is left to its owner
    finally:
        listening.close()
        bound.close()
