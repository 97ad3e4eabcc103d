"""Extraction that neither fails a document for one rambling answer nor passes silently:
an answer cut off at its limit is asked again in halves of its chunk, down to a floor
where the chunk's graph is left to do (exit 4) and a later run completes it; a chunk of
real text that gives nothing is named; an answer of reasoning alone is asked again for
its JSON; a fact without its quote is kept, its chunk standing as its evidence."""

from __future__ import annotations

import json

from tests.support.helpers import (
    absolute,
    assert_documents_complete,
    count,
    gb,
    rows,
    stderr_lines,
    story,
    write,
)
from tests.support.llm_server import Fault, LLMServer

TEXT = story(21, paragraphs=4)
SMALL = ("--chunk-size", "128")  # chunks of about 300 characters, 100-120 tokens


def _edges_by_chunk(db: str | None = None) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for row in rows(
        """SELECT c.chunk_index, e.fact FROM gb_edge_artifacts l
           JOIN gb_artifacts c ON c.id = l.artifact_id JOIN gb_edges e ON e.id = l.edge_id""",
        db=db,
    ):
        found.setdefault(row["chunk_index"], set()).add(row["fact"])
    return found


def _whole(gb_cli, monkeypatch) -> dict[int, set[str]]:
    """What a server that never cuts off gives, stored in a database of its own."""
    monkeypatch.setenv("GB_DB", absolute("whole.db"))
    gb(gb_cli, "remember", "notes.txt", *SMALL, "--quiet")
    whole = _edges_by_chunk(absolute("whole.db"))
    monkeypatch.setenv("GB_DB", absolute("gb.db"))
    return whole


def test_an_extraction_cut_off_twice_is_asked_again_as_two_halves(
    gb_cli, online: LLMServer, monkeypatch
) -> None:
    write("notes.txt", TEXT)
    whole = _whole(gb_cli, monkeypatch)
    online.requests.clear()
    online.cut_off_over = {"extract_graph": 200}  # a chunk is cut off, its halves are not

    line = json.loads(gb(gb_cli, "remember", "notes.txt", *SMALL, "--json", "--trace").stdout)

    steps = [s["step"] for s in line["trajectory"]]
    # One extraction step a chunk, as progress counts them; the halving a step of its own.
    assert steps.count("extract_graph") == len(line["chunks"]) and "extract_halved" in steps
    extractions = online.requests_for("extract_graph")
    texts = [r.body["messages"][-1]["content"] for r in extractions]
    assert len(texts) > len(set(texts)), "no answer was cut off: the test shows nothing"
    assert line["status"] == "remembered" and "graph_left" not in line
    assert _edges_by_chunk() == whole  # each chunk's facts, from its two halves
    assert all(n for n in whole.values())
    links = rows("SELECT exact, start_offset FROM gb_edge_artifacts")
    assert links and all(r["exact"] and r["start_offset"] is not None for r in links)
    assert_documents_complete()

    # Each half is its own request, recorded; a text halved before goes to its halves at
    # once: the same text at the same moment asks nothing again, the cut-off whole neither.
    online.requests.clear()
    again = ("remember", "notes.txt", *SMALL, "--valid-at", "2024-01-01", "--force", "-q")
    gb(gb_cli, *again)
    asked = online.calls("extract_graph")
    assert asked > 0
    online.requests.clear()
    gb(gb_cli, *again)
    assert online.calls("extract_graph") == 0


def test_an_extraction_cut_off_down_to_the_floor_leaves_the_graph_to_do(
    gb_cli, backend, online: LLMServer
) -> None:
    write("notes.txt", TEXT)
    # A model that rambles on whatever holds the title line, however small the part.
    online.add_fault(Fault("truncated", stage="extract_graph", match="Report 21.", times=-1))

    result = gb(gb_cli, "remember", "notes.txt", *SMALL, "--json", code=4)

    line = json.loads(result.stdout)
    assert line["status"] == "pending"
    (left,) = line["graph_left"]
    assert left["index"] == 0 and "cut off at its output limit" in left["reason"]
    assert line["stages_left"] == ["extract_graph"]
    warned = " ".join(stderr_lines(result))
    assert "graph of chunk 1 of" in warned and "run the same command again" in warned
    chunks = rows("SELECT id, chunk_index, pending FROM gb_artifacts WHERE chunk_index IS NOT NULL")
    assert [c["pending"] for c in chunks if c["chunk_index"] == 0] == ["extract_graph"], chunks
    assert all(c["pending"] == "" for c in chunks if c["chunk_index"] != 0)
    summaries = count("SELECT count(*) FROM gb_artifacts WHERE kind = 'chunk_summary'")
    assert summaries == len(chunks)  # every chunk's summary is stored, the first's too
    stored = _edges_by_chunk()
    assert 0 not in stored and stored  # the others' graphs are stored
    said = gb(gb_cli, "status", "notes.txt", code=1).stdout
    assert "still to do: extract_graph" in said and "the graph of chunk 1 is left" in said
    assert "cut off at its output limit" in said
    # The reason outlives the run: gb status names the chunk and why, from the store.
    status = json.loads(gb(gb_cli, "status", "notes.txt", "--json", code=1).stdout)
    assert status["state"] == "incomplete" and status["graph_left"] == [left]

    sent = [r.body["messages"][-1]["content"] for r in online.requests_for("extract_graph")]
    whole_chunk = max((x for x in sent if "Report 21." in x), key=len)
    online.clear_faults()
    online.requests.clear()
    line = json.loads(gb(gb_cli, "remember", "notes.txt", *SMALL, "--json").stdout)

    assert line["status"] == "completed" and "stages_left" not in line
    assert online.calls("summarize_chunk") == 0  # answered before: not asked again
    # Only the part at the floor, never answered: not the chunk whole (cut off before),
    # nor its parts that were answered.
    (asked,) = online.requests_for("extract_graph")
    sent = asked.body["messages"][-1]["content"]
    assert "Report 21." in sent and len(sent) < len(whole_chunk)
    assert 0 in _edges_by_chunk()
    assert count("SELECT count(*) FROM gb_artifacts WHERE kind = 'chunk_summary'") == summaries
    assert_documents_complete()
    status = json.loads(gb(gb_cli, "status", "notes.txt", "--json").stdout)
    assert status["state"] == "in sync" and status["graph_left"] == []
    assert count("SELECT count(*) FROM gb_artifacts WHERE left_reason IS NOT NULL") == 0


def test_facts_without_their_quotes_are_stored_with_their_chunk_as_evidence(
    gb_cli, online: LLMServer
) -> None:
    write("notes.txt", TEXT)
    online.add_fault(Fault("no_quotes", stage="extract_graph", times=-1))

    gb(gb_cli, "remember", "notes.txt", *SMALL, "--quiet")

    links = rows("SELECT exact, quote, start_offset FROM gb_edge_artifacts")
    assert links and all(not r["exact"] and r["start_offset"] is None for r in links)
    fact = json.loads(gb(gb_cli, "facts", "--json", "-k", "1").stdout.splitlines()[0])
    (evidence,) = fact["evidence"]
    assert evidence["exact"] is False and evidence["line_start"] >= 1
    assert "notes.txt:" in gb(gb_cli, "why", str(fact["id"])).stdout


def test_an_answer_of_reasoning_alone_is_asked_again_for_its_json(
    gb_cli, online: LLMServer
) -> None:
    write("notes.txt", TEXT)
    online.add_fault(Fault("think_only", stage="extract_graph", times=1))

    gb(gb_cli, "remember", "notes.txt", *SMALL, "--quiet")

    fault = online.faults[0]
    assert fault.hits == 1
    thought = next(r for r in online.requests_for("extract_graph") if r.fault == "think_only")
    text = thought.body["messages"][-1]["content"]
    again = [
        r
        for r in online.requests_for("extract_graph")
        if r.body["messages"][-1]["content"].startswith(text) and r is not thought
    ]
    assert len(again) == 1 and "JSON object alone" in again[0].body["messages"][-1]["content"]
    assert_documents_complete()


def test_an_extraction_that_finds_nothing_in_real_text_is_named(gb_cli, online: LLMServer) -> None:
    write("a.txt", story(31, paragraphs=4))
    write("b.txt", story(32, paragraphs=4))
    write("figures.txt", "Table 7.\n\n" + " ".join(str(n) for n in range(400)) + "\n")
    online.add_fault(Fault("empty_graph", stage="extract_graph", match="Report 31.", times=-1))
    online.add_fault(Fault("empty_graph", stage="extract_graph", match="Report 32.", times=-1))
    online.add_fault(Fault("empty_graph", stage="extract_graph", match="Table 7.", times=-1))

    # Chunks of some 80 words: more than a model may rightly find nothing in.
    result = gb(
        gb_cli, "remember", "a.txt", "b.txt", "figures.txt", "--chunk-size", "256", "--json"
    )

    by_source = {json.loads(x)["source"]: json.loads(x) for x in result.stdout.splitlines()}
    for name in ("a.txt", "b.txt"):
        line = by_source[name]
        assert line["status"] == "remembered"
        (empty,) = line["empty_extractions"]
        assert empty["index"] == 0
        assert empty["artifact_id"] == line["chunks"][0]["artifact_id"]
    assert "empty_extractions" not in by_source["figures.txt"]  # no prose: nothing to find
    warnings = [x for x in stderr_lines(result) if "no entity and no fact" in x]
    assert len(warnings) == 1 and "gpt-4o-mini" in warnings[0]  # once a run, the model named

    status = gb(gb_cli, "status", "a.txt", "--chunk-size", "256", "--json").stdout
    (shown,) = [json.loads(x) for x in status.splitlines()]
    assert shown["state"] == "in sync"
    assert [e["index"] for e in shown["empty_extractions"]] == [0]
    plain = gb(gb_cli, "status", "a.txt", "--chunk-size", "256").stdout
    assert "chunk 1 gave no entity and no fact" in plain
    assert "no entity" not in gb(gb_cli, "status", "figures.txt", "--chunk-size", "256").stdout


def test_a_short_text_that_gives_nothing_is_named_too(gb_cli, online: LLMServer) -> None:
    """A text too short to be chunked is its own one piece: the same count, the same word."""
    write("short.txt", story(41, paragraphs=2))
    online.add_fault(Fault("empty_graph", stage="extract_graph", times=-1))

    line = json.loads(gb(gb_cli, "remember", "short.txt", "--chunk-size", "512", "--json").stdout)

    assert "chunks" not in line, "the text was chunked: the test shows nothing"
    assert line["empty_extractions"] == [{"index": 0, "artifact_id": line["artifact_id"]}]
    (shown,) = [
        json.loads(x)
        for x in gb(
            gb_cli, "status", "short.txt", "--chunk-size", "512", "--json"
        ).stdout.splitlines()
    ]
    assert shown["empty_extractions"] == line["empty_extractions"]
    assert "its text gave no entity and no fact" in shown["detail"]
