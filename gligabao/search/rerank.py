"""Optional LLM reranking of search results (`gb search --rerank`, `search.rerank`).

Listwise: one chat call per query shows the model the query and the top
`search.rerank_depth` fused hits, numbered, each cut to `search.rerank_chars` so that a
small local model's context holds them all, and asks for the numbers best first. The call
goes through the pipeline's `Calls`, so it is recorded in gb_inferences (stage `rerank`,
tokens, cost, the dataset) and the same request asked again reuses the recorded answer
instead of paying twice.

The answer is taken as far as it is usable: numbers it repeats or invents are dropped,
the ones it gives come first in its order, the ones it leaves out follow in fused order.
Whatever goes wrong (no chat endpoint, an LLMError, an answer naming no passage) gives
the fused order back with a one-line `notice`; a search never fails for its reranking.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from gligabao.base.snippet import snippet
from gligabao.base.words import counted
from gligabao.config import Config
from gligabao.llm.endpoint import Endpoints, LLMError
from gligabao.llm.prompts import rerank_request
from gligabao.search.hybrid import Hit
from gligabao.store import Connection
from gligabao.store.datasets import Dataset

if TYPE_CHECKING:  # the client imports the openai SDK: only once a call is to be made
    from gligabao.calls import Calls
    from gligabao.llm.client import LLM

__all__ = ["PASSAGE_CHARS", "RERANK_RANK", "Reranked", "Reranker", "passage", "reordered"]

_T = TypeVar("_T")

PASSAGE_CHARS = 600  # search.rerank_chars's default
# The key of a reranked hit's place in `Hit.ranks` (beside bm25 and vector).
RERANK_RANK = "rerank"
_FALLBACK = "results in fused order"


@dataclass(frozen=True)
class Reranked:
    """Hits in their final order, and why they are in fused order when they are."""

    hits: list[Hit]
    notice: str | None = None  # set when reranking was asked for but did not happen
    inference_id: int | None = None  # the gb_inferences row of the answer used


def passage(hit: Hit, query: str, limit: int = PASSAGE_CHARS) -> str:
    """What the model reads of a hit, in at most `limit` characters: its section, the
    lines that best match the query (the snippet gb search shows), then the chunk from
    its start (its heading, often), whitespace collapsed (GNU info text is indented
    deep). A 1,024-token chunk is ~4,000 characters: cut to its start alone, the model
    would seldom see what made it a hit."""
    best = snippet(hit.text, query, None)
    lines = hit.text.split("\n")
    first = next((n for n, line in enumerate(lines, start=1) if line.strip()), 1)
    parts = [f"({hit.section})" if hit.section else "", best.text]
    if best.line_start != first:
        parts += ["…", hit.text]
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def reordered(hits: Sequence[Hit], order: Sequence[Any]) -> list[Hit] | None:
    """`hits` in the model's `order` (1-based numbers), each given its place as
    ranks['rerank']: valid numbers first as given (repeats dropped), then the others in
    fused order. None when `order` names no hit at all: nothing usable."""
    chosen: list[int] = []
    for number in order:
        # bool is an int to Python, and JSON true is no passage number
        valid = isinstance(number, int) and not isinstance(number, bool)
        if valid and 1 <= number <= len(hits) and number - 1 not in chosen:
            chosen.append(number - 1)
    if not chosen:
        return None
    rest = [i for i in range(len(hits)) if i not in set(chosen)]
    return [
        hits[i].replace(ranks={**hits[i].ranks, RERANK_RANK: place})
        for place, i in enumerate(chosen + rest, start=1)
    ]


class Reranker:
    """Reranks the hits of one dataset's queries, one chat call each, on an event loop and
    an LLM of its own kept for all of them (gb eval reranks hundreds). Use it as a
    context manager, or call close()."""

    def __init__(self, config: Config, conn: Connection, dataset: Dataset) -> None:
        self.config = config
        self.conn = conn
        self.dataset = dataset
        self.depth: int = config["search.rerank_depth"]
        self.chars: int = config["search.rerank_chars"]
        self.available = Endpoints.from_config(config).chat_available
        self._loop: asyncio.AbstractEventLoop | None = None
        self._llm: LLM | None = None
        self._calls: Calls | None = None

    def __enter__(self) -> Reranker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def candidates(self, k: int) -> int:
        """How many hits to search for, to show k reranked."""
        return max(k, self.depth)

    def rerank(self, query: str, hits: Sequence[Hit]) -> Reranked:
        """`hits` (fused order, best first) as the chat model orders them for `query`: the
        first `search.rerank_depth` reordered, any after them kept in fused order."""
        reranked = self._rerank(query, list(hits[: self.depth]))
        return replace(reranked, hits=reranked.hits + list(hits[self.depth :]))

    def _rerank(self, query: str, hits: list[Hit]) -> Reranked:
        if len(hits) < 2:  # one hit or none: there is no order to ask for
            return Reranked(hits)
        if not self.available:
            return Reranked(
                hits, f"no chat endpoint configured (OPENAI_BASE_URL / OPENAI_API_KEY); {_FALLBACK}"
            )
        request = rerank_request(query, [passage(hit, query, self.chars) for hit in hits])
        try:
            # contained: a query's failure is its own, the next ones are still asked
            asked = self._run(self._bound().ask(request, contained=True))
        except LLMError as exc:  # its text is free of secrets (LLMError scrubs it)
            return Reranked(hits, f"reranking failed: {exc}; {_FALLBACK}")
        ordered = reordered(hits, asked.value.get("order") or [])
        if ordered is None:
            return Reranked(
                hits,
                f"reranking failed: the answer named none of its {counted(len(hits), 'passage')}; "
                + _FALLBACK,
                asked.inference_id,
            )
        return Reranked(ordered, None, asked.inference_id)

    def _bound(self) -> Calls:
        if self._calls is None:
            from gligabao.calls import Calls
            from gligabao.llm.client import LLM

            self._llm = LLM(self.config)
            self._calls = Calls(self.conn, self._llm, self.dataset.id)
        return self._calls

    def _run(self, call: Coroutine[Any, Any, _T]) -> _T:
        # One loop for every query: the LLM's HTTP pool belongs to the loop it was made in.
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(call)

    def close(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            if self._calls is not None:
                loop.run_until_complete(self._calls.finish())
            if self._llm is not None:
                loop.run_until_complete(self._llm.aclose())
            loop.run_until_complete(loop.shutdown_asyncgens())  # streamed answers' readers
        finally:
            loop.close()
            self._llm = self._calls = None
