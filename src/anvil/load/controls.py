"""Control characters: what no spec name may hold, and how spec text is folded to one safe line.

A spec is untrusted input. A line break in an operationId or a path would end the comment line
``anvil init`` writes it into and start a manifest key of the spec's choosing; a lone ``\\r``, a
``\\x85`` or a ``\\u2028`` is a line break to YAML though a terminal shows none; a bidirectional
override or an ANSI escape makes a line read differently from what it holds. So every such
character counts as a control here: the C0 and C1 controls and DEL (category ``Cc``), the format
controls (``Cf``: bidi overrides, zero-width characters, the BOM), the line and paragraph separators
(``Zl``, ``Zp``), lone surrogates (``Cs``, which UTF-8 cannot even write) and the noncharacters
U+FFFE and U+FFFF (which YAML refuses).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

__all__ = ["fold_controls", "has_control", "is_control"]

_CONTROL_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_NONCHARACTERS: Final = frozenset({"\ufffe", "\uffff"})
#: Controls that separate words (tabs, line and paragraph breaks, the information separators): a space.
_BREAKS: Final = frozenset("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\u2028\u2029")
_SPACES: Final = re.compile(r"\s+")
# Printable ASCII is never a control: the common case skips the per-character lookup.
_PLAIN_ASCII: Final = re.compile(r"[\x20-\x7e]*")


def is_control(char: str) -> bool:
    """True when the one character ``char`` is a control (see the module docstring)."""
    return char in _NONCHARACTERS or unicodedata.category(char) in _CONTROL_CATEGORIES


def has_control(text: str) -> bool:
    """True when ``text`` holds any control character."""
    return _PLAIN_ASCII.fullmatch(text) is None and any(is_control(char) for char in text)


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def fold_controls(text: str) -> str:
    """``text`` as one line without controls: breaks and tabs become a space, every other control its
    escape (``\\x1b``, ``\\u202e``), runs of white space one space; trimmed."""
    if not has_control(text):
        return _SPACES.sub(" ", text).strip()
    out = [" " if char in _BREAKS else _escape(char) if is_control(char) else char for char in text]
    return _SPACES.sub(" ", "".join(out)).strip()
