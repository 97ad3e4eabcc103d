"""Everything `gb` prints: rich tables on stdout, messages on stderr, JSON lines."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gligabao.chunk import ChunkSettings, Cut
from gligabao.config import Price

stdout = Console(highlight=False, soft_wrap=False)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


def error(message: str) -> None:
    stderr.print(Text(f"gb: {message}", style="red"))


def warning(message: str) -> None:
    stderr.print(Text(f"gb: warning: {message}", style="yellow"))


def json_line(obj: Any) -> None:
    """One JSON object per line on stdout, for scripts (JSON Lines)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def first_words(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def chunk_preview_json(source: str, cut: Cut) -> dict[str, Any]:
    return {
        "source": source,
        "tokens": cut.tokens,
        "chunked": cut.chunked,
        "chunk_count": len(cut.chunks),
        "chunks": [
            {
                "index": c.index,
                "start_offset": c.start_offset,
                "end_offset": c.end_offset,
                "tokens": c.tokens,
                "overlap_tokens": c.overlap_tokens,
                "section": None,
                "text": c.text,
            }
            for c in cut.chunks
        ],
    }


def chunk_preview_table(source: str, cut: Cut, settings: ChunkSettings) -> None:
    sizing = (
        f"chunk size {settings.chunk_size}, overlap {settings.overlap_percent}%, "
        f"{cut.mode} mode, {settings.tokenizer.name}"
    )
    if not cut.chunked:
        stdout.print(
            Text.assemble(
                (source, "bold"),
                f": {cut.tokens:,} tokens, fits in one chunk: not chunked ({sizing})",
            )
        )
        return
    # Texts, not strings: a file name or a chunk holding "[b]" or "[/x]" is not markup.
    table = Table(title=Text(source, style="bold"), title_justify="left", expand=False)
    for name in ("#", "start", "end", "tokens", "overlap"):
        table.add_column(name, justify="right", no_wrap=True)
    # The only column that gives way on a narrow terminal or a pipe (80 columns):
    # its cells are cut to one line with an ellipsis, the numbers are never cut.
    table.add_column("begins with", max_width=64)
    for c in cut.chunks:
        table.add_row(
            str(c.index),
            f"{c.start_offset:,}",
            f"{c.end_offset:,}",
            f"{c.tokens:,}",
            f"{c.overlap_tokens:,}",
            Text(first_words(c.text), no_wrap=True, overflow="ellipsis"),
        )
    table.caption = Text(f"{cut.tokens:,} tokens in {len(cut.chunks)} chunks ({sizing})")
    table.caption_justify = "left"
    stdout.print(table)


def config_table(rows: list[tuple[str, Any, str]]) -> None:
    table = Table(title="effective configuration", title_justify="left", expand=False)
    table.add_column("key", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("from", style="dim", overflow="fold")
    for key, value, source in rows:
        table.add_row(key, Text(_shown_value(value)), Text(source))
    stdout.print(table)


def _shown_value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, Price):
        cached = "" if value.cached_input is None else f", cached input ${value.cached_input:g}"
        return f"input ${value.input:g}, output ${value.output:g}{cached} per 1M tokens"
    return str(value)
