"""The graph, read back: `gb facts` with its time filters and `gb why`, on
documents that state, restate and contradict facts with dates, remembered in either
order against the test server (its resolve calls a fact with the same source and
relation but another target a contradiction, and the same one a restatement)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gligabao import AmbiguousEntity, Memory
from tests.support.helpers import DB, configure, database, gb, rows, write

DOCS = {
    "y2015.txt": (
        "Alice Moreau works at Acme Corp since 2015-03-01. "
        "Acme Corp is led by Bruno Tanaka since 2015-01-10. "
        "Alice Moreau lives in Oslo since 2015-05-01.\n"
    ),
    "y2018.txt": (
        "Alice Moreau works at Globex since 2018-06-01. "
        "Alice Moreau lives in Lisbon since 2018-02-01.\n"
        "Acme Corp is led by Bruno Tanaka since 2015-01-10. "  # restated
        "Bruno Tanaka reportedly met Chiara Okafor in Quito.\n"  # quoted in other case
    ),
    "y2021.txt": (
        "Alice Moreau works at Initech since 2021-09-01. "
        "Acme Corp is led by Chiara Okafor since 2021-01-04. "
        "Chiara Okafor allegedly knows Greta Keller.\n"  # the quote is a paraphrase
    ),
}

# What is true when, by the texts alone: (about, at) -> {(relation, target or source)}.
TRUTH = {
    ("Alice Moreau", "2014-06-01"): set(),
    ("Alice Moreau", "2016-01-01"): {("WORKS_AT", "Acme Corp"), ("LIVES_IN", "Oslo")},
    ("Alice Moreau", "2018-03-01"): {("WORKS_AT", "Acme Corp"), ("LIVES_IN", "Lisbon")},
    ("Alice Moreau", "2019-01-01"): {("WORKS_AT", "Globex"), ("LIVES_IN", "Lisbon")},
    ("Alice Moreau", "2022-01-01"): {("WORKS_AT", "Initech"), ("LIVES_IN", "Lisbon")},
    ("Acme Corp", "2016-01-01"): {("IS_LED_BY", "Bruno Tanaka"), ("WORKS_AT", "Alice Moreau")},
    ("Acme Corp", "2021-06-01"): {("IS_LED_BY", "Chiara Okafor")},
}


def _facts(gb_cli, *args: str) -> list[dict[str, Any]]:
    result = gb(gb_cli, "facts", "--json", *args)
    return [json.loads(line) for line in result.stdout.splitlines()]


def _remember(gb_cli, names: list[str]) -> None:
    for name in names:
        gb(gb_cli, "remember", name, "--quiet")


def _without_ids(fact: dict[str, Any]) -> dict[str, Any]:
    """A fact as the texts decide it: ids, transaction times and the resolver's wording
    of the reason aside (they depend on the order of ingestion)."""
    closer = fact["closed_by"]
    return {
        **{k: v for k, v in fact.items() if k not in ("id", "created_at", "expired_at")},
        "closed_by": closer and closer["fact"],
        "evidence": sorted(
            (Path(e["source"]).name, e["line_start"], e["quote"], e["exact"])
            for e in fact["evidence"]
        ),
    }


def _answers(gb_cli) -> dict[tuple[str, str], list[dict[str, Any]]]:
    return {
        (about, at): sorted(
            (_without_ids(f) for f in _facts(gb_cli, "--about", about, "--at", at)),
            key=lambda f: (f["relation"], f["source"], f["target"]),
        )
        for about, at in TRUTH
    }


@pytest.fixture
def texts() -> list[str]:
    for name, text in DOCS.items():
        write(name, text)
    return list(DOCS)


def test_any_order_of_ingestion_gives_the_same_intervals(
    gb_cli, server, monkeypatch, texts, tmp_path
) -> None:
    answers = []
    for order in (texts, texts[::-1], [texts[0], texts[2], texts[1]]):
        configure(monkeypatch, server, GB_DB=str(tmp_path / f"{order[0]}-{order[1]}.db"))
        _remember(gb_cli, order)
        answers.append(_answers(gb_cli))
    assert answers[0] == answers[1] == answers[2]
    for (about, at), found in answers[0].items():
        shown = {
            (f["relation"], f["target"] if f["source"] == about else f["source"]) for f in found
        }
        assert shown == TRUTH[(about, at)], (about, at)
        assert all(f["valid_at"] <= at + "T" and (f["invalid_at"] or "9") > at for f in found)


def test_one_batch_gives_what_one_file_at_a_time_gives(
    gb_cli, server, monkeypatch, texts, tmp_path
) -> None:
    """The three files in one `gb remember` are fetched at once (latency: all three in
    flight together), yet resolved against each other as if remembered one by one: no
    two employers current at once, one entity per name."""
    server.latency = 0.05
    configure(monkeypatch, server, GB_DB=str(tmp_path / "one-by-one.db"))
    _remember(gb_cli, texts)
    one_by_one = _answers(gb_cli)
    configure(monkeypatch, server, GB_DB=str(tmp_path / "batch.db"))
    gb(gb_cli, "remember", *texts, "--quiet")
    assert _answers(gb_cli) == one_by_one
    alices = rows(
        "SELECT count(*) AS n FROM gb_entities WHERE name = 'Alice Moreau'",
        db=str(tmp_path / "batch.db"),
    )
    assert alices == [{"n": 1}]


def test_current_facts_by_default_closed_ones_with_all(gb_cli, online, texts) -> None:
    _remember(gb_cli, texts[::-1])  # newest first: older facts are stored closed
    current = _facts(gb_cli, "--about", "Alice Moreau")
    assert {(f["relation"], f["target"]) for f in current} == {
        ("WORKS_AT", "Initech"),
        ("LIVES_IN", "Lisbon"),
    }
    assert {f["status"] for f in current} == {"current"}
    every = _facts(gb_cli, "--about", "Alice Moreau", "--all")
    jobs = sorted(
        (f["valid_at"][:10], f["target"], f["invalid_at"])
        for f in every
        if f["relation"] == "WORKS_AT"
    )
    assert [(v, t, (i or "")[:10]) for v, t, i in jobs] == [
        ("2015-03-01", "Acme Corp", "2018-06-01"),
        ("2018-06-01", "Globex", "2021-09-01"),
        ("2021-09-01", "Initech", ""),
    ]
    acme = next(f for f in every if f["target"] == "Acme Corp")
    assert acme["status"] == "closed" and acme["closed_by"]["fact"].startswith(
        "Alice Moreau works at Globex"
    )
    assert acme["closed_by"]["reason"]
    # The restated fact is one fact, stated in two documents.
    (led,) = [
        f
        for f in _facts(gb_cli, "--about", "Bruno Tanaka", "--all")
        if f["relation"] == "IS_LED_BY"
    ]
    assert sorted(Path(e["source"]).name for e in led["evidence"]) == ["y2015.txt", "y2018.txt"]
    assert [f["relation"] for f in _facts(gb_cli, "--relation", "lives_in", "--all")] == [
        "LIVES_IN"
    ] * 2


def test_known_at_is_what_the_graph_held_then(gb_cli, online, texts) -> None:
    _remember(gb_cli, texts[:1])
    (first,) = [f for f in _facts(gb_cli, "--about", "Alice Moreau") if f["relation"] == "WORKS_AT"]
    before = first["created_at"]
    _remember(gb_cli, texts[1:2])
    held = _facts(gb_cli, "--about", "Alice Moreau", "--known-at", before)
    assert ("WORKS_AT", "Acme Corp") in {(f["relation"], f["target"]) for f in held}
    assert ("WORKS_AT", "Globex") not in {(f["relation"], f["target"]) for f in held}
    now = _facts(gb_cli, "--about", "Alice Moreau", "--known-at", "2999-01-01")
    assert {(f["relation"], f["target"]) for f in now} == {
        ("WORKS_AT", "Globex"),
        ("LIVES_IN", "Lisbon"),
    }


def test_evidence_points_at_the_quote_to_the_line(gb_cli, online, texts) -> None:
    _remember(gb_cli, texts)
    data = {name: Path(name).read_bytes() for name in texts}
    every = _facts(gb_cli, "--all", "-k", "100")
    assert every
    for fact in every:
        for ev in fact["evidence"]:
            doc = data[Path(ev["source"]).name]
            span = doc[ev["start_offset"] : ev["end_offset"]].decode()
            assert ev["line_start"] == doc[: ev["start_offset"]].count(b"\n") + 1
            if ev["exact"]:
                assert span == ev["quote"] == fact["fact"]
    met = next(f for f in every if f["relation"] == "REPORTEDLY_MET")
    (ev,) = met["evidence"]
    span = data["y2018.txt"][ev["start_offset"] : ev["end_offset"]].decode()
    assert span == "Bruno Tanaka reportedly met Chiara Okafor in Quito." and ev["line_start"] == 2
    # found only in other case and spacing: what is shown is the document's own words
    assert not ev["exact"] and ev["quote"] == span
    knows = next(f for f in every if f["relation"] == "ALLEGEDLY_KNOWS")
    (ev,) = knows["evidence"]
    assert not ev["exact"] and ev["quote"].startswith("It is said")
    assert (ev["start_offset"], ev["end_offset"]) == (0, len(data["y2021.txt"]))  # the whole text


def test_why_shows_the_quote_in_its_lines_and_what_closed_it(gb_cli, online, texts) -> None:
    _remember(gb_cli, texts)
    acme = next(
        f for f in _facts(gb_cli, "--about", "Alice Moreau", "--all") if f["target"] == "Acme Corp"
    )
    out = gb(gb_cli, "why", str(acme["id"])).stdout
    assert "y2015.txt:1" in out and "Alice Moreau works at Acme Corp since 2015-03-01." in out
    assert f"closed by #{acme['closed_by']['id']}" in out and "y2018.txt:1" in out
    shown = json.loads(gb(gb_cli, "why", str(acme["id"]), "--json").stdout)
    assert shown["closer"]["fact"] == acme["closed_by"]["fact"]
    result = gb_cli("why", "99999")
    assert result.exit_code == 1 and "no fact 99999" in result.stderr


def test_facts_are_searched_by_words_and_meaning(gb_cli, online, texts) -> None:
    _remember(gb_cli, texts)
    hits = _facts(gb_cli, "Lisbon", "--all")
    assert hits and hits[0]["target"] == "Lisbon"
    result = gb_cli("facts", "--about", "Nobody Known")
    assert result.exit_code == 1 and "no entity is named" in result.stderr


def test_reading_commands_never_create_a_database(gb_cli) -> None:
    for args in (["facts"], ["why", "1"]):
        result = gb_cli(*args, "--db", "missing.db")
        assert result.exit_code == 6, args
    assert not Path("missing.db").exists()


def test_entity_shows_its_timeline_neighbours_and_documents(gb_cli, online, texts) -> None:
    _remember(gb_cli, texts[::-1])
    view = json.loads(gb(gb_cli, "entity", "  alice   MOREAU ", "--json").stdout)
    assert set(view) == {
        "id",
        "name",
        "type",
        "summary",
        "summary_stale_at",
        "facts",
        "neighbours",
        "documents",
        "aliases",
        "merges",
    }
    assert view["aliases"] == view["merges"] == []
    assert view["name"] == "Alice Moreau"
    timeline = [
        (f["valid_at"][:10], f["relation"], f["target"], f["status"]) for f in view["facts"]
    ]
    assert timeline == [
        ("2015-03-01", "WORKS_AT", "Acme Corp", "closed"),
        ("2015-05-01", "LIVES_IN", "Oslo", "closed"),
        ("2018-02-01", "LIVES_IN", "Lisbon", "current"),
        ("2018-06-01", "WORKS_AT", "Globex", "closed"),
        ("2021-09-01", "WORKS_AT", "Initech", "current"),
    ]
    assert {n["name"]: n["depth"] for n in view["neighbours"]} == {"Initech": 1, "Lisbon": 1}
    assert sorted(Path(d["source"]).name for d in view["documents"]) == sorted(texts)
    # Two hops, at a time: through the facts true then.
    then = json.loads(
        gb(gb_cli, "entity", "Alice Moreau", "--at", "2016-01-01", "--depth", "2", "--json").stdout
    )
    assert {n["name"]: n["depth"] for n in then["neighbours"]} == {
        "Acme Corp": 1,
        "Oslo": 1,
        "Bruno Tanaka": 2,
    }
    assert [f["target"] for f in then["facts"]] == ["Acme Corp", "Oslo"]
    by_id = json.loads(gb(gb_cli, "entity", str(view["id"]), "--json").stdout)
    assert by_id["name"] == "Alice Moreau"
    shown = gb(gb_cli, "entity", "Alice Moreau").stdout
    assert "Alice Moreau" in shown and "closed by" in shown and "y2015.txt:1" in shown


def test_a_name_close_to_several_entities_lists_them_and_exits_1(gb_cli, online, texts) -> None:
    _remember(gb_cli, texts)
    result = gb_cli("entity", "Moreau Okafor")  # a word of two people's names
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert "Alice Moreau" in line and "Chiara Okafor" in line and "by its id" in line
    single = json.loads(gb(gb_cli, "entity", "Globex inc", "--json").stdout)
    assert single["name"] == "Globex"  # one close match is taken


def test_entities_list_and_search(gb_cli, online, texts) -> None:
    _remember(gb_cli, texts)
    listed = [json.loads(line) for line in gb(gb_cli, "entities", "--json").stdout.splitlines()]
    names = [e["name"] for e in listed]
    assert names == sorted(names, key=str.casefold) and "Alice Moreau" in names
    alice = next(e for e in listed if e["name"] == "Alice Moreau")
    assert (alice["fact_count"], alice["document_count"]) == (5, 3)  # 3 jobs, 2 homes
    found = [
        json.loads(line) for line in gb(gb_cli, "entities", "Lisbon", "--json").stdout.splitlines()
    ]
    assert found[0]["name"] == "Lisbon"
    table = gb(gb_cli, "entities", "-k", "3").stdout
    assert "Acme Corp" in table


def test_a_database_from_before_evidence_keeps_working(tmp_path, monkeypatch) -> None:
    """A fact stored by schema 1 (no quote, no span) is shown with its chunk's span and
    lines, not exact, once the file is migrated."""
    from gligabao.graph.queries import facts
    from gligabao.store import artifacts, datasets, graph, migrations, open_db
    from gligabao.store.db import insert, scalar

    path = tmp_path / "old.db"
    with monkeypatch.context() as schema_1:
        schema_1.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:1])
        schema_1.setattr(migrations, "SCHEMA_VERSION", 1)
        conn = open_db(path)
        ds = datasets.get_or_create_dataset(conn, "default")
        text = "First line.\nAlice Moreau works at Acme Corp.\nLast line.\n"
        doc = artifacts.insert_document(conn, dataset_id=ds.id, text=text, source="old.txt")
        # As schema 1 stored them: no name key (a later step's column).
        alice, acme = (
            insert(
                conn,
                "INSERT INTO gb_entities(dataset_id, name, name_norm) VALUES (?, ?, ?)",
                (ds.id, name, graph.normalize_name(name)),
            )
            for name in ("Alice Moreau", "Acme Corp")
        )
        edge = graph.insert_edge(conn, ds.id, alice, acme, "WORKS_AT", "Alice works at Acme.")
        conn.execute(
            "INSERT INTO gb_edge_artifacts(edge_id, artifact_id) VALUES (?, ?)", (edge, doc)
        )
        conn.close()

    conn = open_db(path, create=False)
    assert scalar(conn, "PRAGMA user_version") == len(migrations.MIGRATIONS) > 1
    (fact,) = facts(conn, datasets.find_dataset(conn, "default"))
    (ev,) = fact.evidence
    assert (ev.start_offset, ev.end_offset) == (0, len(text.encode()))
    assert (ev.line_start, ev.line_end, ev.quote, ev.exact) == (1, 3, None, False)


def test_a_fact_true_again_is_a_fact_of_its_own(gb_cli, server, monkeypatch, tmp_path) -> None:
    """Acme, then Globex, then Acme again: three intervals in any order, not the second
    Acme absorbed into the first."""
    docs = {
        "a.txt": "Alice Moreau works at Acme Corp since 2015-03-01.\n",
        "b.txt": "Alice Moreau works at Globex since 2018-06-01.\n",
        "c.txt": "Alice Moreau works at Acme Corp since 2024-02-01.\n",
    }
    for name, text in docs.items():
        write(name, text)
    seen = []
    for order in (
        ["a.txt", "b.txt", "c.txt"],
        ["c.txt", "b.txt", "a.txt"],
        ["a.txt", "c.txt", "b.txt"],
    ):
        configure(monkeypatch, server, GB_DB=str(tmp_path / ("".join(order) + ".db")))
        _remember(gb_cli, order)
        jobs = _facts(gb_cli, "--about", "Alice Moreau", "--all")
        seen.append(
            sorted((f["valid_at"][:10], f["target"], (f["invalid_at"] or "")[:10]) for f in jobs)
        )
    assert (
        seen[0]
        == seen[1]
        == seen[2]
        == [
            ("2015-03-01", "Acme Corp", "2018-06-01"),
            ("2018-06-01", "Globex", "2024-02-01"),
            ("2024-02-01", "Acme Corp", ""),
        ]
    )


def test_a_query_with_filters_finds_matches_beyond_its_first_candidates(
    gb_cli, online, texts, monkeypatch
) -> None:
    """Many short facts share the query's word and rank first; those about one entity
    rank below a pool of 10 (search.depth 5), and are still found: the pool grows while
    the filters leave too few."""
    monkeypatch.setenv("GB_SEARCH_DEPTH", "5")
    _remember(gb_cli, texts)
    places = "Amber Birch Cedar Dune Fern Grove Heath Iris Kelp Lark Moss Oak Pine Reed Sage"
    write("crowd.txt", " ".join(f"Hugo Keller works at {p} Port." for p in places.split()))
    gb(gb_cli, "remember", "crowd.txt", "--quiet")
    monkeypatch.setenv("GB_EMBEDDINGS_DIMENSIONS", "32")  # not the dataset's: BM25 alone
    result = gb(gb_cli, "facts", "works", "--about", "Alice Moreau", "--all", "-k", "3", "--json")
    found = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(found) == 3 and all(f["source"] == "Alice Moreau" for f in found)
    crowd = _facts(gb_cli, "--about", "Hugo Keller", "--all", "-k", "100")
    assert len(crowd) == 15  # they are there, and they outrank Alice's for "works"


def test_the_response_shows_a_fact_stored_already_over(gb_cli, online, texts) -> None:
    gb(gb_cli, "remember", "y2021.txt", "--quiet")
    line = gb(gb_cli, "remember", "y2015.txt", "--json").stdout
    (acme,) = [e for e in json.loads(line)["edges"] if e["target"] == "Acme Corp"]
    assert acme["created"] and acme["invalid_at"].startswith("2021-09-01")  # by Initech


def test_a_quote_one_chunk_cut_off_and_the_next_states_whole_is_one_place(
    gb_cli, online, corpus
) -> None:
    """A chunk that ends inside a sentence quotes what it holds of it; the next chunk,
    whose overlap holds it whole, quotes it whole. `gb why` shows that place once, the
    whole quote, with both chunks on it."""
    gb(gb_cli, "remember", "GPL-3", "--quiet")
    links = rows(
        """SELECT l.edge_id, l.start_offset AS s, l.end_offset AS e FROM gb_edge_artifacts l
           WHERE l.exact = 1 AND l.start_offset IS NOT NULL"""
    )
    spans: dict[int, set[tuple[int, int]]] = {}
    for link in links:
        spans.setdefault(link["edge_id"], set()).add((link["s"], link["e"]))
    cut = {
        edge: max(found, key=lambda span: span[1] - span[0])
        for edge, found in spans.items()
        if any(a != b and b[0] <= a[0] and a[1] <= b[1] for a in found for b in found)
    }
    assert cut, "no quote was cut off by a chunk's end: the test shows nothing"
    for edge, (start, end) in cut.items():
        shown = json.loads(gb(gb_cli, "why", str(edge), "--json").stdout)["evidence"]
        places = [(e["start_offset"], e["end_offset"]) for e in shown]
        assert places.count((start, end)) == 1 and len(places) == len(set(places)), shown
        for a in places:  # no place inside another
            assert not any(a != b and b[0] <= a[0] and a[1] <= b[1] for b in places), shown
        (whole,) = [e for e in shown if (e["start_offset"], e["end_offset"]) == (start, end)]
        assert len(set(whole["chunk_ids"])) >= 2 and whole["chunk_id"] == whole["chunk_ids"][0]
        text = gb(gb_cli, "why", str(edge)).stdout
        assert text.count(f"GPL-3:{whole['line_start']}") == 1, text


def test_a_name_that_matches_on_common_or_some_words_is_no_entity(gb_cli, online) -> None:
    write("ui.txt", "Greta Keller pressed Select All in Oslo.\n")
    gb(gb_cli, "remember", "ui.txt", "--quiet")
    assert json.loads(gb(gb_cli, "entity", "select all", "--json").stdout)["name"] == "Select All"
    assert json.loads(gb(gb_cli, "entity", "KELLER", "--json").stdout)["name"] == "Greta Keller"

    # "all" is the only word in common: no entity, the close one listed, exit 1.
    result = gb(gb_cli, "entity", "nobody at all", code=1)
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("gb: no entity is named exactly 'nobody at all'; close ones: ")
    assert "Select All" in line and "by its id" in line and not result.stdout
    # One word of two in common: not the one meant either.
    assert "Greta Keller" in gb(gb_cli, "entity", "Greta Nobody", code=1).stderr
    assert "Select All" in gb(gb_cli, "facts", "--about", "the all", code=1).stderr
    with Memory(DB) as memory, pytest.raises(AmbiguousEntity):  # as gb mcp's entity asks
        memory.entity("nobody at all")


def test_a_quote_in_the_overlap_of_two_chunks_is_one_piece_of_evidence(
    gb_cli, backend, online
) -> None:
    """Two chunks that share a sentence through their overlap both state its fact: `gb
    why` lists the place once, with both chunks kept on it, on either store."""
    names = ["Alice Moreau", "Bruno Tanaka", "Chiara Okafor", "Dario Rossi", "Elena Petrova"]
    said = []
    for i in range(len(names)):
        a, b, c = names[i], names[(i + 1) % 5], names[(i + 3) % 5]
        said.append(f"{a} hired {b} in Oslo. {b} thanked {c} warmly.")
    write("overlap.txt", " ".join(said) + "\n")
    gb(gb_cli, "remember", "overlap.txt", "--chunk-size", "40", "--overlap", "50", "--quiet")
    facts = _facts(gb_cli, "--all", "-k", "100")
    for fact in facts:
        places = [(e["start_offset"], e["end_offset"]) for e in fact["evidence"]]
        assert len(places) == len(set(places)), fact
    shared = [f for f in facts if any(len(e["chunk_ids"]) > 1 for e in f["evidence"])]
    assert shared, "no quote sits in an overlap: the test shows nothing"
    fact = shared[0]
    (ev,) = [e for e in fact["evidence"] if len(e["chunk_ids"]) > 1]
    assert ev["chunk_id"] == ev["chunk_ids"][0] and len(set(ev["chunk_ids"])) == 2
    out = gb(gb_cli, "why", str(fact["id"])).stdout
    where = f"overlap.txt:{ev['line_start']}"
    assert out.count(where) == 1, out
    shown = json.loads(gb(gb_cli, "why", str(fact["id"]), "--json").stdout)
    assert len(shown["evidence"]) == len(fact["evidence"])
    with Memory(database()) as memory:  # the library, and gb mcp and gb serve through it
        why = memory.why(fact["id"])
    assert [e.as_json() for e in why.evidence] == shown["evidence"]
