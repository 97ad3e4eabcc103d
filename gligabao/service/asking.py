"""A question answered from the memory (gb ask), every claim tied to a source checked.

The sources: the facts that match the question (searched as `gb facts QUERY` searches
them) and those of the entities it names, filtered by time as `gb facts --at` and
`--known-at` filter them (current facts by default), then the best chunks of a hybrid
search. One chat call (stage `answer`, recorded and reused by its request's hash: the
same question on the same memory costs nothing twice) asks for the answer as JSON, with
a quote of its source for each citation; citations.py checks each one.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gligabao.errors import ConfigError
from gligabao.service.citations import (
    Checked,
    Citation,
    Dropped,
    Source,
    check,
    chunk_source,
    fact_source,
)
from gligabao.service.searching import Notice

if TYPE_CHECKING:
    from gligabao.calls import Asked, Spend
    from gligabao.config import Config
    from gligabao.llm.prompts import ChatRequest
    from gligabao.search.hybrid import Hit
    from gligabao.store import Connection
    from gligabao.store.datasets import Dataset

__all__ = ["Answered", "Citation", "Dropped", "Source", "ask", "require_chat"]

OnText = Callable[[str | None], None]


@dataclass
class Answered:
    """A question's answer (what `gb ask --json` prints): its text with the markers of the
    citations that hold and each sentence without one marked; those citations, the ones
    dropped, and the sources it was asked from. `supported` is False when no citation
    holds (nothing found, or every one dropped): the answer is then not known."""

    question: str
    at: str | None
    known_at: str | None
    answer: str
    citations: list[Citation]
    dropped: list[Dropped]
    sources: list[Source]
    unsupported: list[str] = field(default_factory=list)
    inference_id: int | None = None
    cost: float | None = 0.0  # this call's; 0 for an answer reused, None when unpriced
    reused: bool = False

    @property
    def supported(self) -> bool:
        return bool(self.citations)

    def as_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "at": self.at,
            "known_at": self.known_at,
            "answer": self.answer,
            "citations": [c.as_json() for c in self.citations],
            "dropped_citations": [d.as_json() for d in self.dropped],
            "unsupported_sentences": self.unsupported,
            "supported": self.supported,
            "inference_id": self.inference_id,
            "cost": self.cost,
            "reused": self.reused,
            "sources": [s.as_json() for s in self.sources],
        }


def require_chat(config: Config) -> None:
    """A ConfigError unless a chat endpoint is configured: an answer needs one."""
    from gligabao.llm.endpoint import Endpoints

    if not Endpoints.from_config(config).chat_available:
        raise ConfigError(
            "no chat endpoint is configured, and an answer needs one: set "
            f"{config['llm.api_key_env']} or llm.base_url (OPENAI_BASE_URL); gb facts and "
            "gb search read the memory without one"
        )


def ask(
    config: Config,
    conn: Connection,
    dataset: Dataset,
    question: str,
    *,
    at: str | None,
    known_at: str | None,
    session: str | None,
    k: int,
    notice: Notice,
    on_text: OnText | None = None,
) -> Answered:
    """`question` answered from `dataset`: `k` facts matching it, up to `k` more of the
    entities it names, and `k` chunks; `on_text` hears the answer's text as it streams
    (None when it begins again)."""
    said: set[str] = set()

    def once(message: str) -> None:  # the facts' and the chunks' searches say the same
        if message not in said:
            said.add(message)
            notice(message)

    sources = gather(config, conn, dataset, question, at, known_at, session, k, once)
    if not sources:
        return Answered(question, at, known_at, "", [], [], [])
    from gligabao.llm.prompts import answer_request

    request = answer_request(question, [s.prompt() for s in sources], at=at, known_at=known_at)
    asked, spend = _call(config, conn, dataset.id, request, on_text)
    checked: Checked = check(asked.value, sources)
    return Answered(
        question=question,
        at=at,
        known_at=known_at,
        answer=checked.answer,
        citations=checked.citations,
        dropped=checked.dropped,
        sources=sources,
        unsupported=checked.unsupported,
        inference_id=asked.inference_id,
        cost=spend.cost if spend.priced else None,
        reused=spend.reused > 0,
    )


def gather(
    config: Config,
    conn: Connection,
    dataset: Dataset,
    question: str,
    at: str | None,
    known_at: str | None,
    session: str | None,
    k: int,
    notice: Notice,
) -> list[Source]:
    """The sources of an answer, numbered from 1: the facts (those matching the question,
    then those of the entities it names), then the chunks."""
    from gligabao.graph import queries
    from gligabao.service import facts
    from gligabao.service.searching import search_chunks

    matched = facts.facts(
        config,
        conn,
        dataset,
        question,
        about=None,
        at=at,
        known_at=known_at,
        closed=False,
        relation=None,
        session=session,
        limit=k,
        notice=notice,
    )
    named = [e.id for e in queries.named_in(conn, dataset, question)]
    of_named = (
        queries.facts(
            conn, dataset, about=named, at=at, known_at=known_at, session=session, limit=k
        )
        if named
        else []
    )
    chosen = list({f.id: f for f in [*matched, *of_named]}.values())
    hits = search_chunks(
        config,
        conn,
        dataset,
        question,
        method="hybrid",
        k=k,
        session=session,
        role=None,
        rerank=False,
        notice=notice,
    )
    if known_at is not None:
        hits = _stored_by(conn, hits, known_at)
    sources = [fact_source(n, f) for n, f in enumerate(chosen, start=1)]
    return sources + [chunk_source(n, h) for n, h in enumerate(hits, start=len(sources) + 1)]


def _stored_by(conn: Connection, hits: list[Hit], known_at: str) -> list[Hit]:
    """The hits of chunks stored by `known_at`: what the memory held then, as the facts
    given are."""
    from gligabao.base.times import canonical_time
    from gligabao.store.artifacts import get_artifact

    kept = []
    for hit in hits:
        row = get_artifact(conn, hit.artifact_id)
        stored = canonical_time(row["created_at"]) if row else None
        if stored is not None and stored <= known_at:
            kept.append(hit)
    return kept


def _call(
    config: Config, conn: Connection, dataset_id: int, request: ChatRequest, on_text: OnText | None
) -> tuple[Asked, Spend]:
    """The one chat call, recorded (or its recorded answer), on an event loop of its own:
    in another thread when this one runs a loop already (an MCP server's tool)."""

    async def call() -> tuple[Asked, Spend]:
        from gligabao.calls import Calls
        from gligabao.llm.client import LLM
        from gligabao.llm.streaming import FieldText

        heard = None
        if on_text is not None:
            reader = FieldText("answer", on_text)

            def heard(piece: str | None) -> None:
                if piece is None:  # asked again: the text shown so far is void
                    on_text(None)
                reader.add(piece)

        async with LLM(config) as llm:
            calls = Calls(conn, llm, dataset_id)
            try:
                asked = await calls.ask(request, on_content=heard)
            finally:
                await calls.finish()
        return asked, calls.spend

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(call())
    result: list[tuple[Asked, Spend]] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(asyncio.run(call()))
        except BaseException as exc:  # raised again in the caller's thread
            failure.append(exc)

    thread = threading.Thread(target=run, name="gb-ask")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
