"""`gb status` (SPEC Q3) and what the structure-aware modes store: the in-sync check a
cron job can test, the section context that goes into the keyword index, and
Contextual Retrieval's context (X1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from gligabao.store import open_db
from gligabao.store.db import query
from tests.llm_server import LLMServer

GUIDE = "\n\n".join(
    f"## Part {n}\n\n" + " ".join(f"Step {n}.{i} turns the valve {i} times." for i in range(30))
    for n in range(1, 5)
)


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> Iterator[LLMServer]:
    with LLMServer() as server:
        for name, value in {
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-status-test",
            "GB_DB": str(Path.cwd() / "gb.db"),
            "GB_EMBEDDINGS_DIMENSIONS": "32",
            "GB_CHUNK_SIZE": "128",
        }.items():
            monkeypatch.setenv(name, value)
        yield server


def states(gb_cli, *args: str) -> tuple[int, dict[str, str]]:
    result = gb_cli("status", "--json", *args)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return result.exit_code, {line["source"]: line["state"] for line in lines}


def test_status_tells_in_sync_changed_settings_changed_and_not_remembered(gb_cli, online):
    Path("guide.md").write_text(GUIDE)
    Path("other.md").write_text(GUIDE.replace("valve", "tap"))
    assert gb_cli("remember", "guide.md", "--quiet").exit_code == 0

    assert states(gb_cli, "guide.md") == (0, {"guide.md": "in sync"})
    code, found = states(gb_cli, "guide.md", "other.md")
    assert code == 1 and found == {"guide.md": "in sync", "other.md": "not remembered"}
    code, found = states(gb_cli, "guide.md", "--chunk-size", "256")
    assert code == 1 and found == {"guide.md": "settings changed"}
    code, found = states(gb_cli, "guide.md", "--mode", "text")
    assert code == 1 and found == {"guide.md": "settings changed"}

    Path("guide.md").write_text(GUIDE + "\n\n## Part 5\n\nOne more step.\n")
    assert states(gb_cli, "guide.md") == (1, {"guide.md": "changed"})
    assert gb_cli("remember", "guide.md", "--quiet").exit_code == 0
    assert states(gb_cli, "guide.md") == (0, {"guide.md": "in sync"})


def test_a_document_stored_offline_is_incomplete_until_completed(gb_cli, online, monkeypatch):
    Path("guide.md").write_text(GUIDE)
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    assert gb_cli("remember", "guide.md", "--quiet").exit_code == 0
    assert states(gb_cli, "guide.md") == (1, {"guide.md": "incomplete"})
    monkeypatch.setenv("OPENAI_BASE_URL", online.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-status-test")
    assert gb_cli("remember", "guide.md", "--quiet").exit_code == 0
    assert states(gb_cli, "guide.md") == (0, {"guide.md": "in sync"})


def test_a_missing_file_is_a_bad_input(gb_cli, online):
    result = gb_cli("status", "gone.md")
    assert result.exit_code == 3 and "gone.md: no such file" in result.stderr


def test_markdown_chunks_store_their_section_and_index_it_with_the_text(gb_cli, online):
    Path("guide.md").write_text(GUIDE)
    assert gb_cli("remember", "guide.md", "--quiet").exit_code == 0
    conn = open_db("gb.db")
    chunks = query(
        conn,
        """SELECT a.id, a.text, a.section, a.anchor, a.context, f.text AS indexed
           FROM gb_artifacts a JOIN gb_fts_artifacts f ON f.rowid = a.id
           WHERE a.parent_id IS NOT NULL AND a.kind != 'chunk_summary' ORDER BY a.chunk_index""",
    )
    assert {c["section"] for c in chunks} == {f"Part {n}" for n in range(1, 5)}
    for chunk in chunks:
        assert chunk["anchor"] == chunk["section"].lower().replace(" ", "-")
        # Stored: the exact slice. Indexed (and embedded): the section path first.
        assert chunk["context"].strip() == chunk["section"]
        assert chunk["text"] in GUIDE
        assert chunk["indexed"].startswith(chunk["section"] + "\n")
        assert chunk["indexed"].endswith(chunk["text"]) and chunk["indexed"] != chunk["text"]


def test_contextual_retrieval_stores_a_context_per_chunk_and_indexes_it(gb_cli, online):
    Path("guide.txt").write_text(GUIDE.replace("## ", ""))
    assert gb_cli("remember", "guide.txt", "--contextual", "--quiet").exit_code == 0
    conn = open_db("gb.db")
    rows = query(
        conn,
        """SELECT c.id, c.text, x.text AS situating, x.inference_id, f.text AS indexed,
                  i.stage
           FROM gb_artifacts c
           JOIN gb_artifacts x ON x.parent_id = c.id AND x.kind = 'chunk_context'
           JOIN gb_inferences i ON i.id = x.inference_id
           JOIN gb_fts_artifacts f ON f.rowid = c.id
           WHERE c.chunk_index IS NOT NULL""",
    )
    chunks = query(conn, "SELECT count(*) AS n FROM gb_artifacts WHERE chunk_index IS NOT NULL")
    assert len(rows) == chunks[0]["n"] > 1  # one context per chunk, with its inference
    for row in rows:
        assert row["stage"] == "contextualize_chunk"
        assert row["situating"] not in row["text"]  # never in the stored text
        assert row["indexed"].startswith(row["situating"]) and row["indexed"].endswith(row["text"])
    # The whole document goes first in the request, the chunk last (prompt caching).
    (request, *_) = online.requests_for("contextualize_chunk")
    messages = request.body["messages"]
    assert "<document>" in messages[1]["content"] and "<chunk>" in messages[-1]["content"]
    shown = json.loads(gb_cli("show", "1", "--json").stdout)
    assert all(c["situating_context"] for c in shown["chunks"])
    # Without --contextual nothing of the kind is asked for.
    Path("other.txt").write_text(GUIDE.replace("## ", "").replace("valve", "tap"))
    assert gb_cli("remember", "other.txt", "--quiet").exit_code == 0
    assert len(online.requests_for("contextualize_chunk")) == len(rows)
