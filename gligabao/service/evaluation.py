"""Search measured on a user's own queries (gb eval): failure@k of each method on each
dataset, the queries embedded once for all of them, a dataset's fusion tuned first when
asked."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gligabao.errors import UsageError
from gligabao.search.evaluate import RERANK, EvalResult, GoldQuery, evaluate_dataset
from gligabao.search.hybrid import NO_ENDPOINT, NO_VECTORS, OTHER_MODEL, fusion_for, vector_obstacle
from gligabao.store import datasets

if TYPE_CHECKING:
    from gligabao.config import Config
    from gligabao.search.tune import Tuning
    from gligabao.store import Connection
    from gligabao.store.datasets import Dataset

__all__ = ["Evaluation", "evaluate"]

_BATCH = 64  # queries per embeddings request


@dataclass(frozen=True)
class Evaluation:
    """The queries measured and each dataset's result for each method."""

    queries: list[GoldQuery]
    results: list[EvalResult]


def _embed_all(config: Config, texts: list[str]) -> dict[str, list[float]]:
    """Each distinct text embedded once with the configured model."""
    import asyncio

    from gligabao.llm import LLM

    distinct = list(dict.fromkeys(texts))

    async def run() -> dict[str, list[float]]:
        llm = LLM(config)
        try:
            out: dict[str, list[float]] = {}
            for i in range(0, len(distinct), _BATCH):
                batch = distinct[i : i + _BATCH]
                out.update(zip(batch, (await llm.embed(batch)).vectors, strict=True))
            return out
        finally:
            await llm.aclose()

    return asyncio.run(run())


def _vector_skip(config: Config, conn: Connection, dataset: Dataset) -> str | None:
    """Why vector and hybrid cannot run on the dataset, in a table's words, or None."""
    obstacle = vector_obstacle(config, conn, dataset)
    if obstacle == NO_VECTORS:
        return "dataset has no vectors"
    if obstacle == OTHER_MODEL:
        model, dims = config["embeddings.model"], config["embeddings.dimensions"]
        return (
            f"embedded with {dataset.embedding_model} ({dataset.embedding_dimensions}), "
            f"not the configured {model} ({dims})"
        )
    if obstacle == NO_ENDPOINT:
        return "no embeddings endpoint configured"
    return None


def _tuned(
    config: Config,
    conn: Connection,
    dataset: Dataset,
    queries: list[GoldQuery],
    vectors: dict[str, list[float]] | None,
    skip: str | None,
) -> tuple[Dataset, Tuning]:
    """`dataset`'s fusion tuned on the queries and stored with it; the dataset as updated."""
    from gligabao.search.tune import tune_fusion
    from gligabao.store.db import transaction

    if skip is not None or vectors is None:
        raise UsageError(f"dataset '{dataset.name}' cannot be tuned: {skip}; hybrid needs vectors")
    tuning = tune_fusion(
        conn,
        dataset,
        queries,
        vectors,
        current=fusion_for(config, dataset).vector_weight,
        depth=int(config["search.depth"]),
    )
    with transaction(conn):
        datasets.set_search_settings(conn, dataset.id, tuning.settings())
    return datasets.get_dataset(conn, dataset.id), tuning


def evaluate(
    config: Config,
    conn: Connection,
    found: Sequence[Dataset],
    queries: list[GoldQuery],
    methods: list[str],
    *,
    tune: bool,
    notice: Callable[[str], None],
    on_tuned: Callable[[Tuning], None],
) -> Evaluation:
    """Each of `methods` on each dataset, measured on `queries`; with `tune`, each
    dataset's vector weight learnt from them first (told to `on_tuned`, with a notice
    when search.vector_weight overrides it)."""
    skips = {ds.name: _vector_skip(config, conn, ds) for ds in found}
    vectors = None
    if any(reason is None for reason in skips.values()):
        vectors = _embed_all(config, [q.query for q in queries])  # once, for every dataset
    if tune:
        tuned = []
        for ds in found:
            updated, tuning = _tuned(config, conn, ds, queries, vectors, skips[ds.name])
            on_tuned(tuning)
            if config.sources.get("search.vector_weight", "default") != "default":
                notice(
                    f"search.vector_weight is set ({config.sources['search.vector_weight']}): "
                    "it overrides the learnt weight until unset"
                )
            tuned.append(updated)
        found = tuned
    results: list[EvalResult] = []
    for ds in found:
        results.extend(_measured(config, conn, ds, queries, methods, vectors, skips, notice))
    return Evaluation(queries, results)


def _measured(
    config: Config,
    conn: Connection,
    dataset: Dataset,
    queries: list[GoldQuery],
    methods: list[str],
    vectors: dict[str, list[float]] | None,
    skips: dict[str, str | None],
    notice: Callable[[str], None],
) -> list[EvalResult]:
    """One dataset's results, a method it cannot run skipped with the reason."""
    reason = skips[dataset.name]
    if reason:
        notice(f"dataset '{dataset.name}': {reason}; vector and hybrid skipped")
    skip = {m: reason for m in ("vector", "hybrid", RERANK)} if reason else {}
    reranker = None
    if RERANK in methods:
        from gligabao.search.rerank import Reranker

        reranker = Reranker(config, conn, dataset)
        if not reranker.available:
            skip.setdefault(RERANK, "no chat endpoint configured")
    try:
        return evaluate_dataset(
            conn,
            dataset,
            queries,
            methods=methods,
            query_vectors=vectors if reason is None else None,
            skip=skip or None,
            depth=int(config["search.depth"]),
            fusion=fusion_for(config, dataset),
            reranker=reranker,
            on_notice=notice,
        )
    finally:
        if reranker is not None:
            reranker.close()
