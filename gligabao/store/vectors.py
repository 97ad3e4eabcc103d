"""The vector indexes, whichever database holds them: SQLite's sqlite-vec tables
(sqlite/vectors.py) or PostgreSQL's pgvector tables (postgres/vectors.py), picked by the
connection. What a vector is (ids, rows, the four indexes) is in vector_rows.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType

from gligabao.store.connection import Connection
from gligabao.store.sqlite import vectors as sqlite
from gligabao.store.vector_rows import (
    INDEXES,
    KNN_MAX,
    Neighbor,
    VectorRow,
    chunk_row,
    chunk_rows,
    edge_row,
    entity_row,
    parse_vector_id,
    summary_row,
    to_blob,
    vector_id,
)

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from gligabao.store.stats import VecIndexStats

__all__ = [
    "INDEXES",
    "KNN_MAX",
    "Neighbor",
    "VectorRow",
    "all_vectors",
    "artifact_vectors",
    "chunk_row",
    "chunk_rows",
    "delete_artifact_vectors",
    "delete_vectors",
    "drop_vector_tables",
    "edge_row",
    "ensure_vector_tables",
    "entity_row",
    "has_pieces",
    "has_vector_tables",
    "has_vectors",
    "knn",
    "parse_vector_id",
    "similarities",
    "summary_row",
    "to_blob",
    "upsert_vectors",
    "vec_stats",
    "vector_id",
]


def _of(conn: Connection) -> ModuleType:
    if conn.dialect == "postgresql":
        # Here: an SQLite store (every `gb search` on one) never imports it, ~1 ms.
        from gligabao.store.postgres import vectors as postgres

        return postgres
    return sqlite


def ensure_vector_tables(conn: Connection, dataset_id: int, dimensions: int) -> None:
    """Make the dataset's four indexes for vectors of `dimensions`, if not made yet."""
    _of(conn).ensure_vector_tables(conn, dataset_id, dimensions)


def drop_vector_tables(conn: Connection, dataset_id: int) -> None:
    _of(conn).drop_vector_tables(conn, dataset_id)


def has_vector_tables(conn: Connection, dataset_id: int) -> bool:
    return bool(_of(conn).has_vector_tables(conn, dataset_id))


def has_vectors(
    conn: Connection, dataset_id: int, index_names: Sequence[str] = ("chunks", "summaries")
) -> bool:
    """Whether any of these indexes of the dataset holds a vector."""
    return bool(_of(conn).has_vectors(conn, dataset_id, index_names))


def upsert_vectors(
    conn: Connection, dataset_id: int, index_name: str, rows: Iterable[VectorRow]
) -> int:
    """Write (or replace) these vectors; how many were written."""
    return int(_of(conn).upsert_vectors(conn, dataset_id, index_name, rows))


def delete_vectors(conn: Connection, dataset_id: int, index_name: str, ids: Iterable[str]) -> int:
    return int(_of(conn).delete_vectors(conn, dataset_id, index_name, ids))


def delete_artifact_vectors(
    conn: Connection, dataset_id: int, index_name: str, row_ids: Iterable[int]
) -> int:
    """Delete every vector of these rows (a chunk's pieces too); how many."""
    return int(_of(conn).delete_artifact_vectors(conn, dataset_id, index_name, row_ids))


def artifact_vectors(
    conn: Connection, dataset_id: int, index_name: str, row_id: int
) -> list[bytes]:
    """A row's vectors as float32 bytes, its pieces in order."""
    return list(_of(conn).artifact_vectors(conn, dataset_id, index_name, row_id))


def has_pieces(conn: Connection, dataset_id: int) -> bool:
    """Whether the dataset's chunks index holds a chunk embedded as several vectors."""
    return bool(_of(conn).has_pieces(conn, dataset_id))


def similarities(
    conn: Connection,
    dataset_id: int,
    index_name: str,
    query_vector: Sequence[float] | bytes,
    row_ids: Iterable[int],
) -> dict[int, float]:
    """The cosine similarity of each of these rows to the query (a chunk: its best piece)."""
    return dict(_of(conn).similarities(conn, dataset_id, index_name, query_vector, row_ids))


def knn(
    conn: Connection,
    dataset_id: int,
    index_name: str,
    query_vector: Sequence[float] | bytes,
    k: int,
    *,
    where: Mapping[str, int | str] | None = None,
    exact: bool = False,
) -> list[Neighbor]:
    """The k nearest vectors by cosine distance, nearest first; `where` filters on the
    index's metadata columns; `exact` scans every vector rather than an approximation."""
    return list(
        _of(conn).knn(conn, dataset_id, index_name, query_vector, k, where=where, exact=exact)
    )


def all_vectors(
    conn: Connection, dataset_id: int, index_name: str, after: str, limit: int
) -> list[VectorRow]:
    """An index's vectors with their metadata past vector id `after`, at most `limit`, by
    vector id (what gb copy moves, a page at a time)."""
    return list(_of(conn).all_vectors(conn, dataset_id, index_name, after, limit))


def vec_stats(conn: Connection, dataset_id: int) -> list[VecIndexStats]:
    return list(_of(conn).vec_stats(conn, dataset_id))
