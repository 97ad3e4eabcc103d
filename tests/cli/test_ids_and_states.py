"""Ids and states as a user meets them.

Documents, chunks and summaries share one id sequence, so `gb forget` of a chunk's id
is refused, naming its document, and `gb show` of it shows the chunk. A document has one
state word in `gb list`, `gb show` and `gb stats`: complete, incomplete (with its stages
to do) or superseded.
"""

from __future__ import annotations

import json
from typing import Any

import apsw
import pytest

from gligabao import Memory
from gligabao.errors import ExitCode
from gligabao.store import artifacts, datasets, open_db
from tests.support.helpers import DB, absolute, configure, count, gb, rows, story, write

OFFLINE = "incomplete: extract_graph, summarize_chunk, embed"
# The same, as --json and Memory say it: one status word, and the stages still to do.
OFFLINE_JSON = {"status": "incomplete", "pending": ["extract_graph", "summarize_chunk", "embed"]}
COMPLETE_JSON = {"status": "complete", "pending": []}


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _list_json(gb_cli, *args: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gb(gb_cli, "list", "--json", *args).stdout.splitlines()]


def _chunks(document_id: int) -> list[dict[str, Any]]:
    return rows(
        "SELECT * FROM gb_artifacts WHERE parent_id = ? AND chunk_index IS NOT NULL "
        "ORDER BY chunk_index",
        (document_id,),
    )


def _summary_of(chunk_id: int) -> dict[str, Any]:
    (summary,) = rows(
        "SELECT * FROM gb_artifacts WHERE parent_id = ? AND kind = 'chunk_summary'", (chunk_id,)
    )
    return summary


def _state(document: dict[str, Any]) -> dict[str, Any]:
    return {"status": document["status"], "pending": document["pending"]}


def _remembered(gb_cli, text: str) -> tuple[int, str]:
    path = write(absolute("report.txt"), text)
    result = gb(gb_cli, "remember", str(path), "--json")
    return json.loads(result.stdout)["artifact_id"], str(path)


# ------------------------------------------------------------------ 6: one state word


def test_an_offline_document_is_incomplete_everywhere_until_an_online_run(
    gb_cli, server, monkeypatch
) -> None:
    configure(monkeypatch, None, COLUMNS="200")  # no endpoint; a wide terminal
    doc_id, _ = _remembered(gb_cli, story(5, paragraphs=6))
    assert len(_chunks(doc_id)) > 1

    table = gb(gb_cli, "list").stdout
    assert OFFLINE in table and "\tcomplete\t" not in table
    assert f"state {OFFLINE}" in gb(gb_cli, "show", str(doc_id)).stdout
    (listed,) = _list_json(gb_cli)
    assert _state(listed) == OFFLINE_JSON and "state" not in listed  # one field, one word
    shown = json.loads(gb(gb_cli, "show", str(doc_id), "--json").stdout)
    assert _state(shown) == OFFLINE_JSON and "state" not in shown
    with Memory(DB) as memory:
        assert [_state(d) for d in memory.documents()] == [OFFLINE_JSON]
    assert json.loads(gb(gb_cli, "stats", "--json").stdout)["incomplete"] == 1
    assert "incomplete documents" in gb(gb_cli, "stats").stdout

    configure(monkeypatch, server, COLUMNS="200")
    gb(gb_cli, "remember", absolute("report.txt"))
    (listed,) = _list_json(gb_cli)
    assert _state(listed) == COMPLETE_JSON
    assert _state(json.loads(gb(gb_cli, "show", str(doc_id), "--json").stdout)) == COMPLETE_JSON
    assert json.loads(gb(gb_cli, "stats", "--json").stdout)["incomplete"] == 0
    table = gb(gb_cli, "list").stdout
    assert "\tcomplete\t" in table and "incomplete" not in table


def test_a_superseded_version_says_so_and_only_current_documents_count_as_incomplete(
    gb_cli, monkeypatch
) -> None:
    configure(monkeypatch, None, COLUMNS="200")
    old_id, _ = _remembered(gb_cli, story(6, paragraphs=3))
    new_id, _ = _remembered(gb_cli, story(7, paragraphs=3))  # same file, new content
    states = {d["id"]: d["status"] for d in _list_json(gb_cli, "--all")}
    assert states == {new_id: "incomplete", old_id: "superseded"}
    assert "superseded" in gb(gb_cli, "list", "--all").stdout
    assert json.loads(gb(gb_cli, "stats", "--json").stdout)["incomplete"] == 1


def test_a_document_still_storing_is_incomplete(tmp_path) -> None:
    conn = open_db(tmp_path / DB)
    ds = datasets.get_or_create_dataset(conn, "default")
    doc = artifacts.insert_document(conn, dataset_id=ds.id, text="a b", chunk_count=2)
    (listed,) = artifacts.list_documents(conn, ds.id)
    assert _state(listed) == {"status": "incomplete", "pending": ["chunks"]}
    artifacts.update_status(conn, doc, "complete")
    assert _state(artifacts.get_document(conn, doc)) == COMPLETE_JSON


# ------------------------------------------------------------------ 5: chunk ids


def _snapshot() -> dict[str, Any]:
    """What a user could see change: every table's row count (vector and keyword indexes
    included), and the rows of gb's own tables."""
    tables = [r["name"] for r in rows("SELECT name FROM sqlite_master WHERE type = 'table'")]
    snapshot: dict[str, Any] = {t: count(f'SELECT count(*) FROM "{t}"') for t in tables}
    for t in tables:
        if t.startswith("gb_") and "fts" not in t:
            snapshot[f"{t} rows"] = sorted(map(repr, rows(f'SELECT * FROM "{t}"')))
    return snapshot


def test_forget_refuses_a_chunk_or_summary_id_naming_its_document(gb_cli, online) -> None:
    doc_id, source = _remembered(gb_cli, story(8, paragraphs=6))
    chunks = _chunks(doc_id)
    chunk, n = chunks[3], len(chunks)
    summary = _summary_of(chunk["id"])
    before = _snapshot()
    watcher = apsw.Connection(DB)
    version = watcher.execute("PRAGMA data_version").fetchall()

    result = gb(gb_cli, "forget", str(chunk["id"]), code=ExitCode.USAGE)
    assert _one_line(result.stderr) == (
        f"gb: {chunk['id']} is chunk 4 of {n} of document {doc_id} ({source}); "
        f"forget the document: gb forget {doc_id}"
    )
    result = gb(gb_cli, "forget", str(summary["id"]), code=ExitCode.USAGE)
    said = _one_line(result.stderr)
    assert f"{summary['id']} is the summary of chunk 4 of {n} (id {chunk['id']})" in said
    assert said.endswith(f"forget the document: gb forget {doc_id}")

    assert watcher.execute("PRAGMA data_version").fetchall() == version  # nothing committed
    watcher.close()
    assert _snapshot() == before
    assert json.loads(gb(gb_cli, "list", "--json").stdout)["status"] == "complete"

    gb(gb_cli, "forget", str(doc_id))  # the document itself: everything goes
    assert count("SELECT count(*) FROM gb_artifacts") == 0


def test_show_of_a_chunk_shows_it_with_its_document_summary_and_facts(
    gb_cli, online, monkeypatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    text = story(9, paragraphs=6)
    doc_id, source = _remembered(gb_cli, text)
    chunks = _chunks(doc_id)
    chunk = chunks[2]
    summary = _summary_of(chunk["id"])
    data = text.encode()
    first = data.count(b"\n", 0, chunk["start_offset"]) + 1
    last = first + data.count(b"\n", chunk["start_offset"], chunk["end_offset"] - 1)

    human = _one_line(gb(gb_cli, "show", str(chunk["id"])).stdout)
    assert f"chunk 3 of {len(chunks)} (id {chunk['id']}) of document {doc_id}" in human
    assert f"source {source}" in human and f"lines {first}-{last}" in human
    assert _one_line(chunk["text"]) in human and _one_line(summary["text"]) in human

    view = json.loads(gb(gb_cli, "show", str(chunk["id"]), "--json").stdout)
    assert view["document"] == {"id": doc_id, "source": source, **COMPLETE_JSON}
    assert (view["chunk_index"], view["text"]) == (2, chunk["text"])
    assert (view["line_start"], view["line_end"]) == (first, last)
    assert view["summary"]["text"] == summary["text"]
    facts = rows(
        "SELECT DISTINCT edge_id FROM gb_edge_artifacts WHERE artifact_id = ?", (chunk["id"],)
    )
    assert facts and sorted(e["id"] for e in view["edges"]) == sorted(f["edge_id"] for f in facts)
    assert view["edges"][0]["fact"].split()[0] in human

    by_summary = _one_line(gb(gb_cli, "show", str(summary["id"])).stdout)
    assert by_summary.startswith(f"{summary['id']}: the summary of chunk 3 of {len(chunks)}")
    assert _one_line(chunk["text"]) in by_summary
    as_json = json.loads(gb(gb_cli, "show", str(summary["id"]), "--json").stdout)
    assert as_json["place"]["role"] == "chunk_summary" and as_json["id"] == chunk["id"]


@pytest.mark.parametrize("command", ["list", "forget", "show"])
def test_help_says_ids_are_shared_and_which_forget_takes(gb_cli, command) -> None:
    said = _one_line(gb(gb_cli, command, "--help").stdout)
    expected = {
        "list": "Ids are shared by documents, chunks and summaries, so document ids may skip",
        "forget": "A chunk's or a summary's id is refused (exit 2), naming its document",
        "show": "A chunk's id (or its summary's) shows the chunk",
    }[command]
    assert expected in said
