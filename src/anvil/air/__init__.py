"""AIR: the canonical model every surface projects from. Depends on nothing else of ours."""

from anvil.air.canonical import canonical_json, hash_canonical, pretty_json, sha256_hex
from anvil.air.codec import contract_hash, document_json, from_json, load_document, to_json
from anvil.air.model import *  # noqa: F403
from anvil.air.model import __all__ as _model_all

__all__ = [
    "canonical_json",
    "contract_hash",
    "document_json",
    "from_json",
    "hash_canonical",
    "load_document",
    "pretty_json",
    "sha256_hex",
    "to_json",
    *_model_all,
]
