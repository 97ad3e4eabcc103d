"""`gb chunk-preview` and `gb config`: see the cut and the settings, store nothing."""

from __future__ import annotations

import dataclasses
import os
import sys

import typer

from gligabao.chunk import ChunkSettings, Cut
from gligabao.cli import options, render
from gligabao.cli.app import command, configure
from gligabao.config import Config
from gligabao.errors import DatabaseError, ExitCode, InputError, UsageError
from gligabao.read.files import STDIN
from gligabao.read.sources import Source, read_sources
from gligabao.service.settings import where_from


@command("chunk-preview")
def chunk_preview(
    paths: options.Paths = None,
    chunk_size: options.ChunkSize = None,
    overlap: options.Overlap = None,
    mode: options.Mode = None,
    tokenizer: options.TokenizerSpec = None,
    db: options.Db = None,
    dataset: options.Dataset = None,
    all_branches: options.AllBranches = False,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Show how inputs would be cut; store nothing.

    Show how each input would be cut into chunks, without storing anything.

    With --json, a chunk of a file remembered with --contextual, whose stored chunks are
    the ones shown (same content, same settings), also has its `situating_context`.

    A PDF, an HTML page or a chat export is read by its reader (a chat export: one
    result per conversation); each chunk shows its pages (`pages`) or its messages
    (`messages`: conversation and path ids, first and last turn, roles).

    Example: gb chunk-preview notes.md --chunk-size 512 --overlap 10
    """
    config = configure(
        config_path,
        {
            **options.chunk_flags(chunk_size, overlap, mode, tokenizer),
            "database": db,
            "dataset": dataset,
        },
    )
    settings = config.chunk_settings()
    if not paths and sys.stdin.isatty():
        # Nothing piped in: waiting on the terminal would look like a hang.
        raise UsageError("no input: name a PATH, or pipe text into `gb chunk-preview -`")
    names = paths or [STDIN]
    # Only --json shows stored contexts, and only a database that is already there.
    database = config["database"] if as_json and os.path.isfile(config["database"]) else None
    failed = 0
    for name in names:
        try:
            sources = read_sources(name, chat=config["mode"] == "chat", all_branches=all_branches)
        except InputError as exc:
            render.error(str(exc))
            failed += 1
            continue
        for source in sources:
            database = _preview(config, settings, source, as_json, database)
    if failed:
        code = ExitCode.BAD_INPUT if failed == len(names) else ExitCode.PARTIAL
        raise typer.Exit(int(code))


def _preview(
    config: Config, settings: ChunkSettings, source: Source, as_json: bool, database: str | None
) -> str | None:
    """Show one document's cut; the database to read stored contexts from next."""
    from gligabao.remember.cut import cut_source

    shown = source.name  # a name's non-UTF-8 bytes escaped, printable
    if source.document is not None and source.document.kind == "chat":
        shown = f"{shown} #{source.document.name}"
    result = cut_source(source, settings)
    if as_json:
        situating: dict[int, str] = {}
        if database is not None and source.path is not None and result.chunked:
            situating, database = _stored_contexts(config, database, source, result)
        render.json_line(render.chunk_preview_json(shown, result, situating, source.locations()))
    else:
        render.chunk_preview_table(shown, result, settings)
    return database


def _stored_contexts(
    config: Config, database: str, source: Source, result: Cut
) -> tuple[dict[int, str], str | None]:
    """The stored contexts of `result`'s chunks, and the database to ask next time: None
    once it could not be read, so a locked or foreign file costs one notice, not one an
    input (the preview itself never depends on the database)."""
    from gligabao.remember.status import stored_contexts  # here: the store is not cheap

    # A short wait: a preview is not worth blocking on another process's lock.
    wait_ms = int(min(config["busy_timeout"], 1.0) * 1000)
    try:
        found = stored_contexts(
            database, source, config["dataset"], result, busy_timeout_ms=wait_ms
        )
    except DatabaseError as exc:
        render.notice(f"stored contexts not shown: {exc}")
        return {}, None
    return found, database


@command("config")
def show_config(
    chunk_size: options.ChunkSize = None,
    overlap: options.Overlap = None,
    mode: options.Mode = None,
    tokenizer: options.TokenizerSpec = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Every setting, its value and its source.

    Print every setting, its effective value, and where it came from (secrets masked).

    The options override the configuration here as they do in other commands, so
    `gb config --chunk-size 512` shows what `gb chunk-preview --chunk-size 512` would use.

    Example: GB_CHUNK_SIZE=512 gb config
    """
    flags = options.chunk_flags(chunk_size, overlap, mode, tokenizer)
    config = configure(config_path, flags)
    rows = config.shown()
    if as_json:
        render.json_line({key: {"value": _plain(v), "source": s} for key, v, s in rows})
    else:
        render.config_table(rows)
        render.config_summary(where_from(config))


def _plain(value: object) -> object:
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
