"""The binary-quantized companions of the entities and edges indexes, on a real SQLite
file with sqlite-vec: kept in step with their float tables, and knn() through them."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from gligabao.store import datasets, db, integrity_problems, open_db
from gligabao.store.sqlite import vectors
from gligabao.store.sqlite.connect import table_exists

DIMS = 32
N = 500  # vectors in the quantized tests: more than the patched threshold and OVERSAMPLE_MIN


@pytest.fixture
def conn(tmp_path: Path):
    c = open_db(tmp_path / "gb.db")
    yield c
    c.close()


@pytest.fixture
def ds(conn) -> int:
    dataset = datasets.get_or_create_dataset(conn, "default")
    datasets.set_embedding(conn, dataset.id, "embed-model", DIMS)
    return dataset.id


@pytest.fixture
def small_threshold(monkeypatch) -> None:
    """Quantize from 100 vectors on, so a test needs hundreds of vectors, not thousands,
    and rescore 50 candidates at least, a tenth of them: the coarse step has to choose."""
    monkeypatch.setattr(vectors, "QUANTIZED_MIN_VECTORS", 100)
    monkeypatch.setattr(vectors, "OVERSAMPLE_MIN", 50)
    monkeypatch.setattr(vectors, "QUANTIZED_RATIO", 1)


def vec(rng: random.Random) -> list[float]:
    return [rng.gauss(0, 1) for _ in range(DIMS)]


def cosine_distance(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return 1 - dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def fill(conn, ds: int, index: str, n: int, seed: int = 1) -> dict[str, list[float]]:
    """n random vectors in `index`; returns them by vector id."""
    rng = random.Random(seed)
    got = {vectors.vector_id(index, i): vec(rng) for i in range(1, n + 1)}
    rows = [vectors.VectorRow(vid, v) for vid, v in got.items()]
    vectors.upsert_vectors(conn, ds, index, rows)
    return got


def ids(conn, table: str) -> set[str]:
    return {r["vector_id"] for r in db.query(conn, f'SELECT vector_id FROM "{table}"')}


def bits_of(conn, table: str) -> dict[str, bytes]:
    rows = db.query(conn, f'SELECT vector_id, embedding FROM "{table}"')
    return {r["vector_id"]: bytes(r["embedding"]) for r in rows}


def quantized(conn, vector: list[float]) -> bytes:
    return bytes(db.scalar(conn, "SELECT vec_quantize_binary(?)", (vectors.to_blob(vector),)))


def traced_knn(conn, *args, **kwargs) -> tuple[list[vectors.Neighbor], bool]:
    """knn()'s answer, and whether it searched a bits table."""
    statements: list[str] = []
    conn.exec_trace = lambda _cursor, sql, _bindings: statements.append(sql) or True
    try:
        found = vectors.knn(conn, *args, **kwargs)
    finally:
        conn.exec_trace = None
    return found, any("MATCH vec_quantize_binary" in s for s in statements)


def exact(stored: dict[str, list[float]], query: list[float], k: int) -> list[str]:
    return sorted(stored, key=lambda vid: cosine_distance(stored[vid], query))[:k]


def test_bits_tables_exist_for_every_index(conn, ds: int) -> None:
    assert vectors.QUANTIZED == vectors.INDEXES
    for index in vectors.QUANTIZED:
        name = vectors.bits_table_name(ds, index)
        assert name == f"dataset-{ds}-{index}-bits"
        sql = db.scalar(conn, "SELECT sql FROM sqlite_master WHERE name = ?", (name,))
        assert "vec0(" in sql and f"bit[{DIMS}]" in sql and "kind text" in sql
    with pytest.raises(ValueError):
        vectors.bits_table_name(ds, "documents")
    # The accelerator is no index a user sees: four indexes, their float tables, in step.
    fill(conn, ds, "edges", 3)
    stats = vectors.vec_stats(conn, ds)
    assert [(s.index, s.table) for s in stats] == [
        (i, f"dataset-{ds}-{i}") for i in vectors.INDEXES
    ]
    assert integrity_problems(conn) == []
    # vec0 packs bits by bytes: 12 dimensions (a test's, no model's) get no bits tables.
    odd = datasets.get_or_create_dataset(conn, "odd").id
    datasets.set_embedding(conn, odd, "embed-model", 12)
    assert not table_exists(conn, f"dataset-{odd}-edges-bits")
    vectors.upsert_vectors(conn, odd, "edges", [vectors.edge_row(1, [1.0] * 12)])
    assert [n.vector_id for n in vectors.knn(conn, odd, "edges", [1.0] * 12, 3)] == ["edge-1"]


def test_upsert_delete_and_drop_keep_the_bits_in_step(conn, ds: int) -> None:
    edges, bits = f"dataset-{ds}-edges", f"dataset-{ds}-edges-bits"
    stored = fill(conn, ds, "edges", 5)
    vectors.upsert_vectors(conn, ds, "entities", [vectors.entity_row(1, stored["edge-1"])])
    assert ids(conn, bits) == ids(conn, edges) == set(stored)
    assert bits_of(conn, bits) == {vid: quantized(conn, v) for vid, v in stored.items()}
    assert ids(conn, f"dataset-{ds}-entities-bits") == {"entity-1"}
    # A second upsert of an id replaces its bits, as it replaces its float vector.
    flipped = [-x for x in stored["edge-2"]]
    vectors.upsert_vectors(conn, ds, "edges", [vectors.edge_row(2, flipped)])
    assert (
        bits_of(conn, bits)["edge-2"]
        == quantized(conn, flipped)
        != quantized(conn, stored["edge-2"])
    )
    assert len(bits_of(conn, bits)) == 5
    assert vectors.delete_vectors(conn, ds, "edges", ["edge-1", "edge-3", "edge-404"]) == 2
    assert ids(conn, bits) == ids(conn, edges) == {"edge-2", "edge-4", "edge-5"}
    vectors.drop_vector_tables(conn, ds)
    names = db.query(conn, "SELECT name FROM sqlite_master WHERE name LIKE 'dataset-%'")
    assert names == []


def test_ensure_vector_tables_fills_the_bits_of_an_older_database(conn, ds: int) -> None:
    edges, bits = f"dataset-{ds}-edges", f"dataset-{ds}-edges-bits"
    # A database from before the bits tables: the float tables alone, written without them.
    for index in vectors.QUANTIZED:
        conn.execute(f'DROP TABLE "{vectors.bits_table_name(ds, index)}"')
    stored = fill(conn, ds, "edges", 40)
    vectors.upsert_vectors(conn, ds, "entities", [vectors.entity_row(7, stored["edge-7"])])
    assert not table_exists(conn, bits)
    vectors.ensure_vector_tables(conn, ds, DIMS)
    assert bits_of(conn, bits) == {vid: quantized(conn, v) for vid, v in stored.items()}
    assert ids(conn, f"dataset-{ds}-entities-bits") == {"entity-7"}
    # One written since by an older gb, which knows only the float table: a vector added,
    # one deleted, and a third gone from the float table alone.
    extra = [0.5] * DIMS
    conn.execute(
        f'INSERT INTO "{edges}"(vector_id, embedding, kind) VALUES (?, ?, ?)',
        ("edge-41", vectors.to_blob(extra), "edge"),
    )
    conn.execute(f"""DELETE FROM "{edges}" WHERE vector_id IN ('edge-1', 'edge-2')""")
    vectors.ensure_vector_tables(conn, ds, DIMS)
    assert ids(conn, bits) == ids(conn, edges)
    assert "edge-41" in ids(conn, bits) and "edge-1" not in ids(conn, bits)
    assert bits_of(conn, bits)["edge-41"] == quantized(conn, extra)
    # In step: nothing to do, and nothing done.
    before = conn.total_changes()
    vectors.ensure_vector_tables(conn, ds, DIMS)
    assert conn.total_changes() == before


@pytest.mark.usefixtures("small_threshold")
def test_knn_above_the_threshold_rescores_the_bits_candidates(conn, ds: int) -> None:
    stored = fill(conn, ds, "edges", N)
    vectors.upsert_vectors(conn, ds, "chunks", [vectors.chunk_row(1, 9, 0, stored["edge-1"])])
    rng = random.Random(3)
    for vid in rng.sample(sorted(stored), 10):
        found, quantized_path = traced_knn(conn, ds, "edges", stored[vid], 10)
        assert quantized_path
        assert len(found) == 10
        assert found[0] == (vid, pytest.approx(0.0, abs=1e-6))  # itself, nearest
        for n in found:  # the true cosine distances, not Hamming ones
            assert n.distance == pytest.approx(
                cosine_distance(stored[n.vector_id], stored[vid]), abs=1e-5
            )
        assert [n.distance for n in found] == sorted(n.distance for n in found)
    # A query near a stored vector, not equal to it: that vector is the exact nearest,
    # and the coarse step, choosing 50 candidates of 500, keeps it.
    for vid in rng.sample(sorted(stored), 10):
        q = [x + rng.gauss(0, 0.1) for x in stored[vid]]
        assert exact(stored, q, 1) == [vid]
        found, _ = traced_knn(conn, ds, "edges", q, 5)
        assert found[0].vector_id == vid
        assert found[0].distance == pytest.approx(cosine_distance(stored[vid], q), abs=1e-5)
    # The metadata filter applies to the coarse step, as it does to the exact scan.
    found, quantized_path = traced_knn(
        conn, ds, "edges", stored["edge-1"], 3, where={"kind": "edge"}
    )
    assert quantized_path and found[0].vector_id == "edge-1"
    assert vectors.knn(conn, ds, "edges", stored["edge-1"], 3, where={"kind": "entity"}) == []
    with pytest.raises(ValueError, match="metadata column"):
        vectors.knn(conn, ds, "edges", stored["edge-1"], 3, where={"parent_id": 1})
    # One chunk is too few to quantize: the exact scan.
    found, quantized_path = traced_knn(conn, ds, "chunks", stored["edge-1"], 3)
    assert not quantized_path and found == [("chunk-1", pytest.approx(0.0, abs=1e-6))]


def test_knn_below_the_threshold_scans_exactly(conn, ds: int, monkeypatch) -> None:
    monkeypatch.setattr(vectors, "QUANTIZED_RATIO", 1)
    stored = fill(conn, ds, "edges", N)
    rng = random.Random(4)
    q = vec(rng)
    # N vectors are not more than QUANTIZED_MIN_VECTORS: exact, and all of them rankable.
    found, quantized_path = traced_knn(conn, ds, "edges", q, N)
    assert not quantized_path
    assert [n.vector_id for n in found] == exact(stored, q, N)
    monkeypatch.setattr(vectors, "QUANTIZED_MIN_VECTORS", N - 1)
    assert traced_knn(conn, ds, "edges", q, 5)[1]
    monkeypatch.setattr(vectors, "QUANTIZED_MIN_VECTORS", N)
    assert not traced_knn(conn, ds, "edges", q, 5)[1]
    # Above the threshold, fewer vectors than the candidates it would rescore: exact too.
    monkeypatch.setattr(vectors, "QUANTIZED_MIN_VECTORS", 10)
    monkeypatch.setattr(vectors, "OVERSAMPLE_MIN", N)
    assert not traced_knn(conn, ds, "edges", q, 5)[1]
    monkeypatch.setattr(vectors, "OVERSAMPLE_MIN", N - 1)
    assert traced_knn(conn, ds, "edges", q, 5)[1]
    # ...nor than QUANTIZED_RATIO times them: rescoring most of the index costs more.
    monkeypatch.setattr(vectors, "QUANTIZED_RATIO", 2)
    monkeypatch.setattr(vectors, "OVERSAMPLE_MIN", N // 2)
    assert not traced_knn(conn, ds, "edges", q, 5)[1]
    monkeypatch.setattr(vectors, "OVERSAMPLE_MIN", N // 2 - 1)
    assert traced_knn(conn, ds, "edges", q, 5)[1]
    monkeypatch.setattr(vectors, "QUANTIZED_RATIO", 1)
    # A k too large to oversample within vec0's KNN_MAX: exact, every vector ranked.
    monkeypatch.setattr(vectors, "OVERSAMPLE_MIN", 10)
    monkeypatch.setattr(vectors, "KNN_MAX", vectors.OVERSAMPLE * 20)
    found, quantized_path = traced_knn(conn, ds, "edges", q, 21)
    assert not quantized_path and [n.vector_id for n in found] == exact(stored, q, 21)
    assert traced_knn(conn, ds, "edges", q, 20)[1]


@pytest.mark.usefixtures("small_threshold")
def test_a_database_without_bits_tables_still_answers(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = open_db(path)
    ds = datasets.get_or_create_dataset(conn, "default").id
    datasets.set_embedding(conn, ds, "embed-model", DIMS)
    for index in vectors.QUANTIZED:
        conn.execute(f'DROP TABLE "{vectors.bits_table_name(ds, index)}"')
    stored = fill(conn, ds, "edges", N)
    assert vectors.delete_vectors(conn, ds, "edges", ["edge-2"]) == 1
    del stored["edge-2"]
    conn.close()
    # Read as a reading command reads it: exact, and nothing written.
    reader = open_db(path, create=False)
    try:
        before = reader.total_changes()
        q = stored["edge-5"]
        found, quantized_path = traced_knn(reader, ds, "edges", q, 10)
        assert not quantized_path
        assert [n.vector_id for n in found] == exact(stored, q, 10)
        assert found[0] == ("edge-5", pytest.approx(0.0, abs=1e-6))
        assert reader.total_changes() == before
        assert not table_exists(reader, f"dataset-{ds}-edges-bits")
    finally:
        reader.close()
