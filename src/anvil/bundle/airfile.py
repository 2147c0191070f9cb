"""``air.json``'s bytes, serialized once per document.

The bundle writes them (:mod:`anvil.bundle.emit`) and ``deploy/cloudbuild.yaml`` hashes them
(:func:`anvil.bundle.cloudbuild.bundle_identity`); serializing a large API's AIR takes a noticeable
share of a compile, so the bytes of the last document are kept (documents are immutable).
"""

from __future__ import annotations

from anvil.air.codec import document_json
from anvil.air.model import Document
from anvil.bundle.encoding import json_file

__all__ = ["air_file"]

_LAST: list[tuple[Document, bytes]] = []


def air_file(doc: Document) -> bytes:
    """The bytes of ``air.json`` for ``doc`` (pretty JSON, one trailing newline)."""
    last = _LAST[0] if _LAST else None
    if last is not None and last[0] is doc:
        return last[1]
    data = json_file(document_json(doc))
    _LAST[:] = [(doc, data)]
    return data
