"""The store's file handling: opening, migrations, pragmas, transactions, locking,
datasets, inferences and stats. Real SQLite files with sqlite-vec loaded, no mocks."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from gligabao.errors import ConfigError, GbError
from gligabao.errors import DatabaseError as GbDatabaseError
from gligabao.store import (
    DatabaseBusy,
    DatabaseError,
    EmbeddingMismatch,
    SchemaTooNew,
    artifacts,
    datasets,
    db,
    inferences,
    integrity_problems,
    migrations,
    open_db,
    stats,
    transaction,
    vectors,
)

SPEC_TABLES = {
    "gb_datasets",
    "gb_artifacts",
    "gb_entities",
    "gb_edges",
    "gb_entity_artifacts",
    "gb_edge_artifacts",
    "gb_session_entities",
    "gb_session_edges",
    "gb_models",
    "gb_inferences",
    "gb_migrations",
    "gb_fts_artifacts",
    "gb_fts_entities",
    "gb_fts_edges",
}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "gb.db"


@pytest.fixture
def conn(path: Path):
    c = open_db(path)
    yield c
    c.close()


def names(conn) -> set[str]:
    return {r["name"] for r in db.query(conn, "SELECT name FROM sqlite_master")}


# --- opening and migrations ---------------------------------------------------------


def test_migrations_from_empty(conn) -> None:
    assert migrations.SCHEMA_VERSION == len(migrations.MIGRATIONS) >= 1
    assert db.scalar(conn, "PRAGMA user_version") == migrations.SCHEMA_VERSION
    applied = db.query(conn, "SELECT version, applied_at FROM gb_migrations ORDER BY version")
    assert [r["version"] for r in applied] == list(range(1, migrations.SCHEMA_VERSION + 1))
    assert all(r["applied_at"].endswith("Z") for r in applied)
    assert names(conn) >= SPEC_TABLES


def test_reopen_is_idempotent_and_keeps_data(path: Path) -> None:
    c = open_db(path)
    ds = datasets.get_or_create_dataset(c, "default")
    c.close()
    for _ in range(2):
        c = open_db(path)
        assert db.scalar(c, "SELECT count(*) FROM gb_migrations") == migrations.SCHEMA_VERSION
        assert datasets.find_dataset(c, "default") == ds
        c.close()


def test_newer_schema_is_refused(path: Path) -> None:
    open_db(path).close()
    raw = apsw.Connection(str(path))
    raw.execute(f"PRAGMA user_version = {migrations.SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(SchemaTooNew) as err:
        open_db(path)
    message = str(err.value)
    assert str(migrations.SCHEMA_VERSION + 1) in message and "upgrade gligabao" in message
    assert isinstance(err.value, GbDatabaseError)


def test_pragmas(conn) -> None:
    assert db.scalar(conn, "PRAGMA journal_mode") == "wal"
    assert db.scalar(conn, "PRAGMA foreign_keys") == 1
    assert db.scalar(conn, "PRAGMA synchronous") == 1  # NORMAL
    assert db.scalar(conn, "PRAGMA busy_timeout") == 10_000
    assert db.scalar(conn, "SELECT vec_version()").startswith("v")
    # Rows are dicts keyed by column name.
    assert db.query_one(conn, "SELECT 1 AS one, 'x' AS two") == {"one": 1, "two": "x"}


def test_foreign_keys_are_enforced(conn) -> None:
    with pytest.raises(apsw.ConstraintError):
        conn.execute(
            "INSERT INTO gb_artifacts(dataset_id, kind, valid_at, text) VALUES (999, 'd', 'x', 't')"
        )


def test_parent_folder_is_created(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "gb.db"
    open_db(target).close()
    assert target.is_file()


def test_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.db"
    bad.write_bytes(b"this is not an sqlite file\n" * 200)
    with pytest.raises(DatabaseError) as err:
        open_db(bad)
    assert str(bad) in str(err.value) and "not a database" in str(err.value)
    assert "\n" not in str(err.value)
    assert bad.read_bytes().startswith(b"this is not")  # left untouched


# --- transactions and locking -------------------------------------------------------


def test_transaction_commits_and_rolls_back(conn) -> None:
    with transaction(conn):
        conn.execute("INSERT INTO gb_models(name) VALUES ('a')")
    with pytest.raises(RuntimeError), transaction(conn):
        conn.execute("INSERT INTO gb_models(name) VALUES ('b')")
        raise RuntimeError("boom")
    assert conn.get_autocommit()
    assert [r["name"] for r in db.query(conn, "SELECT name FROM gb_models")] == ["a"]


def test_nested_transaction_is_a_savepoint(conn) -> None:
    with transaction(conn):
        conn.execute("INSERT INTO gb_models(name) VALUES ('outer')")
        with pytest.raises(ValueError), transaction(conn):
            conn.execute("INSERT INTO gb_models(name) VALUES ('inner')")
            raise ValueError
        with transaction(conn):
            conn.execute("INSERT INTO gb_models(name) VALUES ('inner2')")
    got = {r["name"] for r in db.query(conn, "SELECT name FROM gb_models")}
    assert got == {"outer", "inner2"}


def test_savepoints_nested_twice_each_roll_back_only_their_own(conn) -> None:
    # Every savepoint has one name: ROLLBACK TO and RELEASE must take the innermost.
    with transaction(conn):
        conn.execute("INSERT INTO gb_models(name) VALUES ('outer')")
        with transaction(conn):
            conn.execute("INSERT INTO gb_models(name) VALUES ('middle')")
            with pytest.raises(ValueError), transaction(conn):
                conn.execute("INSERT INTO gb_models(name) VALUES ('inner')")
                raise ValueError
            conn.execute("INSERT INTO gb_models(name) VALUES ('middle2')")
        with pytest.raises(ValueError), transaction(conn):
            with transaction(conn):
                conn.execute("INSERT INTO gb_models(name) VALUES ('kept-then-undone')")
            raise ValueError
    got = {r["name"] for r in db.query(conn, "SELECT name FROM gb_models")}
    assert got == {"outer", "middle", "middle2"}


def test_a_whole_transaction_nests_no_savepoint(conn) -> None:
    # Nested blocks add nothing inside it (two statements each): an error anywhere
    # undoes the whole block.
    ds = datasets.get_or_create_dataset(conn, "default")
    statements: list[str] = []
    conn.set_profile(lambda sql, _ns: statements.append(sql))
    with transaction(conn, whole=True):
        for name in ("a", "b", "c"):
            with transaction(conn):
                conn.execute(
                    "INSERT INTO gb_entities(dataset_id, name, type, name_norm, created_at) "
                    "VALUES (?, ?, 't', ?, 'now')",
                    (ds.id, name, name),
                )
    conn.set_profile(None)
    assert not [s for s in statements if s.startswith(("SAVEPOINT", "RELEASE"))]
    assert db.scalar(conn, "SELECT count(*) FROM gb_entities") == 3
    with pytest.raises(ValueError), transaction(conn, whole=True):
        with transaction(conn):
            conn.execute("INSERT INTO gb_models(name) VALUES ('inner')")
        with transaction(conn):
            raise ValueError
    assert conn.get_autocommit()
    assert db.scalar(conn, "SELECT count(*) FROM gb_models WHERE name = 'inner'") == 0
    # After it, nesting is a savepoint again.
    with transaction(conn):
        with pytest.raises(ValueError), transaction(conn):
            conn.execute("INSERT INTO gb_models(name) VALUES ('undone')")
            raise ValueError
        conn.execute("INSERT INTO gb_models(name) VALUES ('kept')")
    got = {r["name"] for r in db.query(conn, "SELECT name FROM gb_models")}
    assert "kept" in got and "undone" not in got


def test_nested_transactions_are_prepared_once(conn) -> None:
    # A savepoint named anew each time would be SQL never seen before, every time: a
    # statement prepared again, and the cache filled with them.
    def store() -> None:
        with transaction(conn), transaction(conn):
            db.query(conn, "SELECT name FROM gb_models")

    store()
    misses = conn.cache_stats()["misses"]
    for _ in range(200):
        store()
    assert conn.cache_stats()["misses"] == misses


def test_a_held_write_lock_raises_database_busy_quickly(path: Path) -> None:
    holder = open_db(path)
    waiter = open_db(path, busy_timeout_ms=100)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO gb_models(name) VALUES ('held')")
    started = time.monotonic()
    with pytest.raises(DatabaseBusy) as err, transaction(waiter):
        waiter.execute("INSERT INTO gb_models(name) VALUES ('blocked')")
    assert time.monotonic() - started < 5  # its 0.1 s, not the default 10 s
    message = str(err.value)
    assert "locked by another process" in message and str(path) in message
    assert "0.1 s" in message and "busy_timeout" in message
    assert isinstance(err.value, GbDatabaseError)
    # Store functions that write one row say so the same way.
    with pytest.raises(DatabaseBusy):
        inferences.model_id(waiter, "blocked-too")
    # Readers are not blocked by a writer in WAL mode, nor is opening an up-to-date file.
    assert db.scalar(waiter, "SELECT count(*) FROM gb_models") == 0
    open_db(path, busy_timeout_ms=100).close()
    holder.execute("COMMIT")
    with transaction(waiter):
        waiter.execute("INSERT INTO gb_models(name) VALUES ('now')")
    assert db.scalar(holder, "SELECT count(*) FROM gb_models") == 2
    holder.close()
    waiter.close()


# Each process waits for the same instant, then opens the same new file: the moment two
# cron jobs create one database.
_OPEN_AT_ONCE = """
import sys, time
from gligabao.store import open_db
at = float(sys.argv[2])
while time.time() < at:
    pass
open_db(sys.argv[1]).close()
"""


def test_processes_creating_one_database_at_once_all_open_it(tmp_path: Path) -> None:
    for round_ in range(3):
        path = tmp_path / f"new{round_}.db"
        at = time.time() + 1.5  # past every process's start-up
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _OPEN_AT_ONCE, str(path), str(at)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(4)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
        conn = open_db(path)
        assert db.scalar(conn, "PRAGMA journal_mode") == "wal"
        assert migrations.schema_version(conn) == migrations.SCHEMA_VERSION
        conn.close()


# --- datasets -----------------------------------------------------------------------


def test_dataset_get_or_create(conn) -> None:
    a = datasets.get_or_create_dataset(conn, "default")
    assert datasets.get_or_create_dataset(conn, "default") == a
    b = datasets.get_or_create_dataset(conn, "work")
    assert b.id != a.id and [d.name for d in datasets.list_datasets(conn)] == ["default", "work"]
    with pytest.raises(ValueError):
        datasets.get_or_create_dataset(conn, " ")


def test_embedding_mismatch_is_refused(conn) -> None:
    ds = datasets.get_or_create_dataset(conn, "default")
    assert not vectors.has_vector_tables(conn, ds.id)
    # While the dataset holds no vector, another model or size replaces the recorded one.
    first = datasets.set_embedding(conn, ds.id, "text-embedding-3-small", 16)
    assert first.embedding_dimensions == 16
    got = datasets.set_embedding(conn, ds.id, "text-embedding-3-small", 8)
    assert (got.embedding_model, got.embedding_dimensions) == ("text-embedding-3-small", 8)
    assert vectors.has_vector_tables(conn, ds.id)
    assert datasets.set_embedding(conn, ds.id, "text-embedding-3-small", 8) == got
    # The tables were made again for 8: a vector of 8 goes in, and binds the dataset.
    vectors.upsert_vectors(conn, ds.id, "entities", [vectors.entity_row(1, [1.0] + [0.0] * 7)])
    for model, dims in (("text-embedding-3-large", 8), ("text-embedding-3-small", 16)):
        with pytest.raises(EmbeddingMismatch) as err:
            datasets.set_embedding(conn, ds.id, model, dims)
        assert "text-embedding-3-small (8 dimensions)" in str(err.value)
        assert isinstance(err.value, ConfigError)
    assert datasets.get_dataset(conn, ds.id) == got


def test_delete_dataset_drops_everything(conn) -> None:
    ds = datasets.get_or_create_dataset(conn, "gone")
    datasets.set_embedding(conn, ds.id, "m", 4)
    doc = artifacts.insert_document(conn, dataset_id=ds.id, text="hello world")
    datasets.delete_dataset(conn, ds.id)
    assert not any(n.startswith(f"dataset-{ds.id}-") for n in names(conn))
    assert artifacts.get_artifact(conn, doc) is None
    assert db.scalar(conn, "SELECT count(*) FROM gb_fts_artifacts") == 0


# --- inferences ---------------------------------------------------------------------


def record(conn, request_hash: str | None, answer: str | None, model: str = "gpt-x") -> int:
    return inferences.record_inference(
        conn,
        stage="extract_graph",
        model=model,
        reasoning="low",
        input_tokens=100,
        output_tokens=20,
        cached_tokens=5,
        cost=0.5,
        duration_ms=12,
        request_hash=request_hash,
        answer=answer,
    )


def test_model_id_is_insert_or_get(conn) -> None:
    a = inferences.model_id(conn, "gpt-x")
    assert inferences.model_id(conn, "gpt-x") == a
    assert inferences.model_id(conn, "gpt-y") != a


def test_find_answer_returns_the_latest(conn) -> None:
    assert inferences.find_answer(conn, "h1") is None
    record(conn, "h1", '{"v": 1}', model="old-model")
    latest = record(conn, "h1", '{"v": 2}', model="new-model")
    record(conn, "h1", None)  # a failed call has no answer to reuse
    record(conn, "h2", '{"v": 3}')
    found = inferences.find_answer(conn, "h1")
    assert found == (latest, '{"v": 2}', "new-model")
    assert found.model_name == "new-model"


def test_inference_rows(conn) -> None:
    first = record(conn, "h", "a")
    inferences.record_inference(conn, stage="summarize_chunk", model="m", cost=None)
    rows = inferences.list_inferences(conn, limit=10)
    assert [r["stage"] for r in rows] == ["summarize_chunk", "extract_graph"]
    assert "answer" not in rows[0]
    assert inferences.list_inferences(conn, limit=10, stage="extract_graph")[0]["id"] == first
    row = inferences.get_inference(conn, first)
    assert row is not None and row["model"] == "gpt-x" and row["reasoning"] == "low"
    with pytest.raises(ValueError):
        inferences.record_inference(conn, stage="x", model="m", reasoning="extreme")
    mid = inferences.model_id(conn, "m")
    with pytest.raises(apsw.ConstraintError):  # the schema refuses it too
        conn.execute(
            "INSERT INTO gb_inferences(stage, model_id, reasoning) VALUES ('x', ?, 'max')", (mid,)
        )


def test_stats(conn) -> None:
    ds = datasets.get_or_create_dataset(conn, "default")
    other = datasets.get_or_create_dataset(conn, "other")
    doc = artifacts.insert_document(conn, dataset_id=ds.id, text="a b", chunk_count=1)
    chunk = artifacts.insert_chunk(
        conn, document_id=doc, text="a b", chunk_index=0, start_offset=0, end_offset=3, tokens=2
    )
    artifacts.insert_summary(conn, chunk_id=chunk, text="sum")
    artifacts.insert_document(conn, dataset_id=other.id, text="elsewhere")
    inferences.record_inference(
        conn, stage="s", model="m", input_tokens=10, output_tokens=3, cost=0.25, dataset_id=ds.id
    )
    inferences.record_inference(conn, stage="s", model="m", input_tokens=1, dataset_id=other.id)
    got = stats.stats(conn, ds.id)
    assert (got.documents, got.chunks, got.summaries) == (1, 1, 1)
    assert (got.inferences, got.input_tokens, got.output_tokens, got.cost) == (1, 10, 3, 0.25)
    everything = stats.stats(conn)
    assert (everything.documents, everything.inferences, everything.input_tokens) == (2, 2, 11)
    assert stats.stats(conn, other.id).cost is None


def test_errors_are_gb_errors() -> None:
    assert issubclass(DatabaseBusy, GbError) and issubclass(SchemaTooNew, GbError)


def test_integrity_check_ok(conn) -> None:
    datasets.set_embedding(conn, datasets.get_or_create_dataset(conn, "d").id, "m", 4)
    assert integrity_problems(conn) == []
    conn.execute("PRAGMA foreign_keys = OFF")  # only to plant a broken row
    conn.execute("INSERT INTO gb_entity_artifacts(entity_id, artifact_id) VALUES (41, 42)")
    conn.execute("PRAGMA foreign_keys = ON")
    problems = integrity_problems(conn)
    assert problems and all("gb_entity_artifacts" in p for p in problems)
