"""Host names: a server URL, an allowlist entry or a credential host names a DNS name or an IP address."""

from __future__ import annotations

import pytest

from anvil.air.hosts import host_list, host_matches, host_problem, is_host, normalize_host


@pytest.mark.parametrize(
    "host",
    ["api.example.com", "localhost", "xn--bcher-kva.example", "a-b.c9.example", "127.0.0.1", "::1", "2001:db8::1"],
)
def test_a_dns_name_of_ldh_labels_or_an_ip_literal_is_a_host(host: str) -> None:
    assert host_problem(host) is None and is_host(host)


@pytest.mark.parametrize(
    "host",
    [
        "status.example.net,com,net,io",  # the reviewer's comma host
        "a b.example",
        "api.example.com:443",
        "*.example.com",
        "https://api.example.com",
        "under_score.example",
        "-lead.example",
        "trail-.example",
        "dot..example",
        "trailing.example.",
        "bücher.example",
        "api.example.com\n",
        "1.2.3",
        "300.1.1.1",
        "x" * 64 + ".example",
        ".".join(["a"] * 130),
        "",
    ],
    ids=lambda host: ascii(host)[:40],
)
def test_anything_else_is_refused_saying_why(host: str) -> None:
    problem = host_problem(host)
    assert problem is not None and not is_host(host)


def test_an_ipv6_literal_loses_its_brackets_and_every_host_is_lower_case() -> None:
    assert normalize_host(" [::1] ") == "::1" and normalize_host("API.Example.COM") == "api.example.com"


def test_a_host_list_refuses_its_first_bad_entry_by_name() -> None:
    assert host_list(" a.example, ,B.example,a.example ", "ANVIL_ALLOWED_HOSTS") == ("a.example", "b.example")
    with pytest.raises(ValueError, match=r"ANVIL_ALLOWED_HOSTS entry 'api\.example\.com:443' is refused"):
        host_list("ok.example,api.example.com:443", "ANVIL_ALLOWED_HOSTS")


def test_a_one_label_entry_admits_only_itself_never_a_whole_top_level_domain() -> None:
    entries = host_list("status.example.net,com,net,io", "ANVIL_ALLOWED_HOSTS")
    assert not any(host_matches("evil.com", entry) for entry in entries)
    assert not any(host_matches("attacker.io", entry) for entry in entries)
    assert any(host_matches("eu.status.example.net", entry) for entry in entries)
    assert host_matches("localhost", "localhost") and not host_matches("a.localhost", "localhost")
    assert not host_matches("1.127.0.0.1", "127.0.0.1")
