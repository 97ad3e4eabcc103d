"""`gb eval QUERIES.jsonl`: failure@1/5/20 of bm25, vector and hybrid search, per dataset."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gligabao import render
from gligabao.cli import options
from gligabao.cli.app import command, configure, open_store
from gligabao.config import Config
from gligabao.evaluate import EVAL_METHODS, KS, EvalResult, evaluate_dataset, read_queries
from gligabao.search import NO_ENDPOINT, NO_VECTORS, OTHER_MODEL, vector_obstacle
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
    as_json: options.Json = False,
) -> None:
    """Measure search on your own queries.

    Measure search on your own queries: failure@1, @5 and @20 of bm25, vector and
    hybrid search for each dataset, side by side, with the mean tokens per retrieved chunk.

    A query fails at k when none of its top k hits covers at least half of its gold span.
    Queries with a "kind" are also counted by kind; --json gives each query's rank (of
    its first hit that covers the span) to compare two settings query by query.
    Vector and hybrid are skipped, with a note, where the dataset has no vectors or no
    embeddings endpoint is configured.

    Example: gb eval queries.jsonl --dataset text --dataset markdown
    """
    config = configure(config_path, {"database": db})
    queries = read_queries(queries_path)
    names = list(dict.fromkeys(dataset or [config["dataset"]]))
    conn = open_store(config, create=False)
    found = [require_dataset(conn, name) for name in names]
    skips = {ds.name: _vector_skip(config, conn, ds) for ds in found}
    vectors = None
    if any(reason is None for reason in skips.values()):
        vectors = _embed_all(config, [q.query for q in queries])  # once, for every dataset

    depth, rrf_k = int(config["search.depth"]), int(config["search.rrf_k"])
    results: list[EvalResult] = []
    for ds in found:
        reason = skips[ds.name]
        if reason:
            render.notice(f"dataset '{ds.name}': {reason}; vector and hybrid skipped")
        results.extend(
            evaluate_dataset(
                conn,
                ds,
                queries,
                methods=EVAL_METHODS,
                query_vectors=vectors if reason is None else None,
                skip={"vector": reason, "hybrid": reason} if reason else None,
                depth=depth,
                rrf_k=rrf_k,
            )
        )
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
