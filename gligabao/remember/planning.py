"""Resolution planned as extractions land.

A document's chunks are resolved against the graph in chunk order: each chunk's plan
sees the entities and facts of the chunks before it, and its undecided items go into
batched `resolve` calls (resolve.Batcher). Planned only once every extraction is in,
the first `resolve` call waits for the slowest extraction; planned here, a chunk is
planned as soon as its extraction and those of all the chunks before it have landed, and
a batch is sent as soon as its last chunk is planned. The plans and batches are the same
either way, and so are the answers.

A plan reads the graph as stored. So it is made early only while no other document of
the dataset is in flight in this run (a batch of files plans each at its turn to store,
as before), and it is thrown away if another document was stored meanwhile (the
dataset's `generation` moved): the store phase then plans again, against the graph as
that document left it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from gligabao.remember.loops import stored_generation
from gligabao.remember.resolve import Batch, Batcher, Resolver

if TYPE_CHECKING:
    from gligabao.remember.write import Piece

__all__ = ["EarlyPlan"]


class EarlyPlan:
    """The plans of `pieces` (a document's chunks to resolve, in order) made as their
    extractions land, each batch of undecided items sent to `resolve` once closed."""

    def __init__(
        self,
        resolver: Resolver,
        pieces: Sequence[Piece],
        resolve: Callable[[Batch], Awaitable[None]],
        dataset_id: int,
    ) -> None:
        self.resolver = resolver
        self.pieces = list(pieces)
        self.resolve = resolve
        self.dataset_id = dataset_id
        self.generation = stored_generation()[dataset_id]
        self.resolving: dict[int, asyncio.Future[None]] = {}
        self._next = 0
        self._batcher = Batcher()

    def landed(self) -> None:
        """Plan each piece whose extraction, and those of every piece before it, are in;
        send the batches they close (the last once every piece is planned)."""
        while self._next < len(self.pieces) and self.pieces[self._next].extraction is not None:
            piece = self.pieces[self._next]
            assert piece.extraction is not None
            piece.plan = self.resolver.plan(piece.index, piece.extraction)
            self._send(self._batcher.add(piece.plan))
            self._next += 1
        if self.complete:
            self._send(self._batcher.close())

    @property
    def complete(self) -> bool:
        return self._next == len(self.pieces)

    @property
    def current(self) -> bool:
        """Whether every plan was made against the graph as it is now: no other document
        of the dataset was stored since the first."""
        return self.complete and stored_generation()[self.dataset_id] == self.generation

    def _send(self, batch: Batch | None) -> None:
        if batch is None:
            return
        task = asyncio.ensure_future(self.resolve(batch))
        for plan in batch.plans:
            self.resolving[plan.index] = task
