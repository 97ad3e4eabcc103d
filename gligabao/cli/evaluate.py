"""`gb eval QUERIES.jsonl`: failure@1/5/20 of bm25, vector and hybrid search, per dataset;
`gb eval --graph GOLD.jsonl`: extraction against hand-written facts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from gligabao.cli import options, render
from gligabao.cli.app import command, memory
from gligabao.errors import UsageError
from gligabao.search.evaluate import KS

if TYPE_CHECKING:
    from gligabao.search.tune import Tuning

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


# What `--json` gives of each kind of query.
_KIND = ("queries", *(f"failure@{k}" for k in KS), *(f"failed@{k}" for k in KS))


@command("eval")
def eval_command(
    queries_path: Optional[str] = typer.Argument(  # noqa: UP045 - typer reads it at run time
        None,
        metavar="[QUERIES.jsonl]",
        help='One {"query", "source", "start", "end"} a line (a gold span of bytes in a '
        'file), with an optional "kind" to report failures by. Optional with --synthetic.',
        show_default=False,
    ),
    dataset: Datasets = None,
    db: options.Db = None,
    schema: options.Schema = None,
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
    synthetic: bool = typer.Option(
        False,
        "--synthetic",
        help="With --tune: learn the weight from pseudo-queries the dataset writes for "
        "itself instead of gold ones: --sample chunks drawn, one query each, written by the "
        "chat model (one small call a chunk, recorded and reused) or, with --no-llm or no "
        "chat endpoint, taken from their headings and summaries.",
    ),
    sample: int = typer.Option(
        100, "--sample", metavar="N", help="--synthetic: chunks to write a query for."
    ),
    no_llm: bool = typer.Option(
        False,
        "--no-llm",
        help="--synthetic: make the pseudo-queries from headings and summaries, no LLM call.",
    ),
    graph: Optional[str] = typer.Option(  # noqa: UP045 - typer reads it at run time
        None,
        "--graph",
        metavar="GOLD.jsonl",
        help='Measure extraction instead of search: one {"source", "facts": [{"source", '
        '"relation", "target", "valid_at", "invalid_at"}]} a line (a remembered file, '
        "relative to GOLD.jsonl's folder, and the facts it states); gives precision, "
        "recall, duplicate entities, interval agreement and LLM tokens per document token.",
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

    --tune --synthetic needs no query file: each dataset learns its weight from queries
    it writes for its own chunks (each chunk the gold of its query). The weight in force,
    and where it comes from, is shown after the table.

    --graph GOLD.jsonl measures extraction instead: each gold document's stored facts
    (those with evidence in it) paired with the facts written for it by hand, ends by
    name, relations by meaning (embeddings) or, with no embeddings endpoint, by words.

    Example: gb eval queries.jsonl --dataset text --dataset markdown
    Example: gb eval --tune --synthetic --sample 200
    Example: gb eval --graph gold.jsonl --json
    """
    service = memory(config_path, {"database": db, "schema": schema})
    if graph is not None:
        if queries_path is not None or tune or synthetic or method:
            raise UsageError(
                "--graph measures extraction: give no QUERIES.jsonl, --tune, --synthetic "
                "or --method with it"
            )
        for name in dataset or [None]:
            graded = service.evaluate_graph(graph, dataset=name)
            if as_json:
                for score in graded.documents:
                    render.json_line({"dataset": graded.dataset, **score.as_json()})
                render.json_line(
                    {"dataset": graded.dataset, **graded.total.as_json(False), "total": True}
                )
            else:
                render.graph_eval_table(graded)
        return

    def tuned(tuning: Tuning) -> None:
        if as_json:
            render.json_line({"tuning": tuning.as_json()})
        else:
            render.tuning_table(tuning)

    measured = service.evaluate(
        queries_path,
        datasets=dataset or (),
        methods=method or (),
        tune=tune,
        on_tuned=tuned,
        synthetic=sample if synthetic else 0,
        use_llm=not no_llm,
    )
    queries, results = measured.queries, measured.results
    kinds = any(q.kind is not None for q in queries)
    if as_json:
        for r in results:
            line = r.as_json()
            if r.method in ("hybrid", "rerank") and not r.skipped and r.dataset in measured.weights:
                line["vector_weight"], line["weight_origin"] = measured.weights[r.dataset]
            if kinds and not r.skipped:
                line["by_kind"] = {
                    kind: {key: value for key, value in part.as_json().items() if key in _KIND}
                    for kind, part in r.by_kind(queries).items()
                }
            render.json_line(line)
        if not results:
            for name, (weight, origin) in measured.weights.items():
                render.json_line(
                    {"dataset": name, "vector_weight": weight, "weight_origin": origin}
                )
        return
    if results:
        render.eval_table(results, len(queries), KS)
    if kinds:
        render.eval_kinds_table(results, queries, KS)
    render.weights_table(measured.weights)
