"""Queries a dataset writes for itself, to learn its fusion without the user's gold
(`gb eval --tune --synthetic`).

A sample of the dataset's chunks is drawn (the same draw while the dataset is unchanged)
and each gets one query whose gold is the chunk itself:

- online, the chat model writes it (stage `pseudo_query`, one small call a chunk, its
  first `PASSAGE_CHARS` characters shown), asked to use other words than the chunk's: a
  query that repeats the chunk is found by its words alone and would teach the tuning
  that the vectors add nothing. Each call is recorded and reused by its hash, so tuning
  again costs nothing until the sample changes;
- offline (or asked so), from what needs no model: a chunk's section heading, and its
  summary where one is stored. Those share the chunk's words more than a user's query
  does, so the weight learnt from them leans toward BM25: the safe side, never the
  vectors' on a model that has not shown it deserves it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gligabao.llm.endpoint import LLMError
from gligabao.llm.prompts import pseudo_query_request
from gligabao.search.evaluate import GoldQuery
from gligabao.store import Connection
from gligabao.store.artifacts import chunks_as_gold, gold_pool
from gligabao.store.datasets import Dataset

if TYPE_CHECKING:
    from gligabao.config import Config

__all__ = ["FROM_LLM", "FROM_TEXT", "PASSAGE_CHARS", "PseudoQueries", "draw", "write_queries"]

PASSAGE_CHARS = 1500  # what the model reads of a chunk: enough to ask about, cheap to send
FROM_LLM = "llm"  # PseudoQueries.origin: written by the chat model
FROM_TEXT = "headings"  # ... taken from the chunks' headings and summaries
_SEED = 20240601  # fixed: the same dataset draws the same chunks, so the calls are reused
# A heading's permalink marks and numbering, left out of the query.
_HEADING_NOISE = re.compile(r"[¶#*`]+|^\s*[\d.]+\s+")


@dataclass(frozen=True)
class PseudoQueries:
    """The queries made for a dataset, where they came from and what they cost."""

    queries: list[GoldQuery]
    origin: str  # FROM_LLM or FROM_TEXT
    sampled: int  # chunks drawn
    calls: int = 0  # chat calls paid for
    reused: int = 0  # answers found recorded
    model: str | None = None
    notices: list[str] = field(default_factory=list)


def draw(conn: Connection, dataset: Dataset, n: int) -> list[dict[str, Any]]:
    """Up to `n` chunks of the dataset at random, each able to name itself as gold."""
    import random  # a tuning's draw only

    pool = gold_pool(conn, dataset.id)
    return chunks_as_gold(conn, random.Random(_SEED).sample(pool, min(n, len(pool))))


def _gold(line: int, query: str, chunk: dict[str, Any], kind: str) -> GoldQuery:
    return GoldQuery(line, query, chunk["source"], chunk["start_offset"], chunk["end_offset"], kind)


def _heading(section: str | None) -> str | None:
    """The last part of a section path, without its permalink marks and numbering."""
    if not section:
        return None
    last = _HEADING_NOISE.sub(" ", section.split(" > ")[-1])
    words = " ".join(last.split())
    return words if len(words) >= 3 else None


def _first_sentence(text: str | None) -> str | None:
    if not text:
        return None
    sentence = re.split(r"(?<=[.!?])\s+", " ".join(text.split()), maxsplit=1)[0]
    return sentence or None


def from_text(chunks: Sequence[dict[str, Any]]) -> list[GoldQuery]:
    """A query a chunk from its heading and one from its summary's first sentence, where
    it has them."""
    queries: list[GoldQuery] = []
    for chunk in chunks:
        for kind, query in (
            ("heading", _heading(chunk["section"])),
            ("summary", _first_sentence(chunk["summary"])),
        ):
            if query:
                queries.append(_gold(len(queries) + 1, query, chunk, kind))
    return queries


async def _asked(config: Config, conn: Connection, dataset: Dataset, chunks: list[dict]) -> Any:
    from gligabao.calls import Calls
    from gligabao.llm.client import LLM

    llm = LLM(config)
    calls = Calls(conn, llm, dataset.id)
    try:
        requests = [pseudo_query_request(c["text"][:PASSAGE_CHARS]) for c in chunks]
        answers = await asyncio.gather(
            *(calls.ask(r, contained=True) for r in requests), return_exceptions=True
        )
        await calls.finish()
        return answers, calls.spend
    finally:
        await llm.aclose()


def from_llm(
    config: Config, conn: Connection, dataset: Dataset, chunks: list[dict[str, Any]]
) -> PseudoQueries:
    """One query a chunk, written by the chat model; a chunk whose call fails is left
    out, with a notice naming the first failure."""
    answers, spend = asyncio.run(_asked(config, conn, dataset, chunks))
    queries: list[GoldQuery] = []
    failed: list[str] = []
    model = None
    for chunk, answer in zip(chunks, answers, strict=True):
        if isinstance(answer, LLMError):
            failed.append(str(answer))
            continue
        if isinstance(answer, BaseException):
            raise answer
        model = model or answer.model
        query = " ".join(str(answer.value.get("query") or "").split())
        if query:
            queries.append(_gold(len(queries) + 1, query, chunk, FROM_LLM))
    notices = []
    if failed:
        notices.append(
            f"{len(failed)} of {len(chunks)} pseudo-queries could not be written "
            f"(the first: {failed[0]}); tuned on the others"
        )
    return PseudoQueries(queries, FROM_LLM, len(chunks), spend.calls, spend.reused, model, notices)


def write_queries(
    config: Config, conn: Connection, dataset: Dataset, n: int, *, use_llm: bool
) -> PseudoQueries:
    """`n` chunks of the dataset drawn and a query made for each: by the chat model when
    `use_llm`, else from their headings and summaries."""
    chunks = draw(conn, dataset, n)
    if use_llm:
        return from_llm(config, conn, dataset, chunks)
    return PseudoQueries(from_text(chunks), FROM_TEXT, len(chunks))
