"""`gb chunk-preview` and `gb config`: see the cut and the settings, store nothing."""

from __future__ import annotations

import dataclasses
import sys

import typer

from gligabao.cli import options, render
from gligabao.cli.app import command, configure, memory
from gligabao.errors import ExitCode, InputError, UsageError
from gligabao.read.files import STDIN
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
    flags = {
        **options.chunk_flags(chunk_size, overlap, mode, tokenizer),
        "database": db,
        "dataset": dataset,
    }
    service = memory(config_path, flags)
    if not paths and sys.stdin.isatty():
        # Nothing piped in: waiting on the terminal would look like a hang.
        raise UsageError("no input: name a PATH, or pipe text into `gb chunk-preview -`")
    names = paths or [STDIN]
    failed = 0
    # Only --json shows stored contexts.
    for preview in service.preview(names, all_branches=all_branches, contexts=as_json):
        if isinstance(preview, InputError):
            render.error(str(preview))
            failed += 1
        elif as_json:
            render.json_line(
                render.chunk_preview_json(
                    preview.shown, preview.cut, preview.situating, preview.locations
                )
            )
        else:
            render.chunk_preview_table(preview.shown, preview.cut, preview.settings)
    if failed:
        code = ExitCode.BAD_INPUT if failed == len(names) else ExitCode.PARTIAL
        raise typer.Exit(int(code))


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
