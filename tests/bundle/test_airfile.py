"""``air.json``'s bytes are serialized once per document and shared by the bundle and its identity."""

from __future__ import annotations

from dataclasses import replace

from anvil.air.codec import document_json
from anvil.air.model import Document
from anvil.bundle.airfile import air_file
from anvil.bundle.encoding import json_file


def test_the_same_document_gets_the_same_bytes_object_without_serializing_again(payments_doc: Document) -> None:
    first = air_file(payments_doc)
    assert first == json_file(document_json(payments_doc))
    assert air_file(payments_doc) is first


def test_another_document_gets_its_own_bytes(payments_doc: Document) -> None:
    before = air_file(payments_doc)
    other = replace(payments_doc, service=replace(payments_doc.service, version="9.9.9"))
    assert air_file(other) == json_file(document_json(other))
    assert air_file(other) != before
