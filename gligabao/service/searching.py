"""Searching a dataset's chunks as every face does: the method chosen (BM25 alone, with a
notice, where vectors cannot be used), the query embedded only when it is compared, the
best hits reordered by the chat model when asked."""

from __future__ import annotations

from collections.abc import Callable

from gligabao.errors import GbError
from gligabao.search.hybrid import (
    OTHER_MODEL,
    Hit,
    bm25_only,
    fusion_for,
    other_model,
    search,
    vector_obstacle,
)

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from gligabao.config import Config
    from gligabao.llm.float32 import Float32
    from gligabao.store import Connection
    from gligabao.store.datasets import Dataset

    T = TypeVar("T")

__all__ = ["Hits", "embedder", "or_bm25", "search_chunks"]

Notice = Callable[[str], None]


class Hits(list[Hit]):
    """The hits of one search, best first; why they are in fused order when a rerank was
    asked for and did not happen, and why a hybrid search went on by BM25 alone (each
    None otherwise)."""

    def __init__(
        self, hits: list[Hit], notice: str | None = None, fallback: str | None = None
    ) -> None:
        super().__init__(hits)
        self.notice = notice
        self.fallback = fallback

    def as_json(self) -> list[dict[str, Any]]:
        """What `gb search --json` prints, one object a line: each hit, with the notice
        and, after a fallback, the method that ran and why."""
        extra: dict[str, Any] = {} if self.notice is None else {"notice": self.notice}
        if self.fallback is not None:
            extra |= {"method": "bm25", "fallback": self.fallback}
        return [{**hit.as_json(), **extra} for hit in self]


def embedder(config: Config, text: str) -> Callable[[], Float32]:
    """A function embedding `text` with the configured model. Searches call it in their
    vector thread: the import of what sends the request runs there too, while the
    keyword search runs in SQLite."""

    def embedded() -> Float32:
        from gligabao.llm.query import embed_query

        # Asked once, briefly: someone waits, and the search can go on without it.
        return embed_query(config, text, timeout=config["search.query_timeout"], max_retries=0)

    return embedded


def _unembedded(error: GbError) -> bool:
    """Whether `error` is the query's embedding that could not be had."""
    from gligabao.llm.endpoint import EMBED_STAGE, LLMError

    return isinstance(error, LLMError) and error.stage == EMBED_STAGE


def or_bm25(run: Callable[[bool], T], notice: Notice | None) -> tuple[T, str | None]:
    """`run(True)`, a search with its query's vector; when that vector cannot be had,
    `run(False)`, by BM25 alone, said to `notice`. Returns the result and why it went on
    without vectors (None when it did not)."""
    try:
        return run(True), None
    except GbError as error:
        if not _unembedded(error):
            raise
        why = f"the query could not be embedded ({error}); searching by BM25 only"
    if notice is not None:
        notice(why)
    return run(False), why


def query_vector(
    config: Config,
    conn: Connection,
    dataset: Dataset,
    text: str,
    index: str,
    notice: Notice | None,
) -> Callable[[], Float32] | None:
    """A function embedding `text` to compare with the dataset's `index` vectors (edges or
    entities), or None, with a notice unless `notice` is None, when they cannot be
    compared with it: BM25 alone then."""
    obstacle = vector_obstacle(config, conn, dataset, (index,))
    if obstacle is not None:
        if notice is not None:
            notice(bm25_only(obstacle, dataset, index))
        return None
    return embedder(config, text)


def _method(
    config: Config, conn: Connection, dataset: Dataset, method: str, notice: Notice
) -> tuple[str, str | None]:
    """The method to run and, when it is bm25 for want of vectors, why (also said to
    `notice`); a refusal when the dataset's vectors and the query's would not compare."""
    if method == "bm25":
        return method, None
    obstacle = vector_obstacle(config, conn, dataset)
    if obstacle == OTHER_MODEL:
        raise other_model(config, dataset)
    if obstacle is not None:
        why = bm25_only(obstacle, dataset)
        notice(why)
        return "bm25", why
    return method, None


def search_chunks(
    config: Config,
    conn: Connection,
    dataset: Dataset,
    query: str,
    *,
    method: str,
    k: int,
    session: str | None,
    role: str | None,
    rerank: bool,
    notice: Notice,
) -> Hits:
    """The k best hits for `query` (gb search): reranked by the chat model if `rerank`,
    and the rerank's notice said when it could not be."""
    chosen, fallback = _method(config, conn, dataset, method, notice)
    reranker = None
    if rerank:
        from gligabao.search.rerank import Reranker

        reranker = Reranker(config, conn, dataset)

    def run(with_vectors: bool) -> list[Hit]:
        how = chosen if with_vectors else "bm25"
        return search(
            conn,
            dataset,
            query,
            method=how,
            k=k if reranker is None else reranker.candidates(k),
            query_vector=None if how == "bm25" else embedder(config, query),
            depth=config["search.depth"],  # search() takes at least k from each method
            fusion=fusion_for(config, dataset),
            exact=config["search.exact"],
            session=session,
            role=role,
        )

    if chosen == "hybrid":  # --method vector fails rather than search otherwise
        hits, unembedded = or_bm25(run, notice)
        fallback = unembedded or fallback
    else:
        hits = run(True)
    if reranker is None:
        return Hits(hits, fallback=fallback)
    with reranker:
        reranked = reranker.rerank(query, hits)
    if reranked.notice is not None:
        notice(reranked.notice)
    return Hits(reranked.hits[:k], reranked.notice, fallback)
