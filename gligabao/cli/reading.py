"""Reading the store back: `gb show`, `list`, `forget`, `stats`, `vec-stats`, `inferences`."""

from __future__ import annotations

import dataclasses
import os
from collections import Counter

import typer

from gligabao.cli import options, render
from gligabao.cli.app import command, configure, open_store
from gligabao.config import STAGES
from gligabao.errors import ExitCode, InputError, UsageError
from gligabao.llm.endpoint import EMBED_STAGE
from gligabao.read.discovery import discover
from gligabao.read.sources import read_sources
from gligabao.store import artifacts, datasets, forget, stats, vectors
from gligabao.store import inferences as inference_rows
from gligabao.store.datasets import require_dataset
from gligabao.store.errors import NotFound

# Every stage an inference is recorded under: the chat stages and the embeddings.
KNOWN_STAGES = (*STAGES, EMBED_STAGE)


def _open(config_path: str | None, db: str | None, dataset: str | None = None):
    """The configuration and the existing database (never created here: exit 6 if none)."""
    config = configure(config_path, {"database": db, "dataset": dataset})
    return config, open_store(config, create=False)


def _filter_id(config, conn) -> int | None:
    """The id of the dataset named by --dataset, GB_DATASET or the config file; None
    (every dataset) when none is named."""
    name = config.dataset_named()
    return None if name is None else require_dataset(conn, name).id


@command("show")
def show(
    artifact_id: int = typer.Argument(
        metavar="ID", help="The id of a document, a chunk or a summary."
    ),
    db: options.Db = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Show a document or a chunk, with its graph.

    Show a document with its chunks, summaries, entities and edges, or a chunk.

    A chunk's id (or its summary's) shows the chunk: its document, lines, text, summary
    and facts. Example: gb show 12
    """
    _, conn = _open(config_path, db)
    artifact_id = options.stored_id(artifact_id, "artifact")
    if artifacts.artifact_place(conn, artifact_id)["role"] == "document":
        view, human = artifacts.get_document(conn, artifact_id), render.document_view
    else:
        view, human = artifacts.get_chunk(conn, artifact_id), render.chunk_view
    if as_json:
        render.json_line(view)
    else:
        human(view)


@command("list")
def list_documents(
    db: options.Db = None,
    dataset: options.DatasetFilter = None,
    every: bool = typer.Option(False, "--all", help="Also list superseded versions."),
    session: options.SessionFilter = None,
    limit: int = typer.Option(
        50, "-n", "-k", "--limit", metavar="N", help="How many, newest first."
    ),
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """List the documents remembered, newest first.

    List the documents remembered, newest first, of every dataset unless one is named.

    Each has a state: complete, incomplete (with the stages still to do) or superseded.
    Ids are shared by documents, chunks and summaries, so document ids may skip.
    Example: gb list --dataset default -n 20
    """
    options.count("--limit", limit)
    config, conn = _open(config_path, db, dataset)
    dataset_id = _filter_id(config, conn)
    rows = artifacts.list_documents(
        conn, dataset_id, include_superseded=every, limit=limit, session=session
    )
    if as_json:
        for row in rows:
            render.json_line(row)
    else:
        render.documents_table(rows)


@command("forget")
def forget_document(
    artifact_id: int = typer.Argument(
        metavar="ID", help="The id of the document (not of a chunk) to delete."
    ),
    db: options.Db = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Delete a document and all it gave.

    Delete a document with its chunks, summaries, links, keyword rows and vectors.

    Entities and facts that no other document supports are deleted with it. A chunk's
    or a summary's id is refused (exit 2), naming its document. Example: gb forget 12
    """
    _, conn = _open(config_path, db)
    report = forget.forget(conn, options.stored_id(artifact_id, "artifact"))
    if as_json:
        render.json_line(dataclasses.asdict(report))
    else:
        render.forget_line(report)


@command("stats")
def show_stats(
    db: options.Db = None,
    dataset: options.DatasetFilter = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Count what the database holds, and its cost.

    Count documents (and those incomplete), chunks, summaries, entities, facts, LLM
    calls, tokens and cost, of every dataset unless one is named.

    Example: gb stats --json
    """
    config, conn = _open(config_path, db, dataset)
    dataset_id = _filter_id(config, conn)
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
    """What each vector index holds.

    Each vector index: the vectors it holds and the rows it should hold.

    Example: gb vec-stats
    """
    config, conn = _open(config_path, db, dataset)
    rows = vectors.vec_stats(conn, require_dataset(conn, config["dataset"]).id)
    if as_json:
        for row in rows:
            render.json_line(dataclasses.asdict(row))
    else:
        render.vec_stats_table(config["dataset"], rows)


@command("inferences")
def list_inferences(
    inference_id: int = typer.Argument(
        None, metavar="[ID]", help="One call: its record, its answer and what it served."
    ),
    db: options.Db = None,
    stage: str = typer.Option(
        None, metavar="STAGE", help=f"Only this stage: {', '.join(KNOWN_STAGES)}."
    ),
    limit: int = typer.Option(
        50, "-n", "-k", "--limit", metavar="N", help="How many, newest first."
    ),
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """The record of LLM calls, or one call whole.

    The record of LLM calls: stage, model, reasoning, tokens, cost, duration.

    With ID, that one call whole: its record, the answer it gave (as the reruns reuse
    it) and the document it served.

    Example: gb inferences --stage summarize_chunk -n 10
    """
    if inference_id is not None:
        _one_inference(config_path, db, options.stored_id(inference_id, "inference"), as_json)
        return
    options.count("--limit", limit)
    if stage is not None and stage not in KNOWN_STAGES:
        # An unknown stage matches no row: an empty table would look like "no calls".
        raise UsageError(f"unknown stage {stage!r}: use one of {', '.join(KNOWN_STAGES)}")
    _, conn = _open(config_path, db)
    rows = inference_rows.list_inferences(conn, limit, stage)
    if as_json:
        for row in rows:
            render.json_line(row)
    else:
        render.inferences_table(rows)


def _one_inference(config_path: str | None, db: str | None, inference_id: int, as_json: bool):
    _, conn = _open(config_path, db)
    row = inference_rows.get_inference(conn, inference_id)
    if row is None:
        raise NotFound(f"no inference with id {inference_id}; gb inferences lists them")
    served = inference_rows.served_documents(conn, inference_id)
    if as_json:
        render.json_line({**row, "documents": served})
    else:
        render.inference_view(row, served)


@command("status")
def status(
    paths: options.Paths = None,
    recursive: bool = typer.Option(False, "-r", "--recursive", help="Check the files in folders."),
    glob: list[str] = typer.Option(
        None, "--glob", metavar="PATTERN", help="With -r, only files matching PATTERN."
    ),
    db: options.Db = None,
    dataset: options.Dataset = None,
    chunk_size: options.ChunkSize = None,
    overlap: options.Overlap = None,
    mode: options.Mode = None,
    tokenizer: options.TokenizerSpec = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Whether files are stored as they read now.

    Say whether each file's stored chunks are what it and the settings cut now.

    States: in sync, changed, settings changed, incomplete, not remembered. The exit code
    is 0 only when every file is in sync (1 otherwise, 3 when a file cannot be read).

    Example: gb status -r docs --glob '*.md' || gb remember -r docs --glob '*.md'
    """
    flags = {
        "database": db,
        "dataset": dataset,
        **options.chunk_flags(chunk_size, overlap, mode, tokenizer),
    }
    # Here, not at the top: it loads the remember pipeline, which no other command needs.
    from gligabao.remember.status import IN_SYNC, deleted_files, sync_status

    config = configure(config_path, flags)
    settings = config.chunk_settings()
    names = discover(paths or [], recursive=recursive, globs=glob or ()).inputs
    if not names:
        raise UsageError("name the files to check (or -r FOLDER)")
    conn, dataset_id = None, None
    worst = ExitCode.OK
    states: Counter[str] = Counter()
    for name in names:
        try:
            sources = read_sources(name)  # a chat export: each conversation, in turn
            if conn is None:  # once a file is read: a missing file alone is still exit 3
                conn = open_store(config, create=False)
                found = datasets.find_dataset(conn, config["dataset"])
                dataset_id = found and found.id
            results = [sync_status(conn, source, dataset_id, settings) for source in sources]
        except InputError as exc:
            render.error(str(exc))
            worst = ExitCode.BAD_INPUT
            states["unreadable"] += 1
            continue
        for result in results:
            states[result.state] += 1
            if result.state != IN_SYNC and worst == ExitCode.OK:
                worst = ExitCode.FAILURE
            if as_json:
                render.json_line(dataclasses.asdict(result))
            else:
                render.status_line(result)
    # Remembered from a folder walked, gone from it since (issue 17): not in sync either.
    folders = [p for p in paths or [] if recursive and os.path.isdir(p)]
    gone = deleted_files(conn, dataset_id, folders, names) if conn is not None else []
    for result in gone:
        states[result.state] += 1
        worst = ExitCode.FAILURE if worst == ExitCode.OK else worst
        if as_json:
            render.json_line(dataclasses.asdict(result))
        else:
            render.status_line(result)
    render.status_summary(len(names) + len(gone), states)
    raise typer.Exit(int(worst))
