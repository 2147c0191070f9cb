from __future__ import annotations

from pathlib import Path

import pytest

from anvil.air.model import Document
from anvil.bundle.emit import emit_bundle
from anvil.bundle.generation import Generation, parse_generation
from anvil.bundle.read import read_bundle, read_generation
from anvil.bundle.writer import install_bundle
from anvil.errors import BundleError


def test_a_written_bundle_reads_back_as_the_same_document(tmp_path: Path, payments_doc: Document) -> None:
    install_bundle(tmp_path / "b", emit_bundle(payments_doc, Generation(mcp_endpoint="https://x.example/mcp")))
    assert read_bundle(tmp_path / "b") == payments_doc
    assert read_generation(tmp_path / "b") == Generation(mcp_endpoint="https://x.example/mcp")


@pytest.mark.parametrize(
    "content",
    [None, b"{not json", b'{"anvilVersion": "0.1.0"}', b"\xff\xfe"],
    ids=["missing", "not-json", "not-air", "not-utf8"],
)
def test_a_missing_or_corrupt_air_json_is_a_coded_error_with_a_hint(tmp_path: Path, content: bytes | None) -> None:
    if content is not None:
        (tmp_path / "air.json").write_bytes(content)
    with pytest.raises(BundleError) as caught:
        read_bundle(tmp_path)
    assert caught.value.code == "bundle/invalid"
    assert caught.value.hint


@pytest.mark.parametrize(
    "text",
    [
        "nope",
        '{"schemaVersion": 2, "resourceOptions": {}}',
        '{"schemaVersion": 1, "resourceOptions": []}',
        '{"schemaVersion": 1, "resourceOptions": {"mcpEndpoint": 3}}',
        '{"schemaVersion": 1, "resourceOptions": {"deploymentNamespace": "Bad_NS"}}',
    ],
)
def test_invalid_generation_inputs_are_refused(text: str) -> None:
    with pytest.raises(BundleError) as caught:
        parse_generation(text)
    assert caught.value.code == "bundle/invalid"


def test_reading_a_directory_without_generation_json_fails(tmp_path: Path) -> None:
    with pytest.raises(BundleError) as caught:
        read_generation(tmp_path)
    assert caught.value.code == "bundle/invalid"
