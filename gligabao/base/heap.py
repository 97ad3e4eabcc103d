"""The cyclic garbage collector, kept off what lives as long as the process.

A heavy import (typer and click for every command, the openai SDK's ~650 models for
the first LLM call) allocates hundreds of thousands of objects that live until exit and
frees almost none, yet the collector walks them again at each collection: 60 ms of the
SDK's ~400 ms import, and ~220 ms more over a run's later allocations, measured. So a
heavy import runs with the collector paused (`loading`), and in a process gb owns (the
`gb` command calls `own_process` first) what is alive after it is frozen (gc.freeze):
out of the collector's sight for good, as a server does before it forks. A program that
uses gligabao as a library keeps its collector as it was, paused only during the import.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_owned = False


def own_process() -> None:
    """Say that this process is the `gb` command's: its heap is gligabao's to manage."""
    global _owned
    _owned = True


@contextmanager
def loading() -> Iterator[None]:
    """Around a heavy import: the collector paused while it runs; after it, in a process
    gb owns, everything alive is frozen and the collector runs again (on what comes
    later only)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _owned:
            gc.freeze()
            gc.enable()
        elif enabled:
            gc.enable()
