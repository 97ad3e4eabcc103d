"""Reading the store back: `gb show`, `list`, `forget`, `stats`, `vec-stats`, `inferences`."""

from __future__ import annotations

import dataclasses

import typer

from gligabao import render
from gligabao.cli import options
from gligabao.cli.app import command, configure, open_store
from gligabao.store import artifacts, datasets, forget, stats, vectors
from gligabao.store import inferences as inference_rows
from gligabao.store.errors import NotFound


def _open(config_path: str | None, db: str | None, dataset: str | None = None):
    config = configure(config_path, {"database": db, "dataset": dataset})
    return config, open_store(config)


def _dataset_id(conn, name: str) -> int:
    found = datasets.find_dataset(conn, name)
    if found is None:
        raise NotFound(f"no dataset named {name!r} in this database (gb list shows what is there)")
    return found.id


@command("show")
def show(
    artifact_id: int = typer.Argument(help="The id of a document (or of a chunk)."),
    db: options.Db = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Show a document with its chunks, summaries, entities and edges.

    Example: gb show 12
    """
    _, conn = _open(config_path, db)
    document = artifacts.get_document(conn, artifact_id)
    if as_json:
        render.json_line(document)
    else:
        render.document_view(document)


@command("list")
def list_documents(
    db: options.Db = None,
    dataset: options.Dataset = None,
    every: bool = typer.Option(False, "--all", help="Also list superseded versions."),
    limit: int = typer.Option(50, "--limit", "-n", help="How many, newest first."),
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """List the documents remembered, newest first.

    Example: gb list --dataset default -n 20
    """
    config, conn = _open(config_path, db, dataset)
    dataset_id = _dataset_id(conn, config["dataset"]) if dataset else None
    rows = artifacts.list_documents(conn, dataset_id, include_superseded=every, limit=limit)
    if as_json:
        for row in rows:
            render.json_line(row)
    else:
        render.documents_table(rows)


@command("forget")
def forget_document(
    artifact_id: int = typer.Argument(help="The id of the document to delete."),
    db: options.Db = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Delete a document with its chunks, summaries, links, keyword rows and vectors.

    Entities and facts that no other document supports are deleted with it.
    Example: gb forget 12
    """
    _, conn = _open(config_path, db)
    report = forget.forget(conn, artifact_id)
    if as_json:
        render.json_line(dataclasses.asdict(report))
    else:
        render.forget_line(report)


@command("stats")
def show_stats(
    db: options.Db = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Count documents, chunks, summaries, entities, facts, LLM calls, tokens and cost.

    Example: gb stats --json
    """
    config, conn = _open(config_path, db, dataset)
    dataset_id = _dataset_id(conn, config["dataset"]) if dataset else None
    counts = stats.stats(conn, dataset_id)
    if as_json:
        render.json_line(dataclasses.asdict(counts))
    else:
        render.stats_table(counts)


@command("vec-stats")
def vec_stats(
    db: options.Db = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Each vector index: the vectors it holds and the rows it should hold.

    Example: gb vec-stats
    """
    config, conn = _open(config_path, db, dataset)
    rows = vectors.vec_stats(conn, _dataset_id(conn, config["dataset"]))
    if as_json:
        for row in rows:
            render.json_line(dataclasses.asdict(row))
    else:
        render.vec_stats_table(config["dataset"], rows)


@command("inferences")
def list_inferences(
    db: options.Db = None,
    stage: str = typer.Option(None, help="Only this stage (extract_graph, embed, ...)."),
    limit: int = typer.Option(50, "--limit", "-n", help="How many, newest first."),
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """The record of LLM calls: stage, model, reasoning, tokens, cost, duration.

    Example: gb inferences --stage summarize_chunk -n 10
    """
    _, conn = _open(config_path, db)
    rows = inference_rows.list_inferences(conn, limit, stage)
    if as_json:
        for row in rows:
            render.json_line(row)
    else:
        render.inferences_table(rows)
