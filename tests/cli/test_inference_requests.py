"""`gb inferences ID` shows the request a call sent (a chat's messages, the texts of
embeddings) as well as its answer; the record keeps no API key, and a message too long to
keep whole (the document a --contextual call sends with every chunk) is kept head and
tail, the cut said.

Real SQLite files, and the real openai client over HTTP to the test server.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.helpers import DB, SECRET, gb, rows, story, write


def _one(gb_cli, stage: str) -> dict:
    [row] = rows("SELECT id FROM gb_inferences WHERE stage = ? ORDER BY id LIMIT 1", (stage,))
    return json.loads(gb(gb_cli, "inferences", str(row["id"]), "--json").stdout)


def test_an_inference_shows_the_messages_it_sent_and_never_the_key(gb_cli, online) -> None:
    gb(gb_cli, "remember", str(write("a.md", story(5, paragraphs=3))))
    chunks = rows("SELECT text FROM gb_artifacts WHERE chunk_index IS NOT NULL")

    summary = _one(gb_cli, "summarize_chunk")
    roles = [m["role"] for m in summary["request"]["messages"]]
    assert roles == ["system", "user"]
    user = summary["request"]["messages"][1]["content"]
    [chunk] = [c for c in chunks if c["text"] in user]  # the chunk it summarized, whole
    embedded = _one(gb_cli, "embed")["request"]["input"]
    assert embedded and all(isinstance(text, str) and text for text in embedded)

    shown = gb(gb_cli, "inferences", str(summary["id"])).stdout
    assert "request\n" in shown and "  system:" in shown and "  user:" in shown
    assert chunk["text"].splitlines()[0] in shown
    assert shown.index("request\n") < shown.index("answer\n")
    assert SECRET.encode() not in Path(DB).read_bytes()


def test_a_call_recorded_before_requests_were_kept_says_so(gb_cli, online) -> None:
    gb(gb_cli, "remember", str(write("a.md", story(5))))
    [row] = rows("SELECT id FROM gb_inferences WHERE stage = 'extract_graph'")
    from gligabao.store import open_db

    conn = open_db(DB)
    conn.execute("UPDATE gb_inferences SET request = NULL")
    conn.close()

    assert json.loads(gb(gb_cli, "inferences", str(row["id"]), "--json").stdout)["request"] is None
    assert "request    — (not kept" in gb(gb_cli, "inferences", str(row["id"])).stdout


def test_a_long_message_is_kept_head_and_tail(gb_cli, online, monkeypatch) -> None:
    monkeypatch.setenv("GB_CHUNK_SIZE", "8000")
    text = story(6, paragraphs=400)
    assert len(text) > 40_000
    gb(gb_cli, "remember", str(write("long.md", text)), "--contextual")

    sent = _one(gb_cli, "contextualize_chunk")["request"]["messages"][1]["content"]
    assert "characters not kept ...]" in sent and len(sent) < 33_000
    assert sent.startswith("<document>\n" + text[:100])
    assert sent.endswith(text[-100:] + "\n</document>")
