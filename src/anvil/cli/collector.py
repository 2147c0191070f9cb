"""The cyclic garbage collector, paused while a command starts up.

Starting a command allocates a few hundred thousand objects (modules, classes, functions, a bundle's
model) that live as long as the process: collecting while they are made finds no garbage and costs
``anvil serve`` about 3 % of the instructions it spends before its first ``tools/list`` answer.
:func:`anvil.cli.main` pauses the collector, and runs it again before a command runs, unless the command
says it does that itself (``RESUMES_COLLECTOR = True``: ``anvil serve``, which calls :func:`serving`
once its listener is built and loaded, just before it serves).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["pause", "paused", "serving"]


def pause() -> bool:
    """Pause the collector; whether it was running (what the caller restores at the end)."""
    running = gc.isenabled()
    gc.disable()
    return running


@contextmanager
def paused() -> Iterator[None]:
    """The collector paused for a block whose objects all live to its end (``anvil compile``), then
    running again if it was running before."""
    running = pause()
    try:
        yield
    finally:
        if running:
            gc.enable()


def serving() -> None:
    """Start-up is over and the process serves from here on: when the collector is paused (by
    :func:`pause`), freeze what start-up made (later collections skip it, so the first one does not walk
    it all while answering the first request) and run the collector again. A caller that never paused it
    (an embedding program, a test) is left as it is."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
