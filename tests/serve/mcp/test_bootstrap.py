"""The bootstrap tables are the installed SDK's: constants, call-result shapes, every corpus listing, initialize.

The hot path answers from :mod:`anvil.serve.mcp.bootstrap` before the SDK is imported; these tests hold the
tables against the SDK's own pipeline (:class:`~anvil.serve.mcp.sdkwire.SdkWire`) for every handshake version,
so an SDK upgrade that changes an answer fails here (and, at run time, switches the hot path to the SDK).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx
import pytest
from pydantic import TypeAdapter, ValidationError

from anvil.air.model import Document
from anvil.serve.gateway import Gateway
from anvil.serve.mcp import bootstrap
from anvil.serve.mcp.bootstrap import BOOTSTRAP, HANDSHAKE_VERSIONS, WireTables
from anvil.serve.mcp.sdkwire import SdkWire, sdk_constants
from anvil.serve.mcp.server import build_server
from tests.serve.support import listing_gateway

pytestmark = pytest.mark.anyio

REQUESTED = (*HANDSHAKE_VERSIONS, "2026-07-28", "1999-01-01", "")


def test_the_bootstrap_constants_are_the_sdks() -> None:
    assert {name: getattr(bootstrap, name) for name in sdk_constants()} == sdk_constants()
    assert BOOTSTRAP.versions == sdk_constants()["HANDSHAKE_VERSIONS"]
    assert (BOOTSTRAP.latest, BOOTSTRAP.default) == (
        sdk_constants()["LATEST_HANDSHAKE_VERSION"],
        sdk_constants()["DEFAULT_NEGOTIATED_VERSION"],
    )


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
async def test_the_call_result_shape_of_every_handshake_version_is_the_sdks(
    version: str, github: Document, make_gateway: Any
) -> None:
    wire = SdkWire(build_server(make_gateway(github)))
    assert BOOTSTRAP.call[version] == wire.shapes[version]


@pytest.mark.parametrize("instructions", [None, "Use the github tools. ✓"])
async def test_the_initialize_result_of_every_version_pair_is_the_sdks(
    instructions: str | None, github: Document, make_gateway: Any
) -> None:
    gateway: Gateway = make_gateway(github)
    wire = SdkWire(build_server(gateway, instructions=instructions))
    params = {"capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    for version in HANDSHAKE_VERSIONS:
        for requested in REQUESTED:
            mine = bootstrap.initialize_result(
                BOOTSTRAP,
                version,
                requested,
                name=gateway.server_name,
                server_version=gateway.version,
                instructions=instructions,
            )
            sdk = wire.initialize_result(version, {**params, "protocolVersion": requested})
            assert bootstrap.dumps(mine) == bootstrap.dumps(sdk), (version, requested)
            assert mine["protocolVersion"] == (requested if requested in HANDSHAKE_VERSIONS else "2025-11-25")


async def test_the_initialize_of_both_paths_advertises_tools_and_resources(github: Document, make_gateway: Any) -> None:
    gateway: Gateway = make_gateway(github)
    wire = SdkWire(build_server(gateway))
    params = {"capabilities": {}, "clientInfo": {"name": "c", "version": "1"}, "protocolVersion": "2025-11-25"}
    sdk = wire.initialize_result("2025-11-25", params)
    mine = bootstrap.initialize_result(
        BOOTSTRAP,
        "2025-11-25",
        "2025-11-25",
        name=gateway.server_name,
        server_version=gateway.version,
        instructions=None,
    )
    expected = {"resources": {"listChanged": False, "subscribe": False}, "tools": {"listChanged": False}}
    assert sdk["capabilities"] == mine["capabilities"] == expected


async def test_the_sdk_finds_no_difference_with_the_bootstrap_tables(github: Document, make_gateway: Any) -> None:
    gateway: Gateway = make_gateway(github)
    assert SdkWire(build_server(gateway)).differences(BOOTSTRAP, gateway, None) == []


async def test_tables_that_differ_from_the_sdk_are_named_by_the_comparison(github: Document, make_gateway: Any) -> None:
    gateway: Gateway = make_gateway(github)
    wire = SdkWire(build_server(gateway))
    shape = BOOTSTRAP.call["2025-06-18"]
    tool = BOOTSTRAP.tools["2024-11-05"]
    init = BOOTSTRAP.initialize["2025-11-25"]
    altered = WireTables(
        call={**BOOTSTRAP.call, "2025-06-18": replace(shape, defaults={})},
        tools={**BOOTSTRAP.tools, "2024-11-05": replace(tool, order=tuple(reversed(tool.order)))},
        initialize={**BOOTSTRAP.initialize, "2025-11-25": replace(init, capabilities={"tools": {}})},
    )
    found = wire.differences(altered, gateway, None)
    assert "tools/call 2025-06-18" in found
    assert "tools/list 2024-11-05" in found
    assert "initialize 2025-11-25 2025-11-25" in found
    assert not any(item.split()[1] == "2025-03-26" for item in found)  # an unaltered version agrees


def test_a_listing_outside_the_plain_shape_is_left_to_the_sdk() -> None:
    tool = {"name": "t", "inputSchema": {"type": "object"}}
    assert bootstrap.listing_result(BOOTSTRAP, "2025-11-25", [tool]) == {"tools": [tool]}
    for odd in (
        {**tool, "icons": [{"src": "x"}]},
        {**tool, "inputSchema": {"type": "array"}},
        {**tool, "inputSchema": {"type": "object", "required": [1]}},
        {**tool, "annotations": {"readOnlyHint": "yes"}},
        {**tool, "_meta": {"n": float("nan")}},
        {**tool, "name": None},
    ):
        assert bootstrap.listing_result(BOOTSTRAP, "2025-11-25", [tool, odd]) is None


@pytest.mark.corpus
async def test_every_corpus_spec_lists_as_the_sdk_lists_it_at_every_handshake_version(
    corpus_documents: list[tuple[str, Document]],
) -> None:
    async with httpx.AsyncClient() as client:
        for name, document in corpus_documents:
            gateway = listing_gateway(document, client)
            assert gateway.tools, name
            for version in HANDSHAKE_VERSIONS:
                mine = bootstrap.listing_result(BOOTSTRAP, version, gateway.tools)
                assert mine is not None, (name, version)  # the bootstrap encoder covers every corpus tool
                sdk = SdkWire.listing_result(gateway, version)
                assert bootstrap.dumps(mine) == bootstrap.dumps(sdk), (name, version)


def _validation_error() -> Exception:
    try:
        TypeAdapter(int).validate_python("not a number")
    except ValidationError as exc:
        return exc
    raise AssertionError("the value validated")


async def test_an_exception_before_the_sdk_loaded_is_answered_as_the_sdk_answers_it(
    github: Document, make_gateway: Any
) -> None:
    wire = SdkWire(build_server(make_gateway(github)))
    for exc in (RuntimeError("boom"), ValueError('ünï \u2028 "q"'), KeyError("k"), _validation_error()):
        for request_id in (1, "r-ü", 2**40):
            mine = bootstrap.exception_answer(exc, request_id)
            assert mine == wire.error_answer(exc, request_id, log=False), (exc, request_id)
    assert b'"code":-32602' in bootstrap.exception_answer(_validation_error(), 1)
