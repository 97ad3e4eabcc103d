"""Artifacts, the graph, vectors and forget, on a real SQLite file with sqlite-vec."""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gligabao.store import (
    Conflict,
    NotFound,
    artifacts,
    datasets,
    db,
    forget,
    graph,
    inferences,
    integrity_problems,
    open_db,
    transaction,
    vectors,
)
from gligabao.store import fts as any_fts
from gligabao.store import hits as hit_rows
from gligabao.store.sqlite import fts
from gligabao.store.sqlite import vectors as sqlite_vectors

DIMS = 4


@pytest.fixture(params=["sqlite", "postgresql"])
def conn(request: pytest.FixtureRequest, tmp_path: Path):
    """The store on an SQLite file, and again on a PostgreSQL database: the same SQL
    behind both (a test of SQLite's own tables calls sqlite_only)."""
    if request.param == "postgresql":
        c = open_db(request.getfixturevalue("pg_url"))
    else:
        c = open_db(tmp_path / "gb.db")
    yield c
    c.close()


@pytest.fixture
def ds(conn) -> int:
    dataset = datasets.get_or_create_dataset(conn, "default")
    datasets.set_embedding(conn, dataset.id, "embed-model", DIMS)
    return dataset.id


def vec(seed: int) -> list[float]:
    """A distinct, deterministic unit-ish vector per seed."""
    return [math.sin(seed + i) for i in range(DIMS)]


def chunk_indexes(conn, document_id: int) -> list[int]:
    """The chunk indexes a document has, ascending."""
    return [
        r["chunk_index"]
        for r in conn.execute(
            "SELECT chunk_index FROM gb_artifacts WHERE parent_id = ? "
            "AND chunk_index IS NOT NULL ORDER BY chunk_index",
            (document_id,),
        )
    ]


def count(conn, sql: str, *params) -> int:
    return int(db.scalar(conn, sql, params))


def indexed(conn, table: str, row_id: int) -> int:
    """Whether the keyword index `table` has a row for `row_id` (1 or 0), on either store."""
    return any_fts.indexed_rows(conn, table, [row_id])


# --- vectors ------------------------------------------------------------------------


@pytest.mark.parametrize("conn", ["sqlite"], indirect=True)  # SQLite's own tables
def test_vector_table_names_and_columns(conn, ds: int) -> None:
    for index in vectors.INDEXES:
        name = f"dataset-{ds}-{index}"
        assert sqlite_vectors.table_name(ds, index) == name
        sql = db.scalar(conn, "SELECT sql FROM sqlite_master WHERE name = ?", (name,))
        assert "vec0(" in sql and f"float[{DIMS}]" in sql and "distance_metric=cosine" in sql
    chunks_sql = db.scalar(
        conn, "SELECT sql FROM sqlite_master WHERE name = ?", (f"dataset-{ds}-chunks",)
    )
    assert "index integer" in chunks_sql and "parent_id integer" in chunks_sql
    summaries_sql = db.scalar(
        conn, "SELECT sql FROM sqlite_master WHERE name = ?", (f"dataset-{ds}-summaries",)
    )
    assert "chunk_id integer" in summaries_sql
    assert vectors.vector_id("chunks", 12) == "chunk-12"
    assert vectors.vector_id("summaries", 3) == "summary-3"
    assert vectors.parse_vector_id("entity-7") == ("entities", 7)
    with pytest.raises(ValueError):
        sqlite_vectors.table_name(ds, 'x"; DROP TABLE gb_artifacts; --')


@pytest.mark.parametrize("conn", ["sqlite"], indirect=True)  # SQLite's own tables
def test_upsert_twice_leaves_one_row_and_knn_finds_nearest(conn, ds: int) -> None:
    table = f'"dataset-{ds}-chunks"'
    vectors.upsert_vectors(conn, ds, "chunks", [vectors.chunk_row(1, 9, 0, [1, 0, 0, 0])])
    vectors.upsert_vectors(conn, ds, "chunks", [vectors.chunk_row(1, 9, 5, [0, 1, 0, 0])])
    rows = db.query(conn, f'SELECT vector_id, kind, parent_id, "index" FROM {table}')
    assert rows == [{"vector_id": "chunk-1", "kind": "chunk", "parent_id": 9, "index": 5}]
    vectors.upsert_vectors(
        conn,
        ds,
        "chunks",
        [
            vectors.chunk_row(2, 9, 1, [1, 0, 0, 0]),
            vectors.chunk_row(3, 8, 0, [0.9, 0.1, 0, 0]),
            vectors.chunk_row(4, 8, 1, [-1, 0, 0, 0]),  # opposite: distance 2
        ],
    )
    near = vectors.knn(conn, ds, "chunks", [1, 0, 0, 0], 3)
    assert [n.vector_id for n in near] == ["chunk-2", "chunk-3", "chunk-1"]
    assert near[0].distance == pytest.approx(0.0, abs=1e-6)
    assert near[2].distance == pytest.approx(1.0, abs=1e-6)  # orthogonal, cosine
    only_doc_8 = vectors.knn(conn, ds, "chunks", [1, 0, 0, 0], 5, where={"parent_id": 8})
    assert [n.vector_id for n in only_doc_8] == ["chunk-3", "chunk-4"]
    assert vectors.delete_vectors(conn, ds, "chunks", ["chunk-2", "chunk-404"]) == 1
    assert count(conn, f"SELECT count(*) FROM {table}") == 3


@pytest.mark.parametrize("conn", ["sqlite"], indirect=True)  # SQLite's own tables
def test_vector_rows_are_checked(conn, ds: int) -> None:
    with pytest.raises(ValueError, match="dimensions"):
        vectors.upsert_vectors(conn, ds, "entities", [vectors.entity_row(1, [1.0, 2.0])])
    with pytest.raises(ValueError, match="does not belong"):
        vectors.upsert_vectors(conn, ds, "edges", [vectors.entity_row(1, vec(1))])
    with pytest.raises(ValueError, match="metadata"):
        vectors.upsert_vectors(conn, ds, "chunks", [vectors.VectorRow("chunk-1", vec(1))])
    with pytest.raises(ValueError, match="metadata column"):
        vectors.knn(conn, ds, "chunks", vec(1), 3, where={"text": "x"})
    other = datasets.get_or_create_dataset(conn, "no-embeddings").id
    with pytest.raises(ValueError, match="set_embedding"):
        vectors.upsert_vectors(conn, other, "entities", [vectors.entity_row(1, vec(1))])
    assert vectors.knn(conn, other, "entities", vec(1), 3) == []
    # A failed batch writes nothing: the delete and the inserts share one savepoint.
    vectors.upsert_vectors(conn, ds, "entities", [vectors.entity_row(1, vec(1))])
    with pytest.raises(ValueError):
        vectors.upsert_vectors(
            conn, ds, "entities", [vectors.entity_row(1, vec(2)), vectors.entity_row(2, [1.0])]
        )
    assert count(conn, f'SELECT count(*) FROM "dataset-{ds}-entities"') == 1


# --- a pipeline-shaped fixture --------------------------------------------------------


@dataclass
class Stored:
    doc: int
    chunks: list[int] = field(default_factory=list)
    summaries: list[int] = field(default_factory=list)
    entities: dict[str, int] = field(default_factory=dict)
    edges: dict[str, int] = field(default_factory=dict)


def entity(conn, ds: int, art: int, session: str, name: str, type_: str = "thing") -> int:
    eid, created = graph.upsert_entity(conn, ds, name, type_, f"{name} summary")
    graph.link_entity(conn, eid, art, session)
    if created:
        vectors.upsert_vectors(conn, ds, "entities", [vectors.entity_row(eid, vec(eid))])
    return eid


def edge(conn, ds: int, art: int, session: str, src: int, dst: int, rel: str, fact: str) -> int:
    """Insert a fact, or link the current one that restates it (as resolution would)."""
    for current in graph.current_edges_touching(conn, ds, [src]):
        if (current["source_entity_id"], current["target_entity_id"], current["relation"]) == (
            src,
            dst,
            rel,
        ):
            graph.link_edge(conn, current["id"], art, session)
            return current["id"]
    eid = graph.insert_edge(conn, ds, src, dst, rel, fact, valid_at="2024-01-01", artifact_id=art)
    graph.link_edge(conn, eid, art, session)
    vectors.upsert_vectors(conn, ds, "edges", [vectors.edge_row(eid, vec(1000 + eid))])
    return eid


def store_doc_b(conn, ds: int) -> Stored:
    """A short, unchunked text: the graph links to the document itself."""
    text = "Alice works at Acme. Acme is based in Paris."
    b = Stored(artifacts.insert_document(conn, dataset_id=ds, text=text, session_id="s2"))
    with transaction(conn):
        e = b.entities
        for name in ("Alice", "Acme", "Paris"):
            e[name] = entity(conn, ds, b.doc, "s2", name)
        b.edges["works"] = edge(
            conn, ds, b.doc, "s2", e["Alice"], e["Acme"], "works_at", "Alice works at Acme."
        )
        b.edges["paris"] = edge(
            conn, ds, b.doc, "s2", e["Acme"], e["Paris"], "based_in", "Acme is based in Paris."
        )
        artifacts.update_status(conn, b.doc, "complete")
    return b


CHUNKS = [
    "Alice works at Acme in sales.",
    "Alice met Bob in March. Bob knows Alice well.",
    "Acme moved to Berlin in 2025.",
]


def store_doc_a(conn, ds: int) -> Stored:
    """A document of three chunks, stored as the pipeline does it: chunk by chunk."""
    text = " ".join(CHUNKS)
    a = Stored(
        artifacts.insert_document(
            conn,
            dataset_id=ds,
            text=text,
            session_id="s1",
            valid_at="2025-06-01T00:00:00Z",
            source="notes.md",
            chunk_count=3,
            settings={"chunk_size": 32, "chunk_overlap_percent": 20},
        )
    )
    offset = 0
    for i, chunk_text in enumerate(CHUNKS):
        with transaction(conn):
            start = text.encode().index(chunk_text.encode(), offset)
            end = start + len(chunk_text.encode())
            offset = end
            chunk = artifacts.insert_chunk(
                conn,
                document_id=a.doc,
                text=chunk_text,
                chunk_index=i,
                start_offset=start,
                end_offset=end,
                tokens=8,
                overlap_tokens=0 if i == 0 else 2,
                context="Notes > Work",
            )
            inference = inferences.record_inference(
                conn, stage="summarize_chunk", model="summ-1", reasoning="low", dataset_id=ds
            )
            summary = artifacts.insert_summary(
                conn, chunk_id=chunk, text=f"Summary {i}: {chunk_text}", inference_id=inference
            )
            a.chunks.append(chunk)
            a.summaries.append(summary)
            e = a.entities
            if i == 0:
                e["Alice"] = entity(conn, ds, chunk, "s1", "alice")  # same as B's "Alice"
                e["Acme"] = entity(conn, ds, chunk, "s1", "ACME")
                a.edges["works"] = edge(
                    conn, ds, chunk, "s1", e["Alice"], e["Acme"], "works_at", "Alice works at Acme."
                )
            elif i == 1:
                e["Alice"] = entity(conn, ds, chunk, "s1", "Alice")
                e["Bob"] = entity(conn, ds, chunk, "s1", "Bob")
                a.edges["knows"] = edge(
                    conn, ds, chunk, "s1", e["Bob"], e["Alice"], "knows", "Bob knows Alice."
                )
                e["Acme"] = entity(conn, ds, chunk, "s1", "Acme")
                edge(
                    conn, ds, chunk, "s1", e["Alice"], e["Acme"], "works_at", "Alice works at Acme."
                )
            else:
                e["Acme"] = entity(conn, ds, chunk, "s1", "Acme")
                e["Berlin"] = entity(conn, ds, chunk, "s1", "Berlin")
                berlin = edge(
                    conn, ds, chunk, "s1", e["Acme"], e["Berlin"], "based_in", "Acme is in Berlin."
                )
                a.edges["berlin"] = berlin
                paris = graph.current_edges_touching(conn, ds, [e["Acme"]])
                for old in paris:
                    if old["relation"] == "based_in" and old["id"] != berlin:
                        assert graph.close_edge(
                            conn, old["id"], "2025-01-01", None, berlin, "Acme moved to Berlin"
                        )
            vectors.upsert_vectors(
                conn, ds, "chunks", [vectors.chunk_row(chunk, a.doc, i, vec(100 + i))]
            )
            vectors.upsert_vectors(
                conn,
                ds,
                "summaries",
                [vectors.summary_row(summary, chunk, a.doc, i, vec(200 + i))],
            )
    artifacts.update_status(conn, a.doc, "complete")
    return a


def assert_vectors_consistent(conn, ds: int) -> None:
    for s in vectors.vec_stats(conn, ds):
        assert s.exists
        assert (s.held, s.missing, s.orphans, s.pending) == (s.should, 0, 0, 0), s


# --- artifacts and the graph ----------------------------------------------------------


def test_document_chunks_and_summaries(conn, ds: int) -> None:
    b = store_doc_b(conn, ds)
    a = store_doc_a(conn, ds)
    doc = artifacts.get_document(conn, a.doc)
    assert doc["source"] == "notes.md" and doc["status"] == "complete"
    assert doc["settings"] == '{"chunk_overlap_percent": 20, "chunk_size": 32}'
    assert [c["chunk_index"] for c in doc["chunks"]] == [0, 1, 2]
    full = doc["text"].encode()
    for chunk, summary_id in zip(doc["chunks"], a.summaries, strict=True):
        # Same kind, session, valid_at, created_at as the parent; text an exact slice.
        for key in ("kind", "session_id", "valid_at", "created_at", "dataset_id"):
            assert chunk[key] == doc[key]
        assert full[chunk["start_offset"] : chunk["end_offset"]].decode() == chunk["text"]
        summary = chunk["summary"]
        assert summary["id"] == summary_id and summary["kind"] == "chunk_summary"
        assert (summary["model"], summary["reasoning"]) == ("summ-1", "low")
        for key in ("session_id", "valid_at", "created_at"):
            assert summary[key] == chunk[key]
        assert summary["chunk_index"] is None
    assert {e["name"] for e in doc["entities"]} == {"Alice", "Acme", "Bob", "Berlin"}
    assert {e["fact"] for e in doc["edges"]} >= {"Bob knows Alice.", "Acme is in Berlin."}
    # Chunks are keyword-indexed as embedded (context first); the unchunked B itself too.
    if conn.dialect == "sqlite":
        fts_text = db.scalar(
            conn, "SELECT text FROM gb_fts_artifacts WHERE rowid = ?", (a.chunks[0],)
        )
        assert fts_text == "Notes > Work\n\n" + CHUNKS[0]
    found = artifacts.search_artifacts_fts(conn, ds, "Notes Work")  # the context's words
    assert a.chunks[0] in {h["artifact_id"] for h in found}
    assert indexed(conn, "gb_fts_artifacts", a.doc) == 0
    assert indexed(conn, "gb_fts_artifacts", b.doc) == 1
    hits = artifacts.search_artifacts_fts(conn, ds, "Berlin moved")
    kinds = [
        db.scalar(conn, "SELECT kind FROM gb_artifacts WHERE id = ?", (h["artifact_id"],))
        for h in hits
    ]
    assert (hits[0]["artifact_id"], kinds[0]) == (a.chunks[2], "document")
    assert kinds[1:] == ["chunk_summary"]  # the chunk's summary
    assert chunk_indexes(conn, a.doc) == [0, 1, 2]
    assert_vectors_consistent(conn, ds)
    assert integrity_problems(conn) == []


def test_a_chunk_or_summary_cannot_be_stored_twice(conn, ds: int) -> None:
    a = store_doc_a(conn, ds)
    with pytest.raises(Conflict):
        artifacts.insert_chunk(
            conn, document_id=a.doc, text="x", chunk_index=1, start_offset=0, end_offset=1, tokens=1
        )
    with pytest.raises(Conflict):
        artifacts.insert_summary(conn, chunk_id=a.chunks[0], text="again")
    with pytest.raises(ValueError, match="chunk_summary"):
        artifacts.insert_document(conn, dataset_id=ds, text="x", kind="chunk_summary")
    with pytest.raises(ValueError, match="not a chunk"):
        artifacts.insert_summary(conn, chunk_id=a.doc, text="summary of a document")


def test_entities_dedupe_by_normalized_name_and_type(conn, ds: int) -> None:
    assert graph.normalize_name("  ÉCOLE \t Polytechnique\n") == "école polytechnique"
    assert graph.normalize_name("Straße") == graph.normalize_name("STRASSE")
    assert graph.normalize_name("Cafe\u0301") == graph.normalize_name("Café")
    first, created = graph.upsert_entity(conn, ds, "École Polytechnique", "org", "")
    same, created_again = graph.upsert_entity(conn, ds, "ÉCOLE  polytechnique", "org", "A school")
    assert created and not created_again and same == first
    assert graph.get_entity(conn, first)["summary"] == "A school"  # an empty one is filled
    graph.upsert_entity(conn, ds, "école polytechnique", "org", "Another summary")
    assert graph.get_entity(conn, first)["summary"] == "A school"  # a set one is kept
    unaccented, _ = graph.upsert_entity(conn, ds, "ecole polytechnique", "org")
    assert unaccented != first  # accents are not removed: only case, width and spaces
    assert graph.upsert_entity(conn, ds, "École Polytechnique", "place")[0] != first
    with pytest.raises(Conflict):
        graph.insert_entity(conn, ds, "école   POLYTECHNIQUE", "org")
    assert graph.entity_exact(conn, ds, "École polytechnique", "org")["id"] == first


def test_close_edge(conn, ds: int) -> None:
    alice = graph.insert_entity(conn, ds, "Alice", "person")
    acme = graph.insert_entity(conn, ds, "Acme", "org")
    old = graph.insert_edge(conn, ds, alice, acme, "works_at", "Alice works at Acme.")
    new = graph.insert_edge(
        conn, ds, alice, acme, "left", "Alice left Acme.", valid_at="2025-03-01"
    )
    assert {e["id"] for e in graph.current_edges_touching(conn, ds, [acme])} == {old, new}
    assert graph.close_edge(conn, old, "2025-03-01", "2025-03-02T00:00:00Z", new, "she left")
    closed = graph.get_edge(conn, old)
    assert closed["invalid_at"] == "2025-03-01" and closed["expired_at"] == "2025-03-02T00:00:00Z"
    assert (closed["invalidated_by_edge_id"], closed["invalidation_reason"]) == (new, "she left")
    assert [e["id"] for e in graph.current_edges_touching(conn, ds, [alice])] == [new]
    assert not graph.close_edge(conn, old, "2030-01-01")  # already closed: unchanged
    assert graph.get_edge(conn, old)["invalid_at"] == "2025-03-01"
    with pytest.raises(NotFound):
        graph.close_edge(conn, 9999, "2025-01-01")
    other = datasets.get_or_create_dataset(conn, "other").id
    with pytest.raises(NotFound):
        graph.insert_edge(conn, other, alice, acme, "x", "cross-dataset edge")


def test_a_facts_candidates_are_the_nearest_however_many_facts_its_ends_have(conn, ds: int) -> None:
    """Resolution compares an extracted fact from Alice to Bob with the stored facts
    touching them, current first, then Alice-to-Bob, then with one of the two, newest
    first. Around a hub those are read from each end's newest facts, not all of them:
    the result must be what ranking every fact would give, old Alice-to-Bob facts and
    an ALICE of another type included."""
    rng = random.Random(7)
    alice = graph.insert_entity(conn, ds, "Alice", "Person")
    robot = graph.insert_entity(conn, ds, "ALICE", "Robot")  # the same name, kept apart
    bob = graph.insert_entity(conn, ds, "Bob", "Person")
    others = [graph.insert_entity(conn, ds, f"Other {k}", "Thing") for k in range(6)]
    named = {alice: "alice", robot: "alice", bob: "bob"}
    ends = list(named)
    pairs = [(alice, bob)] * 4 + [(robot, bob)] * 2 + [(bob, alice)] * 2
    pairs += [(rng.choice(ends), rng.choice(others)) for _ in range(70)]
    pairs += [(rng.choice(others), rng.choice(ends)) for _ in range(70)]
    pairs += [(alice, bob), (others[0], others[1])]  # a recent one, and one touching neither
    for n, (source, target) in enumerate(pairs):
        edge = graph.insert_edge(conn, ds, source, target, "R", f"Fact {n}.")
        if rng.random() < 0.4:  # the oldest Alice-to-Bob facts among the closed ones
            graph.close_edge(conn, edge, "2020-01-01")
    rows = db.query(
        conn,
        "SELECT id, source_entity_id, target_entity_id, invalid_at IS NULL AS cur FROM gb_edges",
    )

    def ranked(closed: bool, limit: int) -> list[int]:
        touching = [
            r
            for r in rows
            if (r["source_entity_id"] in named or r["target_entity_id"] in named)
            and (closed or r["cur"])
        ]
        near = [
            (
                bool(r["cur"]),
                (named.get(r["source_entity_id"]) == "alice")
                + (named.get(r["target_entity_id"]) == "bob"),
                r["id"],
            )
            for r in touching
        ]
        return [key[2] for key in sorted(near, reverse=True)[:limit]]

    assert sum(1 for r in rows if not r["cur"]) > 24  # closed ones enough to matter
    for closed in (True, False):
        for limit in (3, 24, 1000):
            got = graph.current_edges_touching(
                conn,
                ds,
                names=("alice", "bob"),
                nearest=("alice", "bob"),
                limit=limit,
                closed=closed,
            )
            assert [r["id"] for r in got] == ranked(closed, limit), (closed, limit)
            assert {(r["source_norm"], r["target_norm"]) for r in got[:1]} == {("alice", "bob")}


# Each hostile text, and the names of the entities that share one of its words, best
# first: FTS5 syntax in it is never syntax ("name :" is no column filter, NOT no operator).
HOSTILE_FTS = {
    'C++ "Foo" AND': ["C++ Foo", "Café And Co"],  # c, foo, and: Foo's two words beat one
    "NEAR(a b": [],
    "*": [],
    '"': [],
    "'": [],
    "": [],
    "   ": [],
    "a:b": [],
    "^start": [],
    "- NOT OR": [],
    "name : x": [],
    "{name}: y": [],
    "🚀🚀": [],
    "(((": [],
    "foo*": ["C++ Foo"],
    "AND OR NOT": ["Café And Co"],
    "CAFE": ["Café And Co"],  # case and accents folded
    "co-op": ["Café And Co"],
}


@pytest.mark.parametrize("hostile", list(HOSTILE_FTS))
def test_fts_candidates_take_any_text(conn, ds: int, hostile: str) -> None:
    ids = {
        graph.insert_entity(conn, ds, "C++ Foo", "language"): "C++ Foo",
        graph.insert_entity(conn, ds, "Café And Co", "org"): "Café And Co",
    }
    doc = artifacts.insert_document(
        conn, dataset_id=ds, text="Notes on C++ Foo and the Café co-op.", source="n.txt"
    )
    got = graph.entity_candidates_fts(conn, ds, hostile)
    assert [ids[row["id"]] for row in got] == HOSTILE_FTS[hostile]
    hits = artifacts.search_artifacts_fts(conn, ds, hostile)
    assert [h["artifact_id"] for h in hits] == ([doc] if HOSTILE_FTS[hostile] else [])


@pytest.mark.parametrize("conn", ["sqlite"], indirect=True)  # SQLite's own tables
def test_words_in_half_the_rows_are_searched_for_only_when_the_others_run_short(
    conn, ds: int
) -> None:
    """A word in half the rows or more weighs nothing in bm25, so the rows matching the
    other words are ranked without scoring every row it is in: the same hits in the same
    order as FTS5's own ranking of every word, and past those the rows holding only the
    common word, as FTS5 ranks them."""
    docs = []
    for i in range(10):
        # "the" in every row; "harbour" in three, as often as their rank, lengths apart.
        words = ["the"] * (i + 1) + ["harbour"] * (3 - i if i < 3 else 0) + ["tide"] * (i * 2)
        docs.append(
            artifacts.insert_document(conn, dataset_id=ds, text=" ".join(words), source=f"{i}.txt")
        )
    table = "gb_fts_artifacts"
    assert fts.telling_words(conn, table, ["the", "harbour"]) == ["harbour"]
    assert fts.telling_words(conn, table, ["the", "tide"]) == ["the", "tide"]  # 9 of 10: both
    assert fts.telling_words(conn, table, ["harbour"]) == ["harbour"]

    def fts5_ranking(limit: int) -> list[int]:
        rows = db.query(
            conn,
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?",
            (fts.fts_query("the harbour"), limit),
        )
        return [r["rowid"] for r in rows]

    hits = artifacts.search_artifacts_fts(conn, ds, "the harbour", limit=3)
    assert [h["artifact_id"] for h in hits] == fts5_ranking(3) == docs[:3]
    hits = artifacts.search_artifacts_fts(conn, ds, "the harbour", limit=5)
    assert [h["artifact_id"] for h in hits] == fts5_ranking(5)
    assert set(docs[:3]) < {h["artifact_id"] for h in hits}


def test_keyword_hits_are_the_dataset_s_own_with_one_dataset_or_several(conn, ds: int) -> None:
    """With one dataset the keyword search leaves out its dataset test (every row is the
    dataset's); a second dataset's rows never come back in the first's hits."""
    mine = artifacts.insert_document(conn, dataset_id=ds, text="zebra crossing", source="a.txt")
    assert [h["artifact_id"] for h in artifacts.search_artifacts_fts(conn, ds, "zebra")] == [mine]
    other = datasets.get_or_create_dataset(conn, "other").id
    theirs = artifacts.insert_document(
        conn, dataset_id=other, text="zebra zebra zebra", source="b.txt"
    )
    assert [h["artifact_id"] for h in artifacts.search_artifacts_fts(conn, ds, "zebra")] == [mine]
    assert [h["artifact_id"] for h in artifacts.search_artifacts_fts(conn, other, "zebra")] == [
        theirs
    ]
    datasets.delete_dataset(conn, other)  # its rows go with it: alone again
    assert [h["artifact_id"] for h in artifacts.search_artifacts_fts(conn, ds, "zebra")] == [mine]


def test_hit_kinds_say_which_documents_are_superseded(conn, ds: int) -> None:
    """hits.kinds tells a superseded document, and its chunks, by the superseded_by
    index: each artifact's kind, parent and its document's superseded_by."""
    old = artifacts.insert_document(conn, dataset_id=ds, text="old words " * 50, source="a")
    new = artifacts.insert_document(conn, dataset_id=ds, text="new words", source="a")
    chunk = artifacts.insert_chunk(
        conn,
        document_id=old,
        text="old words",
        chunk_index=0,
        start_offset=0,
        end_offset=9,
        tokens=2,
    )
    artifacts.set_superseded(conn, old, new)
    got = hit_rows.kinds(conn, [chunk, new, old, 99999])
    assert {i: (r["kind"], r["parent_id"], r["superseded_by"]) for i, r in got.items()} == {
        chunk: ("document", old, new),  # a chunk is of its document's kind
        new: ("document", None, None),
        old: ("document", None, new),
    }


def test_fts_candidates_rank_and_fold(conn, ds: int) -> None:
    cafe = graph.insert_entity(conn, ds, "Café de Flore", "place")
    flore = graph.insert_entity(conn, ds, "Flore", "person")
    other = datasets.get_or_create_dataset(conn, "other").id
    graph.insert_entity(conn, other, "Café de Flore", "place")
    got = graph.entity_candidates_fts(conn, ds, "cafe flore")
    assert [r["id"] for r in got] == [cafe, flore]  # both words before one; one dataset
    assert graph.entity_candidates_fts(conn, ds, "summary") == []  # names only
    graph.update_entity_summary(conn, cafe, "a literary café")
    assert graph.entity_candidates_fts(conn, ds, "literary") == []  # names only, still
    assert cafe in any_fts.entity_ids(conn, ds, "literary", 5, names=False)


# --- forget ---------------------------------------------------------------------------


def test_forget_a_document(conn, ds: int) -> None:
    b = store_doc_b(conn, ds)
    a = store_doc_a(conn, ds)
    assert a.entities["Alice"] == b.entities["Alice"] and a.edges["works"] == b.edges["works"]
    paris = graph.get_edge(conn, b.edges["paris"])
    assert paris["invalidated_by_edge_id"] == a.edges["berlin"]  # A closed B's fact
    works = graph.get_edge(conn, a.edges["works"])
    assert works["artifact_id"] == b.doc  # first extracted from B
    assert_vectors_consistent(conn, ds)
    before = {s.index: s.held for s in vectors.vec_stats(conn, ds)}

    report = forget.forget(conn, a.doc)

    gone = [a.doc, *a.chunks, *a.summaries]
    assert (report.artifacts, report.chunks, report.summaries) == (7, 3, 3)
    assert (report.entities, report.edges) == (2, 2)  # Bob, Berlin; knows, berlin
    assert report.edges_reopened == 1 and report.vectors == 3 + 3 + 2 + 2
    assert report.fts_rows == 3 + 3 + 2 + 2  # chunks, summaries, entities, edges
    for art in gone:
        assert artifacts.get_artifact(conn, art) is None
        assert indexed(conn, "gb_fts_artifacts", art) == 0
        assert (
            count(conn, "SELECT count(*) FROM gb_entity_artifacts WHERE artifact_id = ?", art) == 0
        )
        assert count(conn, "SELECT count(*) FROM gb_edge_artifacts WHERE artifact_id = ?", art) == 0
    for name in ("Bob", "Berlin"):
        eid = a.entities[name]
        assert graph.get_entity(conn, eid) is None
        assert indexed(conn, "gb_fts_entities", eid) == 0
    for key in ("knows", "berlin"):
        assert graph.get_edge(conn, a.edges[key]) is None
        assert indexed(conn, "gb_fts_edges", a.edges[key]) == 0
    # What B also supports survives, its provenance now B's alone.
    for name in ("Alice", "Acme", "Paris"):
        assert graph.get_entity(conn, b.entities[name]) is not None
    assert graph.get_edge(conn, b.edges["works"])["artifact_id"] == b.doc
    sessions = {
        r["session_id"] for r in db.query(conn, "SELECT session_id FROM gb_session_entities")
    }
    assert sessions == {"s2"}
    # B's fact was closed only by A's edge: it is current again.
    reopened = graph.get_edge(conn, b.edges["paris"])
    assert reopened["invalid_at"] is None and reopened["expired_at"] is None
    assert reopened["invalidated_by_edge_id"] is None
    # Vectors: exactly A's gone, every index holding what it should.
    after = {s.index: s.held for s in vectors.vec_stats(conn, ds)}
    assert {k: before[k] - after[k] for k in before} == {
        "entities": 2,
        "edges": 2,
        "chunks": 3,
        "summaries": 3,
    }
    assert after["chunks"] == after["summaries"] == 0
    assert_vectors_consistent(conn, ds)
    assert integrity_problems(conn) == []
    with pytest.raises(NotFound):
        forget.forget(conn, a.doc)


def test_forget_repoints_an_edge_to_its_earliest_remaining_source(conn, ds: int) -> None:
    a = store_doc_a(conn, ds)
    b = store_doc_b(conn, ds)  # after A this time: the works_at edge starts at A's chunk 0
    assert graph.get_edge(conn, a.edges["works"])["artifact_id"] == a.chunks[0]
    report = forget.forget(conn, a.doc)
    assert report.edges_repointed == 1
    assert graph.get_edge(conn, b.edges["works"])["artifact_id"] == b.doc
    assert_vectors_consistent(conn, ds)


def test_forget_refuses_one_chunk_and_keeps_everything(conn, ds: int) -> None:
    # A chunk taken out alone would leave its document complete with a hole.
    a = store_doc_a(conn, ds)
    with pytest.raises(forget.NotADocument, match=f"forget the document: gb forget {a.doc}"):
        forget.forget(conn, a.chunks[1])
    assert graph.get_entity(conn, a.entities["Bob"]) is not None
    assert chunk_indexes(conn, a.doc) == [0, 1, 2]
    assert_vectors_consistent(conn, ds)


@pytest.mark.parametrize("conn", ["sqlite"], indirect=True)  # SQLite's own tables
def test_forget_is_one_transaction(conn, ds: int) -> None:
    a = store_doc_a(conn, ds)
    held = [s.held for s in vectors.vec_stats(conn, ds)]
    # A real failure halfway: SQLite refuses to delete an entity.
    conn.execute(
        "CREATE TEMP TRIGGER no_delete BEFORE DELETE ON gb_entities "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    with pytest.raises(Conflict, match="refused"):
        forget.forget(conn, a.doc)
    assert conn.get_autocommit()
    assert chunk_indexes(conn, a.doc) == [0, 1, 2]
    assert [s.held for s in vectors.vec_stats(conn, ds)] == held
    assert count(conn, "SELECT count(*) FROM gb_fts_artifacts") == 6
    # Inside a caller's transaction, rolling that back undoes the forget as well.
    conn.execute("DROP TRIGGER temp.no_delete")
    with pytest.raises(RuntimeError), transaction(conn):
        forget.forget(conn, a.doc)
        assert artifacts.get_artifact(conn, a.doc) is None
        raise RuntimeError
    assert artifacts.get_artifact(conn, a.doc) is not None
    assert_vectors_consistent(conn, ds)


# --- documents: finding, listing, pending ---------------------------------------------


def test_find_list_and_supersede(conn, ds: int) -> None:
    first = artifacts.insert_document(conn, dataset_id=ds, text="v1", source="a.md")
    second = artifacts.insert_document(conn, dataset_id=ds, text="v1", source="a.md")
    sha = artifacts.get_artifact(conn, first)["content_sha256"]
    assert sha == hashlib.sha256(b"v1").hexdigest()
    assert artifacts.find_document(conn, ds, sha)["id"] == second  # latest
    assert artifacts.find_document(conn, ds, sha, status="complete") is None
    artifacts.update_status(conn, first, "complete")
    assert artifacts.find_document(conn, ds, sha, status="complete")["id"] == first
    newer = artifacts.insert_document(conn, dataset_id=ds, text="v2", source="a.md")
    artifacts.set_superseded(conn, second, newer)
    assert artifacts.find_document(conn, ds, sha)["id"] == first
    assert artifacts.find_by_source(conn, ds, "a.md")["id"] == newer
    listed = artifacts.list_documents(conn, ds)
    assert [d["id"] for d in listed] == [newer, first]
    assert "text" not in listed[0] and listed[0]["preview"] == "v2"
    every = artifacts.list_documents(conn, None, include_superseded=True)
    assert [d["id"] for d in every] == [newer, second, first]
    forget.forget(conn, newer)  # superseded_by is SET NULL: second is current again
    assert artifacts.find_document(conn, ds, sha)["id"] == second


def test_pending_embeddings_are_reported_not_missing(conn, ds: int) -> None:
    doc = artifacts.insert_document(conn, dataset_id=ds, text="x y", chunk_count=2, pending="embed")
    for i in range(2):
        chunk = artifacts.insert_chunk(
            conn, document_id=doc, text="x", chunk_index=i, start_offset=0, end_offset=1, tokens=1
        )
        artifacts.insert_summary(conn, chunk_id=chunk, text="s")
        eid, _ = graph.upsert_entity(conn, ds, f"E{i}", "t")
        graph.link_entity(conn, eid, chunk)
    by = {s.index: s for s in vectors.vec_stats(conn, ds)}
    assert (by["chunks"].should, by["chunks"].pending, by["chunks"].missing) == (2, 2, 0)
    assert (by["summaries"].pending, by["entities"].pending, by["edges"].should) == (2, 2, 0)
    assert [d["id"] for d in artifacts.pending_documents(conn, ds, "embed")] == [doc]
    assert artifacts.remove_pending(conn, doc, "embed") == []
    by = {s.index: s for s in vectors.vec_stats(conn, ds)}
    assert (by["chunks"].pending, by["chunks"].missing, by["entities"].missing) == (0, 2, 2)
    assert artifacts.add_pending(conn, doc, "summarize_chunk") == ["summarize_chunk"]
    assert artifacts.pending_documents(conn, ds, "embed") == []
    assert [d["id"] for d in artifacts.pending_documents(conn, ds)] == [doc]  # still storing


# --- facts placed in time (settle_in_time) -------------------------------------------


def _intervals(conn) -> dict[str, tuple[str | None, int | None]]:
    rows = db.query(conn, "SELECT id, fact, invalid_at, invalidated_by_edge_id FROM gb_edges")
    names = {r["id"]: r["fact"] for r in rows}
    return {
        r["fact"]: (r["invalid_at"] and r["invalid_at"][:4], names.get(r["invalidated_by_edge_id"]))
        for r in rows
    }


def _fact(conn, ds: int, ends: tuple[int, int], fact: str, year: int) -> int:
    return graph.insert_edge(conn, ds, *ends, "R", fact, valid_at=f"{year}-01-01T00:00:00.000Z")


def test_only_the_named_contradictions_are_settled(conn, ds: int) -> None:
    alice, acme = graph.insert_entity(conn, ds, "Alice"), graph.insert_entity(conn, ds, "Acme")
    ends = (alice, acme)
    # Two facts that held side by side, both over when a third begins: each ends there,
    # neither closes the other.
    job = _fact(conn, ds, ends, "job", 2015)
    advises = _fact(conn, ds, ends, "advises", 2018)
    retired = _fact(conn, ds, ends, "retired", 2024)
    graph.settle_in_time(conn, retired, [job, advises], "retired")
    assert _intervals(conn) == {
        "job": ("2024", "retired"),
        "advises": ("2024", "retired"),
        "retired": (None, None),
    }
    # A second chain is not merged with the first by a fact that ends one of each.
    home = _fact(conn, ds, ends, "home", 2016)
    both = _fact(conn, ds, ends, "moved and quit", 2025)
    graph.settle_in_time(conn, both, [retired, home], "both")
    got = _intervals(conn)
    assert got["job"] == got["advises"] == ("2024", "retired")
    assert got["retired"] == got["home"] == ("2025", "moved and quit")


@pytest.mark.parametrize("order", ["forwards", "backwards", "middle last"])
def test_a_chain_ends_each_fact_where_the_next_begins_in_any_order(conn, ds, order) -> None:
    alice, acme = graph.insert_entity(conn, ds, "Alice"), graph.insert_entity(conn, ds, "Acme")
    years = {"first": 2015, "second": 2018, "third": 2021}
    names = {"forwards": ["first", "second", "third"], "backwards": ["third", "second", "first"]}
    names["middle last"] = ["first", "third", "second"]
    stored: list[int] = []
    for name in names[order]:
        edge = _fact(conn, ds, (alice, acme), name, years[name])
        # The resolver names the current fact only, as an LLM shown it would.
        current = [e for e in stored if graph.get_edge(conn, e)["invalid_at"] is None]
        graph.settle_in_time(conn, edge, current, "replaced")
        stored.append(edge)
    assert _intervals(conn) == {
        "first": ("2018", "second"),
        "second": ("2021", "third"),
        "third": (None, None),
    }
    held = db.query(conn, "SELECT fact FROM gb_edges WHERE invalid_at IS NULL")
    assert held == [{"fact": "third"}]


def test_a_tie_is_settled_the_same_whichever_came_first(conn, ds) -> None:
    alice, acme = graph.insert_entity(conn, ds, "Alice"), graph.insert_entity(conn, ds, "Acme")
    outcomes = []
    for first, second in (("works at Acme", "works at Beta"), ("works at Beta", "works at Acme")):
        conn.execute("DELETE FROM gb_edges")
        a = _fact(conn, ds, (alice, acme), first, 2020)
        b = _fact(conn, ds, (alice, acme), second, 2020)
        graph.settle_in_time(conn, b, [a], "replaced")
        outcomes.append(_intervals(conn))
    assert outcomes[0] == outcomes[1]
