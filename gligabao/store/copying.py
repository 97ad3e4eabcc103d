"""A whole memory copied from one store to another (SQLite to PostgreSQL and back):
documents, chunks, summaries, the graph with every temporal field and its evidence, the
record of LLM calls (so nothing is paid again), the learnt search settings, the keyword
index and the vectors. Rows keep their ids, so what a user noted (`gb why 12`) names the
same thing in the copy.

Only into a store that holds nothing yet, or one this copy already began: each row is
written once (ON CONFLICT DO NOTHING), so a copy cut short goes on where it stopped.
References that point forward (a document superseded by a later one, a fact closed by a
later fact, a call and the document it served) are written once every row is in.

One dataset into a store that holds others is dataset_copy.py's: there rows get new ids.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from gligabao.store import dialect, fts, vectors
from gligabao.store.connection import Connection
from gligabao.store.db import now_iso, query, query_one, scalar, transaction
from gligabao.store.errors import DatabaseError
from gligabao.store.vector_rows import INDEXES

__all__ = [
    "BATCH",
    "UNKNOWN",
    "CopyReport",
    "NotEmpty",
    "Progress",
    "batches",
    "copy_store",
    "same_store",
    "table_columns",
]

BATCH = 500  # rows a read and a transaction: a copy never holds more, nor loses more if cut short

# Each table in an order that writes every row after the rows it points back to; the
# columns set to NULL at first are the references forward, written at the end.
_TABLES: Sequence[tuple[str, tuple[str, ...], tuple[str, ...]]] = (
    ("gb_datasets", ("id",), ()),
    ("gb_models", ("id",), ()),
    ("gb_inferences", ("id",), ("document_id",)),
    ("gb_artifacts", ("id",), ("superseded_by",)),
    ("gb_entities", ("id",), ()),
    ("gb_edges", ("id",), ("invalidated_by_edge_id",)),
    ("gb_entity_artifacts", ("entity_id", "artifact_id"), ()),
    ("gb_edge_artifacts", ("edge_id", "artifact_id"), ()),
    ("gb_session_entities", ("dataset_id", "session_id", "entity_id"), ()),
    ("gb_session_edges", ("dataset_id", "session_id", "edge_id"), ()),
    ("gb_claims", ("dataset_id", "content_sha256"), ()),
    ("gb_merges", ("id",), ()),
    ("gb_merge_edges", ("merge_id", "edge_id"), ()),
    ("gb_kept_apart", ("entity_id", "other_id"), ()),
)
_WITH_IDS = (
    "gb_datasets",
    "gb_models",
    "gb_inferences",
    "gb_artifacts",
    "gb_entities",
    "gb_edges",
    "gb_merges",
)


class NotEmpty(DatabaseError):
    """The destination holds a memory already, not one this copy began."""


@dataclass
class CopyReport:
    source: str
    destination: str
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows in the destination
    keyword_rows: int = 0
    vectors: int = 0
    resumed: bool = False
    dataset: str | None = None  # one dataset copied (dataset_copy.py): its name there
    into: str | None = None  # ...and the new dataset it became here


Progress = Callable[[str, int, int], None]  # (what, done, total or UNKNOWN)
UNKNOWN = -1  # a total not counted: an index is read a page at a time, never counted


def copy_store(
    source: Connection,
    destination: Connection,
    *,
    source_name: str,
    on_progress: Progress | None = None,
) -> CopyReport:
    """Copy everything `source` holds into `destination` (see the module's docstring).
    NotEmpty, before anything is written, when the destination holds anything but a copy
    of `source_name` that was cut short."""
    progress = on_progress or (lambda what, done, total: None)
    resumed = _begin(destination, source_name)
    report = CopyReport(source_name, destination.path, resumed=resumed)
    for table, key, later in _TABLES:
        report.rows[table] = _copy_table(source, destination, table, key, later, progress)
    for table, _, later in _TABLES:
        for column in later:
            _point_forward(source, destination, table, column, progress)
    for table in _WITH_IDS:
        follow = dialect.of(destination).ids_given(table)
        if follow is not None:
            with transaction(destination):
                destination.execute(follow)
    report.keyword_rows = _copy_keywords(source, destination, progress)
    report.vectors = _copy_vectors(source, destination, progress)
    with transaction(destination):
        destination.execute(
            "UPDATE gb_copies SET finished_at = ? WHERE source = ?", (now_iso(), source_name)
        )
    return report


def _begin(destination: Connection, source_name: str) -> bool:
    """Mark the copy begun; whether it goes on from an earlier one cut short."""
    with transaction(destination):
        earlier = query_one(destination, "SELECT * FROM gb_copies WHERE source = ?", (source_name,))
        if earlier is not None and earlier["finished_at"] is None:
            return True
        if earlier is not None:
            raise NotEmpty(
                f"{destination.path} holds a whole copy of {source_name} already "
                f"(made {earlier['finished_at']}); copy into an empty database"
            )
        held = scalar(
            destination,
            """SELECT (SELECT count(*) FROM gb_datasets) + (SELECT count(*) FROM gb_artifacts)
                      + (SELECT count(*) FROM gb_inferences)""",
        )
        if held:
            raise NotEmpty(
                f"{destination.path} holds a memory already; copy into an empty database "
                "(or another --schema)"
            )
        destination.execute(
            "INSERT INTO gb_copies(source, started_at) VALUES (?, ?)", (source_name, now_iso())
        )
    return False


def table_columns(conn: Connection, table: str) -> list[str]:
    """The table's columns, in the order the store names them (the same on both)."""
    row = query(conn, f"SELECT * FROM {table} LIMIT 1")
    return list(row[0]) if row else []


def batches(
    conn: Connection,
    table: str,
    key: Sequence[str],
    where: str = "TRUE",
    params: Sequence[Any] = (),
) -> Iterator[list[dict[str, Any]]]:
    """The table's rows (those `where` holds for, with `params`) in key order, BATCH at a
    time, each batch read on its own (a copy of millions of rows never holds them all)."""
    order = ", ".join(key)
    after: tuple[Any, ...] | None = None
    while True:
        if after is None:
            rows = query(
                conn,
                f"SELECT * FROM {table} WHERE ({where}) ORDER BY {order} LIMIT {BATCH}",
                params,
            )
        else:
            # Past the last key read: (a, b) > (x, y), which both databases compare.
            marks = ", ".join("?" for _ in key)
            rows = query(
                conn,
                f"SELECT * FROM {table} WHERE ({where}) AND ({order}) > ({marks}) "
                f"ORDER BY {order} LIMIT {BATCH}",
                (*params, *after),
            )
        if not rows:
            return
        yield rows
        after = tuple(rows[-1][k] for k in key)


def _copy_table(
    source: Connection,
    destination: Connection,
    table: str,
    key: Sequence[str],
    later: Sequence[str],
    progress: Progress,
) -> int:
    total = int(scalar(source, f"SELECT count(*) FROM {table}"))
    columns = table_columns(source, table)
    if not columns:
        return 0
    names = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" for _ in columns)
    sql = f"INSERT INTO {table}({names}) VALUES ({marks}) ON CONFLICT DO NOTHING"
    done = 0
    for rows in batches(source, table, key):
        with transaction(destination):
            destination.executemany(
                sql,
                [[None if c in later else row[c] for c in columns] for row in rows],
            )
        done += len(rows)
        progress(table, done, total)
    return done


def _point_forward(
    source: Connection, destination: Connection, table: str, column: str, progress: Progress
) -> None:
    rows = query(source, f"SELECT id, {column} FROM {table} WHERE {column} IS NOT NULL")
    for start in range(0, len(rows), BATCH):
        with transaction(destination):
            destination.executemany(
                f"UPDATE {table} SET {column} = ? WHERE id = ?",
                [(r[column], r["id"]) for r in rows[start : start + BATCH]],
            )
    progress(f"{table}.{column}", len(rows), len(rows))


def _copy_keywords(source: Connection, destination: Connection, progress: Progress) -> int:
    """The artifacts' keyword index, written again from its texts (the entities' and
    facts' follow their rows by themselves)."""
    done, after = 0, 0
    while rows := fts.artifact_rows(source, after, BATCH):
        with transaction(destination):
            for row in rows:
                fts.index_artifact_text(
                    destination, row["id"], row["text"], row["kind"], row["dataset_id"]
                )
        done, after = done + len(rows), rows[-1]["id"]
        progress("keyword index", done, UNKNOWN)
    return done


def _copy_vectors(source: Connection, destination: Connection, progress: Progress) -> int:
    copied = 0
    sets = query(
        source,
        "SELECT id, embedding_dimensions FROM gb_datasets "
        "WHERE embedding_dimensions IS NOT NULL ORDER BY id",
    )
    for dataset in sets:
        vectors.ensure_vector_tables(destination, dataset["id"], dataset["embedding_dimensions"])
        for index in INDEXES:
            after = ""
            while rows := vectors.all_vectors(source, dataset["id"], index, after, BATCH):
                with transaction(destination):
                    vectors.upsert_vectors(destination, dataset["id"], index, rows)
                copied, after = copied + len(rows), rows[-1].vector_id
                progress(f"{index} vectors", copied, UNKNOWN)
    return copied


def same_store(source: str, destination: str) -> bool:
    """Whether two names are one store: the same file, or the same URL."""
    if "://" in source or "://" in destination:
        return source == destination
    try:
        return os.path.samefile(source, destination)
    except OSError:
        return os.path.abspath(source) == os.path.abspath(destination)
