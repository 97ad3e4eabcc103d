"""PDF, HTML and chat exports through `gb`: read by their readers, cut, stored
with their locations in a real SQLite file and shown by chunk-preview, remember and show.

The PDFs and HTML pages are real files nobody here wrote; the chat export is generated
(tests/read/test_chat.py) and remembered against the test LLM server over HTTP."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from gligabao.llm.endpoint import EMBED_STAGE
from gligabao.store import artifacts, datasets, open_db
from tests.read.test_chat import ISO_TIME, ROLE_LABEL, _ancestors, _regenerated_export
from tests.read.test_pdf import (
    REAL_PDFS,
    _encrypted_pdf,
    _flat,
    _image_only_pdf,
    _truncated_pdf,
)
from tests.support.helpers import DB, configure, gb, rows, write


def _real_pdf(path: str) -> str:
    if not Path(path).exists():
        pytest.skip(
            f"{path} is not installed here (Debian packages libtasn1-doc, shared-mime-info)"
        )
    return path


def _pages_again(path: str) -> list[str]:
    """Each page's text, extracted again here, straight from PDFium."""
    document = pdfium.PdfDocument(path)
    try:
        return [_flat(document[i].get_textpage().get_text_range()) for i in range(len(document))]
    finally:
        document.close()


def _chunks(document_id: int) -> list[dict]:
    return rows(
        "SELECT * FROM gb_artifacts WHERE parent_id = ? AND chunk_index IS NOT NULL "
        "ORDER BY chunk_index",
        (document_id,),
    )


# ----------------------------------------------------------------------------- PDF


@pytest.mark.parametrize("path", REAL_PDFS, ids=os.path.basename)
def test_a_real_pdf_remembered_cites_for_each_chunk_pages_that_hold_its_text(
    gb_cli, monkeypatch: pytest.MonkeyPatch, path: str
) -> None:
    configure(monkeypatch, None, GB_CHUNK_SIZE="256")  # offline: read, cut, stored
    _real_pdf(path)
    out = json.loads(gb(gb_cli, "remember", path, "--json").stdout)
    [document] = rows("SELECT * FROM gb_artifacts WHERE parent_id IS NULL")
    # The file's own sha256, so that an unchanged file is skipped on the next run.
    assert document["content_sha256"] == _sha256(path)
    assert json.loads(document["locations"])["kind"] == "pdf"
    pages = _pages_again(path)
    chunks = _chunks(document["id"])
    assert len(chunks) > 10 and len(out["chunks"]) == len(chunks)
    cited: set[int] = set()
    for chunk, shown in zip(chunks, out["chunks"], strict=True):
        first, last = json.loads(chunk["locations"])["pages"]
        assert shown["locations"] == {"pages": [first, last]}
        # The stored text is the indexed text's slice, and it is on the pages it cites.
        assert (
            document["text"].encode()[chunk["start_offset"] : chunk["end_offset"]].decode()
            == (chunk["text"])
        )
        assert _flat(chunk["text"]) in " ".join(pages[first - 1 : last]), chunk["chunk_index"]
        cited.update(range(first, last + 1))
    assert cited == {i for i, text in enumerate(pages, 1) if text}
    # chunk-preview shows the same pages, and a rerun finds the file unchanged.
    preview = json.loads(gb(gb_cli, "chunk-preview", path, "--json").stdout)
    assert [c["pages"] for c in preview["chunks"]] == [
        json.loads(c["locations"])["pages"] for c in chunks
    ]
    again = json.loads(gb(gb_cli, "remember", path, "--json").stdout)
    assert again["artifact_id"] == document["id"]
    assert rows("SELECT count(*) AS n FROM gb_artifacts WHERE parent_id IS NULL")[0]["n"] == 1


def test_gb_show_cites_a_pdf_chunk_by_its_pages(gb_cli, monkeypatch) -> None:
    configure(monkeypatch, None, GB_CHUNK_SIZE="512")
    path = _real_pdf(REAL_PDFS[0])
    gb(gb_cli, "remember", path, "--quiet")
    [document] = rows("SELECT id FROM gb_artifacts WHERE parent_id IS NULL")
    shown = gb(gb_cli, "show", str(document["id"])).stdout
    assert "pdf libtasn1.pdf  p.1-" in shown
    second = _chunks(document["id"])[1]
    first, last = json.loads(second["locations"])["pages"]
    view = json.loads(gb(gb_cli, "show", str(second["id"]), "--json").stdout)
    assert view["locations"] == {"pages": [first, last]}
    cited = f"p.{first}" if first == last else f"p.{first}-{last}"
    assert f"at {cited}" in gb(gb_cli, "show", str(second["id"])).stdout
    # gb search cites a PDF hit by its pages, not by lines of the extracted text.
    found = gb(gb_cli, "search", "DER encoding", "--method", "bm25", "-k", "3").stdout
    heads = [line for line in found.splitlines() if line[:2] in {"1.", "2.", "3."}]
    assert heads and all(re.search(r"libtasn1\.pdf p\.\d+", head) for head in heads), found


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (_truncated_pdf, "is not a readable PDF (damaged or truncated)"),
        (_encrypted_pdf, "is an encrypted PDF (it needs a password to open)"),
        (_image_only_pdf, "is a PDF without a text layer (scanned or images only"),
    ],
    ids=["corrupt", "encrypted", "scanned"],
)
def test_a_pdf_gb_cannot_read_is_refused_in_one_line_and_nothing_is_stored(
    gb_cli, monkeypatch, make, says
) -> None:
    configure(monkeypatch, None)
    _real_pdf(REAL_PDFS[0])
    _real_pdf(REAL_PDFS[1])
    write("bad.pdf", make())
    result = gb(gb_cli, "remember", "bad.pdf", code=3)
    assert result.stderr.splitlines() == [f"gb: bad.pdf: {says}" + _rest(result.stderr, says)]
    assert not Path(DB).exists() or not rows("SELECT id FROM gb_artifacts")
    # In a batch it fails alone; the good input is stored (exit 4: partial).
    write("good.txt", "A plain note about the harbour.\n")
    batch = gb(gb_cli, "remember", "bad.pdf", "good.txt", code=4)
    assert "1 failed" in batch.stderr
    assert [r["source"].rsplit("/", 1)[-1] for r in rows("SELECT source FROM gb_artifacts")] == [
        "good.txt"
    ]
    preview = gb(gb_cli, "chunk-preview", "bad.pdf", code=3)
    assert says in preview.stderr


def _rest(stderr: str, says: str) -> str:
    """What the refusal says after ``says`` (why, what to do): one line, checked above."""
    line = stderr.splitlines()[0]
    return line[line.index(says) + len(says) :]


def _sha256(path: str) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# ---------------------------------------------------------------------------- HTML


def _rust_pages() -> list[Path]:
    found = sorted(Path.home().glob(".rustup/toolchains/*/share/doc/rust/html"))
    if not found:
        pytest.skip("no Rust documentation here (~/.rustup/toolchains/*/share/doc/rust/html)")
    pages = [
        found[0] / "book" / "ch04-01-what-is-ownership.html",
        found[0] / "std/option/index.html",
    ]
    missing = [str(p) for p in pages if not p.exists()]
    if missing:
        pytest.skip(f"these Rust documentation pages are not here: {', '.join(missing)}")
    return pages


def test_real_rust_doc_pages_are_stored_as_markdown_named_by_their_title(
    gb_cli, monkeypatch
) -> None:
    configure(monkeypatch, None, GB_CHUNK_SIZE="256")
    pages = _rust_pages()
    gb(gb_cli, "remember", *map(str, pages), "--quiet")
    documents = rows("SELECT * FROM gb_artifacts WHERE parent_id IS NULL ORDER BY id")
    assert len(documents) == 2
    for page, document in zip(pages, documents, strict=True):
        title = re.search(r"<title>(.*?)</title>", page.read_text(), re.S).group(1)
        where = json.loads(document["locations"])
        assert where["kind"] == "html" and where["name"] == " ".join(title.split())
        assert document["mode"] == "markdown" and document["content_sha256"] == _sha256(str(page))
        text = document["text"]
        assert "<script" not in text and "<nav" not in text and "# " in text
        chunks = _chunks(document["id"])
        assert len(chunks) > 3 and any(c["section"] for c in chunks)
        for chunk in chunks:
            assert (
                text.encode()[chunk["start_offset"] : chunk["end_offset"]].decode()
                == (chunk["text"])
            )
    # The ownership chapter keeps its code as fenced blocks.
    assert "```" in documents[0]["text"] and "let s = String::from" in documents[0]["text"]


# ---------------------------------------------------------------------------- chat


def test_a_chat_export_with_a_regenerated_answer_is_remembered_by_branch(
    gb_cli, online, monkeypatch
) -> None:
    export = _regenerated_export()
    write("conversations.json", json.dumps(export))
    out = gb(gb_cli, "remember", "conversations.json", "--all-branches", "--json").stdout
    results = [json.loads(line) for line in out.splitlines()]
    assert [r["source"] for r in results] == [
        "conversations.json #Moving abroad",
        "conversations.json #Moving abroad (branch 1)",
    ]
    documents = rows("SELECT * FROM gb_artifacts WHERE parent_id IS NULL ORDER BY id")
    assert [d["session_id"] for d in documents] == ["conv-1", "conv-1"]
    assert [d["source"].rsplit("#", 1)[1] for d in documents] == ["a3", "u3old"]
    stored_ids: list[str] = []
    for document in documents:
        on_path = _ancestors(export, json.loads(document["locations"])["messages"]["path_id"])
        for chunk in _chunks(document["id"]):
            messages = json.loads(chunk["locations"])["messages"]
            # Never two branches in one chunk.
            assert set(messages["message_ids"]) <= on_path
            stored_ids += messages["message_ids"]
    # The shared prefix (u1, a1, u2) is stored once, with the path to the current message.
    for shared in ("u1", "a1", "u2"):
        assert shared in stored_ids
    branch_chunks = _chunks(documents[1]["id"])
    assert {
        i for c in branch_chunks for i in json.loads(c["locations"])["messages"]["message_ids"]
    } == {
        "old",
        "u3old",
    }
    # What was embedded holds the messages' words only: no role label, no timestamp.
    embedded = [
        text
        for request in online.requests
        if request.stage == EMBED_STAGE
        for text in request.body["input"]
    ]
    assert any("Lisbon" in text for text in embedded)
    for text in embedded:
        assert not ROLE_LABEL.search(text) and not ISO_TIME.search(text), text
    # Each chunk is extracted against its first message's time.
    extracts = [
        r.body["messages"][-1]["content"] for r in online.requests if r.stage == "extract_graph"
    ]
    assert any("2024-05-01T08:00:10" in prompt for prompt in extracts)
    first = json.loads(_chunks(documents[0]["id"])[0]["locations"])["messages"]
    assert first["timestamps"][0].startswith("2024-05-01T08:00:10")
    # Run again, each conversation is unchanged, and gb status finds it in sync.
    again = gb(gb_cli, "remember", "conversations.json", "--all-branches", "--json").stdout
    assert [json.loads(line)["status"] for line in again.splitlines()] == ["unchanged"] * 2
    assert "in sync" in gb(gb_cli, "status", "conversations.json").stdout
    # gb facts --json cites each fact's messages; --role has the chunks to keep.
    facts = [json.loads(line) for line in gb(gb_cli, "facts", "--json").stdout.splitlines()]
    cited = [e["locations"]["messages"] for f in facts for e in f["evidence"]]
    assert cited and all(m["conversation_id"] == "conv-1" for m in cited)
    conn = open_db(DB)
    try:
        dataset = datasets.find_dataset(conn, "default")
        user_chunks = artifacts.chunks_with_role(conn, dataset.id, "user")
        tool_chunks = artifacts.chunks_with_role(conn, dataset.id, "tool")
    finally:
        conn.close()
    with_user = [
        c["id"]
        for d in documents
        for c in _chunks(d["id"])
        if "user" in json.loads(c["locations"])["messages"]["roles"]
    ]
    assert user_chunks == sorted(with_user) and user_chunks and tool_chunks == []
    # gb search --role keeps those chunks alone, and each hit says where it comes from.
    found = gb(gb_cli, "search", "Lisbon", "--role", "user", "--json").stdout.splitlines()
    hits = [json.loads(line) for line in found]
    assert hits and {h["artifact_id"] for h in hits} <= set(user_chunks)
    assert all("user" in h["locations"]["messages"]["roles"] for h in hits)
    assert gb(gb_cli, "search", "Lisbon", "--role", "tool", "--json").stdout == ""


def test_gb_status_checks_each_conversation_of_an_export(gb_cli, online) -> None:
    export = _regenerated_export()
    export.append({**export[0], "title": "Second move", "id": "conv-2"})
    write("conversations.json", json.dumps(export))
    gb(gb_cli, "remember", "conversations.json", "--quiet")

    out = gb(gb_cli, "status", "conversations.json", "--json").stdout
    states = {json.loads(line)["source"]: json.loads(line)["state"] for line in out.splitlines()}

    assert states == {
        "conversations.json #Moving abroad": "in sync",
        "conversations.json #Second move": "in sync",
    }


def test_chat_window_single_cuts_one_message_a_chunk(gb_cli, monkeypatch) -> None:
    write("conversations.json", json.dumps(_regenerated_export()))

    def turns() -> list[tuple[int, int]]:
        out = gb(gb_cli, "chunk-preview", "conversations.json", "--json").stdout
        [preview] = [json.loads(line) for line in out.splitlines()]
        return [(c["messages"]["first"], c["messages"]["last"]) for c in preview["chunks"]]

    packed = turns()  # multi: small messages share a window
    assert len(packed) < 6 and any(first < last for first, last in packed)
    monkeypatch.setenv("GB_CHAT_WINDOW", "single")
    assert turns() == [(i, i) for i in range(1, 7)]


def test_chunk_preview_of_a_chat_export_shows_each_conversation_s_messages(gb_cli) -> None:
    write("conversations.json", json.dumps(_regenerated_export()))
    out = gb(gb_cli, "chunk-preview", "conversations.json", "--json").stdout
    [preview] = [json.loads(line) for line in out.splitlines()]
    assert preview["source"] == "conversations.json #Moving abroad"
    turns = [(c["messages"]["first"], c["messages"]["last"]) for c in preview["chunks"]]
    assert turns[0][0] == 1 and turns[-1][1] == 6
    assert all(c["messages"]["conversation_id"] == "conv-1" for c in preview["chunks"])
    # --mode chat on a file that is no export says what it expected.
    write("notes.json", '{"a": 1}')
    refused = gb(gb_cli, "chunk-preview", "notes.json", "--mode", "chat", code=3)
    assert "is not a chat export" in refused.stderr
