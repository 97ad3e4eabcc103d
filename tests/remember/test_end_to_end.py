"""`gb remember` end to end: the real openai client over HTTP to the test server, a real
SQLite file with sqlite-vec, configured through the environment the way a user would.

Documents are texts nobody here wrote: the Apache License 2.0 as the `openai` package
ships it, and typer's package description (Markdown with non-ASCII characters). A few
tests need a fact placed just so (in an overlap, contradicted later); they craft a text.
"""

from __future__ import annotations

import gc
import importlib.metadata
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from gligabao.chunk import cut
from gligabao.config import load_config
from gligabao.llm import LLM
from gligabao.read.sources import read_source
from gligabao.remember.document import ChunkFailed, Options, remember
from gligabao.store import open_db
from tests.support.helpers import (
    DB,
    SECRET,
    absolute,
    assert_indexes_complete,
    configure,
    count,
    documents,
    gb,
    rows,
    write,
)
from tests.support.llm_server import Fault, LLMServer, answer_model

MODEL = answer_model("gpt-4o-mini")  # what the server answers with: gpt-4o-mini-2024-07-18
R7_KEYS = [
    "artifact_id",
    "entities",
    "edges",
    "invalidated_edges",
    "chunks",
    "embedded_entities",
    "embedded_edges",
    "embedded_chunks",
    "embedded_summaries",
]
# Said only when the run rewrote entity summaries whose facts changed.
R7_WHEN_REWRITTEN = "summaries_rewritten"
CHUNK_KEYS = {
    "artifact_id",
    "index",
    "tokens",
    "overlap_tokens",
    "start_offset",
    "end_offset",
    "entities",
    "edges",
    "summary",
}
SUMMARY_KEYS = {"artifact_id", "text", "model", "reasoning", "inference_id"}
CHAT_STAGES = ("extract_graph", "summarize_chunk", "resolve")


# ------------------------------------------------------------------ documents


def _dist_file(dist: str, name: str) -> bytes:
    files = importlib.metadata.distribution(dist).files or []
    found = [f for f in files if f.name == name and "dist-info" in str(f)]
    assert found, f"{dist} ships no {name}"
    return Path(found[0].locate()).read_bytes()


def apache_bytes() -> bytes:
    """The Apache License 2.0 (about 11 KB, ASCII), as the openai package ships it."""
    data = _dist_file("openai", "LICENSE")
    assert b"Apache License" in data
    return data


def typer_bytes() -> bytes:
    """typer's package description: Markdown, about 16 KB, with multi-byte characters."""
    data = _dist_file("typer", "METADATA")
    assert len(data) > len(data.decode("utf-8"))  # some characters take several bytes
    return data


def plan(text: str, chunk_size: int, path: str | None = None) -> list[Any]:
    """The chunks gb will make of ``text`` at this chunk size (the library's own cut),
    in the mode the file name ``path`` calls for."""
    settings = load_config(None, {"chunk_size": chunk_size}, {}).chunk_settings()
    return cut(text, settings, path).chunks


def unique_marker(text: str, chunks: list[Any], index: int) -> str:
    """A piece of chunk ``index`` found nowhere else in the text (so in no other chunk,
    summary, entity or fact): a fault matching it hits that chunk's requests only."""
    data = text.encode("utf-8")
    lo = chunks[index - 1].end_offset if index else 0
    hi = chunks[index + 1].start_offset if index + 1 < len(chunks) else len(data)
    own = data[lo:hi].decode("utf-8", "ignore")
    for line in sorted(own.splitlines(), key=len, reverse=True):
        words = line.split()
        for width in range(3, len(words) + 1):
            for start in range(len(words) - width + 1):
                candidate = " ".join(words[start : start + width])
                if len(candidate) >= 12 and text.count(candidate) == 1:
                    return candidate
    raise AssertionError(f"chunk {index} holds nothing unique")


# ------------------------------------------------------------------ helpers


def remember_json(gb_cli, *args: str) -> dict[str, Any]:
    result = gb(gb_cli, "remember", *args, "--json")
    (line,) = result.stdout.splitlines()
    response = json.loads(line)
    # Every --json line says where it came from and how it ended, then the response object.
    assert list(response)[:2] == ["source", "status"]
    assert response.pop("source") in args
    assert response.pop("status") in {"remembered", "completed", "unchanged", "offline"}
    return response


def vector_count(table: str, where: str = "", params: Any = ()) -> int:
    return count(f'SELECT count(*) FROM "dataset-1-{table}" {where}', params)


def error_line(result: Any) -> str:
    """The one line of stderr that says what went wrong."""
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("gb: ")]
    return line


def calls(server: LLMServer) -> dict[str, int]:
    return {stage: server.calls(stage) for stage in (*CHAT_STAGES, "summarize_entity", "embed")}


def chunk_rows(document_id: int) -> list[dict[str, Any]]:
    return rows(
        """SELECT * FROM gb_artifacts WHERE parent_id = ? AND kind <> 'chunk_summary'
           ORDER BY chunk_index""",
        (document_id,),
    )


def assert_chunk_complete(chunk: dict[str, Any]) -> None:
    """A stored chunk has its summary, graph links, keyword rows and vectors."""
    (summary,) = rows("SELECT * FROM gb_artifacts WHERE parent_id = ?", (chunk["id"],))
    assert summary["kind"] == "chunk_summary" and summary["inference_id"] is not None
    assert summary["text"].strip()
    assert count("SELECT count(*) FROM gb_entity_artifacts WHERE artifact_id = ?", (chunk["id"],))
    fts = count(
        "SELECT count(*) FROM gb_fts_artifacts WHERE rowid IN (?, ?)", (chunk["id"], summary["id"])
    )
    assert fts == 2
    assert vector_count("chunks", "WHERE vector_id = ?", (f"chunk-{chunk['id']}",)) == 1
    assert vector_count("summaries", "WHERE vector_id = ?", (f"summary-{summary['id']}",)) == 1
    assert chunk["pending"] == ""


# ------------------------------------------------------------------ 1. what a run stores


def test_a_run_stores_chunks_summaries_graph_keywords_and_vectors(gb_cli, online) -> None:
    data = typer_bytes()
    path = write("typer.md", data)
    response = remember_json(gb_cli, str(path), "--chunk-size", "256")

    assert [k for k in response if k != R7_WHEN_REWRITTEN] == R7_KEYS
    (doc,) = documents()
    assert response["artifact_id"] == doc["id"]
    assert doc["text"] == data.decode("utf-8") and doc["status"] == "complete"
    chunks = chunk_rows(doc["id"])
    expected = plan(data.decode("utf-8"), 256, str(path))  # markdown mode, by the extension
    assert len(chunks) == len(expected) == len(response["chunks"]) > 10
    assert any(c.section for c in expected)
    for row, view, want in zip(chunks, response["chunks"], expected, strict=True):
        # The stored text is the exact slice of the file's bytes by its offsets.
        assert data[row["start_offset"] : row["end_offset"]].decode("utf-8") == row["text"]
        assert (row["start_offset"], row["end_offset"]) == (want.start_offset, want.end_offset)
        assert set(view) == CHUNK_KEYS and set(view["summary"]) == SUMMARY_KEYS
        assert view["artifact_id"] == row["id"] and view["index"] == row["chunk_index"]
        assert (view["start_offset"], view["end_offset"]) == (
            row["start_offset"],
            row["end_offset"],
        )
        assert (view["tokens"], view["overlap_tokens"]) == (row["tokens"], row["overlap_tokens"])
        (summary,) = rows(
            """SELECT s.*, m.name AS model, i.stage FROM gb_artifacts s
               JOIN gb_inferences i ON i.id = s.inference_id JOIN gb_models m ON m.id = i.model_id
               WHERE s.parent_id = ?""",
            (row["id"],),
        )
        assert summary["kind"] == "chunk_summary" and summary["stage"] == "summarize_chunk"
        assert summary["model"] == MODEL
        assert view["summary"] == {
            "artifact_id": summary["id"],
            "text": summary["text"],
            "model": MODEL,
            "reasoning": "none",
            "inference_id": summary["inference_id"],
        }
        assert_chunk_complete(row)

    chunk_ids = {c["id"] for c in chunks}
    entity_links = rows("SELECT DISTINCT artifact_id FROM gb_entity_artifacts")
    edge_links = rows("SELECT DISTINCT artifact_id FROM gb_edge_artifacts")
    assert {r["artifact_id"] for r in entity_links} <= chunk_ids  # chunks, never the parent
    assert {r["artifact_id"] for r in edge_links} <= chunk_ids and edge_links
    assert {r["artifact_id"] for r in rows("SELECT artifact_id FROM gb_edges")} <= chunk_ids
    entities, edges = (
        count("SELECT count(*) FROM gb_entities"),
        count("SELECT count(*) FROM gb_edges"),
    )
    assert entities > 0 and edges > 0
    assert count("SELECT count(*) FROM gb_fts_entities") == entities
    assert count("SELECT count(*) FROM gb_fts_edges") == edges
    # The parent is found through its chunks: it has no keyword row of its own.
    assert count("SELECT count(*) FROM gb_fts_artifacts WHERE rowid = ?", (doc["id"],)) == 0

    held = assert_indexes_complete(gb_cli)
    assert held == {
        "entities": entities,
        "edges": edges,
        "chunks": len(chunks),
        "summaries": len(chunks),
    }
    assert response["embedded_chunks"] == response["embedded_summaries"] == len(chunks)
    assert response["embedded_entities"] == entities and response["embedded_edges"] == edges


def test_a_short_text_is_one_artifact_with_one_extraction(gb_cli, online) -> None:
    path = write("note.txt", b"Alice Smith joined Acme Corp in Berlin on 2023-04-01.\n")
    response = remember_json(gb_cli, str(path))

    assert list(response) == [k for k in R7_KEYS if k != "chunks"]
    # Not chunked, it is embedded whole as its own vector in the chunks index (searched by
    # meaning like a chunk), in the one embeddings request of its entities and facts.
    assert response["embedded_chunks"] == 1 and response["embedded_summaries"] == 0
    assert calls(online) == {
        "extract_graph": 1,
        "summarize_chunk": 0,
        "resolve": 0,
        "summarize_entity": 0,
        "embed": 1,
    }
    (only,) = rows("SELECT * FROM gb_artifacts")
    assert only["id"] == response["artifact_id"] and only["parent_id"] is None
    names = {e["name"] for e in response["entities"]}
    assert {"Alice Smith", "Acme Corp", "Berlin"} <= names
    links = rows("SELECT DISTINCT artifact_id FROM gb_entity_artifacts")
    assert [r["artifact_id"] for r in links] == [only["id"]]  # linked to the text itself
    assert count("SELECT count(*) FROM gb_fts_artifacts WHERE rowid = ?", (only["id"],)) == 1
    held = assert_indexes_complete(gb_cli)
    assert held["chunks"] == 1 and held["summaries"] == 0 and held["entities"] == len(names)


# ------------------------------------------------------------------ 2. overlap and contradiction


def overlap_document() -> tuple[str, int]:
    """A text (chunk size 64) where "Alice works at Acme." lies in the overlap of two
    chunks and "Alice works at Globex." comes chunks later. Returns (text, chunk index
    of the first chunk holding the Acme fact)."""
    filler = [
        f"the minutes of meeting {i} record routine business and no decision of note."
        for i in range(24)
    ]
    acme, globex = "Alice works at Acme.", "Alice works at Globex."
    for at in range(2, 12):
        sentences = [*filler]
        sentences.insert(at, acme)
        sentences.insert(len(sentences) - 2, globex)
        text = " ".join(sentences) + "\n"
        chunks = plan(text, 64)
        holding = [c.index for c in chunks if acme in c.text]
        later = [c.index for c in chunks if globex in c.text]
        if len(holding) == 2 and holding[1] == holding[0] + 1 and min(later) > holding[1]:
            return text, holding[0]
    raise AssertionError("no placement puts the fact in an overlap")


def test_a_fact_in_the_overlap_is_one_edge_and_a_later_one_closes_it(gb_cli, online) -> None:
    text, first = overlap_document()
    path = write("minutes.txt", text.encode())
    response = remember_json(
        gb_cli, str(path), "--chunk-size", "64", "--valid-at", "2024-05-01T00:00:00Z"
    )

    chunks = chunk_rows(response["artifact_id"])
    (acme,) = rows(
        """SELECT g.* FROM gb_edges g JOIN gb_entities t ON t.id = g.target_entity_id
           WHERE t.name = 'Acme'"""
    )
    linked = rows("SELECT artifact_id FROM gb_edge_artifacts WHERE edge_id = ?", (acme["id"],))
    assert sorted(r["artifact_id"] for r in linked) == [
        chunks[first]["id"],
        chunks[first + 1]["id"],
    ]
    assert acme["artifact_id"] == chunks[first]["id"]  # first extracted from the earlier chunk

    (globex,) = rows(
        """SELECT g.* FROM gb_edges g JOIN gb_entities t ON t.id = g.target_entity_id
           WHERE t.name = 'Globex'"""
    )
    assert acme["invalid_at"] == "2024-05-01T00:00:00.000Z" and acme["expired_at"]
    assert acme["invalidated_by_edge_id"] == globex["id"]
    assert "Globex" in acme["invalidation_reason"]
    assert globex["invalid_at"] is None and globex["expired_at"] is None
    (closed,) = response["invalidated_edges"]
    assert closed["id"] == acme["id"] and closed["invalidated_by"] == globex["id"]
    assert closed["reason"] == acme["invalidation_reason"]
    # One Alice, one WORKS_AT edge per employer.
    assert count("SELECT count(*) FROM gb_entities WHERE name = 'Alice'") == 1
    assert count("SELECT count(*) FROM gb_edges WHERE relation = 'WORKS_AT'") == 2
    assert_indexes_complete(gb_cli)


# ------------------------------------------------------------------ 3. bad input


def test_invalid_utf8_stores_nothing(gb_cli, online) -> None:
    data = apache_bytes()
    path = write("latin1.txt", data[:2000] + "Müller".encode("latin-1") + data[2000:4000])
    result = gb(gb_cli, "remember", str(path), code=3)
    assert "not valid UTF-8" in error_line(result)
    assert count("SELECT count(*) FROM gb_artifacts") == 0
    assert online.requests == []


@pytest.mark.parametrize("kind", ["chunk_summary", "chunk_context", " "])
def test_a_kind_gb_makes_itself_or_an_empty_one_is_refused(gb_cli, online, kind) -> None:
    path = write("apache.txt", apache_bytes())
    result = gb(gb_cli, "remember", str(path), "--kind", kind, code=2)
    assert "--kind" in error_line(result) and (kind.strip() or "empty") in error_line(result)
    assert online.requests == []  # refused before any call is paid for


def test_a_missing_embeddings_key_is_refused_before_any_call(gb_cli, server, monkeypatch) -> None:
    """A chat endpoint with no embeddings key would pay for a graph stored without vectors."""
    configure(monkeypatch, server, GB_EMBEDDINGS_API_KEY_ENV="GB_TEST_EMBEDDINGS_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    # The key alone: OpenAI itself. Were gb to call it, tests/support/netguard refuses the
    # connection (no test reaches beyond loopback) and the exit code is not 5.
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("GB_TEST_EMBEDDINGS_KEY", raising=False)
    a, b = write("a.txt", b"The heron waits."), write("b.txt", b"The otter swims.")
    result = gb(gb_cli, "remember", str(a), str(b), code=5)
    (line,) = result.stderr.strip().splitlines()  # once for the batch, not once an input
    assert "GB_TEST_EMBEDDINGS_KEY" in line and SECRET not in line
    assert server.requests == []
    assert count("SELECT count(*) FROM gb_artifacts") == 0


# ------------------------------------------------------------------ 4. extraction or summary fails


@pytest.mark.parametrize("stage", ["extract_graph", "summarize_chunk"])
def test_a_failed_extraction_or_summary_stores_no_artifact(gb_cli, online, stage) -> None:
    text = apache_bytes().decode()
    path = write("apache.txt", text.encode())
    marker = unique_marker(text, plan(text, 128), 5)
    fault = online.add_fault(Fault("500", stage=stage, match=marker, times=-1))

    result = gb(gb_cli, "remember", str(path), code=1)
    message = error_line(result)
    assert f"{path}: chunk 6 of {len(plan(text, 128))}: {stage} (gpt-4o-mini): HTTP 500" in message
    assert "nothing of it was stored" in message
    assert fault.hits == 2  # the first try and the one retry GB_LLM_MAX_RETRIES allows
    assert count("SELECT count(*) FROM gb_artifacts") == 0
    assert count("SELECT count(*) FROM gb_entities") == count("SELECT count(*) FROM gb_edges") == 0
    # What was answered before the failure is kept with its request's hash; chunks
    # whose answers were back had their embeddings asked for (a record, no answer kept),
    # and the resolve calls of the chunks planned as their extractions landed were sent:
    # a rerun reuses all of it, and stores the document whole.
    kept = rows("SELECT stage, request_hash, answer FROM gb_inferences")
    assert {r["stage"] for r in kept} <= {"extract_graph", "summarize_chunk", "embed", "resolve"}
    for asked in ("extract_graph", "summarize_chunk", "resolve"):
        answered = [r for r in kept if r["stage"] == asked and r["answer"]]
        # Every answer the server gave is kept, hashed; other chunks' answers did come back.
        assert len(answered) == online.calls(asked), asked
        assert all(len(r["request_hash"]) == 64 for r in answered)
    assert online.calls(stage) > 0


def test_calls_carried_on_after_a_failure_leave_no_unread_error(gb_cli, online, caplog) -> None:
    """When one call fails, those already out are carried to their end (and recorded); their
    own failures must be read too, or asyncio logs "Task exception was never retrieved"
    when they are collected (inside pytest that once broke an import: a SystemError)."""
    online.add_fault(Fault("500", stage="extract_graph", times=-1))
    path = write("apache.txt", apache_bytes())
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        gb(gb_cli, "remember", str(path), "--chunk-size", "64", code=1)
        gc.collect()
    assert online.calls("extract_graph", include_faults=True) > 2  # several were out at once
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []


# ------------------------------------------------------------------ 5. failure at chunk k, resumed


def test_a_failure_at_chunk_k_keeps_earlier_chunks_and_a_rerun_completes(gb_cli, online) -> None:
    text = apache_bytes().decode()
    path = write("apache.txt", text.encode())
    chunks = plan(text, 128)
    n, k = len(chunks), 4  # k is 1-based, as the message says it
    marker = unique_marker(text, chunks, k - 1)
    online.add_fault(Fault("500", endpoint="embeddings", match=marker, times=-1))

    result = gb(gb_cli, "remember", str(path), code=1)
    message = error_line(result)
    assert f"chunk {k} of {n}" in message and "HTTP 500" in message and "embed" in message
    (doc,) = documents()
    stored = chunk_rows(doc["id"])
    assert [c["chunk_index"] for c in stored] == list(range(k - 1))
    for chunk in stored:
        assert_chunk_complete(chunk)
    # Nothing of chunk k: no artifact, no links, no vectors, no graph row without a source.
    assert vector_count("chunks") == vector_count("summaries") == k - 1
    assert doc["status"] == "storing"
    unlinked_entities = """SELECT count(*) FROM gb_entities e WHERE NOT EXISTS
        (SELECT 1 FROM gb_entity_artifacts l WHERE l.entity_id = e.id)"""
    unlinked_edges = """SELECT count(*) FROM gb_edges e WHERE NOT EXISTS
        (SELECT 1 FROM gb_edge_artifacts l WHERE l.edge_id = e.id)"""
    assert count(unlinked_entities) == count(unlinked_edges) == 0
    assert_indexes_complete(gb_cli)

    before = calls(online)
    online.clear_faults()
    response = remember_json(gb_cli, str(path))
    after = calls(online)
    assert response["artifact_id"] == doc["id"] and len(documents()) == 1
    assert [c["chunk_index"] for c in chunk_rows(doc["id"])] == list(range(n))
    # Every extraction and summary was paid for by the first run: none is asked again.
    assert after["extract_graph"] == before["extract_graph"] == n
    assert after["summarize_chunk"] == before["summarize_chunk"] == n
    # And one for each call that rewrote the summaries of entities whose facts later
    # chunks closed: the failed run left them marked.
    rewrites = after["summarize_entity"] - before["summarize_entity"]
    assert after["embed"] - before["embed"] == n - (k - 1) + rewrites
    assert [c["id"] for c in chunk_rows(doc["id"])][: k - 1] == [c["id"] for c in stored]
    for chunk in chunk_rows(doc["id"]):
        assert_chunk_complete(chunk)
    assert documents()[0]["status"] == "complete"
    assert count("SELECT count(*) FROM gb_artifacts WHERE kind = 'chunk_summary'") == n
    assert_indexes_complete(gb_cli)


def test_a_rerun_in_another_process_pays_for_nothing_already_answered(gb_process, online) -> None:
    """Answers are found again by a hash of their request: the same in every process (no
    per-process salt, as Python's own hash() has), so a rerun by a new `gb` pays nothing."""
    text = apache_bytes().decode()
    path = write("apache.txt", text.encode())
    chunks = plan(text, 128)
    n, k = len(chunks), 4
    marker = unique_marker(text, chunks, k - 1)
    online.add_fault(Fault("500", endpoint="embeddings", match=marker, times=-1))

    first = gb_process("remember", str(path))
    assert first.returncode == 1, first.stderr.decode()
    assert f"chunk {k} of {n}" in first.stderr.decode()
    before = calls(online)
    assert before["extract_graph"] == before["summarize_chunk"] == n  # all paid for, once
    online.clear_faults()
    online.requests.clear()

    second = gb_process("remember", str(path), "--json")

    assert second.returncode == 0, second.stderr.decode()
    assert json.loads(second.stdout)["status"] == "completed"
    paid = calls(online)
    assert paid["extract_graph"] == paid["summarize_chunk"] == 0
    # Only what the first run never got, and the rewritten summaries' vectors.
    assert paid["embed"] == n - (k - 1) + paid["summarize_entity"]
    (doc,) = documents()
    assert doc["status"] == "complete" and len(chunk_rows(doc["id"])) == n


def test_a_rerun_with_other_settings_completes_the_document_as_first_cut(
    gb_cli, online, monkeypatch
) -> None:
    """A half-stored document is completed with the settings it was first cut with, not
    the rerun's: else its chunks would no longer fit together."""
    text = apache_bytes().decode()
    path = write("apache.txt", text.encode())
    chunks = plan(text, 128)
    n, k = len(chunks), 3
    online.add_fault(
        Fault("500", endpoint="embeddings", match=unique_marker(text, chunks, k - 1), times=-1)
    )
    gb(gb_cli, "remember", str(path), code=1)
    online.clear_faults()
    assert len(plan(text, 300)) != n

    monkeypatch.setenv("GB_CHUNK_SIZE", "300")
    response = remember_json(gb_cli, str(path), "--overlap", "40", "--mode", "markdown")

    (doc,) = documents()
    stored = chunk_rows(doc["id"])
    assert response["artifact_id"] == doc["id"] and doc["status"] == "complete"
    assert [(c["start_offset"], c["end_offset"]) for c in stored] == [
        (c.start_offset, c.end_offset) for c in chunks
    ]
    assert online.calls("extract_graph") == n  # and nothing was extracted twice
    assert_indexes_complete(gb_cli)


def test_a_failed_resolve_names_its_chunk_and_a_rerun_completes(gb_cli, online) -> None:
    text = apache_bytes().decode()
    path = write("apache.txt", text.encode())
    n = len(plan(text, 128))
    online.add_fault(Fault("503", stage="resolve", times=-1))

    result = gb(gb_cli, "remember", str(path), code=1)
    (request, *_) = online.requests_for("resolve")
    content = request.body["messages"][-1]["content"]
    items = json.loads(content.split("<items>", 1)[1].rsplit("</items>", 1)[0])
    ids = [item["id"] for part in ("entities", "edges") for item in items[part]]
    k = min(int(re.match(r"[er](\d+)\.", i).group(1)) for i in ids) + 1  # first chunk asked
    assert k > 1
    assert f"chunk {k} of {n}" in error_line(result) and "resolve" in error_line(result)
    (doc,) = documents()
    stored = chunk_rows(doc["id"])
    assert [c["chunk_index"] for c in stored] == list(range(k - 1))
    for chunk in stored:
        assert_chunk_complete(chunk)

    online.clear_faults()
    extracted = online.calls("extract_graph")
    response = remember_json(gb_cli, str(path))
    assert response["artifact_id"] == doc["id"] and len(documents()) == 1
    assert len(chunk_rows(doc["id"])) == n and online.calls("extract_graph") == extracted
    assert online.calls("resolve") >= 1
    assert_indexes_complete(gb_cli)


# ------------------------------------------------------------------ 6. transient faults


@pytest.mark.parametrize(
    "fault",
    [
        Fault("429", stage="summarize_chunk", retry_after=0.3),
        Fault("500", stage="extract_graph"),
        Fault("timeout", endpoint="embeddings"),
        Fault("503", stage="resolve"),
    ],
    ids=["429-retry-after", "500", "timeout", "503-resolve"],
)
def test_a_transient_fault_is_retried_and_the_run_succeeds(
    gb_cli, server, monkeypatch, fault
) -> None:
    configure(monkeypatch, server, GB_LLM_TIMEOUT="1", GB_CHUNK_SIZE="400")
    server.timeout_sleep = 3
    server.add_fault(fault)
    path = write("apache.txt", apache_bytes())

    response = remember_json(gb_cli, str(path))
    assert fault.hits == 1
    assert len(response["chunks"]) == len(plan(path.read_text(), 400))
    assert_indexes_complete(gb_cli)
    (faulted,) = [r for r in server.requests if r.fault]
    (retried,) = [r for r in server.requests if r.body == faulted.body and not r.fault]
    assert retried.status == 200
    if fault.kind == "429":  # the retry waited as long as Retry-After asked
        assert retried.started - faulted.ended >= 0.3


# ------------------------------------------------------------------ 7. broken answers


@pytest.mark.parametrize(
    ("fault", "cause"),
    [
        (Fault("malformed", stage="extract_graph", times=-1), "is not valid JSON"),
        (Fault("truncated", stage="summarize_chunk", times=-1), "cut off (finish_reason length)"),
    ],
    ids=["malformed", "truncated"],
)
def test_a_broken_answer_fails_the_run_and_stores_nothing(gb_cli, online, fault, cause) -> None:
    online.add_fault(fault)
    path = write("apache.txt", apache_bytes())
    result = gb(gb_cli, "remember", str(path), code=1)
    message = error_line(result)
    assert str(path) in message and fault.stage in message and cause in message
    assert count("SELECT count(*) FROM gb_artifacts") == 0


# ------------------------------------------------------------------ 8. no structured output


def test_a_server_without_json_schema_output_still_works(gb_cli, online) -> None:
    online.structured_outputs = False
    path = write("apache.txt", apache_bytes())
    response = remember_json(gb_cli, str(path))
    n = len(response["chunks"])
    assert n == len(plan(path.read_text(), 128))
    assert all(c["summary"]["text"] for c in response["chunks"]) and response["edges"]
    # After the first refusal every request carries the schema in its prompt instead.
    refused = [r for r in online.requests if r.status == 400]
    answered = [r for r in online.requests if r.status == 200 and r.stage != "embed"]
    assert refused and answered
    assert all("response_format" not in r.body for r in answered)
    assert online.calls("extract_graph") == online.calls("summarize_chunk") == n
    assert_indexes_complete(gb_cli)


# ------------------------------------------------------------------ 9. the key stays secret


def test_the_api_key_reaches_no_file_output_or_trace(gb_process, server, monkeypatch) -> None:
    configure(monkeypatch, server)
    text = apache_bytes().decode()
    path = write("apache.txt", text.encode())
    seen = []

    ok = gb_process("remember", str(path), "--json", "--trace")
    assert ok.returncode == 0, ok.stderr
    response = json.loads(ok.stdout)
    assert response["trajectory"]
    seen += [ok.stdout, ok.stderr]

    other = write("typer.md", typer_bytes())
    marker = unique_marker(other.read_text(), plan(other.read_text(), 128), 2)
    server.add_fault(Fault("500", endpoint="embeddings", match=marker, times=-1))
    failed = gb_process("remember", str(other), "--json", "--trace")
    assert failed.returncode == 1 and "chunk 3 of" in failed.stderr.decode()
    seen += [failed.stdout, failed.stderr]

    shown = gb_process("config")
    assert shown.returncode == 0
    seen += [shown.stdout, shown.stderr]

    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.requests)
    secret = SECRET.encode()
    for output in seen:
        assert secret not in output
    files = [p for p in Path.cwd().iterdir() if p.name.startswith(DB)]  # with -wal, -shm
    assert files
    for file in files:
        assert secret not in file.read_bytes(), file


# ------------------------------------------------------------------ 10. offline, then completed


def test_offline_stores_the_text_and_a_later_run_completes_it(gb_cli, server, monkeypatch) -> None:
    configure(monkeypatch, None, COLUMNS="200")  # a wide terminal: table cells are not cut
    text = apache_bytes().decode()
    path = write("apache.txt", text.encode())
    n = len(plan(text, 128))

    result = gb(gb_cli, "remember", str(path))
    said = " ".join(result.stderr.split())
    assert "extraction, summaries and embeddings were skipped" in said
    assert "OPENAI_API_KEY" in said and "OPENAI_BASE_URL" in said
    (doc,) = documents()
    chunks = chunk_rows(doc["id"])
    assert len(chunks) == n
    fts = rows("SELECT rowid FROM gb_fts_artifacts")
    assert sorted(r["rowid"] for r in fts) == [c["id"] for c in chunks]
    assert count("SELECT count(*) FROM gb_artifacts WHERE kind = 'chunk_summary'") == 0
    listed = [json.loads(line) for line in gb(gb_cli, "list", "--json").stdout.splitlines()]
    assert [d["id"] for d in listed] == [doc["id"]]
    assert listed[0]["pending"] == ["extract_graph", "summarize_chunk", "embed"]
    table = gb(gb_cli, "list").stdout
    assert "extract_graph" in table
    assert all(c["pending"] == "extract_graph summarize_chunk embed" for c in chunks)

    configure(monkeypatch, server)
    response = remember_json(gb_cli, str(path))
    assert response["artifact_id"] == doc["id"] and len(documents()) == 1
    assert [c["id"] for c in chunk_rows(doc["id"])] == [c["id"] for c in chunks]
    assert count("SELECT count(*) FROM gb_artifacts WHERE parent_id = ?", (doc["id"],)) == n
    for chunk in chunk_rows(doc["id"]):
        assert_chunk_complete(chunk)
    assert calls(server)["extract_graph"] == calls(server)["summarize_chunk"] == n
    assert documents()[0]["pending"] == ""
    listed = json.loads(gb(gb_cli, "list", "--json").stdout)
    assert listed["pending"] == [] and listed["chunks_stored"] == n
    held = assert_indexes_complete(gb_cli)
    assert held["chunks"] == held["summaries"] == n
    # A third run finds nothing left to do.
    before = len(server.requests)
    assert remember_json(gb_cli, str(path))["artifact_id"] == doc["id"]
    assert len(server.requests) == before


# ------------------------------------------------------------------ 11. forget


def test_forget_removes_the_document_and_all_that_hangs_off_it(gb_cli, online) -> None:
    kept = remember_json(gb_cli, str(write("typer.md", typer_bytes())), "--chunk-size", "512")
    gone = remember_json(gb_cli, str(write("apache.txt", apache_bytes())))
    tree = [r["id"] for r in rows("SELECT id FROM gb_artifacts WHERE parent_id IS NOT NULL")]
    gone_tree = [
        r["id"]
        for r in rows(
            """SELECT id FROM gb_artifacts WHERE parent_id = :d
               OR parent_id IN (SELECT id FROM gb_artifacts WHERE parent_id = :d)""",
            {"d": gone["artifact_id"]},
        )
    ]
    assert gone_tree and set(gone_tree) < set(tree)
    gb(gb_cli, "forget", str(gone["artifact_id"]))

    ids = json.dumps([gone["artifact_id"], *gone_tree])
    where = "IN (SELECT value FROM json_each(?))"
    assert count(f"SELECT count(*) FROM gb_artifacts WHERE id {where}", (ids,)) == 0
    assert count(f"SELECT count(*) FROM gb_entity_artifacts WHERE artifact_id {where}", (ids,)) == 0
    assert count(f"SELECT count(*) FROM gb_edge_artifacts WHERE artifact_id {where}", (ids,)) == 0
    assert count(f"SELECT count(*) FROM gb_fts_artifacts WHERE rowid {where}", (ids,)) == 0
    vids = json.dumps([f"chunk-{i}" for i in gone_tree] + [f"summary-{i}" for i in gone_tree])
    for table in ("chunks", "summaries"):
        assert vector_count(table, f"WHERE vector_id {where}", (vids,)) == 0
    # What is left is the other document, whole.
    (doc,) = documents()
    assert doc["id"] == kept["artifact_id"]
    for chunk in chunk_rows(doc["id"]):
        assert_chunk_complete(chunk)
    left = count("SELECT count(*) FROM gb_artifacts WHERE parent_id IS NOT NULL")
    assert count("SELECT count(*) FROM gb_fts_artifacts") == left
    assert count("SELECT count(*) FROM gb_fts_entities") == count(
        "SELECT count(*) FROM gb_entities"
    )
    assert count("SELECT count(*) FROM gb_fts_edges") == count("SELECT count(*) FROM gb_edges")
    held = assert_indexes_complete(gb_cli)
    assert held["chunks"] == len(kept["chunks"]) and held["entities"] > 0


# ------------------------------------------------------------------ 12. --trace


def test_trace_has_every_step_in_order(gb_cli, online) -> None:
    path = write("apache.txt", apache_bytes())
    response = remember_json(gb_cli, str(path), "--chunk-size", "400", "--trace")
    steps = response.pop("trajectory")
    assert [k for k in response if k != R7_WHEN_REWRITTEN] == R7_KEYS
    n = len(response["chunks"])
    names = [s["step"] for s in steps]
    assert names[0] == "chunk_text" and names.count("store_parent_artifact") == 1
    parent = names.index("store_parent_artifact")

    def at(step: str, i: int) -> int:
        (found,) = [
            j
            for j, s in enumerate(steps)
            if s["step"] == step and s["message"].endswith(f"(chunk {i} of {n})")
        ]
        return found

    for i in range(1, n + 1):
        assert at("extract_graph", i) < parent and at("summarize_chunk", i) < parent
        assert parent < at("embed", i) < at("store_artifact", i)
    stores = [j for j, name in enumerate(names) if name == "store_artifact"]
    assert stores == sorted(at("store_artifact", i) for i in range(1, n + 1))
    assert names.count("extract_graph") == names.count("summarize_chunk") == n
    assert names.count("embed") == names.count("store_artifact") == n

    shown = gb(gb_cli, "remember", str(path), "--chunk-size", "400", "--trace").stdout
    # Already complete: the trace says so, and nothing was cut or asked again.
    assert "unchanged" in shown and "already stored whole as document" in shown
    assert "chunk_text" not in shown


def test_trace_says_when_code_is_cut_as_text(gb_cli, online) -> None:
    # A source file in a language with no grammar here is cut as text, and the trace says so.
    path = write("License.scala", apache_bytes())
    steps = remember_json(gb_cli, str(path), "--chunk-size", "400", "--trace")["trajectory"]
    names = [s["step"] for s in steps]
    assert names[:2] == ["chunk_text", "chunk_notice"]
    assert steps[1]["message"] == "no grammar for scala: cut as text, lines first"
    go = Path(__file__).parent.parent / "chunk" / "fixtures" / "queue.go"
    path = write("queue.go", go.read_bytes())
    steps = remember_json(gb_cli, str(path), "--chunk-size", "200", "--trace")["trajectory"]
    assert steps[0]["step"] == "chunk_text" and "chunk_notice" not in [s["step"] for s in steps]


# ------------------------------------------------------------------ 13. concurrency


def test_calls_run_concurrently_and_cost_at_most_two_and_a_half_per_chunk(
    gb_cli, server, monkeypatch
) -> None:
    configure(monkeypatch, server, GB_CHUNK_SIZE="200")
    server.latency = 0.25
    path = write("apache.txt", apache_bytes())
    response = remember_json(gb_cli, str(path))
    n = len(response["chunks"])
    assert 18 <= n <= 30
    assert server.max_in_flight >= 4
    assert server.max_in_flight <= 8  # the default concurrency bounds it
    chat = sum(server.calls(stage) for stage in CHAT_STAGES)
    assert chat <= 2.5 * n
    assert server.calls("embed") == n  # one embeddings request per chunk


# ------------------------------------------------------------------ 14. reading back


def test_show_list_stats_and_inferences_show_what_was_stored(gb_cli, online, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # a wide terminal: table cells are not cut
    path = write(absolute("apache.txt"), apache_bytes())  # named by its absolute path
    response = remember_json(gb_cli, str(path), "--chunk-size", "400")
    doc_id, n = response["artifact_id"], len(response["chunks"])

    shown = json.loads(gb(gb_cli, "show", str(doc_id), "--json").stdout)
    assert shown["id"] == doc_id and len(shown["chunks"]) == n
    assert [c["summary"]["text"] for c in shown["chunks"]] == [
        c["summary"]["text"] for c in response["chunks"]
    ]
    assert all(c["summary"]["model"] == MODEL for c in shown["chunks"])
    assert len(shown["entities"]) == count("SELECT count(*) FROM gb_entities")
    assert len(shown["edges"]) == count("SELECT count(*) FROM gb_edges")
    human = gb(gb_cli, "show", str(doc_id)).stdout
    assert f"document {doc_id}" in human and "chunks" in human

    (listed,) = map(json.loads, gb(gb_cli, "list", "--json").stdout.splitlines())
    assert (listed["id"], listed["chunks_stored"], listed["chunk_count"]) == (doc_id, n, n)
    assert listed["status"] == "complete" and listed["source"] == str(path)

    stats = json.loads(gb(gb_cli, "stats", "--json").stdout)
    inferences = count("SELECT count(*) FROM gb_inferences")
    assert stats["documents"] == 1 and stats["chunks"] == stats["summaries"] == n
    assert stats["entities"] == len(shown["entities"])
    assert stats["edges_valid"] + stats["edges_closed"] == len(shown["edges"])
    assert stats["edges_closed"] == len(response["invalidated_edges"])
    assert stats["inferences"] == inferences == len(online.requests)
    assert stats["input_tokens"] == count("SELECT sum(input_tokens) FROM gb_inferences") > 0
    assert f"{inferences:,}" in gb(gb_cli, "stats").stdout

    summaries = gb(gb_cli, "inferences", "--json", "--stage", "summarize_chunk", "-n", "500")
    listed = [json.loads(line) for line in summaries.stdout.splitlines()]
    assert len(listed) == n and {r["model"] for r in listed} == {MODEL}
    assert {r["id"] for r in listed} == {c["summary"]["inference_id"] for c in response["chunks"]}
    assert "summarize_chunk" in gb(gb_cli, "inferences").stdout


# ------------------------------------------------------------------ the library, without the CLI


def test_the_library_remembers_and_reports_a_failed_chunk(server, tmp_path) -> None:
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": SECRET}
    flags = {"chunk_size": 128, "embeddings.dimensions": 64, "llm.max_retries": 0}
    config = load_config(None, flags, env)
    text = apache_bytes().decode()
    path = write("apache.txt", text.encode())
    chunks = plan(text, 128)
    server.add_fault(
        Fault("500", endpoint="embeddings", match=unique_marker(text, chunks, 1), times=-1)
    )
    conn = open_db(tmp_path / "lib.db")
    llm = LLM(config, env=env, backoff_base=0.01)
    # Neighbouring chunks' texts may be embedded in one request: the one that failed can
    # be the first chunk's as well as the second's, never a later one.
    with pytest.raises(ChunkFailed, match=rf"chunk [12] of {len(chunks)} failed: embed"):
        remember(conn, read_source(str(path)), config, llm, Options())
    server.clear_faults()
    outcome = remember(conn, read_source(str(path)), config, llm, Options())
    assert outcome.status == "completed" and len(outcome.response["chunks"]) == len(chunks)
    assert outcome.spend.reused >= 2 * (len(chunks) - 1)  # the answers the first run paid for
    conn.close()
