"""Spec text inside agent-facing Markdown: it reads as the same words and never becomes structure.

``skill/SKILL.md`` and ``skill/reference/*.md`` interpolate text the compiler does not author (an
OpenAPI title, summary or description, a scope name, a version string, a manifest reason). An agent
reads those files as instructions about the service, so a summary holding ``\\n## SYSTEM: …`` must not
become a heading, a backtick must not close a code span, and ``<!-- … -->`` must not hide text.

:func:`inline` folds every line break and run of whitespace into one space (so nothing starts a line:
no heading, list item, fence, block quote or table row), drops control characters, and
backslash-escapes what can open structure inside a line (``\\ ` < [ ] |``) and what would act at the
start of the line the text may open (``# > - + *``, ``1.``). :func:`code` writes a code span that
holds any text. Plain text (letters, digits, ``.,:;'"()/*_-``) passes through unchanged, so a bundle
whose texts need no escaping is byte-identical to one written without these helpers.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["code", "inline"]

#: Characters that open an inline construct (code span, raw HTML or autolink, link or image, table cell
#: boundary) anywhere in a line, and the escape character itself.
_INLINE_ACTIVE: Final = re.compile(r"([\\`<\[\]|])")
#: What would make the first characters of a line a block (heading, quote, list item, break).
_BLOCK_START: Final = re.compile(r"^(?:([#>+*-])|(\d{1,9})([.)]))")
_BACKTICK_RUN: Final = re.compile(r"`+")
#: Unicode's control characters (general category ``Cc``): exactly U+0000-U+001F and U+007F-U+009F.
_CONTROL: Final = re.compile("[\x00-\x1f\x7f-\x9f]")


def _fold(text: str) -> str:
    """``text`` on one line: control characters dropped, whitespace runs (line breaks too) one space."""
    return " ".join(_CONTROL.sub(" ", text).split())


def inline(text: str) -> str:
    """``text`` as one line of Markdown that renders as its words, never as structure (see the module)."""
    escaped = _INLINE_ACTIVE.sub(r"\\\1", _fold(text))
    match = _BLOCK_START.match(escaped)
    if match is None:
        return escaped
    if match.group(1):
        return "\\" + escaped
    return f"{match.group(2)}\\{escaped[len(match.group(2)) :]}"


def code(text: str) -> str:
    """``text`` (folded onto one line) as a code span, fenced by more backticks than it holds in a row."""
    folded = _fold(text)
    if "`" not in folded:
        return f"`{folded}`"
    fence = "`" * (max(len(run) for run in _BACKTICK_RUN.findall(folded)) + 1)
    return f"{fence} {folded} {fence}"
