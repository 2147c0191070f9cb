"""``anvil approve``: set ``state: approved`` on manifest entries, keeping every comment and line else.

A manifest is reviewed text: its comments are the review. So approval edits lines, not a parsed
tree: for each entry of ``operations:`` whose key matches a pattern (the key itself, or a shell-style
glob such as ``stripe.customers.*``), the entry's ``state:`` line gets the value ``approved``, or
one is added under the key. The result is parsed again and must differ from the original in exactly
those states; anything else (a flow-style entry, an unusual layout) is refused with the entry named,
and nothing is written.

What an approval approves is more than a state: an entry may also set safety fields the classifier
did not (a lower risk, no confirmation, retries, an idempotency key, an effect contract, a side effect
or auth of its own). :attr:`Approval.safety` lists them per approved entry, so ``anvil approve`` shows
the reviewer every one of them.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Sequence
from dataclasses import field
from typing import Any, Final

import yaml

from anvil._dataclass import dataclass

__all__ = ["SAFETY_FIELDS", "Approval", "ApprovalError", "approve_entries", "safety_fields"]

#: Entry keys that change how an operation is served beyond the classifier's posture (every key but
#: ``state`` and the cosmetic ones: names, descriptions, public input names).
SAFETY_FIELDS: Final = (
    "side_effect",
    "risk",
    "reversible",
    "action",
    "confirmation",
    "retries",
    "idempotency",
    "effect",
    "auth",
    "credential_hosts",
)

_TOP_OPERATIONS: Final = re.compile(r"^operations\s*:\s*(#.*)?$")
_TOP_KEY: Final = re.compile(r"^[^\s#]")
_STATE_LINE: Final = re.compile(r"^(?P<indent>\s+)state\s*:\s*(?P<value>[^#\s]*)(?P<rest>\s*(#.*)?)$")


class ApprovalError(Exception):
    """A pattern names no entry, or an entry cannot be edited safely; ``.message`` says which."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(frozen=True, slots=True)
class Approval:
    """The edited manifest text and what changed."""

    text: str
    approved: tuple[str, ...]  # entries set to approved by this call
    already: tuple[str, ...]  # entries that were approved before
    #: each entry approved by this call -> the safety fields it sets, as ``name: one-line JSON`` (ASCII)
    safety: dict[str, tuple[str, ...]] = field(default_factory=dict)


def safety_fields(entry: object) -> tuple[str, ...]:
    """The safety fields (:data:`SAFETY_FIELDS`) a parsed entry sets, each as ``name: value``, the value
    one line of ASCII JSON (so no control character of the file reaches a terminal)."""
    if not isinstance(entry, dict):
        return ()
    return tuple(
        f"{name}: {json.dumps(entry[name], ensure_ascii=True, default=str)}" for name in SAFETY_FIELDS if name in entry
    )


def _operations(text: str) -> dict[str, Any]:
    try:
        parsed = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ApprovalError(f"The manifest is not valid YAML: {exc}", "Fix the YAML, then approve again.") from None
    operations = parsed.get("operations") if isinstance(parsed, dict) else None
    if not isinstance(operations, dict) or not operations:
        raise ApprovalError(
            "The manifest has no 'operations:' entries to approve.",
            "Write one with `anvil init SPEC --service ID --out anvil.yaml`, then approve its entries.",
        )
    return {str(key): value for key, value in operations.items()}


def _matches(patterns: Sequence[str], keys: Sequence[str]) -> list[str]:
    chosen: list[str] = []
    for pattern in patterns:
        found = [key for key in keys if key == pattern or fnmatch.fnmatchcase(key, pattern)]
        if not found:
            close = [key for key in keys if fnmatch.fnmatchcase(key, f"*{pattern}*")][:3]
            hint = f"Did you mean {', '.join(repr(k) for k in close)}?" if close else "Use an entry's key or a glob."
            raise ApprovalError(f"'{pattern}' names no entry of the manifest's operations.", hint)
        chosen.extend(key for key in found if key not in chosen)
    return chosen


def _entry_key(line: str) -> str | None:
    """The mapping key a line opens (``  key:`` or ``  "key":``), or None."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    try:
        loaded = yaml.safe_load(stripped)
    except yaml.YAMLError:
        return None
    if isinstance(loaded, dict) and len(loaded) == 1:
        return str(next(iter(loaded)))
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def approve_entries(text: str, patterns: Sequence[str]) -> Approval:
    """Approve the ``operations:`` entries of manifest ``text`` that ``patterns`` name.

    Raises:
        ApprovalError: a pattern names no entry, or an entry's layout cannot be edited line by line.
    """
    before = _operations(text)
    chosen = _matches(patterns, list(before))
    already = tuple(k for k in chosen if isinstance(before[k], dict) and before[k].get("state") == "approved")
    todo = [k for k in chosen if k not in already]
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _TOP_OPERATIONS.match(line.rstrip("\n"))), None)
    if start is None:
        raise ApprovalError("'operations:' is not a block at the top level.", "Write it as a block mapping.")
    end = next((i for i in range(start + 1, len(lines)) if _TOP_KEY.match(lines[i])), len(lines))
    entry_indent = next(
        (_indent(lines[i]) for i in range(start + 1, end) if _entry_key(lines[i]) is not None),
        2,
    )
    openings = {
        key: i
        for i in range(start + 1, end)
        if _indent(lines[i]) == entry_indent and (key := _entry_key(lines[i])) is not None
    }
    edits: dict[int, str] = {}
    inserts: dict[int, str] = {}
    for key in todo:
        at = openings.get(key)
        value = before[key]
        if at is None or not (value is None or isinstance(value, dict)):
            raise ApprovalError(f"The entry '{key}' is not a block mapping this tool can edit.", _BY_HAND)
        if lines[at].split(":", 1)[-1].split("#", 1)[0].strip() not in ("", "{}"):
            raise ApprovalError(f"The entry '{key}' is written in flow style.", _BY_HAND)
        block_end = next((j for j in range(at + 1, end) if lines[j].strip() and _indent(lines[j]) <= entry_indent), end)
        states = [j for j in range(at + 1, block_end) if _STATE_LINE.match(lines[j].rstrip("\n"))]
        child = next((_indent(lines[j]) for j in range(at + 1, block_end) if lines[j].strip()), entry_indent + 2)
        states = [j for j in states if _indent(lines[j]) == child]
        if states:
            match = _STATE_LINE.match(lines[states[0]].rstrip("\n"))
            assert match is not None
            edits[states[0]] = f"{match['indent']}state: approved{match['rest']}\n"
        else:
            opening = lines[at].rstrip("\n")
            if opening.rstrip().endswith("{}"):
                opening = opening.rstrip()[:-2].rstrip()
            edits[at] = opening + "\n"
            inserts[at] = " " * child + "state: approved\n"
    out: list[str] = []
    for i, line in enumerate(lines):
        out.append(edits.get(i, line))
        if i in inserts:
            if not out[-1].endswith("\n"):
                out[-1] += "\n"
            out.append(inserts[i])
    result = "".join(out)
    after = _operations(result)
    _check(before, after, todo)
    safety = {key: found for key in todo if (found := safety_fields(after[key]))}
    return Approval(text=result, approved=tuple(todo), already=already, safety=safety)


_BY_HAND: Final = "Set `state: approved` in that entry by hand (a block mapping under its key)."


def _check(before: dict[str, Any], after: dict[str, Any], approved: Sequence[str]) -> None:
    """The edit changed exactly the ``state`` of the ``approved`` entries, and nothing else."""
    expected = dict(before)
    for key in approved:
        entry = dict(before[key] or {})
        entry["state"] = "approved"
        expected[key] = entry
    if after != expected:
        changed = sorted(k for k in set(expected) | set(after) if expected.get(k) != after.get(k))
        raise ApprovalError(f"Editing the manifest would change more than states ({', '.join(changed)}).", _BY_HAND)
