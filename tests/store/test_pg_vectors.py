"""The vector indexes on a real PostgreSQL with pgvector (store/postgres/vectors.py):
tables, writes, pieces, the exact and the HNSW search, and vec_stats. The same
behaviour on SQLite is checked in test_graph.py, test_vectors_bits.py and
tests/remember/test_pieces.py."""

from __future__ import annotations

import math
import random
from array import array
from collections.abc import Iterator, Sequence

import pytest

from gligabao.store import EmbeddingMismatch, artifacts, datasets, db, graph, open_db, transaction
from gligabao.store import vectors as dispatch
from gligabao.store.postgres import vectors

DIMS = 4


@pytest.fixture
def conn(pg_url: str) -> Iterator:
    c = open_db(pg_url)
    yield c
    c.close()


@pytest.fixture
def ds(conn) -> int:
    dataset = datasets.get_or_create_dataset(conn, "default")
    datasets.set_embedding(conn, dataset.id, "embed-model", DIMS)
    return dataset.id


def cosine_distance(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return 1.0 - dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def exact(stored: dict[str, list[float]], q: Sequence[float], k: int) -> list[str]:
    return sorted(stored, key=lambda v: cosine_distance(stored[v], q))[:k]


def f32(values: Sequence[float]) -> list[float]:
    """Values as float32 stores them."""
    return list(array("f", values))


def count(conn, sql: str, *params) -> int:
    return int(db.scalar(conn, sql, params))


def hnsw_scans(conn, ds: int) -> int:
    """How many scans this transaction made of the chunks index's HNSW index."""
    return int(
        db.scalar(
            conn,
            "SELECT pg_stat_get_xact_numscans(to_regclass(?)::oid)",
            (f"gb_vec_{ds}_chunks_hnsw",),
        )
    )


def random_dataset(conn, dims: int, n: int, seed: int) -> tuple[int, dict[str, list[float]]]:
    """A dataset of `n` random chunk vectors: chunk i of document i % 50 (parent_id),
    at index i % 17."""
    ds = datasets.get_or_create_dataset(conn, f"random-{dims}").id
    datasets.set_embedding(conn, ds, "embed-model", dims)
    rng = random.Random(seed)
    stored = {f"chunk-{i}": f32([rng.gauss(0, 1) for _ in range(dims)]) for i in range(1, n + 1)}
    rows = [
        dispatch.chunk_row(i, 1000 + i % 50, i % 17, stored[f"chunk-{i}"]) for i in range(1, n + 1)
    ]
    with transaction(conn):
        dispatch.upsert_vectors(conn, ds, "chunks", rows)
    return ds, stored


# --- tables ---------------------------------------------------------------------------


def test_tables_are_made_once_checked_and_dropped(conn, ds: int) -> None:
    assert dispatch.has_vector_tables(conn, ds) and not dispatch.has_vectors(conn, ds)
    for index in vectors.INDEXES:
        name = f"gb_vec_{ds}_{index}"
        assert vectors.table_name(ds, index) == name
        columns = {
            r["attname"]: r["type"]
            for r in db.query(
                conn,
                "SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute "
                "WHERE attrelid = to_regclass(?) AND attnum > 0",
                (name,),
            )
        }
        assert columns["embedding"] == f"vector({DIMS})"
        assert set(columns) == {"vector_id", "embedding", "kind", *vectors.METADATA[index]}
        indexes = " ".join(
            r["indexdef"]
            for r in db.query(conn, "SELECT indexdef FROM pg_indexes WHERE tablename = ?", (name,))
        )
        assert "USING hnsw (embedding vector_cosine_ops)" in indexes
        assert ("(parent_id)" in indexes) == (index in ("chunks", "summaries"))
    with pytest.raises(ValueError):
        vectors.table_name(ds, "x; DROP TABLE gb_artifacts; --")
    # Again: nothing made twice; other dimensions are refused, as set_embedding refuses them.
    oid = db.scalar(conn, "SELECT to_regclass(?)::oid", (f"gb_vec_{ds}_chunks",))
    dispatch.ensure_vector_tables(conn, ds, DIMS)
    assert db.scalar(conn, "SELECT to_regclass(?)::oid", (f"gb_vec_{ds}_chunks",)) == oid
    with pytest.raises(EmbeddingMismatch, match="4 dimensions"):
        dispatch.ensure_vector_tables(conn, ds, 8)
    with pytest.raises(ValueError, match="positive"):
        dispatch.ensure_vector_tables(conn, ds, 0)
    dispatch.upsert_vectors(conn, ds, "entities", [dispatch.entity_row(1, [1, 0, 0, 0])])
    with pytest.raises(EmbeddingMismatch):  # it holds a vector: its size is fixed
        datasets.set_embedding(conn, ds, "embed-model", 8)
    assert not dispatch.has_vectors(conn, ds)  # chunks and summaries only, unless asked
    assert dispatch.has_vectors(conn, ds, ("entities",))
    dispatch.drop_vector_tables(conn, ds)
    assert not dispatch.has_vector_tables(conn, ds)
    assert not dispatch.has_vectors(conn, ds, vectors.INDEXES)
    assert dispatch.knn(conn, ds, "entities", [1, 0, 0, 0], 3) == []
    assert dispatch.delete_vectors(conn, ds, "entities", ["entity-1"]) == 0
    assert dispatch.delete_artifact_vectors(conn, ds, "chunks", [1]) == 0
    assert dispatch.artifact_vectors(conn, ds, "chunks", 1) == []
    assert dispatch.similarities(conn, ds, "chunks", [1, 0, 0, 0], [1]) == {}
    assert [s.exists for s in dispatch.vec_stats(conn, ds)] == [False] * 4
    # A dataset deleted takes its tables with it.
    dispatch.ensure_vector_tables(conn, ds, DIMS)
    datasets.delete_dataset(conn, ds)
    assert db.scalar(conn, "SELECT to_regclass(?)", (f"gb_vec_{ds}_chunks",)) is None


# --- writing and reading --------------------------------------------------------------


def test_upsert_twice_leaves_one_row_and_knn_finds_nearest(conn, ds: int) -> None:
    table = f"gb_vec_{ds}_chunks"
    dispatch.upsert_vectors(conn, ds, "chunks", [dispatch.chunk_row(1, 9, 0, [1, 0, 0, 0])])
    dispatch.upsert_vectors(conn, ds, "chunks", [dispatch.chunk_row(1, 9, 5, [0, 1, 0, 0])])
    rows = db.query(conn, f'SELECT vector_id, kind, parent_id, "index" FROM {table}')
    assert rows == [{"vector_id": "chunk-1", "kind": "chunk", "parent_id": 9, "index": 5}]
    assert dispatch.artifact_vectors(conn, ds, "chunks", 1) == [dispatch.to_blob([0, 1, 0, 0])]
    stored = {
        "chunk-1": [0.0, 1.0, 0.0, 0.0],
        "chunk-2": [1.0, 0.0, 0.0, 0.0],
        "chunk-3": f32([0.9, 0.1, 0.2, -0.3]),
        "chunk-4": [-1.0, 0.0, 0.0, 0.0],  # opposite: distance 2
    }
    assert (
        dispatch.upsert_vectors(
            conn,
            ds,
            "chunks",
            [
                dispatch.chunk_row(2, 9, 1, stored["chunk-2"]),
                dispatch.chunk_row(3, 8, 0, stored["chunk-3"]),
                dispatch.chunk_row(4, 8, 1, dispatch.to_blob(stored["chunk-4"])),  # bytes too
            ],
        )
        == 3
    )
    q = f32([1.0, 0.2, 0.0, 0.1])
    near = dispatch.knn(conn, ds, "chunks", q, 3)
    assert [n.vector_id for n in near] == exact(stored, q, 3) == ["chunk-2", "chunk-3", "chunk-1"]
    for n in near:
        assert isinstance(n.distance, float)
        assert n.distance == pytest.approx(cosine_distance(stored[n.vector_id], q), abs=1e-6)
    assert dispatch.knn(conn, ds, "chunks", [1, 0, 0, 0], 1)[0] == ("chunk-2", pytest.approx(0.0))
    assert dispatch.knn(conn, ds, "chunks", [1, 0, 0, 0], 10)[-1] == ("chunk-4", pytest.approx(2.0))
    only_doc_8 = dispatch.knn(conn, ds, "chunks", [1, 0, 0, 0], 5, where={"parent_id": 8})
    assert [n.vector_id for n in only_doc_8] == ["chunk-3", "chunk-4"]
    assert dispatch.knn(conn, ds, "chunks", [1, 0, 0, 0], 5, where={"kind": "summary"}) == []
    assert len(dispatch.knn(conn, ds, "chunks", [1, 0, 0, 0], 5, where={"kind": "chunk"})) == 4
    assert dispatch.knn(conn, ds, "chunks", q, 3, exact=True) == near
    assert dispatch.knn(conn, ds, "chunks", q, 0) == []
    assert dispatch.delete_vectors(conn, ds, "chunks", ["chunk-2", "chunk-404"]) == 1
    assert count(conn, f"SELECT count(*) FROM {table}") == 3


def test_vector_rows_are_checked(conn, ds: int) -> None:
    with pytest.raises(ValueError, match="dimensions"):
        dispatch.upsert_vectors(conn, ds, "entities", [dispatch.entity_row(1, [1.0, 2.0])])
    with pytest.raises(ValueError, match="dimensions"):
        dispatch.knn(conn, ds, "entities", [1.0, 2.0], 3)
    with pytest.raises(ValueError, match="does not belong"):
        dispatch.upsert_vectors(conn, ds, "edges", [dispatch.entity_row(1, [1, 2, 3, 4])])
    with pytest.raises(ValueError, match="metadata"):
        dispatch.upsert_vectors(conn, ds, "chunks", [dispatch.VectorRow("chunk-1", [1, 2, 3, 4])])
    with pytest.raises(ValueError, match="metadata column"):
        dispatch.knn(conn, ds, "chunks", [1, 2, 3, 4], 3, where={"text": "x"})
    with pytest.raises(ValueError, match="unknown vector index"):
        dispatch.knn(conn, ds, "nodes", [1, 2, 3, 4], 3)
    other = datasets.get_or_create_dataset(conn, "no-embeddings").id
    with pytest.raises(ValueError, match="set_embedding"):
        dispatch.upsert_vectors(conn, other, "entities", [dispatch.entity_row(1, [1, 2, 3, 4])])
    assert dispatch.knn(conn, other, "entities", [1, 2, 3, 4], 3) == []
    # A failed batch writes nothing.
    dispatch.upsert_vectors(conn, ds, "entities", [dispatch.entity_row(1, [1, 2, 3, 4])])
    with pytest.raises(ValueError):
        dispatch.upsert_vectors(
            conn,
            ds,
            "entities",
            [dispatch.entity_row(2, [4, 3, 2, 1]), dispatch.entity_row(3, [1])],
        )
    assert count(conn, f"SELECT count(*) FROM gb_vec_{ds}_entities") == 1
    # A zero vector has no cosine distance (NaN): no neighbour, as on SQLite.
    dispatch.upsert_vectors(conn, ds, "entities", [dispatch.entity_row(4, [0, 0, 0, 0])])
    assert [n.vector_id for n in dispatch.knn(conn, ds, "entities", [1, 2, 3, 4], 5)] == [
        "entity-1"
    ]
    assert dispatch.knn(conn, ds, "entities", [0, 0, 0, 0], 5) == []
    assert dispatch.similarities(conn, ds, "entities", [1, 2, 3, 4], [1, 4]) == {
        1: pytest.approx(1.0)
    }


def test_pieces_are_read_found_and_deleted_together(conn, ds: int) -> None:
    def flag() -> int | None:
        return db.scalar(conn, "SELECT chunk_pieces FROM gb_datasets WHERE id = ?", (ds,))

    with transaction(conn):
        dispatch.upsert_vectors(conn, ds, "chunks", dispatch.chunk_rows(1, 9, 0, [[1, 0, 0, 0]]))
    assert flag() == 0 and not dispatch.has_pieces(conn, ds)
    # Chunk 12 in eleven pieces (`chunk-12.10` sorts before `chunk-12.2` as text), and
    # chunk 120, whose id starts as chunk 12's does.
    pieces = [[math.cos(p / 3), math.sin(p / 3), 0.0, 0.1] for p in range(11)]
    with transaction(conn):
        dispatch.upsert_vectors(conn, ds, "chunks", dispatch.chunk_rows(12, 9, 1, pieces))
        dispatch.upsert_vectors(conn, ds, "chunks", dispatch.chunk_rows(120, 9, 2, [[0, 0, 1, 0]]))
    assert flag() == 1 and dispatch.has_pieces(conn, ds)
    assert dispatch.artifact_vectors(conn, ds, "chunks", 12) == [
        dispatch.to_blob(p) for p in pieces
    ]
    assert dispatch.artifact_vectors(conn, ds, "chunks", 120) == [dispatch.to_blob([0, 0, 1, 0])]
    assert dispatch.artifact_vectors(conn, ds, "chunks", 7) == []
    # A chunk's similarity is its best piece's.
    q = [0.0, 1.0, 0.0, 0.0]
    best = max(1 - cosine_distance(f32(p), q) for p in pieces)
    assert dispatch.similarities(conn, ds, "chunks", q, [1, 12, 120, 7]) == {
        1: pytest.approx(0.0, abs=1e-6),
        12: pytest.approx(best, abs=1e-6),
        120: pytest.approx(0.0, abs=1e-6),
    }
    assert dispatch.knn(conn, ds, "chunks", q, 1)[0].vector_id == "chunk-12.5"  # p/3 nearest pi/2
    with transaction(conn):  # a whole chunk later does not unset it; NULL is probed
        dispatch.upsert_vectors(conn, ds, "chunks", dispatch.chunk_rows(3, 9, 3, [[0.5] * 4]))
        conn.execute("UPDATE gb_datasets SET chunk_pieces = NULL")
    assert flag() is None and dispatch.has_pieces(conn, ds)
    assert dispatch.delete_artifact_vectors(conn, ds, "chunks", [12, 404]) == 11
    assert dispatch.artifact_vectors(conn, ds, "chunks", 120) != []
    with transaction(conn):
        dispatch.upsert_vectors(conn, ds, "chunks", dispatch.chunk_rows(4, 9, 4, [[0.2] * 4]))
    assert flag() == 0 and not dispatch.has_pieces(conn, ds)  # probed once, then known
    assert dispatch.delete_artifact_vectors(conn, ds, "chunks", [1, 3, 4, 120]) == 4
    assert not dispatch.has_vectors(conn, ds)


# --- searching ------------------------------------------------------------------------


def test_approximate_knn_returns_k_rows_with_high_recall(
    conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds, stored = random_dataset(conn, 32, 1000, seed=1)
    rng = random.Random(2)
    queries = [[rng.gauss(0, 1) for _ in range(32)] for _ in range(10)]
    truth = [exact(stored, q, 300) for q in queries]
    for q, expected in zip(queries, truth, strict=True):  # 1,000 vectors: the exact scan
        found = dispatch.knn(conn, ds, "chunks", q, 300)
        assert [n.vector_id for n in found] == expected
        assert found == dispatch.knn(conn, ds, "chunks", q, 300, exact=True)
    # Through the HNSW index (its scans counted), inside a caller's transaction:
    # hnsw.ef_search is raised for k = 300, else it would return its default 40 rows.
    monkeypatch.setattr(vectors, "EXACT_MAX_VECTORS", 100)
    recall = []
    with transaction(conn):
        before = hnsw_scans(conn, ds)
        for q, expected in zip(queries, truth, strict=True):
            found = dispatch.knn(conn, ds, "chunks", q, 300)
            assert len(found) == 300 and len({n.vector_id for n in found}) == 300
            assert [n.distance for n in found] == sorted(n.distance for n in found)
            for n in found[:20]:
                assert n.distance == pytest.approx(cosine_distance(stored[n.vector_id], q), 1e-5)
            recall.append(len({n.vector_id for n in found[:20]} & set(expected[:20])) / 20)
        assert hnsw_scans(conn, ds) == before + len(queries)
        # The settings of each search are its own: the caller's are as they were.
        dispatch.knn(conn, ds, "chunks", queries[0], 5, exact=True)
        assert db.scalar(conn, "SHOW enable_seqscan") == "on"
        assert db.scalar(conn, "SHOW enable_indexscan") == "on"
        assert db.scalar(conn, "SELECT current_setting('hnsw.ef_search')") == "40"
    assert sum(recall) / len(recall) >= 0.95, recall


def test_a_filtered_knn_gets_its_k_rows(conn, monkeypatch: pytest.MonkeyPatch) -> None:
    ds, stored = random_dataset(conn, 16, 1000, seed=3)
    q = [random.Random(4).gauss(0, 1) for _ in range(16)]
    # One document's 20 chunks: the parent_id index, then the exact ranking.
    doc = [v for v in stored if int(v.split("-")[1]) % 50 == 7]
    found = dispatch.knn(conn, ds, "chunks", q, 100, where={"parent_id": 1007})
    assert [n.vector_id for n in found] == exact({v: stored[v] for v in doc}, q, 100)
    # Index 3 holds 59 of the 1,000 vectors; through the HNSW index, whose first
    # ef_search candidates hold few of them, the iterative scan goes on until 50 pass.
    monkeypatch.setattr(vectors, "EXACT_MAX_VECTORS", 10)
    third = {v: stored[v] for v in stored if int(v.split("-")[1]) % 17 == 3}
    assert len(third) == 59
    with transaction(conn):
        before = hnsw_scans(conn, ds)
        found = dispatch.knn(conn, ds, "chunks", q, 50, where={"index": 3})
        assert hnsw_scans(conn, ds) == before + 1
        both = dispatch.knn(conn, ds, "chunks", q, 50, where={"index": 3, "kind": "chunk"})
    assert len(found) == 50 and set(n.vector_id for n in found) <= set(third)
    assert len(set(n.vector_id for n in found) & set(exact(third, q, 50))) >= 47
    assert [n.distance for n in found] == sorted(n.distance for n in found)
    assert both == found
    assert [
        n.vector_id for n in dispatch.knn(conn, ds, "chunks", q, 50, exact=True, where={"index": 3})
    ] == exact(third, q, 50)


def test_quantized_indexes_rescore_their_candidates(conn, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond HNSW's 2,000 dimensions for `vector`, the index is on half-precision
    copies, beyond 4,000 on sign bits; both re-rank by the exact distance. Shown here at
    16 dimensions with the limits lowered."""
    for limits, opclass in (((8, 100), "halfvec_cosine_ops"), ((8, 12), "bit_hamming_ops")):
        monkeypatch.setattr(vectors, "FLOAT_MAX_DIMENSIONS", limits[0])
        monkeypatch.setattr(vectors, "HALF_MAX_DIMENSIONS", limits[1])
        monkeypatch.setattr(vectors, "EXACT_MAX_VECTORS", 2000)
        ds, stored = random_dataset(conn, 16, 600, seed=5)
        name = f"gb_vec_{ds}_chunks"
        assert opclass in db.scalar(
            conn, "SELECT indexdef FROM pg_indexes WHERE indexname = ?", (name + "_hnsw",)
        )
        rng = random.Random(6)
        monkeypatch.setattr(vectors, "EXACT_MAX_VECTORS", 10)
        with transaction(conn):
            before = hnsw_scans(conn, ds)
            for vid in rng.sample(sorted(stored), 5):
                q = [x + rng.gauss(0, 0.05) for x in stored[vid]]
                found = dispatch.knn(conn, ds, "chunks", q, 10)
                assert len(found) == 10 and found[0].vector_id == vid
                for n in found:  # the true cosine distances, nearest first
                    assert n.distance == pytest.approx(
                        cosine_distance(stored[n.vector_id], q), abs=1e-5
                    )
                assert [n.distance for n in found] == sorted(n.distance for n in found)
            assert hnsw_scans(conn, ds) == before + 5
        datasets.delete_dataset(conn, ds)


# --- vec_stats ------------------------------------------------------------------------


def test_vec_stats_counts_what_is_held_pending_missing_and_orphaned(conn, ds: int) -> None:
    doc = artifacts.insert_document(conn, dataset_id=ds, text="x y", chunk_count=2, pending="embed")
    chunks, summaries, entities = [], [], []
    for i in range(2):
        chunk = artifacts.insert_chunk(
            conn, document_id=doc, text="x", chunk_index=i, start_offset=0, end_offset=1, tokens=1
        )
        chunks.append(chunk)
        summaries.append(artifacts.insert_summary(conn, chunk_id=chunk, text="s"))
        eid, _ = graph.upsert_entity(conn, ds, f"E{i}", "t")
        graph.link_entity(conn, eid, chunk)
        entities.append(eid)
    by = {s.index: s for s in dispatch.vec_stats(conn, ds)}
    assert by["chunks"].table == f"gb_vec_{ds}_chunks" and by["chunks"].exists
    assert (by["chunks"].should, by["chunks"].pending, by["chunks"].missing) == (2, 2, 0)
    assert (by["summaries"].pending, by["entities"].pending, by["edges"].should) == (2, 2, 0)
    assert artifacts.remove_pending(conn, doc, "embed") == []
    by = {s.index: s for s in dispatch.vec_stats(conn, ds)}
    assert (by["chunks"].pending, by["chunks"].missing, by["entities"].missing) == (0, 2, 2)
    # Embedded: the first chunk as two pieces, plus a vector whose row never was.
    with transaction(conn):
        dispatch.upsert_vectors(
            conn, ds, "chunks", dispatch.chunk_rows(chunks[0], doc, 0, [[1, 0, 0, 0]] * 2)
        )
        dispatch.upsert_vectors(
            conn, ds, "chunks", [dispatch.chunk_row(chunks[1], doc, 1, [1] * 4)]
        )
        dispatch.upsert_vectors(conn, ds, "chunks", [dispatch.chunk_row(9999, doc, 2, [1] * 4)])
        for s, c, i in zip(summaries, chunks, range(2), strict=True):
            dispatch.upsert_vectors(
                conn, ds, "summaries", [dispatch.summary_row(s, c, doc, i, [0, 1, 0, 0])]
            )
        dispatch.upsert_vectors(
            conn, ds, "entities", [dispatch.entity_row(e, [0, 0, 1, 0]) for e in entities]
        )
    stats = dispatch.vec_stats(conn, ds)
    assert [
        (s.index, s.held, s.should, s.pending, s.missing, s.orphans, s.vectors) for s in stats
    ] == [
        ("entities", 2, 2, 0, 0, 0, 2),
        ("edges", 0, 0, 0, 0, 0, 0),
        ("chunks", 2, 2, 0, 0, 1, 4),
        ("summaries", 2, 2, 0, 0, 0, 2),
    ]
