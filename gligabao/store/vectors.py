"""The sqlite-vec `vec0` tables: one set of four per dataset (SPEC S3, seed 000).

    table                     vector id                  metadata columns
    dataset-<id>-entities     entity-<entity id>         kind = 'entity'
    dataset-<id>-edges        edge-<edge id>             kind = 'edge'
    dataset-<id>-chunks       chunk-<chunk artifact id>  kind = 'chunk', artifact_id,
                                                         parent_id, index
    dataset-<id>-summaries    summary-<summary id>       kind = 'summary', artifact_id,
                                                         chunk_id, parent_id, index

Distances are cosine; vectors are float32. vec0 metadata columns cannot hold NULL, so
each table has only the columns that are always known for it; an entity or edge has
many source chunks (gb_entity_artifacts), so its provenance stays in the graph tables
rather than in metadata that forget() would have to keep rewriting. `index` is the
chunk's chunk_index: vec0 parses it unquoted in its declaration, and SQL must quote it.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import apsw

from gligabao.store.db import query, scalar, table_exists, transaction

__all__ = [
    "INDEXES",
    "Neighbor",
    "VecIndexStats",
    "VectorRow",
    "chunk_row",
    "delete_vectors",
    "drop_vector_tables",
    "edge_row",
    "ensure_vector_tables",
    "entity_row",
    "has_vector_tables",
    "has_vectors",
    "knn",
    "parse_vector_id",
    "summary_row",
    "table_name",
    "to_blob",
    "upsert_vectors",
    "vec_stats",
    "vector_id",
]

INDEXES = ("entities", "edges", "chunks", "summaries")

# Prefix of the vector ids, and the `kind` metadata value, of each index.
_PREFIX = {"entities": "entity", "edges": "edge", "chunks": "chunk", "summaries": "summary"}
_KIND = _PREFIX
_PREFIX_INDEX = {v: k for k, v in _PREFIX.items()}

# Metadata columns after `kind`, in declaration order.
_METADATA: dict[str, tuple[str, ...]] = {
    "entities": (),
    "edges": (),
    "chunks": ("artifact_id", "parent_id", "index"),
    "summaries": ("artifact_id", "chunk_id", "parent_id", "index"),
}


@dataclass(frozen=True)
class VectorRow:
    """One vector to write: its id, the embedding, and the index's metadata columns."""

    vector_id: str
    embedding: Sequence[float] | bytes
    metadata: Mapping[str, int] = field(default_factory=dict)


class Neighbor(NamedTuple):
    vector_id: str
    distance: float


@dataclass(frozen=True)
class VecIndexStats:
    """What a vector index holds against what it should hold (the seed's VectorStats).

    `pending` rows are not embedded yet on purpose (their document still has 'embed'
    in gb_artifacts.pending); `missing` ones should have a vector and have none;
    `orphans` are vectors whose row is gone. A healthy index has held == should - pending.
    """

    index: str
    table: str
    exists: bool
    held: int
    should: int
    pending: int
    missing: int
    orphans: int


def _check_index(index_name: str) -> None:
    # Table names cannot be bound as parameters, so only the four known names get in.
    if index_name not in INDEXES:
        raise ValueError(f"unknown vector index {index_name!r}; one of {', '.join(INDEXES)}")


def table_name(dataset_id: int, index_name: str) -> str:
    _check_index(index_name)
    return f"dataset-{int(dataset_id)}-{index_name}"


def _quoted(dataset_id: int, index_name: str) -> str:
    return '"' + table_name(dataset_id, index_name) + '"'


def vector_id(index_name: str, row_id: int) -> str:
    """`entity-3`, `edge-7`, `chunk-12` or `summary-13`."""
    _check_index(index_name)
    return f"{_PREFIX[index_name]}-{int(row_id)}"


def parse_vector_id(vid: str) -> tuple[str, int]:
    """`chunk-12` -> ('chunks', 12)."""
    prefix, _, number = vid.partition("-")
    if prefix not in _PREFIX_INDEX or not number.isdigit():
        raise ValueError(f"not a gligabao vector id: {vid!r}")
    return _PREFIX_INDEX[prefix], int(number)


def entity_row(entity_id: int, embedding: Sequence[float] | bytes) -> VectorRow:
    return VectorRow(vector_id("entities", entity_id), embedding)


def edge_row(edge_id: int, embedding: Sequence[float] | bytes) -> VectorRow:
    return VectorRow(vector_id("edges", edge_id), embedding)


def chunk_row(
    chunk_id: int, parent_id: int, index: int, embedding: Sequence[float] | bytes
) -> VectorRow:
    meta = {"artifact_id": chunk_id, "parent_id": parent_id, "index": index}
    return VectorRow(vector_id("chunks", chunk_id), embedding, meta)


def summary_row(
    summary_id: int,
    chunk_id: int,
    parent_id: int,
    index: int,
    embedding: Sequence[float] | bytes,
) -> VectorRow:
    meta = {"artifact_id": summary_id, "chunk_id": chunk_id, "parent_id": parent_id, "index": index}
    return VectorRow(vector_id("summaries", summary_id), embedding, meta)


def to_blob(embedding: Sequence[float] | bytes, dimensions: int | None = None) -> bytes:
    """float32 bytes as vec0 takes them; checks the dimension when it is given."""
    blob = bytes(embedding) if isinstance(embedding, bytes | bytearray | memoryview) else None
    if blob is None:
        blob = array("f", embedding).tobytes()
    if len(blob) % 4:
        raise ValueError("an embedding blob must be float32 (a multiple of 4 bytes)")
    if dimensions is not None and len(blob) // 4 != dimensions:
        raise ValueError(
            f"embedding has {len(blob) // 4} dimensions, the dataset's vectors have {dimensions}"
        )
    return blob


def _dimensions(conn: apsw.Connection, dataset_id: int) -> int | None:
    return scalar(conn, "SELECT embedding_dimensions FROM gb_datasets WHERE id = ?", (dataset_id,))


def ensure_vector_tables(conn: apsw.Connection, dataset_id: int, dimensions: int) -> None:
    """Create the dataset's four vec0 tables if they are not there yet."""
    if int(dimensions) <= 0:
        raise ValueError(f"embedding dimensions must be positive, not {dimensions}")
    with transaction(conn):
        for index_name in INDEXES:
            columns = ", ".join(
                [
                    "vector_id text primary key",
                    f"embedding float[{int(dimensions)}] distance_metric=cosine",
                    "kind text",
                    *(f"{c} integer" for c in _METADATA[index_name]),
                    # vec0 stores vectors in chunks; smaller ones make an insert ~10x
                    # cheaper (0.06 vs 0.6 ms at 1536 dimensions) and KNN no slower.
                    "chunk_size=128",
                ]
            )
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {_quoted(dataset_id, index_name)} "
                f"USING vec0({columns})"
            )


def drop_vector_tables(conn: apsw.Connection, dataset_id: int) -> None:
    with transaction(conn):
        for index_name in INDEXES:
            conn.execute(f"DROP TABLE IF EXISTS {_quoted(dataset_id, index_name)}")


def has_vector_tables(conn: apsw.Connection, dataset_id: int) -> bool:
    return table_exists(conn, table_name(dataset_id, "chunks"))


def has_vectors(
    conn: apsw.Connection, dataset_id: int, index_names: Sequence[str] = ("chunks", "summaries")
) -> bool:
    """Whether any of the dataset's `index_names` indexes holds at least one vector.

    One row is looked for, never counted: vec0 has no cheap count(*) (it reads the whole
    table, ~18 ms at 100,000 vectors), while its `<table>_rowids` shadow table, one row
    per vector, answers EXISTS from its first page (~0.01 ms). A vec0 build without that
    shadow table is asked for one row of the index itself.
    """
    for index_name in index_names:
        name = table_name(dataset_id, index_name)
        if not table_exists(conn, name):
            continue
        probe = name + "_rowids" if table_exists(conn, name + "_rowids") else name
        if scalar(conn, f'SELECT EXISTS (SELECT 1 FROM "{probe}" LIMIT 1)'):
            return True
    return False


def upsert_vectors(
    conn: apsw.Connection, dataset_id: int, index_name: str, rows: Iterable[VectorRow]
) -> int:
    """Write vectors, replacing any with the same id; returns how many were written.

    vec0 ignores INSERT OR REPLACE (a second insert fails on the primary key), so each id
    is deleted first, in the same savepoint as the insert.
    """
    _check_index(index_name)
    rows = list(rows)
    if not rows:
        return 0
    dims = _dimensions(conn, dataset_id)
    if dims is None or not has_vector_tables(conn, dataset_id):
        raise ValueError(
            f"dataset {dataset_id} has no embedding model yet; call set_embedding first"
        )
    meta_cols = _METADATA[index_name]
    names = ", ".join(["vector_id", "embedding", "kind", *(f'"{c}"' for c in meta_cols)])
    marks = ", ".join("?" * (3 + len(meta_cols)))
    table = _quoted(dataset_id, index_name)
    values = []
    for row in rows:
        prefix, _ = parse_vector_id(row.vector_id)
        if prefix != index_name:
            raise ValueError(f"vector id {row.vector_id!r} does not belong in {index_name}")
        if set(row.metadata) != set(meta_cols):
            raise ValueError(
                f"{index_name} vectors take metadata {sorted(meta_cols)}, "
                f"not {sorted(row.metadata)}"
            )
        blob = to_blob(row.embedding, dims)
        values.append(
            (row.vector_id, blob, _KIND[index_name], *(int(row.metadata[c]) for c in meta_cols))
        )
    with transaction(conn):
        conn.executemany(f"DELETE FROM {table} WHERE vector_id = ?", [(v[0],) for v in values])
        conn.executemany(f"INSERT INTO {table}({names}) VALUES ({marks})", values)
    return len(values)


def delete_vectors(
    conn: apsw.Connection, dataset_id: int, index_name: str, ids: Iterable[str]
) -> int:
    """Delete vectors by id; returns how many there were. No table: nothing to delete."""
    ids = list(ids)
    if not ids or not table_exists(conn, table_name(dataset_id, index_name)):
        return 0
    table = _quoted(dataset_id, index_name)
    with transaction(conn):
        # vec0 has no reliable changes() count, so count what is there first.
        params = (json.dumps(ids),)
        sub = "(SELECT value FROM json_each(?))"
        found = scalar(conn, f"SELECT count(*) FROM {table} WHERE vector_id IN {sub}", params)
        conn.execute(f"DELETE FROM {table} WHERE vector_id IN {sub}", params)
    return int(found)


def knn(
    conn: apsw.Connection,
    dataset_id: int,
    index_name: str,
    query_vector: Sequence[float] | bytes,
    k: int,
    *,
    where: Mapping[str, int | str] | None = None,
) -> list[Neighbor]:
    """The k nearest vectors by cosine distance, nearest first.

    `where` filters on metadata columns (e.g. {"parent_id": 3} for one document's
    chunks). A dataset without vector tables has no neighbours.
    """
    _check_index(index_name)
    if k <= 0 or not table_exists(conn, table_name(dataset_id, index_name)):
        return []
    allowed = ("kind", *_METADATA[index_name])
    clauses, params = "", [to_blob(query_vector, _dimensions(conn, dataset_id)), int(k)]
    for col, value in (where or {}).items():
        if col not in allowed:
            raise ValueError(f"{index_name} vectors have no metadata column {col!r}")
        clauses += f' AND "{col}" = ?'
        params.append(value)
    rows = query(
        conn,
        f"SELECT vector_id, distance FROM {_quoted(dataset_id, index_name)} "
        f"WHERE embedding MATCH ? AND k = ?{clauses} ORDER BY distance",
        params,
    )
    return [Neighbor(r["vector_id"], r["distance"]) for r in rows]


# Artifacts whose embedding is deferred: marked 'embed' in pending, or below one that is.
_PENDING = """
WITH RECURSIVE pend(id) AS (
    SELECT id FROM gb_artifacts
    WHERE dataset_id = :d AND instr(' ' || pending || ' ', ' embed ') > 0
    UNION SELECT a.id FROM gb_artifacts a JOIN pend ON a.parent_id = pend.id
)
"""

# Per index: the rows that should have a vector (`id`, and `pend` = 1 when deferred).
_SHOULD = {
    "entities": """SELECT e.id, EXISTS (SELECT 1 FROM gb_entity_artifacts l
                       WHERE l.entity_id = e.id AND l.artifact_id IN pend) AS pend
                   FROM gb_entities e WHERE e.dataset_id = :d""",
    "edges": """SELECT e.id, EXISTS (SELECT 1 FROM gb_edge_artifacts l
                    WHERE l.edge_id = e.id AND l.artifact_id IN pend) AS pend
                FROM gb_edges e WHERE e.dataset_id = :d""",
    "chunks": """SELECT a.id, a.id IN pend AS pend FROM gb_artifacts a
                 WHERE a.dataset_id = :d AND a.chunk_index IS NOT NULL""",
    "summaries": """SELECT a.id, a.id IN pend AS pend FROM gb_artifacts a
                    WHERE a.dataset_id = :d AND a.kind = 'chunk_summary'""",
}


def vec_stats(conn: apsw.Connection, dataset_id: int) -> list[VecIndexStats]:
    """For each of the dataset's four indexes, what it holds and should hold."""
    out = []
    for index_name in INDEXES:
        name = table_name(dataset_id, index_name)
        exists = table_exists(conn, name)
        prefix = _PREFIX[index_name] + "-"
        should_sql = f"{_PENDING}, should AS ({_SHOULD[index_name]})"
        if exists:
            table = _quoted(dataset_id, index_name)
            vids = f"(SELECT vector_id FROM {table})"
            sql = f"""{should_sql}
                SELECT (SELECT count(*) FROM {table}) AS held,
                       (SELECT count(*) FROM should) AS should,
                       (SELECT count(*) FROM should
                         WHERE pend AND :p || id NOT IN {vids}) AS pending,
                       (SELECT count(*) FROM should
                         WHERE NOT pend AND :p || id NOT IN {vids}) AS missing,
                       (SELECT count(*) FROM {table}
                         WHERE vector_id NOT IN (SELECT :p || id FROM should)) AS orphans"""
        else:
            sql = f"""{should_sql}
                SELECT 0 AS held, count(*) AS should, coalesce(sum(pend), 0) AS pending,
                       coalesce(sum(NOT pend), 0) AS missing, 0 AS orphans FROM should"""
        r = query(conn, sql, {"d": dataset_id, "p": prefix})[0]
        out.append(VecIndexStats(index=index_name, table=name, exists=exists, **r))
    return out
