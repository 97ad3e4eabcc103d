"""`gb search QUERY`: BM25 and vector search over a dataset, fused by reciprocal rank."""

from __future__ import annotations

import re

import typer
from rich.padding import Padding
from rich.text import Text

from gligabao import render
from gligabao.cli import options
from gligabao.cli.app import command, configure, open_store
from gligabao.config import Config
from gligabao.errors import ConfigError, UsageError
from gligabao.llm.endpoint import Endpoints
from gligabao.search import METHODS, Hit, search
from gligabao.store import datasets, vectors
from gligabao.store.db import scalar
from gligabao.store.errors import NotFound

_WORD = re.compile(r"\w+")


def _has_vectors(conn, dataset: datasets.Dataset) -> bool:
    if dataset.embedding_model is None or not vectors.has_vector_tables(conn, dataset.id):
        return False
    for index_name in ("chunks", "summaries"):
        table = vectors.table_name(dataset.id, index_name)
        if scalar(conn, f'SELECT count(*) FROM "{table}"'):
            return True
    return False


def _choose_method(config: Config, conn, dataset: datasets.Dataset, method: str) -> str:
    """The method to run: bm25 (with a notice) when vectors cannot be searched."""
    if method == "bm25":
        return method
    if not _has_vectors(conn, dataset):
        render.notice(f"dataset '{dataset.name}' has no vectors; searching by BM25 only")
        return "bm25"
    model, dims = config["embeddings.model"], config["embeddings.dimensions"]
    if (dataset.embedding_model, dataset.embedding_dimensions) != (model, dims):
        raise ConfigError(
            f"dataset '{dataset.name}' was embedded with {dataset.embedding_model} "
            f"({dataset.embedding_dimensions} dimensions), but embeddings.model is {model} "
            f"({dims}); set embeddings.model and embeddings.dimensions to the dataset's, "
            "or search with --method bm25"
        )
    if not Endpoints.from_config(config).embeddings_available:
        render.notice(
            "no embeddings endpoint configured (OPENAI_BASE_URL / OPENAI_API_KEY); "
            "searching by BM25 only"
        )
        return "bm25"
    return method


def _hit_view(number: int, hit: Hit, words: list[str]) -> None:
    where = hit.source or f"artifact {hit.document_id}"
    if hit.line_start is not None:
        where += f":{hit.line_start}-{hit.line_end}"
    ranks = ", ".join(f"{m} #{r}" for m, r in hit.ranks.items())
    head = Text.assemble(
        (f"{number}. ", "bold"),
        (where, "bold cyan"),
        (f"  § {hit.section}" if hit.section else "", "magenta"),
        (f"  score {hit.score:.4f} ({ranks})", "dim"),
    )
    render.stdout.print(head, soft_wrap=True)  # a long path stays on its line
    pattern = r"(?i)\b(?:" + "|".join(re.escape(w) for w in words) + r")\b" if words else None
    for label, body in (("", hit.text), ("summary: ", hit.summary)):
        if not body:
            continue
        text = Text(label, style="dim") + Text(body.strip())
        if pattern:
            text.highlight_regex(pattern, style="bold yellow")
        render.stdout.print(Padding(text, (0, 0, 0, 3), expand=False))
    render.stdout.print()


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
    if k <= 0:
        raise UsageError(f"-k must be positive, not {k}")
    config = configure(config_path, {"database": db, "dataset": dataset})
    conn = open_store(config)
    found = datasets.find_dataset(conn, config["dataset"])
    if found is None:
        name = config["dataset"]
        raise NotFound(f"no dataset named {name!r} in this database (gb list shows what is there)")
    method = _choose_method(config, conn, found, method)
    from gligabao.llm.query import embed_query  # urllib and ssl: only when embedding

    hits = search(
        conn,
        found,
        query,
        method=method,
        k=k,
        query_vector=None if method == "bm25" else lambda: embed_query(config, query),
        depth=max(config["search.depth"], k),
        rrf_k=config["search.rrf_k"],
    )
    if as_json:
        for hit in hits:
            render.json_line(hit.as_json())
        return
    if not hits:
        render.notice(f"no hits for {query!r}")
        return
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    for number, hit in enumerate(hits, start=1):
        _hit_view(number, hit, words)
