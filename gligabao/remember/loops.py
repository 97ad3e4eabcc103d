"""What the documents remembered in one event loop (a batch's) share, per dataset.

- `running`: the documents started and not yet at their stale summaries' turn. The last
  one of a batch rewrites what they all left stale, once (remember/summaries.py).
- `in_flight`: those being fetched or stored; a document alone in flight plans its
  resolution as its extractions land (remember/planning.py).
- `stored_generation`: how many were stored so far; a plan made before the last one
  is stale.
- `turn`: the locks that store one document at a time. A document's facts are resolved
  against the graph as the documents stored before it left it, so two in flight that
  contradict each other are resolved as if remembered one after the other, in any
  order (docs/usage.md, "`gb facts`"). Stale summaries are rewritten by one document at
  a time too: two would ask the same.

Looked up at every document's steps: one weak-keyed lookup a call, nothing made anew.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import Counter

__all__ = ["in_flight", "running", "stored_generation", "turn"]


class _Shared:
    __slots__ = ("flying", "generations", "locks", "running")

    def __init__(self) -> None:
        self.running: Counter[int] = Counter()
        self.flying: Counter[int] = Counter()
        self.generations: Counter[int] = Counter()
        self.locks: dict[tuple[str, int], asyncio.Lock] = {}


_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Shared] = (
    weakref.WeakKeyDictionary()
)


def _shared() -> _Shared:
    loop = asyncio.get_running_loop()
    shared = _by_loop.get(loop)  # not setdefault: it would make a new weak reference a call
    if shared is None:
        shared = _by_loop[loop] = _Shared()
    return shared


def running() -> Counter[int]:
    """Documents running by dataset id, in this event loop."""
    return _shared().running


def in_flight() -> Counter[int]:
    """Documents being fetched or stored by dataset id, in this event loop."""
    return _shared().flying


def stored_generation() -> Counter[int]:
    """Documents stored by dataset id, in this event loop."""
    return _shared().generations


def turn(what: str, dataset_id: int) -> asyncio.Lock:
    """The lock that gives one document at a time its turn at `what` in the dataset."""
    locks = _shared().locks
    lock = locks.get((what, dataset_id))
    if lock is None:
        lock = locks[(what, dataset_id)] = asyncio.Lock()
    return lock
