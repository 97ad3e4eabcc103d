"""gb copy: a whole memory from one store to another, or one dataset of it."""

from __future__ import annotations

import dataclasses

import typer

from gligabao.cli import options, render
from gligabao.cli.app import command, memory


@command("copy")
def copy_memory(
    source: str = typer.Option(
        ...,
        "--from",
        metavar="PATH|URL",
        help="The store to copy: an SQLite file or a postgresql:// URL. Only read.",
    ),
    destination: str = typer.Option(
        ...,
        "--to",
        metavar="PATH|URL",
        help="The store to copy into: empty, or holding this copy cut short (with --into: "
        "any store).",
    ),
    into: str = typer.Option(
        None,
        "--into",
        metavar="NAME",
        help="Copy one dataset (--dataset) into a new dataset NAME of --to, beside what it holds.",
    ),
    dataset: str = typer.Option(
        None,
        "--dataset",
        metavar="NAME",
        help="With --into: the dataset of --from to copy (else GB_DATASET or config "
        "`dataset`; default: default).",
    ),
    schema: str = typer.Option(
        None, "--schema", metavar="NAME", help="The schema of a postgresql:// --to."
    ),
    from_schema: str = typer.Option(
        None, "--from-schema", metavar="NAME", help="The schema of a postgresql:// --from."
    ),
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Copy a whole memory between stores, or one dataset of it.

    Copy everything one store holds into another, SQLite to PostgreSQL or back:
    documents, chunks, summaries, the graph with its times and evidence, the record of
    LLM calls (nothing is paid again), search settings, keyword index and vectors. Every
    row keeps its id. No LLM is asked anything.

    The destination must be empty. A copy cut short (Ctrl-C, a lost connection) goes on
    where it stopped when run again with the same --from.

    With --into NAME, only one dataset is copied (--dataset), into a new dataset NAME of
    a store that may hold others: its rows get new ids there, every reference following,
    and the other datasets are left as they are. NAME taken there is refused (exit 6),
    nothing written. It is one transaction, which other writers to --to wait for: not
    resumed, a copy cut short leaves nothing, and is run again from the start.

    \b
    Examples:
      gb copy --from gligabao.db --to postgresql://gb@db.internal/memory
      gb copy --from laptop.db --dataset notes --to postgresql://gb@db/memory --into laptop
    """
    service = memory(config_path, {"database": destination, "schema": schema})
    progress = render.CopyProgress(enabled=not as_json)
    try:
        report = service.copy_from(
            source, schema=from_schema, into=into, dataset=dataset, on_progress=progress
        )
    finally:
        progress.close()
    if as_json:
        render.json_line(dataclasses.asdict(report))
    else:
        render.copy_line(report)
