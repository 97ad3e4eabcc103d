"""The sqlite-vec `vec0` tables: one set of four per dataset. The
rest of the package reaches this module as `store.vectors`.

    table                     vector id                  metadata columns
    dataset-<id>-entities     entity-<entity id>         kind = 'entity'
    dataset-<id>-edges        edge-<edge id>             kind = 'edge'
    dataset-<id>-chunks       chunk-<chunk artifact id>  kind = 'chunk', artifact_id,
                              [.<piece>]                 parent_id, index
    dataset-<id>-summaries    summary-<summary id>       kind = 'summary', artifact_id,
                                                         chunk_id, parent_id, index

Distances are cosine; vectors are float32. vec0 metadata columns cannot hold NULL, so
each table has only the columns that are always known for it; an entity or edge has
many source chunks (gb_entity_artifacts), so its provenance stays in the graph tables
rather than in metadata that forget() would have to keep rewriting. `index` is the
chunk's chunk_index: vec0 parses it unquoted in its declaration, and SQL must quote it.

The chunks index holds one vector per piece of a chunk: a chunk larger than the
embedding model reads (`embeddings.max_tokens`) is embedded as pieces, and each piece is
its own vector, `chunk-12`, `chunk-12.1`, `chunk-12.2`, all with the chunk's metadata, so
a search finds the chunk by its best piece. A document too short to be chunked has its
own vector there too, `chunk-<document id>`, with artifact_id = parent_id = its id and
index 0.

Each index has a companion, `dataset-<id>-<index>-bits`: the same vectors, sign-quantized
to one bit a dimension (vec_quantize_binary), with the same vector ids and metadata. It is
an accelerator, not an index: an exact cosine scan of 100,000 vectors of 1,536 dimensions
takes ~220 ms (this sqlite-vec build has no SIMD), while a Hamming scan of the bits (32
times less to read, popcount instead of float math) picks a few hundred candidates that
are then ranked by their exact cosine distance, in ~50 ms. knn() answers as before, with
the true distances, unless asked for the exact scan (`search.exact`); vec_stats() and
has_vectors() see only the four float indexes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from gligabao.store.connection import Connection
from gligabao.store.db import query, scalar, transaction, write
from gligabao.store.sqlite.connect import table_exists
from gligabao.store.vector_rows import (
    INDEXES,
    KIND,
    KNN_MAX,
    METADATA,
    Neighbor,
    VectorRow,
    check_index,
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
    "QUANTIZED",
    "Neighbor",
    "VectorRow",
    "artifact_vectors",
    "bits_table_name",
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
    "table_name",
    "to_blob",
    "upsert_vectors",
    "vec_stats",
    "vector_id",
]

# The indexes with a binary-quantized companion table (see the module docstring): all four.
QUANTIZED = INDEXES

# At most this many vectors are exactly scanned instead of quantized: 2,000 of 1,536
# dimensions take ~5 ms exactly, about what the coarse step's Hamming scan and the
# rescoring of its candidates cost, so below it the quantized search would save nothing
# and answer only nearly exactly.
QUANTIZED_MIN_VECTORS = 2000
# ...and at most this many times the candidates it would rescore: rescoring 400 of 3,000
# vectors cost more than scanning all 3,000 (11 vs 9 ms at 1,536 dimensions).
QUANTIZED_RATIO = 20

# The coarse step asks for OVERSAMPLE * k candidates, at least OVERSAMPLE_MIN, to rescore.
# Chosen by recall on real embeddings (all-MiniLM-L6-v2, 20,000 sentences, 200 queries;
# the table is in bench/graph_bench.py's docstring): the true nearest few are found among
# the nearest few hundred by Hamming distance whatever k is, so the floor keeps recall@20
# at 0.997, while 4 * k keeps recall@k above 0.95 for the pools facts() ranks. At k = 200
# and 100,000 facts of 1,536 dimensions knn() takes ~68 ms of CPU with 800 candidates,
# ~109 with 8 * k = 1,600, ~280 by the exact scan.
OVERSAMPLE = 4
OVERSAMPLE_MIN = 400

# vec0 stores vectors in chunks, and a vector read or written by its key (a candidate
# rescored, an insert) is reached by walking its chunk's blob page by page: 32 vectors
# of 1,536 dimensions are 48 pages. 128 (192 pages) made rescoring 400 candidates ~1.6x
# as long on a cold cache (11 vs 7 ms), the vector half of a search at 100,000 chunks
# 45 ms against 40, and an insert 1.4x as long; vec0's default 1,024, ten times as
# long. The exact scan is no slower. Tables made before keep the size they were made with.
_FLOAT_CHUNK_SIZE = 32

# vec0's top-k step grows with min(k, chunk_size); a bits chunk of 32 vectors is 6 KiB at
# 1,536 dimensions, so small chunks cost the scan nothing and keep that step cheap.
_BITS_CHUNK_SIZE = 32


def table_name(dataset_id: int, index_name: str) -> str:
    check_index(index_name)
    return f"dataset-{int(dataset_id)}-{index_name}"


def _quoted(dataset_id: int, index_name: str) -> str:
    return '"' + table_name(dataset_id, index_name) + '"'


def bits_table_name(dataset_id: int, index_name: str) -> str:
    """`dataset-<id>-edges-bits`: the quantized companion of a QUANTIZED index."""
    if index_name not in QUANTIZED:
        raise ValueError(f"the {index_name} index has no quantized companion")
    return table_name(dataset_id, index_name) + "-bits"


def _dimensions(conn: Connection, dataset_id: int) -> int | None:
    return scalar(conn, "SELECT embedding_dimensions FROM gb_datasets WHERE id = ?", (dataset_id,))


def ensure_vector_tables(conn: Connection, dataset_id: int, dimensions: int) -> None:
    """Create the dataset's four vec0 tables if they are not there yet, and the quantized
    companions of the QUANTIZED ones, filled from their float table where they lack rows
    (a database made before they existed)."""
    if int(dimensions) <= 0:
        raise ValueError(f"embedding dimensions must be positive, not {dimensions}")
    with transaction(conn):
        for index_name in INDEXES:
            columns = ", ".join(
                [
                    "vector_id text primary key",
                    f"embedding float[{int(dimensions)}] distance_metric=cosine",
                    "kind text",
                    *(f"{c} integer" for c in METADATA[index_name]),
                    f"chunk_size={_FLOAT_CHUNK_SIZE}",
                ]
            )
            conn.execute(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {_quoted(dataset_id, index_name)} "
                f"USING vec0({columns})"
            )
        # vec0 packs bits by bytes: a dimension count that is no multiple of 8 (none that
        # an embedding model makes, only a test's) gets no bits tables, and the exact scan.
        for index_name in QUANTIZED if int(dimensions) % 8 == 0 else ():
            columns = ", ".join(
                [
                    "vector_id text primary key",
                    f"embedding bit[{int(dimensions)}]",
                    "kind text",
                    *(f"{c} integer" for c in METADATA[index_name]),
                    f"chunk_size={_BITS_CHUNK_SIZE}",
                ]
            )
            conn.execute(
                f'CREATE VIRTUAL TABLE IF NOT EXISTS "{bits_table_name(dataset_id, index_name)}" '
                f"USING vec0({columns})"
            )
            _sync_bits(conn, dataset_id, index_name)


def _ids_of(conn: Connection, name: str) -> tuple[str, str]:
    """Where a vec0 table's vector ids are read cheaply: its `_rowids` shadow table (one
    row per vector, a plain table with a unique index on `id`), or the table itself in a
    vec0 build without it. Returns (quoted table, id column)."""
    if table_exists(conn, name + "_rowids"):
        return f'"{name}_rowids"', "id"
    return f'"{name}"', "vector_id"


def _sync_bits(conn: Connection, dataset_id: int, index_name: str) -> None:
    """Bring a bits table in step with its float table: quantize the vectors it lacks,
    delete those the float table no longer has.

    upsert_vectors and delete_vectors keep the two in step, so this only finds work in a
    database from before the bits tables (all rows lack) or one written since by an older
    gb (which writes the float table alone). Equal counts are taken as in step: counting
    reads one index (~1 ms at 100,000 vectors), where comparing the ids costs ~50 ms, on
    every `gb remember` of a document. An older gb that both added and deleted as many
    vectors is the one drift this misses: the ones it added stay out of the quantized
    search (an index below QUANTIZED_MIN_VECTORS still finds them) until a count differs.
    """
    name, bits = table_name(dataset_id, index_name), bits_table_name(dataset_id, index_name)
    (src, src_id), (dst, dst_id) = _ids_of(conn, name), _ids_of(conn, bits)
    held = scalar(conn, f"SELECT count(*) FROM {src}")
    if held == scalar(conn, f"SELECT count(*) FROM {dst}"):
        return
    cols = ", ".join(["vector_id", "embedding", "kind", *(f'"{c}"' for c in METADATA[index_name])])
    rest = cols.removeprefix("vector_id, embedding")
    fill = (
        f'INSERT INTO "{bits}"({cols}) '
        f'SELECT vector_id, vec_quantize_binary(embedding){rest} FROM "{name}"'
    )
    if not scalar(conn, f"SELECT EXISTS (SELECT 1 FROM {dst})"):
        conn.execute(fill)  # a new bits table: one scan of the float table fills it
        return
    lacking = query(conn, f"SELECT {src_id} AS v FROM {src} EXCEPT SELECT {dst_id} FROM {dst}")
    stale = query(conn, f"SELECT {dst_id} AS v FROM {dst} EXCEPT SELECT {src_id} FROM {src}")
    conn.executemany(f'DELETE FROM "{bits}" WHERE vector_id = ?', [(r["v"],) for r in stale])
    # vec0 answers `vector_id = ?` by its primary key: one vector read each.
    conn.executemany(fill + " WHERE vector_id = ?", [(r["v"],) for r in lacking])


def drop_vector_tables(conn: Connection, dataset_id: int) -> None:
    with transaction(conn):
        for index_name in INDEXES:
            conn.execute(f"DROP TABLE IF EXISTS {_quoted(dataset_id, index_name)}")
        for index_name in QUANTIZED:
            conn.execute(f'DROP TABLE IF EXISTS "{bits_table_name(dataset_id, index_name)}"')


def has_vector_tables(conn: Connection, dataset_id: int) -> bool:
    return table_exists(conn, table_name(dataset_id, "chunks"))


def has_vectors(
    conn: Connection, dataset_id: int, index_names: Sequence[str] = ("chunks", "summaries")
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
    conn: Connection, dataset_id: int, index_name: str, rows: Iterable[VectorRow]
) -> int:
    """Write vectors, replacing any with the same id; returns how many were written.

    vec0 ignores INSERT OR REPLACE (a second insert fails on the primary key), so each id
    is deleted first, in the same savepoint as the insert. A QUANTIZED index's bits table,
    where there is one, is written in the same savepoint, from the same float32 blobs.
    """
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
            (row.vector_id, blob, KIND[index_name], *(int(row.metadata[c]) for c in meta_cols))
        )
    targets = [(table, marks)]
    if index_name in QUANTIZED and table_exists(conn, bits_table_name(dataset_id, index_name)):
        bits_marks = ", ".join(["?", "vec_quantize_binary(?)", *"?" * (1 + len(meta_cols))])
        targets.append((f'"{bits_table_name(dataset_id, index_name)}"', bits_marks))
    with transaction(conn):
        for target, target_marks in targets:
            conn.executemany(f"DELETE FROM {target} WHERE vector_id = ?", [(v[0],) for v in values])
            conn.executemany(f"INSERT INTO {target}({names}) VALUES ({target_marks})", values)
        if index_name == "chunks":
            _note_pieces(conn, dataset_id, (v[0] for v in values))
    return len(values)


def delete_vectors(conn: Connection, dataset_id: int, index_name: str, ids: Iterable[str]) -> int:
    """Delete vectors by id, from the bits table too; returns how many there were (in the
    float index). No table: nothing to delete."""
    ids = list(ids)
    if not ids or not table_exists(conn, table_name(dataset_id, index_name)):
        return 0
    table = _quoted(dataset_id, index_name)
    targets = [table]
    if index_name in QUANTIZED and table_exists(conn, bits_table_name(dataset_id, index_name)):
        targets.append(f'"{bits_table_name(dataset_id, index_name)}"')
    with transaction(conn):
        # vec0 has no reliable changes() count, so count what is there first.
        params = (json.dumps(ids),)
        sub = "(SELECT value FROM json_each(?))"
        found = scalar(conn, f"SELECT count(*) FROM {table} WHERE vector_id IN {sub}", params)
        for target in targets:
            conn.execute(f"DELETE FROM {target} WHERE vector_id IN {sub}", params)
    return int(found)


def _piece_ids(conn: Connection, dataset_id: int, index_name: str, row_id: int) -> list[str]:
    """The vector ids of one row: `chunk-12` and its pieces `chunk-12.1`, ... in order.
    Read by a range of the ids' index (`_rowids`: '/' follows '.'), never a scan."""
    table, column = _ids_of(conn, table_name(dataset_id, index_name))
    base = vector_id(index_name, row_id)
    found = query(
        conn,
        f"SELECT {column} AS v FROM {table} WHERE {column} = ? OR ({column} > ? AND {column} < ?)",
        (base, base + ".", base + "/"),
    )
    return sorted((r["v"] for r in found), key=lambda v: int(v.partition(".")[2] or 0))


def has_pieces(conn: Connection, dataset_id: int) -> bool:
    """Whether any chunk of the dataset was embedded as pieces (`chunk-12.1`): as
    gb_datasets.chunk_pieces says, or, where that is not known yet, as the ids show."""
    known = scalar(conn, "SELECT chunk_pieces FROM gb_datasets WHERE id = ?", (dataset_id,))
    return bool(known) if known is not None else _probe_pieces(conn, dataset_id)


def _probe_pieces(conn: Connection, dataset_id: int) -> bool:
    """Whether the chunks index holds a piece id. Stops at the first; without any it
    reads the ids' index whole (~4 ms at 100,000)."""
    if not table_exists(conn, table_name(dataset_id, "chunks")):
        return False
    table, column = _ids_of(conn, table_name(dataset_id, "chunks"))
    return bool(scalar(conn, f"SELECT EXISTS (SELECT 1 FROM {table} WHERE {column} GLOB '*.*')"))


def _note_pieces(conn: Connection, dataset_id: int, ids: Iterable[str]) -> None:
    """Keep gb_datasets.chunk_pieces true after chunk vectors `ids` were written: set once
    a piece is, and probed once for a dataset from before it. Never unset: a dataset
    whose pieces were all forgotten asks the KNN for more vectors than it needs, no worse."""
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


def similarities(
    conn: Connection,
    dataset_id: int,
    index_name: str,
    query_vector: Sequence[float] | bytes,
    row_ids: Iterable[int],
) -> dict[int, float]:
    """The cosine similarity to `query_vector` of each row's nearest vector (a chunk's
    best piece), read by primary key: for candidates another method found."""
    if not table_exists(conn, table_name(dataset_id, index_name)):
        return {}
    blob = to_blob(query_vector, _dimensions(conn, dataset_id))
    table = _quoted(dataset_id, index_name)
    pieces = index_name == "chunks" and has_pieces(conn, dataset_id)
    out: dict[int, float] = {}
    for row_id in row_ids:
        ids = (
            _piece_ids(conn, dataset_id, index_name, row_id)
            if pieces
            else [vector_id(index_name, row_id)]
        )
        for vid in ids:
            distance = scalar(
                conn,
                f"SELECT vec_distance_cosine(embedding, ?) FROM {table} WHERE vector_id = ?",
                (blob, vid),
            )
            if distance is not None:
                out[row_id] = max(out.get(row_id, -1.0), 1.0 - distance)
    return out


def delete_artifact_vectors(
    conn: Connection, dataset_id: int, index_name: str, row_ids: Iterable[int]
) -> int:
    """Delete rows' vectors, every piece of a chunk with it; returns how many there were."""
    if not table_exists(conn, table_name(dataset_id, index_name)):
        return 0
    ids = [v for row_id in row_ids for v in _piece_ids(conn, dataset_id, index_name, row_id)]
    return delete_vectors(conn, dataset_id, index_name, ids)


def artifact_vectors(
    conn: Connection, dataset_id: int, index_name: str, row_id: int
) -> list[bytes]:
    """The float32 blobs of one row's vectors, pieces in order (none stored: [])."""
    if not table_exists(conn, table_name(dataset_id, index_name)):
        return []
    table = _quoted(dataset_id, index_name)
    return [
        scalar(conn, f"SELECT embedding FROM {table} WHERE vector_id = ?", (vid,))
        for vid in _piece_ids(conn, dataset_id, index_name, row_id)
    ]


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
    """The k nearest vectors by cosine distance, nearest first.

    `where` filters on metadata columns (e.g. {"parent_id": 3} for one document's
    chunks). A dataset without vector tables has no neighbours. A vector whose distance
    is not a number (NaN, all zeros: stored by gb versions that did not check what the
    server sent; SQLite makes NaN a NULL) is no neighbour, nor is any to such a query.

    An index of more than QUANTIZED_MIN_VECTORS vectors is searched in two steps, unless
    `exact`: the nearest OVERSAMPLE * k by Hamming distance over its bits table, then those
    by their exact cosine distance. Its results are then nearly, not always exactly, the
    exact scan's (recall@20 in bench/graph_bench.py), with the same distances. Without a
    bits table (a database from before them, read by a command that writes nothing), or
    when k is too large to oversample within vec0's KNN_MAX, the exact scan answers.

    Each candidate's float vector is read by its primary key, from within a 768 KiB
    chunk blob: ~0.02 ms from a mapped file (search.mapped), 5-10 times more through
    SQLite's page cache, so callers that rank many should map the file first.
    """
    check_index(index_name)
    if k <= 0 or not table_exists(conn, table_name(dataset_id, index_name)):
        return []
    allowed = ("kind", *METADATA[index_name])
    blob = to_blob(query_vector, _dimensions(conn, dataset_id))
    clauses, filters = "", []
    for col, value in (where or {}).items():
        if col not in allowed:
            raise ValueError(f"{index_name} vectors have no metadata column {col!r}")
        clauses += f' AND "{col}" = ?'
        filters.append(value)
    over = 0 if exact else _oversampled(conn, dataset_id, index_name, int(k))
    if over:
        rows = query(
            conn,
            # MATERIALIZED: the coarse KNN runs once, then each candidate's float vector
            # is read by its primary key (CROSS JOIN keeps that order) and rescored. In
            # the order of their ids, which is about the order they were stored in: a
            # candidate's vector is often near the last one read (rescoring 400 at
            # 100,000 chunks: 32.5 ms of CPU against 34.5 in the Hamming distances' order).
            f"""WITH coarse AS MATERIALIZED (
                    SELECT vector_id FROM "{bits_table_name(dataset_id, index_name)}"
                    WHERE embedding MATCH vec_quantize_binary(?) AND k = ?{clauses}),
                by_id AS MATERIALIZED (SELECT vector_id FROM coarse ORDER BY vector_id)
                SELECT e.vector_id, vec_distance_cosine(e.embedding, ?) AS distance
                FROM by_id CROSS JOIN {_quoted(dataset_id, index_name)} e
                  ON e.vector_id = by_id.vector_id
                ORDER BY distance IS NULL, distance LIMIT ?""",
            [blob, over, *filters, blob, int(k)],
        )
    else:
        rows = query(
            conn,
            f"SELECT vector_id, distance FROM {_quoted(dataset_id, index_name)} "
            f"WHERE embedding MATCH ? AND k = ?{clauses} ORDER BY distance",
            [blob, int(k), *filters],
        )
    # vec0's own scan ranks NULL distances after the others: dropping them loses none.
    return [Neighbor(r["vector_id"], r["distance"]) for r in rows if r["distance"] is not None]


def _oversampled(conn: Connection, dataset_id: int, index_name: str, k: int) -> int:
    """How many candidates the quantized search of this index would rescore for k, or 0
    when it should not be used: no bits table, too few vectors for it to pay (not more
    than QUANTIZED_MIN_VECTORS, nor than the candidates it would rescore), or a k so
    large that vec0's KNN_MAX leaves less than OVERSAMPLE candidates a result.

    The size is probed, never counted: one row past the limit is looked for in the bits
    table's `_rowids` shadow table, which reads at most that many index rows (~0.2 ms).
    """
    if index_name not in QUANTIZED:
        return 0
    bits = bits_table_name(dataset_id, index_name)
    over = max(OVERSAMPLE * k, OVERSAMPLE_MIN)
    if over > KNN_MAX or not table_exists(conn, bits):
        return 0
    probe, _ = _ids_of(conn, bits)
    big = scalar(
        conn,
        f"SELECT EXISTS (SELECT 1 FROM {probe} LIMIT 1 OFFSET ?)",
        (max(QUANTIZED_MIN_VECTORS, QUANTIZED_RATIO * over),),
    )
    return over if big else 0


def vec_stats(conn: Connection, dataset_id: int) -> list[VecIndexStats]:
    """For each of the dataset's four indexes, what it holds and should hold."""
    # Here, not at the top: a search, which imports this module, never counts.
    from gligabao.store.stats import vec_index_stats

    out = []
    for index_name in INDEXES:
        name = table_name(dataset_id, index_name)
        # Each vector's row id: CAST reads `12` of a chunk's piece `chunk-12.3` too.
        owned = (
            f"SELECT CAST(substr(vector_id, length(:p) + 1) AS INTEGER) AS oid "
            f"FROM {_quoted(dataset_id, index_name)}"
            if table_exists(conn, name)
            else None
        )
        out.append(vec_index_stats(conn, dataset_id, index_name, name, owned))
    return out


def all_vectors(
    conn: Connection, dataset_id: int, index_name: str, after: str, limit: int
) -> list[VectorRow]:
    """An index's vectors with their metadata past vector id `after`, at most `limit`, by
    vector id (gb copy reads an index so, a page at a time)."""
    if not table_exists(conn, table_name(dataset_id, index_name)):
        return []
    columns = METADATA[index_name]
    named = ", ".join(f'"{c}"' for c in columns)
    rows = query(
        conn,
        f"SELECT vector_id, embedding{', ' + named if named else ''} "
        f"FROM {_quoted(dataset_id, index_name)} WHERE vector_id > ? "
        "ORDER BY vector_id LIMIT ?",
        (after, limit),
    )
    return [
        VectorRow(r["vector_id"], bytes(r["embedding"]), {c: r[c] for c in columns}) for r in rows
    ]
