"""The query set's two halves: DEV (the tasks whose misses the ranking may be tuned on) and HELD-OUT (never
looked at while tuning; its recall is the honest figure).

Within each spec, the tasks ordered by the SHA-256 of their text are alternately dev and held-out: about half
of each spec is held out whatever the file's order, and a task's half depends only on its spec's task texts.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

DEV = "dev"
HELD_OUT = "held"


def split_of(tasks: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Task text -> :data:`DEV` or :data:`HELD_OUT` (each task a ``{spec, task, ...}`` mapping)."""
    by_spec: dict[str, list[str]] = {}
    for task in tasks:
        by_spec.setdefault(task["spec"], []).append(task["task"])
    halves: dict[str, str] = {}
    for texts in by_spec.values():
        ordered = sorted(texts, key=lambda text: hashlib.sha256(text.encode("utf-8")).hexdigest())
        for rank, text in enumerate(ordered):
            halves[text] = DEV if rank % 2 == 0 else HELD_OUT
    return halves
