"""`gb chunk-preview` and `gb config`: see the cut and the settings, store nothing."""

from __future__ import annotations

import dataclasses
import sys

import typer

from gligabao import render
from gligabao.chunk import cut
from gligabao.cli import options
from gligabao.cli.app import command, configure
from gligabao.errors import ExitCode, InputError
from gligabao.inputs import STDIN, read_source


@command("chunk-preview")
def chunk_preview(
    paths: options.Paths = None,
    chunk_size: options.ChunkSize = None,
    overlap: options.Overlap = None,
    mode: options.Mode = None,
    tokenizer: options.TokenizerSpec = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Show how each input would be cut into chunks, without storing anything.

    Example: gb chunk-preview notes.md --chunk-size 512 --overlap 10
    """
    config = configure(
        config_path,
        {
            "chunk_size": chunk_size,
            "chunk_overlap_percent": overlap,
            "mode": mode,
            "tokenizer": tokenizer,
        },
    )
    settings = config.chunk_settings()
    if not paths and sys.stdin.isatty():
        # Nothing piped in: waiting on the terminal would look like a hang.
        render.error("no input: name a PATH, or pipe text into `gb chunk-preview -`")
        raise typer.Exit(int(ExitCode.USAGE))
    names = paths or [STDIN]
    failed = 0
    for name in names:
        try:
            source = read_source(name)
        except InputError as exc:
            render.error(str(exc))
            failed += 1
            continue
        result = cut(source.text, settings, None if name == STDIN else name)
        if as_json:
            render.json_line(render.chunk_preview_json(name, result))
        else:
            render.chunk_preview_table(name, result, settings)
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
    """Print every setting, its effective value, and where it came from (secrets masked).

    The options override the configuration here as they do in other commands, so
    `gb config --chunk-size 512` shows what `gb chunk-preview --chunk-size 512` would use.

    Example: GB_CHUNK_SIZE=512 gb config
    """
    flags = {
        "chunk_size": chunk_size,
        "chunk_overlap_percent": overlap,
        "mode": mode,
        "tokenizer": tokenizer,
    }
    rows = configure(config_path, flags).shown()
    if as_json:
        render.json_line({key: {"value": _plain(v), "source": s} for key, v, s in rows})
    else:
        render.config_table(rows)


def _plain(value: object) -> object:
    return dataclasses.asdict(value) if dataclasses.is_dataclass(value) else value
