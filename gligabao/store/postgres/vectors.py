"""pgvector tables: one per dataset and index, in gb's schema. The rest of the package
reaches this module as `store.vectors`; sqlite/vectors.py is its twin and says what each
function means.

    table                  vector id                  metadata columns
    gb_vec_<id>_entities   entity-<entity id>         kind = 'entity'
    gb_vec_<id>_edges      edge-<edge id>             kind = 'edge'
    gb_vec_<id>_chunks     chunk-<chunk id>[.<piece>] kind = 'chunk', artifact_id,
                                                      parent_id, "index"
    gb_vec_<id>_summaries  summary-<summary id>       kind = 'summary', artifact_id,
                                                      chunk_id, parent_id, "index"

`vector_id` sorts by byte (COLLATE "C"), so a chunk's pieces, `chunk-12.1`, ... lie in
one range of its primary key, between 'chunk-12.' and 'chunk-12/'. Distances are cosine
(`<=>`), vectors are float32 (`vector(dims)`).

Each table has an HNSW index for the approximate search: on the vectors themselves up
to 2,000 dimensions (pgvector's limit for `vector`), on their half-precision copies up
to 4,000 (`halfvec`'s), beyond that on their sign bits (`binary_quantize`, Hamming
distance). The last two are coarse steps: their candidates are re-ranked by the exact
cosine distance, so knn() always answers with true distances. parent_id has a btree
index: a search within one document's chunks (`where={"parent_id": d}`) reads those rows
only and ranks them exactly.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gligabao.store.connection import Connection
from gligabao.store.db import query, scalar, transaction, write
from gligabao.store.errors import EmbeddingMismatch
from gligabao.store.vector_rows import (
    INDEXES,
    KIND,
    METADATA,
    Neighbor,
    VectorRow,
    check_index,
    parse_vector_id,
    to_blob,
    vector_id,
)

if TYPE_CHECKING:
    from gligabao.store.stats import VecIndexStats

__all__ = [
    "artifact_vectors",
    "delete_artifact_vectors",
    "delete_vectors",
    "drop_vector_tables",
    "ensure_vector_tables",
    "has_pieces",
    "has_vector_tables",
    "has_vectors",
    "knn",
    "similarities",
    "table_name",
    "upsert_vectors",
    "vec_stats",
]

# pgvector's HNSW limits: `vector` up to 2,000 dimensions, `halfvec` up to 4,000.
FLOAT_MAX_DIMENSIONS = 2000
HALF_MAX_DIMENSIONS = 4000

# An index (or a filter's rows) of at most this many vectors is ranked exactly: a scan
# of 2,000 takes ~11 ms at 1,536 dimensions (~1 ms at 384), about what an HNSW search
# costs, and misses nothing.
EXACT_MAX_VECTORS = 2000

# HNSW looks at hnsw.ef_search candidates (and, without an iterative scan, returns no
# more: 40 by default). EF_FACTOR times what is asked for, at least EF_MIN: on clustered
# vectors recall@20 was 1.0 from ef_search 40 up, on random ones (the worst case: all
# distances alike) 0.38 at 40 and 0.58 at 100 (10,000 of 384 dimensions), for ~1 ms
# more. pgvector takes up to EF_MAX; a k that needs more is answered exactly.
EF_FACTOR = 2
EF_MIN = 100
EF_MAX = 1000

# The coarse steps ask for this many times k candidates, at least the floor, to re-rank
# (the bits lose most of the order, half precision little of it).
OVERSAMPLE = {"float": 1, "half": 2, "bits": 4}
OVERSAMPLE_MIN = {"float": 0, "half": 0, "bits": 400}

_SAVEPOINT = "gb_knn"


def table_name(dataset_id: int, index_name: str) -> str:
    check_index(index_name)
    return f"gb_vec_{int(dataset_id)}_{index_name}"


def _mode(dimensions: int) -> str:
    """Which HNSW index a table of these dimensions has: float, half or bits."""
    if dimensions <= FLOAT_MAX_DIMENSIONS:
        return "float"
    return "half" if dimensions <= HALF_MAX_DIMENSIONS else "bits"


def _ann(dimensions: int, operand: str) -> tuple[str, str]:
    """The HNSW index's expression of `operand` (a column, or a query vector already
    cast to `vector`) and its operator class."""
    d = int(dimensions)
    mode = _mode(d)
    if mode == "float":
        return operand, "vector_cosine_ops"
    if mode == "half":
        return f"({operand})::halfvec({d})", "halfvec_cosine_ops"
    return f"binary_quantize({operand})::bit({d})", "bit_hamming_ops"


def _distance(dimensions: int) -> str:
    """The operator of the HNSW index's distance: cosine, or Hamming over bits."""
    return "<~>" if _mode(dimensions) == "bits" else "<=>"


def _dimensions(conn: Connection, dataset_id: int) -> int | None:
    return scalar(conn, "SELECT embedding_dimensions FROM gb_datasets WHERE id = ?", (dataset_id,))


def _exists(conn: Connection, name: str) -> bool:
    return bool(scalar(conn, "SELECT to_regclass(?) IS NOT NULL", (name,)))


def _table_dimensions(conn: Connection, name: str) -> int | None:
    """The dimensions a table's `embedding` column was made with (vector(n): typmod n)."""
    return scalar(
        conn,
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(?) "
        "AND attname = 'embedding'",
        (name,),
    )


def _literal(embedding: Sequence[float] | bytes, dimensions: int | None) -> str:
    """A vector in pgvector's text form; 9 significant digits give back each float32."""
    values = array("f", to_blob(embedding, dimensions))
    return "[" + ",".join(f"{x:.9g}" for x in values) + "]"


def ensure_vector_tables(conn: Connection, dataset_id: int, dimensions: int) -> None:
    """Create the dataset's four tables and their indexes if they are not there yet.
    Tables made for other dimensions are EmbeddingMismatch: their vectors would not
    compare with the new ones."""
    d = int(dimensions)
    if d <= 0:
        raise ValueError(f"embedding dimensions must be positive, not {dimensions}")
    with transaction(conn):
        for index_name in INDEXES:
            name = table_name(dataset_id, index_name)
            held = _table_dimensions(conn, name)
            if held is not None:
                if held != d:
                    raise EmbeddingMismatch(
                        f"dataset {dataset_id} holds vectors of {held} dimensions in {name}, "
                        f"not {d}; set embeddings.dimensions back, or use another --dataset"
                    )
                continue
            meta = "".join(f', "{c}" BIGINT NOT NULL' for c in METADATA[index_name])
            conn.execute(
                f'CREATE TABLE {name} (vector_id TEXT COLLATE "C" PRIMARY KEY, '
                f'embedding vector({d}) NOT NULL, kind TEXT COLLATE "C" NOT NULL{meta})'
            )
            expression, opclass = _ann(d, "embedding")
            conn.execute(
                f"CREATE INDEX {name}_hnsw ON {name} USING hnsw (({expression}) {opclass})"
            )
            if "parent_id" in METADATA[index_name]:
                conn.execute(f"CREATE INDEX {name}_parent ON {name} (parent_id)")


def drop_vector_tables(conn: Connection, dataset_id: int) -> None:
    with transaction(conn):
        for index_name in INDEXES:
            conn.execute(f"DROP TABLE IF EXISTS {table_name(dataset_id, index_name)}")


def has_vector_tables(conn: Connection, dataset_id: int) -> bool:
    return _exists(conn, table_name(dataset_id, "chunks"))


def has_vectors(
    conn: Connection, dataset_id: int, index_names: Sequence[str] = ("chunks", "summaries")
) -> bool:
    for index_name in index_names:
        name = table_name(dataset_id, index_name)
        if _exists(conn, name) and scalar(conn, f"SELECT EXISTS (SELECT 1 FROM {name})"):
            return True
    return False


def upsert_vectors(
    conn: Connection, dataset_id: int, index_name: str, rows: Iterable[VectorRow]
) -> int:
    """Write vectors, replacing any with the same id; returns how many were written.
    Every row is checked before any is written."""
    check_index(index_name)
    rows = list(rows)
    if not rows:
        return 0
    dims = _dimensions(conn, dataset_id)
    if dims is None or not has_vector_tables(conn, dataset_id):
        raise ValueError(
            f"dataset {dataset_id} has no embedding model yet; call set_embedding first"
        )
    meta_cols = METADATA[index_name]
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
        values.append(
            (
                row.vector_id,
                _literal(row.embedding, dims),
                KIND[index_name],
                *(int(row.metadata[c]) for c in meta_cols),
            )
        )
    columns = ["vector_id", "embedding", "kind", *(f'"{c}"' for c in meta_cols)]
    marks = ", ".join(["?", "CAST(? AS vector)", *"?" * (1 + len(meta_cols))])
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in columns[1:])
    with transaction(conn):
        conn.executemany(
            f"INSERT INTO {table_name(dataset_id, index_name)}({', '.join(columns)}) "
            f"VALUES ({marks}) ON CONFLICT (vector_id) DO UPDATE SET {updates}",
            values,
        )
        if index_name == "chunks":
            _note_pieces(conn, dataset_id, (v[0] for v in values))
    return len(values)


def delete_vectors(conn: Connection, dataset_id: int, index_name: str, ids: Iterable[str]) -> int:
    """Delete vectors by id; returns how many there were. No table: nothing to delete."""
    ids = list(ids)
    name = table_name(dataset_id, index_name)
    if not ids or not _exists(conn, name):
        return 0
    return write(conn, f"DELETE FROM {name} WHERE vector_id = ANY(CAST(? AS text[]))", (ids,))


# The rows of a table whose vector id is one of the bases `b.id` or a piece of one: a
# primary-key lookup and a range scan each. A LATERAL subquery that cannot be pulled up
# (OFFSET 0), so that the plan stays one lookup a base: the planner guesses the range
# holds a ninth of the table, and as a join it scanned the whole table instead (2.6 s a
# search at 1,000,000 chunks, with 50 bases).
_OF_BASES = """FROM unnest(CAST(:bases AS text[])) AS b(id) CROSS JOIN LATERAL (
    SELECT * FROM {table} v WHERE v.vector_id = b.id COLLATE "C"
    OR (v.vector_id > (b.id || '.') COLLATE "C" AND v.vector_id < (b.id || '/') COLLATE "C")
    OFFSET 0
) AS t"""


def _bases(index_name: str, row_ids: Iterable[int]) -> list[str]:
    return [vector_id(index_name, r) for r in row_ids]


def _piece(vid: str) -> int:
    return int(vid.partition(".")[2] or 0)


def delete_artifact_vectors(
    conn: Connection, dataset_id: int, index_name: str, row_ids: Iterable[int]
) -> int:
    """Delete rows' vectors, every piece of a chunk with it; returns how many there were."""
    name = table_name(dataset_id, index_name)
    bases = _bases(index_name, row_ids)
    if not bases or not _exists(conn, name):
        return 0
    return write(
        conn,
        f"DELETE FROM {name} WHERE vector_id IN "
        f"(SELECT t.vector_id {_OF_BASES.format(table=name)})",
        {"bases": bases},
    )


def artifact_vectors(
    conn: Connection, dataset_id: int, index_name: str, row_id: int
) -> list[bytes]:
    """The float32 bytes of one row's vectors, pieces in order (none stored: [])."""
    name = table_name(dataset_id, index_name)
    if not _exists(conn, name):
        return []
    rows = query(
        conn,
        f"SELECT t.vector_id, CAST(t.embedding AS real[]) AS e {_OF_BASES.format(table=name)}",
        {"bases": _bases(index_name, [row_id])},
    )
    rows.sort(key=lambda r: _piece(r["vector_id"]))
    return [array("f", r["e"]).tobytes() for r in rows]


def has_pieces(conn: Connection, dataset_id: int) -> bool:
    """Whether any chunk of the dataset was embedded as pieces (`chunk-12.1`): as
    gb_datasets.chunk_pieces says, or, where that is not known yet, as the ids show."""
    known = scalar(conn, "SELECT chunk_pieces FROM gb_datasets WHERE id = ?", (dataset_id,))
    return bool(known) if known is not None else _probe_pieces(conn, dataset_id)


def _probe_pieces(conn: Connection, dataset_id: int) -> bool:
    name = table_name(dataset_id, "chunks")
    if not _exists(conn, name):
        return False
    return bool(
        scalar(conn, f"SELECT EXISTS (SELECT 1 FROM {name} WHERE strpos(vector_id, '.') > 0)")
    )


def _note_pieces(conn: Connection, dataset_id: int, ids: Iterable[str]) -> None:
    """Keep gb_datasets.chunk_pieces as SQLite's twin does: set once a piece is written,
    probed once for a dataset from before the column, never unset."""
    known = scalar(conn, "SELECT chunk_pieces FROM gb_datasets WHERE id = ?", (dataset_id,))
    if known == 1:
        return
    pieces = any("." in vid for vid in ids) or (known is None and _probe_pieces(conn, dataset_id))
    if known is None or pieces:
        write(
            conn,
            "UPDATE gb_datasets SET chunk_pieces = ? WHERE id = ?",
            (int(pieces), dataset_id),
        )


def _number(distance: Any) -> float | None:
    """A distance, or None where it is no number (a zero vector's cosine is NaN)."""
    if distance is None or math.isnan(distance):
        return None
    return float(distance)


def similarities(
    conn: Connection,
    dataset_id: int,
    index_name: str,
    query_vector: Sequence[float] | bytes,
    row_ids: Iterable[int],
) -> dict[int, float]:
    """The cosine similarity to `query_vector` of each row's nearest vector (a chunk's
    best piece), read by primary key."""
    name = table_name(dataset_id, index_name)
    bases = _bases(index_name, row_ids)
    if not bases or not _exists(conn, name):
        return {}
    q = _literal(query_vector, _dimensions(conn, dataset_id))
    rows = query(
        conn,
        f"SELECT t.vector_id, t.embedding <=> CAST(:q AS vector) AS distance "
        f"{_OF_BASES.format(table=name)}",
        {"q": q, "bases": bases},
    )
    out: dict[int, float] = {}
    for r in rows:
        distance = _number(r["distance"])
        if distance is not None:
            row_id = parse_vector_id(r["vector_id"])[1]
            out[row_id] = max(out.get(row_id, -1.0), 1.0 - distance)
    return out


@contextmanager
def _settings(conn: Connection, settings: Mapping[str, str]) -> Iterator[None]:
    """SET LOCAL these for the statements of the block, and for them only: in a
    transaction of its own, or in a savepoint of the caller's, rolled back after (a
    rollback undoes SET LOCAL; the block only reads)."""
    outer = conn.in_transaction
    conn.execute(f"SAVEPOINT {_SAVEPOINT}" if outer else "BEGIN READ ONLY")
    try:
        for name, value in settings.items():
            conn.execute(f"SET LOCAL {name} = {value}")
        yield
    finally:
        conn.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}" if outer else "ROLLBACK")
        if outer:
            conn.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")


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
    """The k nearest vectors by cosine distance, nearest first, with their true
    distances; `where` filters on metadata columns. A vector whose distance is no number
    (a zero vector) is no neighbour.

    The exact scan answers when asked (`exact`), when the index (or the rows `where`
    selects) holds at most EXACT_MAX_VECTORS, and when k needs more candidates than HNSW
    returns (hnsw.ef_search, at most EF_MAX). Otherwise the HNSW index, with ef_search
    EF_FACTOR times the candidates and an iterative scan, so that a filter that rejects
    most of what the graph visits still gets its k rows (pgvector filters after the
    index scan, and without it would return those of the first ef_search that pass).
    """
    check_index(index_name)
    name = table_name(dataset_id, index_name)
    if k <= 0 or not _exists(conn, name):
        return []
    dims = _dimensions(conn, dataset_id)
    assert dims is not None  # the tables are made with it
    allowed = ("kind", *METADATA[index_name])
    params: dict[str, Any] = {"q": _literal(query_vector, dims), "k": int(k)}
    clauses = ""
    for n, (col, value) in enumerate((where or {}).items()):
        if col not in allowed:
            raise ValueError(f"{index_name} vectors have no metadata column {col!r}")
        clauses += f' AND "{col}" = :w{n}'
        params[f"w{n}"] = value
    mode = _mode(dims)
    over = max(OVERSAMPLE[mode] * int(k), OVERSAMPLE_MIN[mode])
    ef = min(max(EF_FACTOR * over, EF_MIN), EF_MAX)
    use_ann = not exact and over <= EF_MAX and _larger_than(conn, name, clauses, params)
    q = "CAST(:q AS vector)"
    if not use_ann:
        sql = (
            f"SELECT vector_id, embedding <=> {q} AS distance FROM {name} "
            f"WHERE TRUE{clauses} ORDER BY distance LIMIT :k"
        )
        settings = {"enable_indexscan": "off"}  # the parent_id btree is read as a bitmap
    else:
        column, _ = _ann(dims, "embedding")
        probe, _ = _ann(dims, q)
        sql = (
            f"WITH coarse AS MATERIALIZED (SELECT vector_id, embedding FROM {name} "
            f"WHERE TRUE{clauses} ORDER BY {column} {_distance(dims)} {probe} LIMIT :over) "
            f"SELECT vector_id, embedding <=> {q} AS distance FROM coarse"
        )
        params["over"] = over
        settings = {
            "hnsw.ef_search": str(ef),
            "hnsw.iterative_scan": "relaxed_order",
            # The planner prices ef_search high and scans the table instead: at k = 300,
            # 20,000 vectors of 1,536 dimensions, ~120 ms against the index's ~16.
            "enable_seqscan": "off",
        }
    with _settings(conn, settings):
        rows = query(conn, sql, params)
    found = [Neighbor(r["vector_id"], d) for r in rows if (d := _number(r["distance"])) is not None]
    found.sort(key=lambda n: n.distance)  # relaxed_order and re-ranking: sort here
    return found[: int(k)]


def _larger_than(conn: Connection, name: str, clauses: str, params: Mapping[str, Any]) -> bool:
    """Whether more than EXACT_MAX_VECTORS rows pass the filter: counted up to one past
    it, never further (the parent_id index, or the heap's first pages)."""
    return bool(
        scalar(
            conn,
            f"SELECT count(*) > :most FROM (SELECT 1 FROM {name} WHERE TRUE{clauses} "
            "LIMIT :most + 1) s",
            {**params, "most": EXACT_MAX_VECTORS},
        )
    )


def vec_stats(conn: Connection, dataset_id: int) -> list[VecIndexStats]:
    """For each of the dataset's four indexes, what it holds and should hold."""
    from gligabao.store.stats import vec_index_stats

    out = []
    for index_name in INDEXES:
        name = table_name(dataset_id, index_name)
        # Each vector's row id: `12` of a chunk's piece `chunk-12.3` too.
        owned = (
            "SELECT CAST(split_part(substr(vector_id, length(:p) + 1), '.', 1) AS BIGINT) "
            f"AS oid FROM {name}"
            if _exists(conn, name)
            else None
        )
        out.append(vec_index_stats(conn, dataset_id, index_name, name, owned))
    return out


def all_vectors(
    conn: Connection, dataset_id: int, index_name: str, after: str, limit: int
) -> list[VectorRow]:
    """An index's vectors with their metadata past vector id `after`, at most `limit`, by
    vector id (gb copy reads an index so, a page at a time)."""
    name = table_name(dataset_id, index_name)
    if not _exists(conn, name):
        return []
    columns = METADATA[index_name]
    named = "".join(f', "{c}"' for c in columns)
    rows = query(
        conn,
        f"SELECT vector_id, CAST(embedding AS real[]) AS e{named} FROM {name} "
        "WHERE vector_id > ? ORDER BY vector_id LIMIT ?",
        (after, limit),
    )
    return [
        VectorRow(r["vector_id"], array("f", r["e"]).tobytes(), {c: r[c] for c in columns})
        for r in rows
    ]
