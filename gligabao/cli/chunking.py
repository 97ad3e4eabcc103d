"""`gb chunk-preview` and `gb config`: see the cut and the settings, store nothing."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from gligabao.cli import options, render
from gligabao.cli.app import command, configure, memory
from gligabao.config import Price
from gligabao.errors import ExitCode, InputError, UsageError
from gligabao.read.files import STDIN
from gligabao.service.settings import where_from

if TYPE_CHECKING:
    from gligabao.service.preview import Checked, Preview


@command("chunk-preview")
def chunk_preview(
    paths: options.Paths = None,
    chunk_size: options.ChunkSize = None,
    overlap: options.Overlap = None,
    mode: options.Mode = None,
    tokenizer: options.TokenizerSpec = None,
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    all_branches: options.AllBranches = False,
    recursive: bool = typer.Option(
        False,
        "-r",
        "--recursive",
        help="Preview the files in folders given, and below, as gb remember -r finds them.",
    ),
    glob: list[str] = typer.Option(
        None,
        "--glob",
        metavar="PATTERN",
        help="With -r, only files matching PATTERN (repeatable), e.g. '*.md'.",
    ),
    check: bool = typer.Option(
        False,
        "--check",
        help="Flag what a chunk may lack on its own: references to text elsewhere (see "
        "above), a preamble repeated at the top of chunks, a chunk starting inside a numbered "
        "procedure or a table; each with a suggestion. Exit 1 when anything is flagged.",
    ),
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Show how inputs would be cut; store nothing.

    Show how each input would be cut into chunks, without storing anything; with -r, each
    file of a folder (skipping what gb remember -r skips), then the total.

    With --json, a chunk of a file remembered with --contextual, whose stored chunks are
    the ones shown (same content, same settings), also has its `situating_context`.

    A PDF, an HTML page or a chat export is read by its reader (a chat export: one
    result per conversation); each chunk shows its pages (`pages`) or its messages
    (`messages`: conversation and path ids, first and last turn, roles).

    With --check, each chunk is checked for what a chatbot given it alone may miss (see
    docs/chunking.md); the exit code is 1 when any chunk is flagged, so a docs CI can run
    it. With --json, one object per input with every chunk and its findings.

    \b
    Examples:
      gb chunk-preview notes.md --chunk-size 512 --overlap 10
      gb chunk-preview -r docs --glob '*.md' --json
      gb chunk-preview -r docs --glob '*.md' --check
    """
    flags = {
        **options.chunk_flags(chunk_size, overlap, mode, tokenizer),
        "database": db,
        "schema": schema,
        "dataset": dataset,
    }
    service = memory(config_path, flags)
    if not paths and sys.stdin.isatty():
        # Nothing piped in: waiting on the terminal would look like a hang.
        raise UsageError("no input: name a PATH, or pipe text into `gb chunk-preview -`")
    names = paths or [STDIN]
    failed = 0
    shown: list[Preview] = []
    checked: list[Checked] = []
    # Only --json shows stored contexts (a check shows none).
    found = service.preview(
        names,
        all_branches=all_branches,
        contexts=as_json and not check,
        recursive=recursive,
        glob=glob or (),
    )
    for preview in found:
        if isinstance(preview, InputError):
            render.error(str(preview))
            failed += 1
            continue
        shown.append(preview)
        if check:
            checked.append(preview.check())
            if as_json:
                render.json_line(checked[-1].as_json())
            else:
                render.chunk_check(checked[-1])
        elif as_json:
            render.json_line(preview.as_json())
        else:
            render.chunk_preview_table(preview.shown, preview.cut, preview.settings)
    if not as_json and (recursive or len(shown) > 1):
        if check:
            render.chunk_check_total(checked, failed=failed)
        else:
            render.chunk_preview_total(
                [(p.cut.tokens, len(p.cut.chunks) or 1) for p in shown], failed=failed
            )
    if failed:
        code = ExitCode.BAD_INPUT if not shown else ExitCode.PARTIAL
        raise typer.Exit(int(code))
    if any(c.flagged for c in checked):
        raise typer.Exit(int(ExitCode.FAILURE))  # something flagged: a docs CI fails


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
    return value.as_dict() if isinstance(value, Price) else value
