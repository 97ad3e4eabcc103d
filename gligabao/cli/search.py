"""`gb search QUERY`: BM25 and vector search over a dataset, fused by their normalised
scores mixed by a weight (by reciprocal rank with `search.fusion = "rrf"`). Its options
for typer; what it does is searching.py's, which reads plain arguments without typer."""

from __future__ import annotations

import typer

from gligabao.cli import options, searching
from gligabao.cli.app import command


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
    schema: options.Schema = None,
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
    searching.search(
        query,
        method=method,
        k=k,
        db=db,
        schema=schema,
        dataset=dataset,
        config_path=config_path,
        session=session,
        role=role,
        full=full,
        rerank=rerank,
        as_json=as_json,
    )
