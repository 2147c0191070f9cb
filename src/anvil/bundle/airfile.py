"""``air.json``'s bytes, serialized once per document.

The bundle writes them (:mod:`anvil.bundle.emit`) and ``deploy/cloudbuild.yaml`` hashes them
(:func:`anvil.bundle.cloudbuild.bundle_identity`); serializing a large API's AIR takes a noticeable
share of a compile, so the bytes of the last document are kept (documents are immutable), and a
compile passes the operations' JSON its round trip already wrote (:attr:`CompileResult.operations_json`).
"""

from __future__ import annotations

from typing import Any

from anvil.air.codec import document_json
from anvil.air.model import Document
from anvil.bundle.encoding import json_file

__all__ = ["air_file"]

_LAST: list[tuple[Document, bytes]] = []


def air_file(doc: Document, *, operations_json: list[Any] | None = None) -> bytes:
    """The bytes of ``air.json`` for ``doc`` (pretty JSON, one trailing newline).

    ``operations_json``: the JSON of ``doc.operations`` when the caller has it (used as is).
    """
    last = _LAST[0] if _LAST else None
    if last is not None and last[0] is doc:
        return last[1]
    data = json_file(document_json(doc, operations=operations_json))
    _LAST[:] = [(doc, data)]
    return data
