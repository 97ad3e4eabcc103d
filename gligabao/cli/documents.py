"""Reading the store back: `gb show`, `list`, `forget`, `stats`, `vec-stats`, `inferences`."""

from __future__ import annotations

import dataclasses
from collections import Counter

import typer

from gligabao.cli import options, render
from gligabao.cli.app import command, memory
from gligabao.errors import ExitCode, InputError
from gligabao.service.records import INFERENCE_STAGES


@command("show")
def show(
    artifact_id: int = typer.Argument(
        metavar="ID", help="The id of a document, a chunk or a summary."
    ),
    db: options.Db = None,
    schema: options.Schema = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Show a document or a chunk, with its graph.

    Show a document with its chunks, summaries, entities and facts, or a chunk.

    A chunk's id (or its summary's) shows the chunk: its document, lines, text, summary
    and facts. Example: gb show 12
    """
    view = memory(config_path, {"database": db, "schema": schema}).document(artifact_id)
    if as_json:
        render.json_line(view)
    elif "place" in view:  # a chunk's (or its summary's) id shows the chunk
        render.chunk_view(view)
    else:
        render.document_view(view)


@command("list")
def list_documents(
    db: options.Db = None,
    schema: options.Schema = None,
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
    service = memory(config_path, {"database": db, "schema": schema, "dataset": dataset})
    rows = service.documents(limit=limit, include_superseded=every, session=session)
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
    schema: options.Schema = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Delete a document and all it gave.

    Delete a document with its chunks, summaries, links, keyword rows and vectors.

    Entities and facts that no other document supports are deleted with it. A chunk's
    or a summary's id is refused (exit 2), naming its document. Example: gb forget 12
    """
    report = memory(config_path, {"database": db, "schema": schema}).forget(artifact_id)
    if as_json:
        render.json_line(dataclasses.asdict(report))
    else:
        render.forget_line(report)


@command("stats")
def show_stats(
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.DatasetFilter = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Count what the database holds, and its cost.

    Count documents (and those incomplete), chunks, summaries, entities, facts, LLM
    calls, tokens and cost, of every dataset unless one is named.

    Example: gb stats --json
    """
    counts = memory(config_path, {"database": db, "schema": schema, "dataset": dataset}).stats()
    if as_json:
        render.json_line(dataclasses.asdict(counts))
    else:
        render.stats_table(counts)


@command("vec-stats")
def vec_stats(
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """What each vector index holds.

    Each vector index: the vectors it holds and the rows it should hold.

    Example: gb vec-stats
    """
    service = memory(config_path, {"database": db, "schema": schema, "dataset": dataset})
    rows = service.vector_stats()
    if as_json:
        for row in rows:
            render.json_line(dataclasses.asdict(row))
    else:
        render.vec_stats_table(service.dataset, rows)


@command("inferences")
def list_inferences(
    inference_id: int = typer.Argument(
        None,
        metavar="[ID]",
        help="One call: its record, the request it sent, its answer and what it served.",
    ),
    db: options.Db = None,
    schema: options.Schema = None,
    stage: str = typer.Option(
        None, metavar="STAGE", help=f"Only this stage: {', '.join(INFERENCE_STAGES)}."
    ),
    limit: int = typer.Option(
        50, "-n", "-k", "--limit", metavar="N", help="How many, newest first."
    ),
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """The record of LLM calls, or one call whole.

    The record of LLM calls: stage, model, reasoning, tokens, cost, duration.

    With ID, that one call whole: its record, the request it sent (the messages of a
    chat, the texts of embeddings; the API key never), the answer it gave (as the reruns
    reuse it) and the document it served.

    Example: gb inferences --stage summarize_chunk -n 10
    """
    service = memory(config_path, {"database": db, "schema": schema})
    if inference_id is not None:
        view = service.inference(inference_id)
        if as_json:
            render.json_line(view)
        else:
            render.inference_view(view, view["documents"])
        return
    rows = service.inferences(limit=limit, stage=stage)
    if as_json:
        for row in rows:
            render.json_line(row)
    else:
        render.inferences_table(rows)


@command("status")
def status(
    paths: options.Paths = None,
    recursive: bool = typer.Option(False, "-r", "--recursive", help="Check the files in folders."),
    glob: list[str] = typer.Option(
        None, "--glob", metavar="PATTERN", help="With -r, only files matching PATTERN."
    ),
    db: options.Db = None,
    schema: options.Schema = None,
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
        "schema": schema,
        "dataset": dataset,
        **options.chunk_flags(chunk_size, overlap, mode, tokenizer),
    }
    sync = memory(config_path, flags).status(paths or [], recursive=recursive, glob=glob or ())
    worst = ExitCode.OK
    states: Counter[str] = Counter()
    for result in sync:
        if isinstance(result, InputError):
            render.error(str(result))
            worst = ExitCode.BAD_INPUT
            states["unreadable"] += 1
            continue
        states[result.state] += 1
        # Any state but in sync fails, a file gone from a folder walked too.
        if result.state != "in sync" and worst == ExitCode.OK:
            worst = ExitCode.FAILURE
        if as_json:
            render.json_line(dataclasses.asdict(result))
        else:
            render.status_line(result)
    render.status_summary(sync.files, states)
    raise typer.Exit(int(worst))
