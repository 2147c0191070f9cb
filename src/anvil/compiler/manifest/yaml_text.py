"""Spec text written into a manifest: every key, value and comment one line, read back as written.

``anvil init`` writes strings a spec chose (operationIds, paths, summaries, header and scheme names)
into the ``anvil.yaml`` a reviewer approves. A line break in any of them would end the line and start a
key of the spec's choosing, so each is written through here: a comment is folded to one line without
control characters (:func:`comment`), and a key or value is plain only when YAML reads the plain text
back as the same string, else double-quoted with every control escaped (:func:`yaml_scalar`), so it
stays one line and holds exactly the string. Writing then checks itself
(:func:`anvil.compiler.manifest.draft.check_draft`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

import yaml

from anvil.load.controls import fold_controls, has_control

__all__ = ["YamlTextError", "block_lines", "comment", "yaml_key", "yaml_scalar"]

#: Plain scalars this module writes unquoted (still only when YAML reads them back unchanged).
_PLAIN: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]*")
_RESERVED: Final = frozenset({"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"})
#: No line is wrapped: a long string stays one (long) line.
_NO_WRAP: Final = 1 << 30


class YamlTextError(ValueError):
    """A value cannot be written as one YAML line that reads back as itself (a lone surrogate)."""


def comment(text: str, limit: int = 110) -> str:
    """Spec text fit for one comment line: controls folded (:func:`anvil.load.controls.fold_controls`),
    white space runs one space, cut at ``limit`` characters."""
    folded = fold_controls(text[: limit * 8])
    return folded if len(folded) <= limit else folded[: limit - 1].rstrip() + "…"


def yaml_scalar(value: str) -> str:
    """``value`` as a one-line YAML scalar that reads back as exactly ``value``.

    Raises:
        YamlTextError: ``value`` holds a lone surrogate (no UTF-8 file and no YAML reader can hold one).
    """
    if _PLAIN.fullmatch(value) and value.lower() not in _RESERVED and _reads_as(value, value):
        return value
    if any("\ud800" <= char <= "\udfff" for char in value):
        raise YamlTextError("a lone surrogate cannot be written into a YAML file")
    # Escaping every non-ASCII character when any control is present keeps bidi overrides and the
    # like out of the file as characters; otherwise readable text stays readable.
    dumped = yaml.safe_dump(value, default_style='"', allow_unicode=not has_control(value), width=_NO_WRAP)
    line = dumped.removesuffix("\n").removesuffix("\n...")
    if "\n" in line or "\r" in line or not _reads_as(line, value):
        raise YamlTextError("the value does not read back as one YAML line")
    return line


def yaml_key(key: str) -> str:
    """``key`` as a YAML mapping key (see :func:`yaml_scalar`)."""
    return yaml_scalar(key)


def _reads_as(text: str, value: str) -> bool:
    try:
        return bool(yaml.safe_load(text) == value)
    except yaml.YAMLError:
        return False


def block_lines(mapping: Mapping[str, object], indent: int) -> list[str]:
    """``mapping`` as block YAML lines at ``indent`` spaces: nested mappings as blocks, every string
    through :func:`yaml_scalar`, booleans, integers and None as YAML spells them.

    Raises:
        YamlTextError: a string cannot be written (see :func:`yaml_scalar`), or a value is of another type.
    """
    pad = " " * indent
    lines: list[str] = []
    for key, value in mapping.items():
        if isinstance(value, Mapping):
            if not value:
                lines.append(f"{pad}{yaml_key(key)}: {{}}")
                continue
            lines.append(f"{pad}{yaml_key(key)}:")
            lines.extend(block_lines(value, indent + 2))
        else:
            lines.append(f"{pad}{yaml_key(key)}: {_scalar(value)}")
    return lines


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return yaml_scalar(value)
    raise YamlTextError(f"a {type(value).__name__} is not written into a manifest by anvil init")
