"""Searching a dataset's chunks as every face does: the method chosen (BM25 alone, with a
notice, where vectors cannot be used), the query embedded only when it is compared, the
best hits reordered by the chat model when asked."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from gligabao.search.hybrid import (
    OTHER_MODEL,
    Hit,
    bm25_only,
    fusion_for,
    other_model,
    search,
    vector_obstacle,
)

if TYPE_CHECKING:
    from gligabao.config import Config
    from gligabao.llm.float32 import Float32
    from gligabao.store.datasets import Dataset

__all__ = ["Hits", "embedder", "search_chunks"]

Notice = Callable[[str], None]


class Hits(list[Hit]):
    """The hits of one search, best first, and why they are in fused order when a rerank
    was asked for and did not happen (None otherwise)."""

    def __init__(self, hits: list[Hit], notice: str | None = None) -> None:
        super().__init__(hits)
        self.notice = notice

    def as_json(self) -> list[dict[str, Any]]:
        """What `gb search --json` prints, one object a line: each hit, with the notice."""
        extra = {} if self.notice is None else {"notice": self.notice}
        return [{**hit.as_json(), **extra} for hit in self]


def embedder(config: Config, text: str) -> Callable[[], Float32]:
    """A function embedding `text` with the configured model. Searches call it in their
    vector thread: the import of what sends the request runs there too, while the
    keyword search runs in SQLite."""

    def embedded() -> Float32:
        from gligabao.llm.query import embed_query

        return embed_query(config, text)

    return embedded


def query_vector(
    config: Config,
    conn: Any,
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


def _method(config: Config, conn: Any, dataset: Dataset, method: str, notice: Notice) -> str:
    """The method to run: bm25 (with a notice) when vectors cannot be searched; a refusal
    when the dataset's vectors and the query's would not compare."""
    if method == "bm25":
        return method
    obstacle = vector_obstacle(config, conn, dataset)
    if obstacle == OTHER_MODEL:
        raise other_model(config, dataset)
    if obstacle is not None:
        notice(bm25_only(obstacle, dataset))
        return "bm25"
    return method


def search_chunks(
    config: Config,
    conn: Any,
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
    method = _method(config, conn, dataset, method, notice)
    reranker = None
    if rerank:
        from gligabao.search.rerank import Reranker

        reranker = Reranker(config, conn, dataset)
    hits = search(
        conn,
        dataset,
        query,
        method=method,
        k=k if reranker is None else reranker.candidates(k),
        query_vector=None if method == "bm25" else embedder(config, query),
        depth=config["search.depth"],  # search() takes at least k from each method
        fusion=fusion_for(config, dataset),
        exact=config["search.exact"],
        session=session,
        role=role,
    )
    if reranker is None:
        return Hits(hits)
    with reranker:
        reranked = reranker.rerank(query, hits)
    if reranked.notice is not None:
        notice(reranked.notice)
    return Hits(reranked.hits[:k], reranked.notice)
