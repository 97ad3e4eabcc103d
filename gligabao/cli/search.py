"""`gb search QUERY`: BM25 and vector search over a dataset, fused by reciprocal rank."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import typer

from gligabao.base.jsonl import json_line
from gligabao.cli import options
from gligabao.cli.app import command, open_dataset
from gligabao.config import Config
from gligabao.errors import UsageError
from gligabao.search.hybrid import (
    METHODS,
    OTHER_MODEL,
    bm25_only,
    fusion_for,
    other_model,
    search,
    vector_obstacle,
)
from gligabao.store import datasets

if TYPE_CHECKING:
    from gligabao.llm.float32 import Float32


def _choose_method(config: Config, conn, dataset: datasets.Dataset, method: str) -> str:
    """The method to run: bm25 (with a notice) when vectors cannot be searched."""
    if method == "bm25":
        return method
    obstacle = vector_obstacle(config, conn, dataset)
    if obstacle == OTHER_MODEL:
        raise other_model(config, dataset)
    if obstacle is not None:
        from gligabao.cli import render  # rich, for the notice: not for a plain --json search

        render.notice(bm25_only(obstacle, dataset))
        return "bm25"
    return method


def _embedded(config: Config, query: str) -> Float32:
    """The query's vector. Called in search()'s vector thread: the import of what it
    sends the request with runs there too, while the keyword search runs in SQLite."""
    from gligabao.llm.query import embed_query

    return embed_query(config, query)


@command("search")
def search_command(
    query: str = typer.Argument(metavar="QUERY", help="What to look for, in your own words."),
    method: str = typer.Option(
        "hybrid",
        "--method",
        metavar="METHOD",
        help="hybrid (BM25 and vectors fused), bm25 or vector.",
    ),
    k: int = typer.Option(10, "-k", "-n", "--limit", metavar="N", help="How many hits to show."),
    db: options.Db = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    session: options.SessionFilter = None,
    role: str = typer.Option(
        None,
        "--role",
        metavar="ROLE",
        help="Only chat chunks holding a message by ROLE (user, assistant, ...).",
    ),
    full: bool = typer.Option(
        False, "--full", help="Print each hit's whole chunk and its summary, not a snippet."
    ),
    rerank: bool = typer.Option(
        None,
        "--rerank/--no-rerank",
        help="Let the chat model reorder the best search.rerank_depth hits (one LLM call, "
        "recorded in gb inferences; config search.rerank).",
        show_default=False,
    ),
    as_json: options.Json = False,
) -> None:
    """Search by keywords and by meaning.

    Search the chunks and summaries of a dataset by keywords and by meaning.

    Each hit shows path:LINE-LINE (a PDF's pages, a chat's messages), its section, its
    score (fused in hybrid search, the BM25 score with --method bm25, cosine similarity
    with --method vector) and the few lines that best match the query, its words
    highlighted; --full prints the whole chunk and its summary. Without vectors or
    an embeddings endpoint the search is by BM25 alone. With --rerank the chat model
    orders the best hits (their ranks show "rerank #N"); if it cannot, they stay in
    search order with a notice.

    Example: gb search "how is the licence terminated" -k 5
    """
    if method not in METHODS:
        raise UsageError(f"--method must be one of {', '.join(METHODS)}, not {method!r}")
    options.count("-k", k)
    query = options.query_text(query, optional=False)
    config, conn, found = open_dataset(config_path, db, dataset)
    method = _choose_method(config, conn, found, method)
    query_vector = None if method == "bm25" else functools.partial(_embedded, config, query)
    reranker = None
    if config["search.rerank"] if rerank is None else rerank:
        from gligabao.search.rerank import Reranker

        reranker = Reranker(config, conn, found)
    hits = search(
        conn,
        found,
        query,
        method=method,
        k=k if reranker is None else reranker.candidates(k),
        query_vector=query_vector,
        depth=config["search.depth"],  # search() takes at least k from each method
        fusion=fusion_for(config, found),
        exact=config["search.exact"],
        session=session,
        role=role,
    )
    notice = None
    if reranker is not None:
        with reranker:
            reranked = reranker.rerank(query, hits)
        hits, notice = reranked.hits[:k], reranked.notice
    if notice is not None:
        from gligabao.cli import render

        render.notice(notice)
    if as_json:
        for hit in hits:
            json_line(hit.as_json() if notice is None else {**hit.as_json(), "notice": notice})
        return
    from gligabao.cli import render

    if not hits:
        render.notice(f"no hits for {query!r}")
        return
    render.search_hits(hits, query, full=full)
