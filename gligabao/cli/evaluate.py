"""`gb eval QUERIES.jsonl`: failure@1/5/20 of bm25, vector and hybrid search, per dataset."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gligabao.cli import options, render
from gligabao.cli.app import command, configure, open_store
from gligabao.config import Config
from gligabao.errors import UsageError
from gligabao.search.evaluate import (
    EVAL_METHODS,
    KS,
    METHOD_CHOICES,
    RERANK,
    EvalResult,
    evaluate_dataset,
    read_queries,
)
from gligabao.search.hybrid import NO_ENDPOINT, NO_VECTORS, OTHER_MODEL, fusion_for, vector_obstacle
from gligabao.store import datasets
from gligabao.store.datasets import require_dataset

_BATCH = 64  # queries per embeddings request

Datasets = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer reads the annotation at run time
    typer.Option(
        "--dataset",
        metavar="NAME",
        help="A dataset to measure; repeat to compare (default: the configured one).",
    ),
]
Methods = Annotated[
    Optional[list[str]],  # noqa: UP045 - typer reads the annotation at run time
    typer.Option(
        "--method",
        metavar="METHOD",
        help="bm25, vector, hybrid or rerank (hybrid reordered by the chat model, one LLM "
        "call a query); repeat for several (default: bm25, vector and hybrid).",
    ),
]


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


def _vector_skip(config: Config, conn, dataset: datasets.Dataset) -> str | None:
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


def _tuned(config: Config, conn, ds, queries, vectors, skip: str | None, as_json: bool):
    """Tune `ds`'s fusion (gb eval --tune), store it, say it; the dataset as updated."""
    from gligabao.search.tune import tune_fusion
    from gligabao.store.db import transaction

    if skip is not None or vectors is None:
        raise UsageError(f"dataset '{ds.name}' cannot be tuned: {skip}; hybrid needs vectors")
    tuning = tune_fusion(
        conn,
        ds,
        queries,
        vectors,
        current=fusion_for(config, ds).vector_weight,
        depth=int(config["search.depth"]),
    )
    with transaction(conn):
        datasets.set_search_settings(conn, ds.id, tuning.settings())
    if as_json:
        render.json_line({"tuning": tuning.as_json()})
    else:
        render.tuning_table(tuning)
    if config.sources.get("search.vector_weight", "default") != "default":
        render.notice(
            f"search.vector_weight is set ({config.sources['search.vector_weight']}): "
            "it overrides the learnt weight until unset"
        )
    return datasets.get_dataset(conn, ds.id)


# What `--json` gives of each kind of query.
_KIND = ("queries", *(f"failure@{k}" for k in KS), *(f"failed@{k}" for k in KS))


@command("eval")
def eval_command(
    queries_path: str = typer.Argument(
        metavar="QUERIES.jsonl",
        help='One {"query", "source", "start", "end"} a line (a gold span of bytes in a '
        'file), with an optional "kind" to report failures by.',
    ),
    dataset: Datasets = None,
    db: options.Db = None,
    config_path: options.ConfigPath = None,
    method: Methods = None,
    as_json: options.Json = False,
    tune: bool = typer.Option(
        False,
        "--tune",
        help="Learn each dataset's hybrid vector weight from these queries and store it "
        "with the dataset (gb search uses it unless search.vector_weight is set); then "
        "measure with it.",
    ),
) -> None:
    """Measure search on your own queries.

    Measure search on your own queries: failure@1, @5 and @20 of bm25, vector and
    hybrid search for each dataset, side by side, with the mean tokens per retrieved chunk.

    A query fails at k when none of its top k hits covers at least half of its gold span.
    Queries with a "kind" are also counted by kind; --json gives each query's rank (of
    its first hit that covers the span) to compare two settings query by query.
    Vector and hybrid are skipped, with a note, where the dataset has no vectors or no
    embeddings endpoint is configured. --method rerank measures hybrid search reordered
    by the chat model (one LLM call a query, recorded and reused; a query it cannot
    rerank keeps the fused order, with a notice).

    Example: gb eval queries.jsonl --dataset text --dataset markdown
    """
    chosen = list(dict.fromkeys(method or EVAL_METHODS))
    for name in chosen:
        if name not in METHOD_CHOICES:
            raise UsageError(f"--method must be one of {', '.join(METHOD_CHOICES)}, not {name!r}")
    config = configure(config_path, {"database": db})
    queries = read_queries(queries_path)
    names = list(dict.fromkeys(dataset or [config["dataset"]]))
    conn = open_store(config, create=False)
    found = [require_dataset(conn, name) for name in names]
    skips = {ds.name: _vector_skip(config, conn, ds) for ds in found}
    vectors = None
    if any(reason is None for reason in skips.values()):
        vectors = _embed_all(config, [q.query for q in queries])  # once, for every dataset

    depth = int(config["search.depth"])
    if tune:
        found = [_tuned(config, conn, d, queries, vectors, skips[d.name], as_json) for d in found]
    results: list[EvalResult] = []
    for ds in found:
        reason = skips[ds.name]
        if reason:
            render.notice(f"dataset '{ds.name}': {reason}; vector and hybrid skipped")
        skip = {m: reason for m in ("vector", "hybrid", RERANK)} if reason else {}
        reranker = None
        if RERANK in chosen:
            from gligabao.search.rerank import Reranker

            reranker = Reranker(config, conn, ds)
            if not reranker.available:
                skip.setdefault(RERANK, "no chat endpoint configured")
        try:
            results.extend(
                evaluate_dataset(
                    conn,
                    ds,
                    queries,
                    methods=chosen,
                    query_vectors=vectors if reason is None else None,
                    skip=skip or None,
                    depth=depth,
                    fusion=fusion_for(config, ds),
                    reranker=reranker,
                    on_notice=render.notice,
                )
            )
        finally:
            if reranker is not None:
                reranker.close()
    kinds = any(q.kind is not None for q in queries)
    if as_json:
        for r in results:
            line = r.as_json()
            if kinds and not r.skipped:
                line["by_kind"] = {
                    kind: {key: value for key, value in part.as_json().items() if key in _KIND}
                    for kind, part in r.by_kind(queries).items()
                }
            render.json_line(line)
        return
    render.eval_table(results, len(queries), KS)
    if kinds:
        render.eval_kinds_table(results, queries, KS)
