"""The counting helper's chunked counts: each distinct chunk encoded once, the sums those of whole texts."""

from __future__ import annotations

from anvil.air.tokentable import ChunkCounts, Encoding, encoding

#: Texts whose pieces cross or touch a ``"``: a cut anywhere but after a letter would change their counts.
_TEXTS = [
    '{"name":"jira.issue.get","inputSchema":{"type":"object","properties":{"key":{"type":"string"}}}}',
    'don\'t" say "it\'s"s\'"ll"VE"',
    'ABC"DEF"abcDef"x"Y"z',
    'x" "y"  "z"\n"a"\r\n"b"\t"c" ',
    '123"4567"89"0',
    'é"é"日本語"テキスト"Ünï"',  # an e with a combining accent, then letters beyond ASCII
    '"""a""b"""',
    "",
    '"',
    "plain text without any quote",
    'x"' * 500,
]


class _Recording:
    """An encoder that records what it was asked to encode."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def encode_ordinary(self, text: str) -> list[int]:
        self.asked.append(text)
        return encoding().encode_ordinary(text)


def test_a_text_counted_by_chunks_has_the_count_of_the_whole_text() -> None:
    counts = ChunkCounts(encoding())
    for text in _TEXTS:
        assert counts.count(text) == len(encoding().encode_ordinary(text)), text


def test_cuts_fall_only_after_an_ascii_letter_before_a_quote() -> None:
    recording = _Recording()
    ChunkCounts(recording).count('{"type":"object","n":1}')
    assert recording.asked == ['{"type', '":"object', '","n', '":1}']


def test_a_chunk_seen_before_is_not_encoded_again() -> None:
    recording = _Recording()
    counts = ChunkCounts(recording)
    text = '{"type":"object","properties":{"id":{"type":"string"}}}'
    first = counts.count(text)
    asked = len(recording.asked)
    assert counts.count(text) == first
    assert counts.count('{"type":"string"}') == len(encoding().encode_ordinary('{"type":"string"}'))
    assert len(recording.asked) == asked + 1  # only the new opening chunk '{"type' was not known


def test_past_the_kept_characters_new_chunks_are_counted_without_being_kept() -> None:
    recording = _Recording()
    counts = ChunkCounts(recording, keep_chars=10)
    text = 'abcdefgh"ijklmnopqrstu"vwxyz'
    assert counts.count(text) == len(encoding().encode_ordinary(text))
    assert counts.count(text) == len(encoding().encode_ordinary(text))
    assert list(counts) == ["abcdefgh"]  # the two longer chunks were not kept: asked again
    assert recording.asked == ["abcdefgh", '"ijklmnopqrstu', '"vwxyz', '"ijklmnopqrstu', '"vwxyz']


def test_the_recording_encoder_is_an_encoding() -> None:
    encoder: Encoding = _Recording()
    assert encoder.encode_ordinary("hello world") == [24912, 2375]
