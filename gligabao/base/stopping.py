"""A run stopped from another thread as Ctrl-C stops gb: its task is cancelled on its own
event loop, so it unwinds at an await, rolling back what it had not finished storing and
keeping what it had (the answers it paid for among them)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Stop"]


class Stop:
    """Asked by one thread (`request`), obeyed by the run that `watching` it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: tuple[asyncio.AbstractEventLoop, asyncio.Task[object]] | None = None
        self.reason: str | None = None  # set once stopping was asked for

    @property
    def requested(self) -> bool:
        return self.reason is not None

    def request(self, reason: str) -> None:
        """Stop the run now if it is under way, else as soon as it starts; safe from any
        thread, and asking twice changes nothing."""
        with self._lock:
            if self.reason is not None:
                return
            self.reason = reason
            running = self._running
        if running is not None:
            loop, task = running
            loop.call_soon_threadsafe(task.cancel)

    @contextmanager
    def watching(self) -> Iterator[None]:
        """While inside, a request cancels the task that entered (call it from the run's
        own coroutine)."""
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Stop.watching is entered from a running task")
        with self._lock:
            self._running = (asyncio.get_running_loop(), task)
            asked = self.reason is not None
        if asked:
            task.cancel()
        try:
            yield
        finally:
            with self._lock:
                self._running = None
