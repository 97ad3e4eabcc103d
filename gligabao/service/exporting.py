"""The graph of a dataset written out (gb export): to a stream, to a file replaced only
once written whole, or to a folder of CSV files; never over the database itself."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from gligabao.errors import UsageError
from gligabao.graph.export import Graph, atomic_file, export

if TYPE_CHECKING:
    from gligabao.store import Connection
    from gligabao.store.datasets import Dataset

__all__ = ["export_graph"]


def export_graph(
    conn: Connection,
    dataset: Dataset,
    fmt: str,
    *,
    at: str | None,
    output: Path | None,
    stream: TextIO,
    database: Path,
) -> Graph:
    """Write the graph in `fmt` to `output` (a file, or for csv a folder), else `stream`."""
    if output is None:
        return export(conn, dataset, fmt, stream, at)
    _not_the_database(output, fmt, database)
    if fmt == "csv":
        return export(conn, dataset, fmt, output, at)
    with atomic_file(output) as out:
        return export(conn, dataset, fmt, out, at)


def _not_the_database(output: Path, fmt: str, database: Path) -> None:
    """Refuse an output that would replace the database (or its WAL files) with the export."""
    targets = [output / "entities.csv", output / "facts.csv"] if fmt == "csv" else [output]
    guarded = [database, Path(f"{database}-wal"), Path(f"{database}-shm")]
    for target in targets:
        for path in guarded:
            if target.exists() and path.exists() and os.path.samefile(target, path):
                raise UsageError(f"-o {output} is the database itself; name another file")
