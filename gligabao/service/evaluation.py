"""Search measured on a user's own queries (gb eval): failure@k of each method on each
dataset, the queries embedded once for all of them, a dataset's fusion tuned first when
asked: on those queries, or on pseudo-queries the dataset writes for itself
(search/pseudo.py), which need no gold from the user."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from gligabao.errors import UsageError
from gligabao.search.evaluate import RERANK, EvalResult, GoldQuery, evaluate_dataset
from gligabao.search.hybrid import (
    NO_ENDPOINT,
    NO_VECTORS,
    OTHER_MODEL,
    fusion_for,
    vector_obstacle,
    weight_origin,
)
from gligabao.search.pseudo import FROM_TEXT, PseudoQueries
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
    """The queries measured and each dataset's result for each method; the vector weight
    each dataset's hybrid search used, and where it comes from."""

    queries: list[GoldQuery]
    results: list[EvalResult]
    weights: dict[str, tuple[float, str]] = field(default_factory=dict)


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
    made: PseudoQueries | None = None,
) -> tuple[Dataset, Tuning]:
    """`dataset`'s fusion tuned on the queries (the gold, or those `made` for it) and
    stored with it; the dataset as updated."""
    from gligabao.search.tune import tune_fusion
    from gligabao.store.db import transaction

    if skip is not None:
        raise UsageError(f"dataset '{dataset.name}' cannot be tuned: {skip}; hybrid needs vectors")
    if not queries or vectors is None:
        offline = made is not None and made.origin == FROM_TEXT
        raise UsageError(
            f"dataset '{dataset.name}' cannot be tuned: no query could be made for it"
            + (" (its chunks have no headings or summaries; tune with an LLM)" if offline else "")
        )
    tuning = tune_fusion(
        conn,
        dataset,
        queries,
        vectors,
        current=fusion_for(config, dataset).vector_weight,
        depth=int(config["search.depth"]),
        guard=bool(config["search.guard"]),
    )
    if made is not None:
        tuning = replace(tuning, origin=made.origin, calls=made.calls, model=made.model)
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
    synthetic: int = 0,
    use_llm: bool = True,
) -> Evaluation:
    """Each of `methods` on each dataset, measured on `queries`; with `tune`, each
    dataset's vector weight learnt first (told to `on_tuned`, with a notice when
    search.vector_weight overrides it): from `queries`, or with `synthetic` from that many
    pseudo-queries each dataset makes for itself (written by the chat model when
    `use_llm` and one is configured, else from headings and summaries)."""
    skips = {ds.name: _vector_skip(config, conn, ds) for ds in found}
    vectors = None
    if queries and any(reason is None for reason in skips.values()):
        vectors = _embed_all(config, [q.query for q in queries])  # once, for every dataset
    if tune:
        tuned = []
        for ds in found:
            if synthetic:
                made = _pseudo_queries(config, conn, ds, synthetic, use_llm, skips[ds.name], notice)
                made_vectors = (
                    _embed_all(config, [q.query for q in made.queries])
                    if made.queries and skips[ds.name] is None
                    else None
                )
                updated, tuning = _tuned(
                    config, conn, ds, made.queries, made_vectors, skips[ds.name], made
                )
            else:
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
    if queries:
        for ds in found:
            results.extend(_measured(config, conn, ds, queries, methods, vectors, skips, notice))
    weights = {
        ds.name: (fusion_for(config, ds).vector_weight, weight_origin(config, ds)) for ds in found
    }
    return Evaluation(queries, results, weights)


def _pseudo_queries(
    config: Config,
    conn: Connection,
    dataset: Dataset,
    n: int,
    use_llm: bool,
    skip: str | None,
    notice: Callable[[str], None],
) -> PseudoQueries:
    """The dataset's pseudo-queries, with a notice of where they come from."""
    from gligabao.llm.endpoint import Endpoints
    from gligabao.search.pseudo import write_queries

    if skip is not None:  # said by _tuned, before anything is paid for
        return PseudoQueries([], FROM_TEXT, 0)
    online = use_llm and Endpoints.from_config(config).chat_available
    if use_llm and not online:
        notice(
            "no chat endpoint configured: pseudo-queries taken from headings and summaries, "
            "which lean the weight toward BM25"
        )
    made = write_queries(config, conn, dataset, n, use_llm=online)
    for line in made.notices:
        notice(line)
    return made


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


def tune_if_due(
    config: Config, conn: Connection, dataset: Dataset, notice: Callable[[str], None]
) -> Tuning | None:
    """After an import, with search.tune_after_import = N: the dataset's weight learnt
    from N pseudo-queries written by the chat model, when no learnt weight holds for it
    (never tuned, or tuned for another embedding model) and it can be tuned (vectors of
    the configured model, a chat endpoint). None when nothing was due or possible."""
    from gligabao.llm.endpoint import Endpoints
    from gligabao.search.hybrid import weight_holds

    n = int(config["search.tune_after_import"])
    if n <= 0 or weight_holds(dataset) or not Endpoints.from_config(config).chat_available:
        return None
    skip = _vector_skip(config, conn, dataset)
    if skip is not None:
        return None
    made = _pseudo_queries(config, conn, dataset, n, True, None, notice)
    if not made.queries:
        return None
    vectors = _embed_all(config, [q.query for q in made.queries])
    return _tuned(config, conn, dataset, made.queries, vectors, None, made)[1]
