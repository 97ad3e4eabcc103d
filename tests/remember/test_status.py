"""`gb status` and what the structure-aware modes store: the in-sync check a
cron job can test, the section context that goes into the keyword index, and
Contextual Retrieval's context."""

from __future__ import annotations

import gc
import json
from pathlib import Path

from gligabao.store import open_db
from gligabao.store.db import query
from tests.support.helpers import SECRET

GUIDE = "\n\n".join(
    f"## Part {n}\n\n" + " ".join(f"Step {n}.{i} turns the valve {i} times." for i in range(30))
    for n in range(1, 5)
)


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
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
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


# --- chunk-preview --json shows the stored contexts -------------------------------------


def preview_chunks(gb_cli, *args: str) -> list[dict]:
    result = gb_cli("chunk-preview", "--json", *args)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    [line] = result.stdout.splitlines()
    return json.loads(line)["chunks"]


def situating(chunks: list[dict]) -> list[str | None]:
    return [c.get("situating_context") for c in chunks]


def test_chunk_preview_shows_each_chunks_stored_context(gb_cli, online):
    Path("guide.md").write_text(GUIDE)
    assert gb_cli("remember", "guide.md", "--contextual", "--quiet").exit_code == 0
    # The test server writes the same context for every chunk of a document; make each
    # one its own, so a context shown against the wrong chunk cannot pass.
    conn = open_db("gb.db")
    conn.execute(
        """UPDATE gb_artifacts SET text = text || ' [chunk ' ||
               (SELECT c.chunk_index FROM gb_artifacts c WHERE c.id = gb_artifacts.parent_id)
               || ']'
           WHERE kind = 'chunk_context'"""
    )
    conn.close()
    shown = json.loads(gb_cli("show", "1", "--json").stdout)["chunks"]
    assert len(shown) > 1

    chunks = preview_chunks(gb_cli, "guide.md")
    assert [c["index"] for c in chunks] == [c["chunk_index"] for c in shown]
    assert situating(chunks) == [c["situating_context"] for c in shown]
    for chunk in chunks:
        assert chunk["situating_context"].endswith(f"[chunk {chunk['index']}]")
        assert chunk["situating_context"] not in chunk["text"]
        # The cut's own context (the section path) is still there, under its own key.
        assert chunk["context"].strip() == chunk["section"] and chunk["section"]
    # The table is unchanged, and a preview stores nothing.
    assert gb_cli("chunk-preview", "guide.md").exit_code == 0
    assert json.loads(gb_cli("show", "1", "--json").stdout)["chunks"] == shown

    # The same text cut the same way, from standard input, is not the remembered file.
    result = gb_cli("chunk-preview", "--json", "--mode", "markdown", "-", input=GUIDE)
    assert result.exit_code == 0, result.stderr
    from_stdin = json.loads(result.stdout)["chunks"]
    assert [c["text"] for c in from_stdin] == [c["text"] for c in chunks]
    assert situating(from_stdin) == [None] * len(shown)
    # Another database or dataset has no document from this file.
    assert situating(preview_chunks(gb_cli, "guide.md", "--dataset", "other")) == [None] * len(
        shown
    )
    assert situating(preview_chunks(gb_cli, "guide.md", "--db", "other.db")) == [None] * len(shown)
    assert not Path("other.db").exists()


def test_chunk_preview_shows_no_context_when_the_stored_chunks_are_not_the_previewed_ones(
    gb_cli, online
):
    text = GUIDE.replace("## ", "")
    Path("guide.txt").write_text(text)
    assert gb_cli("remember", "guide.txt", "--contextual", "--quiet").exit_code == 0
    plain = preview_chunks(gb_cli, "guide.txt")
    assert all(situating(plain))

    # Other settings cut other chunks: the stored contexts are not theirs.
    for other in (["--chunk-size", "256"], ["--overlap", "0"]):
        chunks = preview_chunks(gb_cli, "guide.txt", *other)
        assert len(chunks) > 1
        assert "situating_context" not in chunks[0], other
        assert not any(situating(chunks)), other
    # Settings that cut exactly the same chunks (no headings to split at), as `gb status`
    # says in sync: those stored chunks, with their contexts, are the ones previewed.
    assert all(situating(preview_chunks(gb_cli, "guide.txt", "--mode", "markdown")))

    # The file changed: its remembered version is not what is previewed, even when the
    # change moves no offset and no token count (one letter for another).
    edited = text.replace("Step 1.0 turns", "Step 1.0 burns")
    Path("guide.txt").write_text(edited)
    chunks = preview_chunks(gb_cli, "guide.txt")
    assert [(c["start_offset"], c["end_offset"], c["tokens"]) for c in chunks] == [
        (c["start_offset"], c["end_offset"], c["tokens"]) for c in plain
    ]
    assert not any(situating(chunks))
    Path("guide.txt").write_text(text.replace("valve", "tap"))
    assert not any(situating(preview_chunks(gb_cli, "guide.txt")))
    # Remembered again without --contextual: that version has no contexts.
    assert gb_cli("remember", "guide.txt", "--quiet").exit_code == 0
    assert states(gb_cli, "guide.txt") == (0, {"guide.txt": "in sync"})
    assert not any(situating(preview_chunks(gb_cli, "guide.txt")))
    # Back to the first content: the version that had them is superseded now.
    Path("guide.txt").write_text(text)
    assert not any(situating(preview_chunks(gb_cli, "guide.txt")))


def test_chunk_preview_shows_no_context_for_a_file_remembered_without_contextual(gb_cli, online):
    Path("guide.txt").write_text(GUIDE.replace("## ", ""))
    assert gb_cli("remember", "guide.txt", "--quiet").exit_code == 0
    assert states(gb_cli, "guide.txt") == (0, {"guide.txt": "in sync"})
    chunks = preview_chunks(gb_cli, "guide.txt")
    assert len(chunks) > 1
    assert not any("situating_context" in c for c in chunks)


def test_chunk_preview_without_a_database_creates_none(gb_cli, monkeypatch):
    monkeypatch.setenv("GB_CHUNK_SIZE", "128")
    Path("guide.txt").write_text(GUIDE.replace("## ", ""))
    before = sorted(p.name for p in Path.cwd().iterdir())
    chunks = preview_chunks(gb_cli, "guide.txt")  # the default ./gligabao.db
    assert len(chunks) > 1 and not any(situating(chunks))
    assert preview_chunks(gb_cli, "guide.txt", "--db", "sub/gb.db") == chunks
    monkeypatch.setenv("GB_DB", str(Path.cwd() / "env.db"))
    assert preview_chunks(gb_cli, "guide.txt") == chunks
    assert gb_cli("chunk-preview", "guide.txt").exit_code == 0
    assert sorted(p.name for p in Path.cwd().iterdir()) == before  # no file, no folder


def test_chunk_preview_works_when_the_database_cannot_be_read(gb_cli, online, monkeypatch):
    text = GUIDE.replace("## ", "")
    Path("guide.txt").write_text(text)
    Path("copy.txt").write_text(text)
    assert gb_cli("remember", "guide.txt", "--contextual", "--quiet").exit_code == 0
    expected = preview_chunks(gb_cli, "guide.txt")
    plain = [{k: v for k, v in c.items() if k != "situating_context"} for c in expected]
    assert all(situating(expected))

    # Locked by another process: the preview, without the contexts, and one notice.
    monkeypatch.setenv("GB_BUSY_TIMEOUT", "0.2")
    gc.collect()  # the connections of the gb commands run in this process, closed
    holder = open_db("gb.db")
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("UPDATE gb_datasets SET name = name")
    try:
        result = gb_cli("chunk-preview", "--json", "guide.txt", "copy.txt")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == 0
    outputs = [json.loads(line)["chunks"] for line in result.stdout.splitlines()]
    assert outputs == [plain, plain]
    [notice] = result.stderr.splitlines()
    assert "gb.db" in notice and "locked" in notice
    assert preview_chunks(gb_cli, "guide.txt") == expected  # and back once it is free

    # Not a database at all: the same.
    Path("junk.db").write_bytes(b"this is not an SQLite file\n" * 200)
    result = gb_cli("chunk-preview", "--json", "--db", "junk.db", "guide.txt")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["chunks"] == plain
    [notice] = result.stderr.splitlines()
    assert "junk.db" in notice and "not a database" in notice
    assert Path("junk.db").read_bytes() == b"this is not an SQLite file\n" * 200
