"""What the vector index holds of a text: a document too short to be chunked
has its own vector, found by meaning; a chunk larger than the embedding model reads
(`embeddings.max_tokens`) is embedded as pieces, each its own vector, and found by any
of them. Real gb commands, the test server's deterministic embeddings."""

from __future__ import annotations

import json
from pathlib import Path

from gligabao.chunk import ESTIMATOR
from gligabao.store import open_db, transaction, vectors
from gligabao.store.datasets import get_or_create_dataset, set_embedding
from gligabao.store.db import scalar
from tests.support.helpers import assert_indexes_complete, count, gb, story, vec_stats

NOTE = "The grey heron waits motionless by the riverbank at dawn.\n"


def _hits(gb_cli, *args: str) -> list[dict]:
    result = gb(gb_cli, "search", "--json", *args)
    return [json.loads(line) for line in result.stdout.splitlines()]


def hybrid_first(gb_cli, query: str) -> int:
    return _hits(gb_cli, "-k", "1", query)[0]["artifact_id"]


def test_a_short_document_is_found_by_vector_search(gb_cli, online, corpus) -> None:
    Path("heron.txt").write_text(NOTE)
    gb(gb_cli, "remember", *corpus, "heron.txt", "--quiet")
    doc_id = count("SELECT id FROM gb_artifacts WHERE source LIKE '%heron.txt'")

    # Before, a text this short had no vector: vector search could never find it.
    hits = _hits(gb_cli, "--method", "vector", "-k", "3", "heron riverbank dawn waits")

    assert hits[0]["artifact_id"] == doc_id and hits[0]["kind"] == "document"
    assert hits[0]["text"] == NOTE
    assert hybrid_first(gb_cli, "grey heron at the riverbank") == doc_id
    held = assert_indexes_complete(gb_cli)  # its vector is counted as one it should have
    assert (
        held["chunks"]
        == count("SELECT count(*) FROM gb_artifacts WHERE chunk_index IS NOT NULL") + 1
    )

    gb(gb_cli, "forget", str(doc_id))
    assert assert_indexes_complete(gb_cli)["chunks"] == held["chunks"] - 1
    hits = _hits(gb_cli, "--method", "vector", "-k", "3", "heron riverbank dawn waits")
    assert doc_id not in {h["artifact_id"] for h in hits}


def test_a_chunk_larger_than_the_model_reads_is_embedded_as_pieces(
    gb_cli, online, monkeypatch
) -> None:
    # 128-token chunks (the online fixture), a model said to read 40 tokens: each chunk is
    # sent as pieces of at most 34 estimated tokens, each stored as its own vector.
    monkeypatch.setenv("GB_EMBEDDINGS_MAX_TOKENS", "40")
    text = story(7, paragraphs=6)
    Path("story.txt").write_text(text)
    gb(gb_cli, "remember", "story.txt", "--quiet")

    stats = vec_stats(gb_cli)["chunks"]
    chunks = count("SELECT count(*) FROM gb_artifacts WHERE chunk_index IS NOT NULL")
    assert stats["held"] == stats["should"] == chunks > 1
    assert stats["vectors"] >= 3 * chunks and stats["orphans"] == 0
    sent = [text for request in online.requests_for("embed") for text in request.body["input"]]
    assert max(ESTIMATOR.count(text) for text in sent) <= 34  # each fits what the model reads

    # A query made of one late piece's words finds its chunk by that piece alone.
    last_chunk = json.loads(
        gb(
            gb_cli,
            "show",
            str(count("SELECT max(id) FROM gb_artifacts WHERE chunk_index IS NOT NULL")),
            "--json",
        ).stdout
    )
    tail_words = last_chunk["text"].split()[-12:]
    hits = _hits(gb_cli, "--method", "vector", "-k", "1", " ".join(tail_words))
    assert hits[0]["artifact_id"] == last_chunk["id"]

    # An edit elsewhere: the unchanged chunks are copied with all their pieces.
    Path("story.txt").write_text(text + "\nA new closing line about lanterns.\n")
    gb(gb_cli, "remember", "story.txt", "--quiet")
    after = vec_stats(gb_cli)["chunks"]
    assert after["held"] == after["should"] and after["missing"] == after["orphans"] == 0
    assert after["vectors"] > stats["vectors"]  # the old version's are kept, as its rows

    older = count("SELECT min(id) FROM gb_artifacts WHERE parent_id IS NULL")
    gb(gb_cli, "forget", str(older))
    gone = vec_stats(gb_cli)["chunks"]
    assert gone["orphans"] == 0 and gone["held"] == gone["should"] == after["held"] - chunks
    assert gone["vectors"] == after["vectors"] - stats["vectors"]


def test_the_dataset_says_whether_its_chunks_have_pieces(tmp_path) -> None:
    """Each vector search asks whether a dataset has pieces (to ask the KNN for more
    vectors): gb_datasets.chunk_pieces answers, kept by the writes of chunk vectors; a
    dataset from before it (NULL) is answered by probing the ids."""
    conn = open_db(tmp_path / "gb.db")
    ds = get_or_create_dataset(conn, "p")
    set_embedding(conn, ds.id, "m", 4)

    def flag() -> int | None:
        return scalar(conn, "SELECT chunk_pieces FROM gb_datasets WHERE id = ?", (ds.id,))

    whole = vectors.chunk_rows(1, 9, 0, [[1.0, 0.0, 0.0, 0.0]])
    with transaction(conn):
        vectors.upsert_vectors(conn, ds.id, "chunks", whole)
    assert flag() == 0 and not vectors.has_pieces(conn, ds.id)

    pieced = vectors.chunk_rows(2, 9, 1, [[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])
    with transaction(conn):
        vectors.upsert_vectors(conn, ds.id, "chunks", pieced)
    assert flag() == 1 and vectors.has_pieces(conn, ds.id)

    with transaction(conn):  # a later whole chunk does not unset it
        vectors.upsert_vectors(conn, ds.id, "chunks", vectors.chunk_rows(3, 9, 2, [[0.5] * 4]))
        conn.execute("UPDATE gb_datasets SET chunk_pieces = NULL")  # as before migration 6
    assert flag() is None and vectors.has_pieces(conn, ds.id)  # probed: chunk-2.1 is there
    with transaction(conn):
        vectors.delete_artifact_vectors(conn, ds.id, "chunks", [2])
        vectors.upsert_vectors(conn, ds.id, "chunks", vectors.chunk_rows(4, 9, 3, [[0.2] * 4]))
    assert flag() == 0 and not vectors.has_pieces(conn, ds.id)  # probed once, then known
    conn.close()
