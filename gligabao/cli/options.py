"""Options that several commands share, declared once so they read the same everywhere."""

from __future__ import annotations

import math
from typing import Annotated, Optional

import typer

from gligabao.errors import ConfigError, UsageError
from gligabao.times import canonical_time

# The most any count option (-k, --limit, --depth) takes: beyond any store, and small
# enough that the pools searches draw from it (a few times -k) still bind as SQLite's
# 64-bit integers.
MAX_COUNT = 1_000_000_000
# SQLite's ids are 64-bit integers: a larger number names no row.
MAX_ID = 2**63 - 1

ConfigPath = Annotated[
    Optional[str],  # noqa: UP045 - typer reads the annotation at run time on 3.10 too
    typer.Option("--config", help="Config file (else GB_CONFIG, ./gligabao.toml, user config)."),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON, one object per line.")]
ChunkSize = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--chunk-size", help="Largest chunk in tokens, overlap included (32..8000)."),
]
Overlap = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--overlap", help="Overlap as a percentage of the chunk size (0..50)."),
]
Mode = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--mode", help="How to cut: auto (by file extension), text, markdown, code."),
]
TokenizerSpec = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--tokenizer", help="estimator (default) or tiktoken:ENCODING, e.g. tiktoken:o200k_base."
    ),
]
Paths = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Argument(metavar="[PATH|-]...", help="Files to read; - reads standard input."),
]
Db = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--db", help="The SQLite file (else GB_DB, config `database`, ./gligabao.db)."),
]
Dataset = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--dataset", help="Namespace of documents, graph and vectors (default: default)."),
]
DatasetFilter = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--dataset",
        help="Only this dataset (else GB_DATASET or config `dataset`; default: every dataset).",
    ),
]
Concurrency = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--concurrency", help="LLM requests in flight at once (default 8)."),
]
Trace = Annotated[
    bool, typer.Option("--trace", help="Add the trajectory: every step, chunk by chunk.")
]
StageValues = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        help="STAGE=VALUE, repeatable; stages: extract_graph, summarize_chunk, "
        "resolve, contextualize_chunk, default."
    ),
]


def chunk_flags(
    chunk_size: int | None, overlap: int | None, mode: str | None, tokenizer: str | None
) -> dict[str, object]:
    """The cut's options as configuration keys, the same in every command that cuts."""
    return {
        "chunk_size": chunk_size,
        "chunk_overlap_percent": overlap,
        "mode": mode,
        "tokenizer": tokenizer,
    }


def iso_time(flag: str, value: str | None) -> str | None:
    """An ISO-8601 time as gb's UTC text (gligabao.times); a time without zone is UTC."""
    if value is None:
        return None
    moment = canonical_time(value)
    if moment is None:
        raise ConfigError(
            f"{flag} {value!r} is not an ISO-8601 time (for example 2024-05-01 or "
            "2024-05-01T09:30:00Z)"
        )
    return moment


def count(flag: str, value: int, *, low: int = 1) -> int:
    """`value` of a count option (-k, --limit, --depth), checked: from `low` to
    MAX_COUNT, else a usage error (exit 2) saying so."""
    if not low <= value <= MAX_COUNT:
        raise UsageError(f"{flag} must be a whole number from {low} to {MAX_COUNT:,}, not {value}")
    return value


def stored_id(value: int, what: str) -> int:
    """An id argument as SQLite can look it up: one beyond 64 bits names no row, which is
    what the user is told (exit 1), as for any other id that is not there."""
    from gligabao.store.errors import NotFound

    if not -MAX_ID - 1 <= value <= MAX_ID:
        raise NotFound(f"no {what} with id {value}")
    return value


def query_text(value: str | None, *, optional: bool, what: str = "query") -> str | None:
    """A QUERY argument: None when it may be left out and is; a blank one (empty, or only
    spaces) is a usage error for every method alike, rather than "no hits" by keywords
    and a failed embedding by meaning."""
    if value is None and optional:
        return None
    if value is None or not value.strip():
        leave_out = " (or leave it out to list them all)" if optional else ""
        raise UsageError(f"the {what} {value or ''!r} is empty: say what to look for{leave_out}")
    return value


def amount(flag: str, value: float | None) -> float | None:
    """A money or time option: a finite number >= 0 (not nan, not inf), else exit 2."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise UsageError(f"{flag} must be a finite number, 0 or more, not {value}")
    return value
