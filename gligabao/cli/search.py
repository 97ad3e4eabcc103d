"""`gb search QUERY`: BM25 and vector search over a dataset, fused by reciprocal rank."""

from __future__ import annotations

import typer

from gligabao import render
from gligabao.cli import options
from gligabao.cli.app import command, open_dataset
from gligabao.config import Config
from gligabao.errors import ConfigError, UsageError
from gligabao.llm.endpoint import Endpoints
from gligabao.search import METHODS, search
from gligabao.store import datasets, vectors

# Why a dataset's vectors cannot be searched (see vector_obstacle).
NO_VECTORS = "no vectors"
OTHER_MODEL = "other model"
NO_ENDPOINT = "no endpoint"


def vector_obstacle(
    config: Config,
    conn,
    dataset: datasets.Dataset,
    indexes: tuple[str, ...] = ("chunks", "summaries"),
) -> str | None:
    """Why vector search cannot run on `dataset`, or None when it can.

    NO_VECTORS: none stored in its `indexes` (by default the chunk and summary ones, what
    gb search compares); OTHER_MODEL: they were made
    with another model or dimensions than embeddings.*, so a query's would not compare;
    NO_ENDPOINT: no embeddings endpoint to embed the query. Checked in that order, with
    no network call and no openai import. `gb search` and `gb eval` each say it their way.
    """
    if dataset.embedding_model is None or not vectors.has_vectors(conn, dataset.id, indexes):
        return NO_VECTORS
    model, dims = config["embeddings.model"], config["embeddings.dimensions"]
    if (dataset.embedding_model, dataset.embedding_dimensions) != (model, dims):
        return OTHER_MODEL
    if not Endpoints.from_config(config).embeddings_available:
        return NO_ENDPOINT
    return None


def _choose_method(config: Config, conn, dataset: datasets.Dataset, method: str) -> str:
    """The method to run: bm25 (with a notice) when vectors cannot be searched."""
    if method == "bm25":
        return method
    obstacle = vector_obstacle(config, conn, dataset)
    if obstacle == NO_VECTORS:
        render.notice(f"dataset '{dataset.name}' has no vectors; searching by BM25 only")
        return "bm25"
    if obstacle == OTHER_MODEL:
        model, dims = config["embeddings.model"], config["embeddings.dimensions"]
        raise ConfigError(
            f"dataset '{dataset.name}' was embedded with {dataset.embedding_model} "
            f"({dataset.embedding_dimensions} dimensions), but embeddings.model is {model} "
            f"({dims}); set embeddings.model and embeddings.dimensions to the dataset's, "
            "or search with --method bm25"
        )
    if obstacle == NO_ENDPOINT:
        render.notice(
            "no embeddings endpoint configured (OPENAI_BASE_URL / OPENAI_API_KEY); "
            "searching by BM25 only"
        )
        return "bm25"
    return method


@command("search")
def search_command(
    query: str = typer.Argument(help="What to look for, in your own words."),
    method: str = typer.Option(
        "hybrid", "--method", help="hybrid (BM25 and vectors fused), bm25 or vector."
    ),
    k: int = typer.Option(10, "-k", help="How many hits to show."),
    db: options.Db = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Search the chunks and summaries of a dataset by keywords and by meaning.

    Each hit shows its file and lines, its section, its score and its text with the
    query's words highlighted. Without vectors or an embeddings endpoint the search is
    by BM25 alone.

    Example: gb search "how is the licence terminated" -k 5
    """
    if method not in METHODS:
        raise UsageError(f"--method must be one of {', '.join(METHODS)}, not {method!r}")
    options.count("-k", k)
    query = options.query_text(query, optional=False)
    config, conn, found = open_dataset(config_path, db, dataset)
    method = _choose_method(config, conn, found, method)
    from gligabao.llm.query import embed_query  # urllib and ssl: only when embedding

    hits = search(
        conn,
        found,
        query,
        method=method,
        k=k,
        query_vector=None if method == "bm25" else lambda: embed_query(config, query),
        depth=config["search.depth"],  # search() takes at least k from each method
        rrf_k=config["search.rrf_k"],
    )
    if as_json:
        for hit in hits:
            render.json_line(hit.as_json())
        return
    if not hits:
        render.notice(f"no hits for {query!r}")
        return
    render.search_hits(hits, query)
