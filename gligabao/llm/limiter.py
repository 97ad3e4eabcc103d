"""How many requests go out at once: at most `concurrency`, fewer when the server says so.

A local server (llama.cpp, Ollama, LM Studio, vLLM under load) serves a few requests at
a time, its slots, and keeps the others in a queue where they receive nothing. Past
`llm.timeout` such a request times out while the server was busy all along, and its
retry queues again behind the others. So the limit adapts, as TCP's window does:

- a timeout before the first byte of the answer, or a 429 or 503, lowers it at once to
  the number of requests then receiving an answer (at least 1): what the server
  actually serves in parallel;
- each answer received raises it by 1/limit (by one after a limit's worth of answers),
  never above `concurrency`.

Requests wait for the limit in order of arrival, except that an `URGENT` one goes before
every `NORMAL` one waiting: what a run's ordered stores wait on (its resolve calls) is
not queued behind work that nothing waits on yet (the embeddings of later chunks, the
extractions of other documents). Both kinds count alike: `concurrency` bounds every
request out, whatever its kind. A permit is handed to the next waiter when one is
released, and that waiter runs in a later step of the event loop: what the releasing
call does before its next await (Flight.fail) happens before anything the permit lets
in is sent.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator

__all__ = ["NORMAL", "URGENT", "Limiter", "Slot"]

URGENT = 0  # served before any NORMAL waiter
NORMAL = 1


class Slot:
    """One request under the limiter; `receiving()` once the answer's first byte came."""

    def __init__(self, limiter: Limiter) -> None:
        self._limiter = limiter
        self.received = False

    def receiving(self) -> None:
        if not self.received:
            self.received = True
            self._limiter.receiving += 1

    def _end(self) -> None:
        if self.received:
            self._limiter.receiving -= 1


class Limiter:
    """The adaptive limit of one event loop's requests (see the module docstring)."""

    def __init__(self, most: int, limit: float | None = None) -> None:
        self.most = most
        self.limit = float(most if limit is None else max(1.0, min(limit, most)))
        self.out = 0  # requests holding a permit
        self.receiving = 0  # ...of which the answer has begun to arrive
        # One queue per priority, URGENT first: each in order of arrival.
        self._waiters: tuple[collections.deque[asyncio.Future[None]], ...] = (
            collections.deque(),
            collections.deque(),
        )

    @property
    def capacity(self) -> int:
        return max(1, int(self.limit))

    @contextlib.asynccontextmanager
    async def slot(self, priority: int = NORMAL) -> AsyncIterator[Slot]:
        await self._acquire(self._waiters[priority])
        slot = Slot(self)
        try:
            yield slot
        finally:
            slot._end()
            self.out -= 1
            self._wake()

    def congested(self) -> bool:
        """The server could not take one more: lower the limit to what it is serving.
        True when that lowered it."""
        lowered = float(max(1, self.receiving))
        if lowered >= self.limit:
            return False
        self.limit = lowered
        return True

    def answered(self) -> None:
        """An answer came: one more request may go out after a limit's worth of them."""
        if self.limit < self.most:
            self.limit = min(float(self.most), self.limit + 1.0 / self.capacity)
            self._wake()

    async def _acquire(self, queue: collections.deque[asyncio.Future[None]]) -> None:
        if not any(self._waiters) and self.out < self.capacity:
            self.out += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        queue.append(waiter)
        try:
            await waiter  # done when _wake handed this waiter its permit
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.out -= 1  # handed over, but its task was cancelled before it ran
                self._wake()
            else:
                with contextlib.suppress(ValueError):  # unless _wake passed over it
                    queue.remove(waiter)
            raise

    def _wake(self) -> None:
        for queue in self._waiters:
            while queue and self.out < self.capacity:
                waiter = queue.popleft()
                if not waiter.done():
                    self.out += 1
                    waiter.set_result(None)
