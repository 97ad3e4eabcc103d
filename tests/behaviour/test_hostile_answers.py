"""Hostile answers from the LLM and embeddings servers: vectors
that cannot be searched (NaN, all zeros, 1e308, nulls), JSON nested past what a parser
follows, lone surrogates. Each is a failed attempt, asked again, then a clear one-line
failure with nothing of the chunk stored, or repaired (surrogates): never a traceback,
never a stored vector that breaks every later search."""

from __future__ import annotations

import json
from array import array

import pytest

from gligabao.store import open_db
from tests.support.helpers import (
    assert_database_sound,
    assert_indexes_complete,
    count,
    gb,
    rows,
    stderr_lines,
    story,
    write,
)
from tests.support.llm_server import VECTOR_FAULTS, Fault

BAD_VECTORS = sorted(VECTOR_FAULTS)


def _search(gb_cli, *args: str, code: int = 0) -> list[dict]:
    result = gb(gb_cli, "search", "--json", *args, code=code)
    return [json.loads(line) for line in result.stdout.splitlines()]


def _error_line(result) -> str:
    """The one line gb said about a failure (no traceback)."""
    assert "Traceback" not in result.stderr, result.stderr
    (line,) = [x for x in stderr_lines(result) if x.startswith("gb: ")]
    return line


# ------------------------------------------------------------------ vectors


@pytest.mark.parametrize("kind", BAD_VECTORS)
def test_a_bad_vector_is_asked_again_and_never_stored(gb_cli, online, kind: str) -> None:
    """The server answers one embeddings request with a vector that cannot be searched;
    gb asks again, stores the good one, and searching the dataset works."""
    write("notes.txt", story(1, paragraphs=3))
    online.add_fault(Fault(kind, stage="embed", times=1))

    gb(gb_cli, "remember", "notes.txt")

    fault = online.faults[0]
    assert fault.hits == 1
    assert online.calls("embed", include_faults=True) == online.calls("embed") + 1
    assert_indexes_complete(gb_cli)
    hits = _search(gb_cli, "Lisbon")
    assert hits and all(h["ranks"].get("vector") for h in hits[:1])
    assert _search(gb_cli, "Lisbon", "--method", "vector")


@pytest.mark.parametrize("kind", BAD_VECTORS)
def test_bad_vectors_every_time_fail_the_chunk_with_nothing_of_it_stored(
    gb_cli, online, kind: str
) -> None:
    write("notes.txt", story(2, paragraphs=3))
    online.add_fault(Fault(kind, stage="embed", match="Report 2.", times=-1))

    result = gb(gb_cli, "remember", "notes.txt", code=1)

    line = _error_line(result)
    assert "chunk 1 of" in line and "embed (text-embedding-3-small): vector" in line, line
    assert "is unusable" in line and "after 1 retry" in line, line
    # The document is kept, none of its chunks: the first one failed.
    assert count("SELECT count(*) FROM gb_artifacts WHERE parent_id IS NOT NULL") == 0
    assert_database_sound()
    online.clear_faults()
    gb(gb_cli, "remember", "notes.txt")  # the rerun completes it
    assert_indexes_complete(gb_cli)


def _plant(vector: list[float | None], table: str = "dataset-1-chunks") -> None:
    """Overwrite the first vector of ``table`` with ``vector``, as an older gb stored what
    the server sent."""
    conn = open_db("gb.db")
    try:
        (first,) = [
            r["vector_id"] for r in conn.execute(f'SELECT vector_id FROM "{table}" LIMIT 1')
        ]
        blob = array("f", [float("nan") if x is None else x for x in vector]).tobytes()
        conn.execute(f'UPDATE "{table}" SET embedding = ? WHERE vector_id = ?', (blob, first))
    finally:
        conn.close()


@pytest.mark.parametrize("value", [float("nan"), 0.0, 1e308])
def test_search_never_crashes_on_a_bad_vector_the_index_holds(gb_cli, online, value: float) -> None:
    write("notes.txt", story(3, paragraphs=4))
    gb(gb_cli, "remember", "notes.txt")
    good = _search(gb_cli, "Lisbon", "--method", "vector", "-k", "50")
    for table in ("dataset-1-chunks", "dataset-1-summaries"):
        _plant([value] * 64, table)

    for method in ("hybrid", "vector"):
        hits = _search(gb_cli, "Lisbon", "--method", method, "-k", "50")
        assert hits, method
    # Every other vector is still found: only the planted ones are missing.
    assert 0 < len(hits) <= len(good)


def test_a_bad_query_vector_is_bm25_alone_or_a_clear_error(gb_cli, online) -> None:
    write("notes.txt", story(4, paragraphs=3))
    gb(gb_cli, "remember", "notes.txt")

    online.add_fault(Fault("nan_vector", stage="embed", times=1))
    hits = _search(gb_cli, "Lisbon")  # asked once: a search goes on by BM25 alone
    assert hits and all(h["method"] == "bm25" for h in hits)

    online.add_fault(Fault("zero_vector", stage="embed", times=-1))
    result = gb(gb_cli, "search", "Lisbon", "--method", "vector", code=1)
    assert _error_line(result) == (
        "gb: embed (text-embedding-3-small): the vector is unusable: it is all zeros"
    )
    # ...as when the embeddings server fails in any other way; bm25 needs no vector.
    assert _search(gb_cli, "Lisbon", "--method", "bm25")


# ------------------------------------------------------------------ answers


def test_json_nested_too_deeply_is_asked_again(gb_cli, online) -> None:
    write("notes.txt", story(5, paragraphs=3))
    online.add_fault(Fault("deep_json", stage="extract_graph", times=1))
    online.add_fault(Fault("deep_body", stage="summarize_chunk", times=1))
    online.add_fault(Fault("deep_body", stage="embed", times=1))

    gb(gb_cli, "remember", "notes.txt")

    assert [f.hits for f in online.faults] == [1, 1, 1]
    assert_indexes_complete(gb_cli)


@pytest.mark.parametrize(
    ("kind", "cause"),
    [
        ("deep_json", "the answer is JSON nested too deeply to read"),
        ("deep_body", "the server answered with JSON nested too deeply to read after 1 retry"),
    ],
)
def test_json_nested_too_deeply_every_time_is_a_clear_failure(
    gb_cli, online, kind: str, cause: str
) -> None:
    write("notes.txt", story(6, paragraphs=3))
    online.add_fault(Fault(kind, stage="extract_graph", match="Report 6.", times=-1))

    result = gb(gb_cli, "remember", "notes.txt", code=1)

    line = _error_line(result)
    assert f"extract_graph (gpt-4o-mini): {cause}" in line, line
    assert "nothing of it was stored" in line
    assert count("SELECT count(*) FROM gb_artifacts") == 0


def test_lone_surrogates_in_an_answer_are_repaired(gb_process, online) -> None:
    """A model writes "\\udc80" (half an emoji) in its JSON: the answer is kept, with
    U+FFFD in its place, stored and printed like any other character."""
    write("notes.txt", story(7, paragraphs=3))
    online.add_fault(Fault("surrogates", stage="extract_graph", times=-1))
    online.add_fault(Fault("surrogates", stage="summarize_chunk", times=-1))

    result = gb_process("remember", "notes.txt")
    assert result.returncode == 0, result.stderr.decode()

    names = [r["name"] for r in rows("SELECT name FROM gb_entities")]
    repaired = [n for n in names if n.endswith("\ufffd")]
    assert repaired, names
    summaries = [
        r["text"] for r in rows("SELECT text FROM gb_artifacts WHERE kind = 'chunk_summary'")
    ]
    assert summaries and all(s.endswith("\ufffd") for s in summaries), summaries
    assert_database_sound()
    shown = gb_process("show", "1")
    assert shown.returncode == 0, shown.stderr.decode()
    assert repaired[0].encode() in shown.stdout
    as_json = gb_process("remember", "notes.txt", "--json", "--force")
    assert as_json.returncode == 0, as_json.stderr.decode()
    response = json.loads(as_json.stdout)
    assert any(e["name"] == repaired[0] for e in response["entities"]), response["entities"]
