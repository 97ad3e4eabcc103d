"""`gb copy --into NAME`: one dataset of a store copied into a new dataset of another
that holds a memory already, SQLite to PostgreSQL and back. Its rows get new ids there;
all else reads as it read in the source, the other dataset is left as it was, and
nothing is paid for again."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from gligabao import Memory
from gligabao.store import copying, open_db
from gligabao.store.datasets import set_search_settings
from gligabao.store.db import transaction
from tests.graph.test_facts import DOCS, _remember
from tests.support.helpers import configure, gb, rows, story, write

# Texts of the destination's own memory, with facts of their own.
OTHERS = {
    "team.txt": "Hugo Silva works at Umbrella since 2019-04-01. Umbrella is led by Ines Brandt.\n",
    "trip.txt": "Jonas Haddad lives in Porto since 2020-02-01. Jonas Haddad knows Hugo Silva.\n",
}
_QUERIES = ("where does Alice work", "Acme Corp led")


def _without_ids(value: Any) -> Any:
    """`value` with every id left out: `id`, and each key ending in `_id` or `_ids`."""
    if isinstance(value, dict):
        return {
            k: _without_ids(v)
            for k, v in value.items()
            if k != "id" and not k.endswith(("_id", "_ids"))
        }
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def _alike(copy: Any, source: Any, where: str) -> None:
    """`copy` is `source`, ids aside, and but for float32 arithmetic in its scores:
    sqlite-vec and pgvector compute a cosine each its own way."""
    if isinstance(source, dict):
        assert isinstance(copy, dict) and copy.keys() == source.keys(), (where, copy, source)
        for key in source:
            _alike(copy[key], source[key], f"{where}.{key}")
    elif isinstance(source, list):
        assert isinstance(copy, list) and len(copy) == len(source), (where, copy, source)
        for n, (c, s) in enumerate(zip(copy, source, strict=True)):
            _alike(c, s, f"{where}[{n}]")
    elif isinstance(source, float):
        assert math.isclose(copy, source, rel_tol=1e-6), (where, copy, source)
    else:
        assert copy == source, (where, copy, source)


def _lines(gb_cli, *args: str) -> list[Any]:
    return [json.loads(line) for line in gb(gb_cli, *args).stdout.splitlines()]


def _seen(gb_cli, *dataset: str, alone: bool = True) -> dict[str, Any]:
    """What a dataset answers: its export, its facts, its searches by each method. Not
    `alone` in its store, the keyword scores are left out (their ranks kept): bm25 weighs
    a word by how many rows of the whole store's keyword index hold it, as FTS5 does."""
    seen = {
        "export": _lines(gb_cli, "export", "--format", "jsonl", *dataset),
        "facts": _lines(gb_cli, "facts", "--json", "--all", "-k", "100", *dataset),
        "session": _lines(gb_cli, "facts", "--json", "--all", "--session", "talk", *dataset),
    }
    for query in _QUERIES:
        for method in ("hybrid", "vector", "bm25"):
            hits = _lines(gb_cli, "search", query, "--json", "--method", method, *dataset)
            if method != "vector" and not alone:
                hits = [{k: v for k, v in hit.items() if k != "score"} for hit in hits]
            seen[f"{query} ({method})"] = hits
    return seen


def _stores(tmp_path, pg_url: str, direction: str) -> tuple[str, str]:
    file = str(tmp_path / "a.db")
    return (file, pg_url) if direction == "sqlite-to-postgresql" else (pg_url, file)


def _two_memories(gb_cli, server, monkeypatch, source: str, destination: str) -> None:
    for name, text in {**DOCS, **OTHERS}.items():
        write(name, text)
    configure(monkeypatch, server, GB_DB=source)
    *first, last = DOCS
    _remember(gb_cli, first)
    gb(gb_cli, "remember", last, "--session", "talk", "--quiet")  # its facts: the session's
    configure(monkeypatch, server, GB_DB=destination)
    _remember(gb_cli, list(OTHERS))


def _every_row(database: str) -> dict[str, int]:
    tables = ("gb_datasets", "gb_models", "gb_inferences", "gb_artifacts", "gb_entities")
    tables += ("gb_edges", "gb_entity_artifacts", "gb_edge_artifacts", "gb_claims")
    tables += ("gb_session_entities", "gb_session_edges")
    held = {t: rows(f"SELECT count(*) AS n FROM {t}", db=database)[0]["n"] for t in tables}
    tables_there = (
        "SELECT count(*) AS n FROM pg_tables WHERE schemaname = 'gligabao'"
        if "://" in database
        else "SELECT count(*) AS n FROM sqlite_master"
    )
    return {**held, "tables": rows(tables_there, db=database)[0]["n"]}


def _vectors_whole(gb_cli) -> None:
    """The copy's every vector is one of its rows', and each of its rows has its own."""
    stats = _lines(gb_cli, "vec-stats", "--json", "--dataset", "imported")
    assert {row["index"] for row in stats} == {"chunks", "summaries", "entities", "edges"}
    assert all(row["held"] == row["should"] for row in stats), stats
    assert sum(row["held"] for row in stats) > 10
    assert all(row["orphans"] == row["missing"] == 0 for row in stats), stats


def _ids_follow(source: list[dict[str, Any]], copy: list[dict[str, Any]]) -> None:
    """The copy's export names its rows by other ids, each one the same row's: a fact's
    ends are the entities of the same names, a fact closed by the same fact."""
    new = {(s["type"], s["id"]): c["id"] for s, c in zip(source, copy, strict=True)}
    assert any(old != now for (_, old), now in new.items())  # the destination's own ids
    for s, c in zip(source, copy, strict=True):
        if s["type"] == "fact":
            assert c["source_id"] == new["entity", s["source_id"]]
            assert c["target_id"] == new["entity", s["target_id"]]
            if s["closed_by"]:
                assert c["closed_by"]["id"] == new["fact", s["closed_by"]["id"]]


@pytest.mark.parametrize("direction", ["sqlite-to-postgresql", "postgresql-to-sqlite"])
def test_a_dataset_copied_into_a_store_that_holds_another(
    gb_cli, server, monkeypatch, tmp_path, pg_url, direction
) -> None:
    source, destination = _stores(tmp_path, pg_url, direction)
    _two_memories(gb_cli, server, monkeypatch, source, destination)
    configure(monkeypatch, server, GB_DB=source)
    before = _seen(gb_cli, alone=False)
    configure(monkeypatch, server, GB_DB=destination)
    theirs = _seen(gb_cli, alone=False)
    server.requests.clear()

    copied = json.loads(
        gb(
            gb_cli, "copy", "--from", source, "--to", destination, "--into", "imported", "--json"
        ).stdout
    )
    assert (copied["dataset"], copied["into"]) == ("default", "imported")
    assert copied["vectors"] > 0 and copied["keyword_rows"] > 0 and copied["rows"]["gb_edges"] > 5
    assert server.requests == []  # nothing asked of an LLM

    assert _seen(gb_cli, alone=False) == theirs  # the destination's own dataset, as it was
    after = _seen(gb_cli, "--dataset", "imported", alone=False)
    for part in before:  # texts, sources, vector scores, ranks, times: all but the ids
        _alike(_without_ids(after[part]), _without_ids(before[part]), part)
    _ids_follow(before["export"], after["export"])
    assert after["session"]
    _vectors_whole(gb_cli)

    # Its calls came with it: the same text again costs nothing.
    server.requests.clear()  # the searches' queries, embedded
    again = _lines(gb_cli, "remember", "y2015.txt", "--dataset", "imported", "--json")
    assert [line["status"] for line in again] == ["unchanged"]
    calls = "SELECT stage, request_hash FROM gb_inferences i WHERE {} ORDER BY id"
    made = rows(calls.format("dataset_id = 1"), db=source)
    imported = "dataset_id = (SELECT id FROM gb_datasets WHERE name = 'imported')"
    assert rows(calls.format(imported), db=destination) == made
    assert server.requests == []


@pytest.mark.parametrize("direction", ["sqlite-to-postgresql", "postgresql-to-sqlite"])
def test_into_a_store_of_its_own_every_score_is_the_same(
    gb_cli, server, monkeypatch, tmp_path, pg_url, direction
) -> None:
    """Alone in its store, the copy's keyword index holds what the source's held, and its
    dataset the search settings learnt for it: every score of every search, bm25's and
    the fusion's too, is the source's."""
    source, destination = _stores(tmp_path, pg_url, direction)
    for name, text in DOCS.items():
        write(name, text)
    configure(monkeypatch, server, GB_DB=source)
    _remember(gb_cli, list(DOCS))
    _learn(source, {"method": "rrf", "rrf_k": 7, "vector_weight": 0.5})  # as gb eval --tune
    before = _seen(gb_cli)
    gb(gb_cli, "copy", "--from", source, "--to", destination, "--into", "imported")
    configure(monkeypatch, server, GB_DB=destination)
    after = _seen(gb_cli, "--dataset", "imported")
    for part in before:
        _alike(_without_ids(after[part]), _without_ids(before[part]), part)
    learnt = "SELECT search_settings, embedding_model, embedding_dimensions FROM gb_datasets"
    assert rows(f"{learnt} WHERE name = 'imported'", db=destination) == rows(learnt, db=source)


def _learn(database: str, settings: dict[str, Any]) -> None:
    conn = open_db(database)
    try:
        with transaction(conn):
            set_search_settings(conn, 1, settings)
    finally:
        conn.close()


def test_the_answers_copied_are_reused_in_any_dataset(
    gb_cli, server, monkeypatch, tmp_path, pg_url
) -> None:
    """A text remembered afresh at the moment it was first remembered at asks again only
    for its vectors: every other answer is found by its request's hash among the calls
    the copy brought."""
    source, destination = _stores(tmp_path, pg_url, "sqlite-to-postgresql")
    for name, text in {**DOCS, **OTHERS}.items():
        write(name, text)
    moment = ("--valid-at", "2024-01-01T00:00:00Z")
    configure(monkeypatch, server, GB_DB=source)
    gb(gb_cli, "remember", "y2015.txt", *moment, "--quiet")
    configure(monkeypatch, server, GB_DB=destination)
    _remember(gb_cli, list(OTHERS))
    gb(gb_cli, "copy", "--from", source, "--to", destination, "--into", "imported")
    server.requests.clear()

    gb(gb_cli, "remember", "y2015.txt", *moment, "--dataset", "fresh", "--quiet")
    assert server.requests
    assert {r.stage for r in server.requests} == {"embed"}


@pytest.mark.parametrize("direction", ["sqlite-to-postgresql", "postgresql-to-sqlite"])
def test_a_dataset_is_copied_only_into_a_new_name(
    gb_cli, server, monkeypatch, tmp_path, pg_url, direction
) -> None:
    source, destination = _stores(tmp_path, pg_url, direction)
    _two_memories(gb_cli, server, monkeypatch, source, destination)
    held = _every_row(destination)
    copy = ("copy", "--from", source, "--to", destination)

    taken = gb(gb_cli, *copy, "--into", "default", code=6)
    assert "'default'" in taken.stderr and "nothing was written" in taken.stderr
    missing = gb(gb_cli, *copy, "--into", "new", "--dataset", "nope", code=1)
    assert "no dataset named 'nope'" in missing.stderr
    gb(gb_cli, *copy, "--dataset", "default", code=2)  # --dataset says what --into copies
    assert _every_row(destination) == held


@pytest.mark.parametrize("direction", ["sqlite-to-postgresql", "postgresql-to-sqlite"])
def test_a_copy_into_a_dataset_cut_short_leaves_nothing(
    gb_cli, server, monkeypatch, tmp_path, pg_url, direction
) -> None:
    source, destination = _stores(tmp_path, pg_url, direction)
    _two_memories(gb_cli, server, monkeypatch, source, destination)
    held = _every_row(destination)
    configure(monkeypatch, server, GB_DB=source)
    export = _lines(gb_cli, "export", "--format", "jsonl")

    def stop_at_the_vectors(what: str, done: int, total: int) -> None:
        if what.endswith("vectors"):
            raise KeyboardInterrupt

    # Pages of two rows: every table, the keyword index and the vectors read in many.
    monkeypatch.setattr(copying, "BATCH", 2)
    into = Memory(destination)
    with pytest.raises(KeyboardInterrupt):
        into.copy_from(source, into="imported", on_progress=stop_at_the_vectors)
    assert _every_row(destination) == held  # not a row of it: no half dataset
    report = into.copy_from(source, into="imported")  # and run again, whole

    assert report.rows["gb_edges"] > 5 and report.vectors > 0
    configure(monkeypatch, server, GB_DB=destination)
    copied = _lines(gb_cli, "export", "--format", "jsonl", "--dataset", "imported")
    assert _without_ids(copied) == _without_ids(export)
    _vectors_whole(gb_cli)


@pytest.mark.parametrize("direction", ["sqlite-to-postgresql", "postgresql-to-sqlite"])
def test_versions_chunks_summaries_and_pieces_come_along(
    gb_cli, server, monkeypatch, tmp_path, pg_url, direction
) -> None:
    """A long text in chunks, each embedded as pieces, and a second version of it that
    supersedes the first: every chunk, summary and piece in the copy, each version
    pointing at its own."""
    source, destination = _stores(tmp_path, pg_url, direction)
    monkeypatch.setenv("GB_EMBEDDINGS_MAX_TOKENS", "40")  # each chunk embedded in pieces
    text = story(7, paragraphs=6)
    write("story.txt", text)
    configure(monkeypatch, server, GB_DB=source)
    gb(gb_cli, "remember", "story.txt", "--quiet")
    write("story.txt", text + "\nA new closing line about lanterns.\n")
    gb(gb_cli, "remember", "story.txt", "--quiet")
    tail = " ".join(text.split()[-12:])
    documents = _lines(gb_cli, "list", "--json", "--all")
    vectors = {row["index"]: row for row in _lines(gb_cli, "vec-stats", "--json")}
    hits = _lines(gb_cli, "search", tail, "--json", "--method", "vector", "-k", "5")
    write("other.txt", OTHERS["team.txt"])
    configure(monkeypatch, server, GB_DB=destination)
    gb(gb_cli, "remember", "other.txt", "--quiet")

    gb(gb_cli, "copy", "--from", source, "--to", destination, "--into", "imported")

    imported = ("--dataset", "imported")
    copied = _lines(gb_cli, "list", "--json", "--all", *imported)
    assert {d["dataset"] for d in copied} == {"imported"}
    same = [{**d, "dataset": "default", "superseded_by": None} for d in copied]
    _alike(
        _without_ids(same), [{**d, "superseded_by": None} for d in _without_ids(documents)], "list"
    )
    newer, older = copied
    assert older["superseded_by"] == newer["id"] and older["status"] == "superseded"
    assert [d["status"] for d in copied] == [d["status"] for d in documents]
    assert vectors["chunks"]["vectors"] > vectors["chunks"]["held"] > 1  # pieces
    for row in _lines(gb_cli, "vec-stats", "--json", *imported):
        assert row | {"table": ""} == vectors[row["index"]] | {"table": ""}
    found = _lines(gb_cli, "search", tail, "--json", "--method", "vector", "-k", "5", *imported)
    # Two chunks of equal score come in either order: each database breaks ties its way.
    _alike([h["score"] for h in found], [h["score"] for h in hits], "scores")
    _alike(_placed(found), _placed(hits), "hits")


def _placed(hits: list[dict[str, Any]]) -> list[Any]:
    """Hits in the order of their places in the text, ids and ranks aside."""
    hits = sorted(hits, key=lambda hit: hit["start_offset"])
    return _without_ids([{k: v for k, v in hit.items() if k != "ranks"} for hit in hits])


def test_a_dataset_stored_offline_is_completed_where_it_was_copied(
    gb_cli, server, monkeypatch, tmp_path, pg_url
) -> None:
    """Texts stored without an endpoint keep the stages still to do in the copy: a run
    there with one completes them, as it would have in the source; and a document of the
    copy is forgotten with all its rows and vectors."""
    source, destination = _stores(tmp_path, pg_url, "sqlite-to-postgresql")
    for name, text in {**DOCS, **OTHERS}.items():
        write(name, text)
    configure(monkeypatch, None, GB_DB=source)
    stored = _lines(gb_cli, "remember", *DOCS, "--json")
    assert {line["status"] for line in stored} == {"offline"}
    configure(monkeypatch, server, GB_DB=destination)
    _remember(gb_cli, list(OTHERS))
    gb(gb_cli, "copy", "--from", source, "--to", destination, "--into", "imported")

    done = _lines(gb_cli, "remember", *DOCS, "--dataset", "imported", "--json")
    assert {line["status"] for line in done} == {"remembered"}  # every chunk had work left
    listed = _lines(gb_cli, "list", "--json", "--all", "--dataset", "imported")
    assert sorted(d["id"] for d in listed) == sorted(line["artifact_id"] for line in done)
    assert {d["status"] for d in listed} == {"complete"}  # the copied documents, completed
    _vectors_whole(gb_cli)
    facts = _lines(gb_cli, "facts", "--json", "--about", "Alice Moreau", "--dataset", "imported")
    assert {f["target"] for f in facts} == {"Initech", "Lisbon"}

    first = done[0]["artifact_id"]
    gb(gb_cli, "forget", str(first))
    stats = _lines(gb_cli, "vec-stats", "--json", "--dataset", "imported")
    assert all(row["held"] == row["should"] and row["orphans"] == 0 for row in stats)
