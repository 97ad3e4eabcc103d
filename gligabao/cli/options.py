"""Options that several commands share, declared once so they read the same everywhere."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

ConfigPath = Annotated[
    Optional[str],  # noqa: UP045 - typer reads the annotation at run time on 3.10 too
    typer.Option(
        "--config",
        metavar="PATH",
        help="Config file (else GB_CONFIG, ./gligabao.toml, user config).",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON, one object per line.")]
AllBranches = Annotated[
    bool,
    typer.Option(
        "--all-branches",
        help="A chat export: also each other branch of a conversation (a regenerated "
        "answer), not only the path to its current message; shared messages once.",
    ),
]
ChunkSize = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--chunk-size",
        metavar="TOKENS",
        help="Largest chunk in tokens, overlap included (32..8000).",
    ),
]
Overlap = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--overlap", metavar="PERCENT", help="Overlap as a percentage of the chunk size (0..50)."
    ),
]
Mode = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--mode",
        metavar="MODE",
        help="How to cut: auto (by file extension; a PDF, HTML page or chat export by its "
        "reader), text, markdown, code, chat (a chat export, in windows of messages).",
    ),
]
TokenizerSpec = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--tokenizer",
        metavar="NAME",
        help="estimator (default) or tiktoken:ENCODING, e.g. tiktoken:o200k_base.",
    ),
]
Paths = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Argument(metavar="[PATH|-]...", help="Files to read; - reads standard input."),
]
Db = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--db",
        metavar="PATH|URL",
        help=(
            "The SQLite file, or a postgresql:// URL (else GB_DB, config `database`, "
            "./gligabao.db)."
        ),
    ),
]
Schema = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--schema",
        metavar="NAME",
        help="The PostgreSQL schema of a postgresql:// --db (default: gligabao).",
    ),
]
Dataset = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--dataset",
        metavar="NAME",
        help="Namespace of documents, graph and vectors (default: default).",
    ),
]
DatasetFilter = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--dataset",
        metavar="NAME",
        help="Only this dataset (else GB_DATASET or config `dataset`; default: every dataset).",
    ),
]
SessionFilter = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--session", metavar="ID", help="Only what was remembered with --session ID."),
]
Concurrency = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option("--concurrency", metavar="N", help="LLM requests in flight at once (default 8)."),
]
Trace = Annotated[
    bool, typer.Option("--trace", help="Add the trajectory: every step, chunk by chunk.")
]
StageValues = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        metavar="STAGE=VALUE",
        help="STAGE=VALUE, repeatable; stages: extract_graph, summarize_chunk, "
        "resolve, contextualize_chunk, default.",
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
