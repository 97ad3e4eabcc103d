"""`gb search`: BM25, vector KNN and their fusion (convex, or reciprocal rank), on licence
texts nobody here wrote, embedded by the test server's deterministic embeddings."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from gligabao.base.lines import line_range, lines_between, newline_offsets
from gligabao.search.hybrid import fuse, search
from gligabao.store import open_db
from gligabao.store.artifacts import insert_chunk, insert_document
from gligabao.store.datasets import find_dataset, get_or_create_dataset
from tests.support.helpers import SECRET, rows
from tests.support.llm_server import Fault

HIT_KEYS = {
    "score",
    "ranks",
    "artifact_id",
    "document_id",
    "kind",
    "source",
    "start_offset",
    "end_offset",
    "line_start",
    "line_end",
    "section",
    "text",
    "summary",
}


def _hits(gb_cli, *args: str) -> list[dict]:
    result = gb_cli("search", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


# ------------------------------------------------------------------ fusion, by hand


def test_fusion_matches_a_hand_computed_ranking() -> None:
    # bm25: a b c d ; vector: c a e  (rrf_k = 60)
    #   a: 1/61 + 1/62   = 0.032522...
    #   c: 1/63 + 1/61   = 0.032266...
    #   b: 1/62          = 0.016129
    #   e: 1/63          = 0.015873
    #   d: 1/64          = 0.015625
    fused = fuse({"bm25": ["a", "b", "c", "d"], "vector": ["c", "a", "e"]}, rrf_k=60)
    assert [key for key, _, _ in fused] == ["a", "c", "b", "e", "d"]
    scores = dict((key, score) for key, score, _ in fused)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["d"] == pytest.approx(1 / 64)
    assert fused[0][2] == {"bm25": 1, "vector": 2}
    assert fused[3][2] == {"vector": 3}


def test_fusion_constant_changes_the_order_and_duplicates_count_once() -> None:
    # The repeated z counts once, so vector ranks z 1, w 2, y 3.
    # k = 0: x = z = 1/1 beat y = 1/2 + 1/3; k = 60: y = 1/62 + 1/63 beats x = z = 1/61.
    lists = {"bm25": ["x", "y"], "vector": ["z", "z", "w", "y"]}
    assert [key for key, _, _ in fuse(lists, rrf_k=0)] == ["x", "z", "y", "w"]
    ranked = fuse(lists, rrf_k=60)
    assert ranked[0][0] == "y" and ranked[0][2] == {"bm25": 2, "vector": 3}
    assert ranked[0][1] == pytest.approx(1 / 62 + 1 / 63)


def test_line_range_counts_lines_of_utf8_bytes() -> None:
    data = "première ligne\nzweite Zeile\nthird line\n".encode()
    second = data.index(b"zweite")
    assert line_range(data, 0, len(data)) == (1, 3)
    assert line_range(data, second, second + 6) == (2, 2)
    # A span ending with its newline ends on that line, not the next.
    assert line_range(data, 0, data.index(b"\n") + 1) == (1, 1)
    assert line_range(data, second, len(data) - 1) == (2, 3)


def test_lines_between_counts_as_line_range_does() -> None:
    """Many spans of one document are numbered from its newline offsets (gb facts,
    gb export): the same lines as counting each span's document from its start."""
    rng = random.Random(7)
    for _ in range(2000):
        data = bytes(rng.choice(b"ab\n") for _ in range(rng.randint(0, 40)))
        start = rng.randint(0, len(data))
        end = rng.randint(start, len(data))
        assert lines_between(newline_offsets(data), start, end) == line_range(data, start, end)


def test_library_hits_point_at_lines_and_map_summaries_to_their_chunk(tmp_path: Path) -> None:
    text = "Alpha line\nβeta line two\nthe zebra grazes here\nlast line\n"
    data = text.encode()
    conn = open_db(str(tmp_path / "lib.db"))
    ds = get_or_create_dataset(conn, "default")
    doc = insert_document(
        conn, dataset_id=ds.id, text=text, source="crafted.txt", chunk_count=2, status="complete"
    )
    # Chunks stored without their lines, as before they were kept: counted from the text.
    cut = data.index(b"the zebra")
    insert_chunk(
        conn,
        document_id=doc,
        text=data[:cut].decode(),
        chunk_index=0,
        start_offset=0,
        end_offset=cut,
        tokens=6,
    )
    second = insert_chunk(
        conn,
        document_id=doc,
        text=data[cut:].decode(),
        chunk_index=1,
        start_offset=cut,
        end_offset=len(data),
        tokens=6,
        section="Pasture",
    )
    from gligabao.store.artifacts import insert_summary

    insert_summary(conn, chunk_id=second, text="An animal eats grass (zebra).")
    hits = search(conn, ds, "zebra", method="bm25")
    assert len(hits) == 1  # the chunk and its summary are one entry
    hit = hits[0]
    assert hit.artifact_id == second and hit.document_id == doc
    assert (hit.line_start, hit.line_end) == (3, 4)
    assert (hit.start_offset, hit.end_offset) == (cut, len(data))
    assert hit.section == "Pasture" and hit.summary == "An animal eats grass (zebra)."
    # BM25 alone: the hit's score is BM25's own (FTS5's rank negated), not a fused one.
    best = (
        "SELECT -rank AS score FROM gb_fts_artifacts WHERE gb_fts_artifacts MATCH ? ORDER BY rank"
    )
    score = conn.execute(best, ("zebra",)).fetchone()["score"]
    assert hit.ranks == {"bm25": 1} and hit.score == pytest.approx(score) and score > 0
    # Only the summary says "animal": the hit is still the chunk.
    assert [h.artifact_id for h in search(conn, ds, "animal", method="bm25")] == [second]
    assert search(conn, ds, "Alpha", method="bm25")[0].line_start == 1
    with pytest.raises(ValueError):
        search(conn, ds, "zebra", method="vector")


# ------------------------------------------------------------------ gb search on a corpus


def test_a_hit_on_one_line_is_cited_by_that_line(gb_cli, online) -> None:
    """As evidence is: `notes.txt:1`, never `notes.txt:1-1`; a hit over lines keeps its
    range."""
    Path("notes.txt").write_text("Ada Lovelace wrote the first program.\n")
    Path("long.txt").write_text("Grace Hopper\nbuilt the first compiler\nin 1952.\n")
    assert gb_cli("remember", "notes.txt", "long.txt", "--quiet").exit_code == 0
    shown = gb_cli("search", "Lovelace program", "--method", "bm25", "-k", "1").stdout
    assert "notes.txt:1 " in shown and "notes.txt:1-1" not in shown, shown
    shown = gb_cli("search", "Hopper compiler 1952", "--method", "bm25", "-k", "1").stdout
    assert "long.txt:1-3 " in shown, shown


def test_search_finds_words_by_bm25_and_meaning_by_vectors(gb_cli, backend, online, corpus) -> None:
    assert gb_cli("remember", *corpus, "--quiet").exit_code == 0

    # BM25: a phrase only the MPL has.
    hits = _hits(gb_cli, "Larger Work", "--method", "bm25", "-k", "5")
    assert hits and hits[0]["source"].endswith("MPL-2.0")
    assert "Larger Work" in hits[0]["text"]
    assert all(set(h) == HIT_KEYS for h in hits)
    assert all(h["ranks"].keys() == {"bm25"} for h in hits)

    # Vector: a sentence of one chunk, as the query, finds that chunk first (the test
    # server's embeddings are bags of words: the same words, the nearest vector), and the
    # ranks run in order of nearness.
    (chunk,) = _hits(gb_cli, "Larger Work", "--method", "bm25", "-k", "1")
    sentence = max(chunk["text"].split("\n\n"), key=len)
    hits = _hits(gb_cli, sentence, "--method", "vector")
    assert len(hits) == 10 and all(h["ranks"].keys() == {"vector"} for h in hits)
    assert hits[0]["artifact_id"] == chunk["artifact_id"]
    assert [h["ranks"]["vector"] for h in hits] == list(range(1, 11))
    bm25_only = _hits(gb_cli, sentence, "--method", "bm25", "-k", "10")
    assert {h["artifact_id"] for h in bm25_only} != {h["artifact_id"] for h in hits}

    # Hybrid: fused scores, descending; the lines match the byte offsets.
    hits = _hits(gb_cli, "Convey the Program in object code", "-k", "20")
    assert len(hits) == 20
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert any(len(h["ranks"]) == 2 for h in hits)
    for hit in hits:
        data = Path(Path(hit["source"]).name).read_bytes()
        assert data[hit["start_offset"] : hit["end_offset"]].decode() == hit["text"]
        before = data[: hit["start_offset"]].count(b"\n") + 1
        last = data[: max(hit["start_offset"], hit["end_offset"] - 1)].count(b"\n") + 1
        assert (hit["line_start"], hit["line_end"]) == (before, last)
    # Each chunk keeps its lines, counted as it was stored: a hit reads no document.
    assert all(
        r["line_start"]
        for r in rows("SELECT line_start FROM gb_artifacts WHERE chunk_index IS NOT NULL")
    )


def test_default_output_shows_path_lines_and_score(gb_cli, backend, online, corpus) -> None:
    assert gb_cli("remember", corpus[0], "--quiet").exit_code == 0
    result = gb_cli("search", "Grant of Patent License", "-k", "3")
    assert result.exit_code == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("1. ") and "Apache-2.0:" in first and "score" in first
    assert "Patent" in result.stdout


def test_offline_documents_are_searched_by_bm25_with_a_notice(gb_cli, monkeypatch) -> None:
    monkeypatch.setenv("GB_DB", str(Path.cwd() / "gb.db"))
    Path("notes.txt").write_text("The heron waits by the river.\nThe otter swims.\n")
    assert gb_cli("remember", "notes.txt", "--quiet").exit_code == 0
    result = gb_cli("search", "otter", "--json")
    assert result.exit_code == 0, result.stderr
    assert "BM25" in result.stderr
    (hit,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert hit["source"].endswith("notes.txt") and "otter" in hit["text"]
    assert hit["ranks"] == {"bm25": 1}
    assert (hit["line_start"], hit["line_end"]) == (1, 2)


def test_a_dataset_embedded_with_another_model_is_refused(gb_cli, online, monkeypatch) -> None:
    Path("notes.txt").write_text("The heron waits by the river. " * 40)
    assert gb_cli("remember", "notes.txt", "--quiet").exit_code == 0
    conn = open_db(str(Path.cwd() / "gb.db"))
    assert find_dataset(conn, "default").embedding_dimensions == 64
    monkeypatch.setenv("GB_EMBEDDINGS_DIMENSIONS", "32")
    result = gb_cli("search", "heron")
    assert result.exit_code == 5
    assert "64 dimensions" in result.stderr and "--method bm25" in result.stderr
    assert _hits(gb_cli, "heron", "--method", "bm25")


def test_bad_method_and_missing_dataset(gb_cli, monkeypatch) -> None:
    monkeypatch.setenv("GB_DB", str(Path.cwd() / "gb.db"))
    assert gb_cli("search", "x", "--method", "fuzzy").exit_code == 2
    Path("notes.txt").write_text("The heron waits by the river.\n")
    assert gb_cli("remember", "notes.txt", "--quiet", "--dataset", "birds").exit_code == 0
    result = gb_cli("search", "x", "--dataset", "nowhere")
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert "'nowhere'" in line and "it has 'birds'" in line  # names what there is


def test_search_without_a_database_creates_none(gb_cli) -> None:
    result = gb_cli("search", "heron", "--db", "sub/typo.db")
    assert result.exit_code == 6
    (line,) = result.stderr.strip().splitlines()
    assert "no database at sub/typo.db" in line and "gb remember" in line
    assert not Path("sub").exists()


def test_has_vectors_looks_for_one_row_and_never_counts(tmp_path: Path) -> None:
    from gligabao.store import vectors
    from gligabao.store.datasets import set_embedding

    conn = open_db(tmp_path / "v.db")
    ds = get_or_create_dataset(conn, "default")
    assert not vectors.has_vectors(conn, ds.id)  # no vector tables yet
    set_embedding(conn, ds.id, "m", 2)
    assert not vectors.has_vectors(conn, ds.id)  # tables, no rows
    vectors.upsert_vectors(conn, ds.id, "summaries", [vectors.summary_row(9, 8, 7, 0, [1, 0])])
    statements: list[str] = []
    conn.exec_trace = lambda _cursor, sql, _bindings: statements.append(sql) or True
    assert vectors.has_vectors(conn, ds.id)
    assert not vectors.has_vectors(conn, ds.id, ("chunks",))
    conn.exec_trace = None
    probes = [s for s in statements if "dataset-" in s]
    assert probes and all("count(" not in s.lower() for s in probes)
    assert all("_rowids" in s for s in probes)  # vec0's shadow table, not a scan
    vectors.delete_vectors(conn, ds.id, "summaries", ["summary-9"])
    assert not vectors.has_vectors(conn, ds.id)
    # A vec0 build without the shadow table: one row of the index itself is looked for.
    conn.execute('CREATE TABLE "dataset-7-chunks" (vector_id TEXT)')
    assert not vectors.has_vectors(conn, 7)
    conn.execute("""INSERT INTO "dataset-7-chunks" VALUES ('chunk-1')""")
    assert vectors.has_vectors(conn, 7)


def test_the_cli_leaves_depth_to_search(gb_cli, monkeypatch) -> None:
    """search() already takes max(depth, k): the command passes search.depth as it is."""
    import gligabao.service.searching as searching

    seen: dict = {}

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return search(*args, **kwargs)

    monkeypatch.setattr(searching, "search", spy)
    monkeypatch.setenv("GB_SEARCH_DEPTH", "5")
    Path("notes.txt").write_text("The heron waits by the river.\n")
    assert gb_cli("remember", "notes.txt", "--quiet").exit_code == 0
    result = gb_cli("search", "heron", "-k", "20", "--method", "bm25", "--json")
    assert result.exit_code == 0, result.stderr
    assert seen["depth"] == 5 and seen["k"] == 20


def test_hybrid_fuses_exactly_what_bm25_and_vector_each_rank(
    gb_cli, online, corpus, monkeypatch
) -> None:
    """The hybrid search runs its two halves at once on two connections; its ranking must
    still be the reciprocal rank fusion of the two lists each method gives alone, with the
    configuration's search.rrf_k, computed here by hand (search.fusion = rrf)."""
    assert gb_cli("remember", *corpus, "--quiet").exit_code == 0
    query = "distribute copies of the Program under these terms"
    depth = ("-k", "50")  # -k 50 = the default depth: each list as hybrid sees it
    bm25 = [h["artifact_id"] for h in _hits(gb_cli, query, "--method", "bm25", *depth)]
    vector = [h["artifact_id"] for h in _hits(gb_cli, query, "--method", "vector", *depth)]
    assert len(bm25) > 20 and len(vector) == 50 and bm25[:5] != vector[:5]
    monkeypatch.setenv("GB_SEARCH_FUSION", "rrf")
    monkeypatch.setenv("GB_SEARCH_RRF_K", "2")  # far from the default 60: it changes the order
    scores: dict[int, float] = {}
    for ranking in (bm25, vector):
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1 / (2 + rank)

    hybrid = _hits(gb_cli, query, "-k", "20")

    assert len(hybrid) == 20
    for hit in hybrid:
        key = hit["artifact_id"]
        ranks = {m: r.index(key) + 1 for m, r in (("bm25", bm25), ("vector", vector)) if key in r}
        assert hit["ranks"] == ranks
        assert hit["score"] == pytest.approx(scores[key])
    shown = [h["score"] for h in hybrid]
    assert shown == sorted(shown, reverse=True)
    best = sorted(scores.values(), reverse=True)[:20]  # the 20 best, ties at the edge aside
    assert shown == pytest.approx(best)
    monkeypatch.delenv("GB_SEARCH_RRF_K")
    default_k = _hits(gb_cli, query, "-k", "20")
    assert default_k[0]["score"] == pytest.approx(
        sum(1 / (60 + r) for r in default_k[0]["ranks"].values())
    )


def _spread(scores: dict[int, float]) -> dict[int, float]:
    """Each score placed in 0..1 between mean - 3 sd and mean + 3 sd of all of them."""
    values = list(scores.values())
    mean = sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return {key: min(1.0, max(0.0, (v - mean + 3 * sd) / (6 * sd))) for key, v in scores.items()}


@pytest.mark.parametrize("weight", ["0.5", "0.2"])
def test_hybrid_is_the_weighted_sum_of_each_method_s_spread_scores(
    gb_cli, online, corpus, monkeypatch, weight
) -> None:
    """By default hybrid search fuses scores, not ranks: the candidates are each method's
    50 best; each is scored by both methods (BM25's score, 0 where no word matches, here
    over all of the corpus's ~280 rows, fewer than the 400 it scores; the cosine
    similarity of its nearest vector); each method's scores over the candidates
    are spread onto 0..1 by their mean and deviation, then weighted by
    search.vector_weight."""
    assert gb_cli("remember", *corpus, "--quiet").exit_code == 0
    query = "distribute copies of the Program under these terms"

    def ids(method: str, k: str) -> dict[int, float]:
        return {
            h["artifact_id"]: h["score"] for h in _hits(gb_cli, query, "--method", method, "-k", k)
        }

    keyword, meaning = ids("bm25", "4000"), ids("vector", "4000")  # every score there is
    assert len(meaning) > 100 and len(keyword) > 50
    candidates = {*ids("bm25", "50"), *ids("vector", "50")}  # -k 50: the default depth
    w = float(weight)
    spread_bm25 = _spread({key: keyword.get(key, 0.0) for key in candidates})
    spread_vector = _spread({key: meaning[key] for key in candidates})
    expected = {key: (1 - w) * spread_bm25[key] + w * spread_vector[key] for key in candidates}
    monkeypatch.setenv("GB_SEARCH_VECTOR_WEIGHT", weight)

    hybrid = _hits(gb_cli, query, "-k", "20")

    assert len(hybrid) == 20
    for hit in hybrid:
        assert hit["score"] == pytest.approx(expected[hit["artifact_id"]])
    assert [h["score"] for h in hybrid] == pytest.approx(
        sorted(expected.values(), reverse=True)[:20]
    )


def test_a_failing_query_embedding_is_named_and_bm25_answers(
    gb_cli, backend, online, monkeypatch
) -> None:
    Path("notes.txt").write_text("The heron waits by the river. " * 40)
    assert gb_cli("remember", "notes.txt", "--quiet").exit_code == 0
    monkeypatch.setenv("GB_LLM_MAX_RETRIES", "0")
    online.add_fault(Fault(kind="500", stage="embed", times=-1))
    result = gb_cli("search", "heron")  # hybrid: by BM25 alone, said in one line
    assert result.exit_code == 0 and "heron" in result.stdout
    (line,) = result.stderr.strip().splitlines()  # one line, no traceback
    assert "embed (text-embedding-3-small): HTTP 500" in line and "BM25 only" in line
    vector = gb_cli("search", "heron", "--method", "vector")
    assert vector.exit_code == 1
    (line,) = vector.stderr.strip().splitlines()
    assert "embed (text-embedding-3-small): HTTP 500" in line
    assert SECRET not in result.stderr + result.stdout + vector.stderr
    assert _hits(gb_cli, "heron", "--method", "bm25")  # BM25 still answers
