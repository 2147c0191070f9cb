"""Reading a generated Dockerfile and its ignore file the way Docker does (test helpers)."""

from __future__ import annotations

import re

__all__ = ["dockerignore_admits", "instructions"]


def dockerignore_admits(ignore_text: str, path: str) -> bool:
    """Whether Docker sends ``path`` (relative, POSIX) in the build context, per a ``.dockerignore`` text.

    Docker's rules: the last pattern that matches the path or one of its parent directories decides; ``!``
    re-includes; ``*`` and ``?`` stop at ``/``; ``**`` crosses it; a leading or trailing ``/`` is dropped.
    """
    parts = path.split("/")
    candidates = ["/".join(parts[: index + 1]) for index in range(len(parts))]
    admitted = True
    for raw in ignore_text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        pattern = line.removeprefix("!").strip("/")
        regex = ""
        index = 0
        while index < len(pattern):
            if pattern.startswith("**", index):
                regex, index = regex + ".*", index + 2
                continue
            char = pattern[index]
            regex += "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char)
            index += 1
        if any(re.fullmatch(regex, candidate) for candidate in candidates):
            admitted = negated
    return admitted


def instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` of a Dockerfile: continuation lines joined, comments dropped."""
    joined = re.sub(r" *\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out
