"""Re-remembering a changed file costs only what changed.

Every run here is the real `gb` against the test LLM server (tests/support/llm_server.py), whose
records count the requests each run made; the database is a real SQLite file read back.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.helpers import (
    absolute,
    assert_database_sound,
    assert_indexes_complete,
    configure,
    current_by_source,
    documents,
    gb,
    gb_env,
    lines_by_source,
    rows,
    story,
    write,
)
from tests.support.llm_server import LLMServer

# A fact said once, in the paragraph the edit replaces, and one said there and elsewhere.
ONLY_THERE = "Zed Quill met Ada Byron in Rome on 2024-02-02."
TWICE = "Uma Thurn met Vic Ostrom in Cairo on 2024-03-03."


def remember_json(gb_cli, *args: str) -> dict[str, Any]:
    result = gb(gb_cli, "remember", *args, "--json")
    (line,) = result.stdout.splitlines()
    return json.loads(line)


def requests(server: LLMServer) -> dict[str, int]:
    return {s: server.calls(s) for s in ("extract_graph", "summarize_chunk", "embed")}


def chat_texts(server: LLMServer, stage: str) -> list[str]:
    """What each request of `stage` sent: its messages' contents, joined."""
    return [
        "\n".join(str(m.get("content")) for m in r.body["messages"])
        for r in server.requests_for(stage)
        if r.status == 200
    ]


def stored_chunks(document_id: int) -> list[dict[str, Any]]:
    return rows(
        """SELECT chunk_index, start_offset, end_offset, tokens, text, section FROM gb_artifacts
           WHERE parent_id = ? AND chunk_index IS NOT NULL ORDER BY chunk_index""",
        (document_id,),
    )


def preview(gb_cli, path: Path) -> list[dict[str, Any]]:
    (line,) = gb(gb_cli, "chunk-preview", "--json", str(path)).stdout.splitlines()
    return json.loads(line)["chunks"]


def facts(gb_cli, *args: str) -> dict[str, dict[str, Any]]:
    out = gb(gb_cli, "facts", "--json", "-k", "100000", *args).stdout
    return {f["fact"]: f for f in map(json.loads, out.splitlines())}


def edited_story(paragraphs: list[str], index: int, paragraph: str) -> str:
    return "\n\n".join([*paragraphs[:index], paragraph, *paragraphs[index + 1 :]])


def hundred_chunks() -> list[str]:
    """A 100-chunk text (at the tests' 128-token chunks), as paragraphs: TWICE opens
    paragraphs 10 and 50, ONLY_THERE paragraph 50 too."""
    paragraphs = story(17, paragraphs=100).split("\n\n")
    for i in (10, 50):
        paragraphs[i] = f"{TWICE} {paragraphs[i].split('. ', 1)[1]}"
    paragraphs[50] = f"{ONLY_THERE} {paragraphs[50]}"
    return paragraphs


def test_a_one_paragraph_edit_re_extracts_only_its_chunks(gb_cli, backend, online) -> None:
    paragraphs = hundred_chunks()
    path = write("report.txt", "\n\n".join(paragraphs))
    first = remember_json(gb_cli, str(path))
    assert len(first["chunks"]) == 100
    old_texts = {c["text"] for c in stored_chunks(first["artifact_id"])}
    online.reset()

    new_paragraph = story(99, paragraphs=1).split("\n\n")[1]
    path.write_text(edited_story(paragraphs, 50, new_paragraph))
    # gb status tells what catching up will cost, before it is paid.
    changed = gb(gb_cli, "status", str(path), code=1).stdout
    foretold = re.search(r"content differs: (\d+) of 100 chunks to extract again", changed)
    assert foretold, changed
    line = remember_json(gb_cli, str(path))

    made = requests(online)
    assert 1 <= made["extract_graph"] <= 3 and made["summarize_chunk"] <= 3, made
    assert made["extract_graph"] == int(foretold[1])
    # The embeddings of the extracted chunks only: one request each, holding its text; and
    # one for each call that rewrote the summaries of entities whose facts the edit expired.
    new_chunks = stored_chunks(line["artifact_id"])
    changed = [c["text"] for c in new_chunks if c["text"] not in old_texts]
    embedded = [r.body["input"] for r in online.requests_for("embed") if r.status == 200]
    of_chunks = [e for e in embedded if any(t in "\n".join(e) for t in changed)]
    assert len(of_chunks) == made["extract_graph"], embedded
    # The others: the rewritten summaries of entities whose facts the edit expired.
    summaries = [text for e in embedded if e not in of_chunks for text in e]
    assert all(": " in text for text in summaries), summaries
    assert 0 < len(summaries) <= line["summaries_rewritten"]
    assert line["previous_version"] == {
        "artifact_id": first["artifact_id"],
        "chunks_reused": 100 - made["extract_graph"],
        "chunks_extracted": made["extract_graph"],
        "facts_expired": line["previous_version"]["facts_expired"],
    }
    # The new version is whole, cut exactly as chunk-preview cuts the new text.
    shown = preview(gb_cli, path)
    assert [(c["start_offset"], c["end_offset"], c["tokens"], c["text"]) for c in new_chunks] == [
        (c["start_offset"], c["end_offset"], c["tokens"], c["text"]) for c in shown
    ]
    old, new = documents()
    assert old["superseded_by"] == new["id"] and new["status"] == "complete"
    status = gb(gb_cli, "status", str(path)).stdout
    assert "in sync" in status
    assert_indexes_complete(gb_cli)
    assert_database_sound()
    # Searching finds the reused chunks in the new version, at their new place.
    hit = gb(gb_cli, "search", "Uma Thurn Vic Ostrom Cairo", "--json", "-k", "1").stdout
    assert json.loads(hit.splitlines()[0])["source"] == absolute("report.txt")


def test_facts_only_the_removed_paragraph_stated_expire(gb_cli, backend, online) -> None:
    paragraphs = hundred_chunks()
    path = write("report.txt", "\n\n".join(paragraphs))
    remember_json(gb_cli, str(path))
    before = facts(gb_cli)
    assert len(before[TWICE]["evidence"]) == 2 and ONLY_THERE in before
    between = datetime.now(UTC).isoformat().replace("+00:00", "Z")

    path.write_text(edited_story(paragraphs, 50, story(99, paragraphs=1).split("\n\n")[1]))
    line = remember_json(gb_cli, str(path))

    after = facts(gb_cli)
    assert ONLY_THERE not in after
    # Still stated in paragraph 10: current, with the one entry of the current version.
    (evidence,) = after[TWICE]["evidence"]
    assert evidence["document_id"] == line["artifact_id"]
    assert evidence["quote"] == TWICE and evidence["exact"]
    # Gone: expired, or closed by a fact of the new paragraph that contradicts it.
    every = facts(gb_cli, "--all")
    expired = {f for f in set(before) - set(after) if every[f]["closed_by"] is None}
    assert ONLY_THERE in expired
    # (Facts already closed, but no longer stated either, are expired too.)
    assert line["previous_version"]["facts_expired"] >= len(expired)
    # What the graph held before the edit, it still shows as it was.
    then = facts(gb_cli, "--known-at", between)
    assert set(before) <= set(then)  # (with the facts held then as already over)
    assert then[ONLY_THERE]["expired_at"] is not None
    (expired,) = rows("SELECT invalidation_reason FROM gb_edges WHERE fact = ?", (ONLY_THERE,))
    assert expired["invalidation_reason"] == f"no longer stated in {absolute('report.txt')}"


def markdown(sections: dict[str, list[str]]) -> str:
    parts = ["# Reports"]
    for title, paragraphs in sections.items():
        parts += [f"## {title}", *paragraphs]
    return "\n\n".join(parts) + "\n"


def test_markdown_editing_one_section_re_extracts_only_its_chunks(gb_cli, backend, online) -> None:
    sections = {f"Region {i}": story(300 + i, paragraphs=3).split("\n\n")[1:] for i in range(8)}
    path = write("reports.md", markdown(sections))
    first = remember_json(gb_cli, str(path))
    assert len(first["chunks"]) >= 16
    online.reset()

    sections["Region 4"][1] = story(999, paragraphs=1).split("\n\n")[1]
    path.write_text(markdown(sections))
    line = remember_json(gb_cli, str(path))

    new_chunks = stored_chunks(line["artifact_id"])
    in_section = [c for c in new_chunks if (c["section"] or "").endswith("Region 4")]
    extracted = [
        c
        for c in new_chunks
        if any(c["text"] in sent for sent in chat_texts(online, "extract_graph"))
    ]
    assert extracted and all(c in in_section for c in extracted), extracted
    assert online.calls("extract_graph") == len(extracted) <= len(in_section)
    assert line["previous_version"]["chunks_reused"] == len(new_chunks) - len(extracted)


def test_force_extracts_every_chunk_again(gb_cli, online) -> None:
    paragraphs = story(18, paragraphs=6).split("\n\n")
    path = write("report.txt", "\n\n".join(paragraphs))
    first = remember_json(gb_cli, str(path))
    online.reset()
    path.write_text(edited_story(paragraphs, 3, story(98, paragraphs=1).split("\n\n")[1]))
    line = remember_json(gb_cli, str(path), "--force")
    assert online.calls("extract_graph") == len(first["chunks"]) == len(line["chunks"])
    assert line["previous_version"]["chunks_reused"] == 0


def test_a_file_edited_offline_keeps_its_unchanged_chunks_whole(gb_cli, online, monkeypatch):
    paragraphs = story(19, paragraphs=8).split("\n\n")
    path = write("report.txt", "\n\n".join(paragraphs))
    remember_json(gb_cli, str(path))
    path.write_text(edited_story(paragraphs, 4, story(97, paragraphs=1).split("\n\n")[1]))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name)
    offline = remember_json(gb_cli, str(path))
    assert offline["status"] == "offline"
    pending = rows(
        "SELECT count(*) AS n FROM gb_artifacts WHERE parent_id = ? AND pending <> ''",
        (offline["artifact_id"],),
    )[0]["n"]
    assert 1 <= pending <= 2  # only the changed chunks wait for an endpoint
    monkeypatch.setenv("OPENAI_BASE_URL", online.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", gb_env(online)["OPENAI_API_KEY"])
    online.reset()
    done = remember_json(gb_cli, str(path))
    assert done["status"] == "completed" and online.calls("extract_graph") == pending
    assert_indexes_complete(gb_cli)
    assert_database_sound()


def test_a_diff_killed_halfway_is_completed_by_the_next_run(
    gb_cli, server, backend, monkeypatch
) -> None:
    configure(monkeypatch, server)  # for gb here (chunk-preview, facts) and the processes
    env = dict(os.environ)
    gb_command = [sys.executable, "-m", "gligabao", "remember", "report.txt", "--json"]
    paragraphs = hundred_chunks()
    write("report.txt", "\n\n".join(paragraphs))
    subprocess.run(gb_command, env=env, check=True, capture_output=True, timeout=120)
    server.reset()
    write("report.txt", edited_story(paragraphs, 50, story(99, paragraphs=1).split("\n\n")[1]))

    # Stopped before storing chunk 70 (a reused one, after the extracted ones), killed.
    marker = Path("paused").absolute()
    pause = {"GB_TEST_PAUSE_AT": "chunk:70", "GB_TEST_PAUSE_FILE": str(marker)}
    proc = subprocess.Popen(gb_command, env={**env, **pause}, stdout=subprocess.PIPE)
    try:
        while not marker.exists():
            assert proc.poll() is None, "gb ended before chunk 70"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    old, new = documents()
    assert new["status"] == "storing" and old["superseded_by"] is None
    first_calls = server.calls("extract_graph")

    done = subprocess.run(gb_command, env=env, check=True, capture_output=True, timeout=120)
    (line,) = lines_by_source(done.stdout.decode()).values()
    assert line["artifact_id"] == new["id"] and line["status"] == "completed"
    # Nothing asked twice: the rerun took the rest from the old version, as the first did.
    assert server.calls("extract_graph") == first_calls <= 3
    assert [c["text"] for c in stored_chunks(new["id"])] == [
        c["text"] for c in preview(gb_cli, Path("report.txt"))
    ]
    old, new = documents()
    assert old["superseded_by"] == new["id"] and new["status"] == "complete"
    assert ONLY_THERE not in facts(gb_cli) and TWICE in facts(gb_cli)
    assert_database_sound()


def test_prune_expires_the_facts_of_a_deleted_file_and_without_it_it_is_reported(
    gb_cli, backend, online
) -> None:
    write("docs/kept.txt", story(21, paragraphs=3))
    gone = write("docs/gone.txt", f"{story(22, paragraphs=3)}\n{TWICE}\n")
    write("docs/other/also.txt", f"{TWICE}\n")  # TWICE is stated here too
    # (First, alone: documents remembered at once may each store the fact anew.)
    gb(gb_cli, "remember", "docs/other/also.txt", "--quiet")
    gb(gb_cli, "remember", "-r", "docs", "--quiet")
    before = facts(gb_cli)
    # Closed facts too: one that a later fact had closed as it came in (closed in time,
    # never held current, so not expired) is expired with the rest. Which facts those
    # are depends on which of the two files was stored first.
    ever = gb(gb_cli, "facts", "--json", "--all", "-k", "100000").stdout.splitlines()
    gone_doc = current_by_source()[absolute("docs/gone.txt")]
    gone.unlink()

    # Without --prune: reported, nothing changed.
    result = gb(gb_cli, "remember", "-r", "docs", "--json")
    by_source = lines_by_source(result.stdout)
    assert by_source[absolute("docs/gone.txt")] == {
        "source": absolute("docs/gone.txt"),
        "status": "deleted",
        "artifact_id": gone_doc["id"],
    }
    assert facts(gb_cli) == before
    assert absolute("docs/gone.txt") in current_by_source()
    status = gb(gb_cli, "status", "-r", "docs", code=1)
    assert f"deleted\t{absolute('docs/gone.txt')}" in status.stdout
    assert "3 files: 2 in sync, 1 deleted" in status.stderr

    result = gb(gb_cli, "remember", "-r", "docs", "--prune", "--json")
    line = lines_by_source(result.stdout)[absolute("docs/gone.txt")]
    assert line["status"] == "removed"
    after = facts(gb_cli)
    only_there = [
        fact
        for fact in map(json.loads, ever)
        if {e["source"] for e in fact["evidence"]} == {line["source"]}
        and fact["expired_at"] is None
    ]
    assert only_there and line["facts_expired"] == len(only_there)
    assert set(after) == set(before) - {fact["fact"] for fact in only_there}
    (evidence,) = after[TWICE]["evidence"]
    assert evidence["source"] == absolute("docs/other/also.txt")
    assert absolute("docs/gone.txt") not in current_by_source()
    listed = gb(gb_cli, "list", "--all", "--json").stdout
    states = {d["source"]: d["status"] for d in map(json.loads, listed.splitlines())}
    assert states[absolute("docs/gone.txt")] == "removed"
    # Pruned once: a second run has nothing more to say about it.
    again = gb(gb_cli, "remember", "-r", "docs", "--prune", "--json")
    assert absolute("docs/gone.txt") not in lines_by_source(again.stdout)
    gb(gb_cli, "status", "-r", "docs")
    # --prune is about folders walked: named files alone, it is refused.
    refused = gb(gb_cli, "remember", "docs/kept.txt", "--prune", code=2)
    assert "--prune goes with -r FOLDER" in refused.stderr
    assert_database_sound()


def test_a_sentence_removed_from_a_reused_chunks_overlap_is_no_longer_its_evidence(
    gb_cli, online
) -> None:
    old_text = story(23, paragraphs=100)
    path = write("report.txt", old_text)
    first = remember_json(gb_cli, str(path))
    # Chunk 61 starts with the last sentence of the chunk before it (its overlap): the
    # edit removes that sentence, leaving chunk 61 otherwise as it was, matched by its text
    # after the overlap.
    chunk = first["chunks"][61]
    overlap = old_text.encode()[chunk["start_offset"] : first["chunks"][60]["end_offset"]]
    sentence = overlap.decode().strip()
    assert sentence.count(". ") == 0 and sentence.endswith(".")
    text = old_text.replace(f" {sentence}\n", "\n", 1)
    assert len(text) < len(old_text)
    path.write_text(text)
    line = remember_json(gb_cli, str(path))
    assert line["previous_version"]["chunks_extracted"] == 1

    # Every fact the new version states, it states in the words quoted: none is kept
    # alive by a passage the edit removed.
    (removed,) = rows("SELECT id FROM gb_edges WHERE fact = ?", (sentence,))
    said = [
        e
        for fact in facts(gb_cli, "--all").values()
        for e in fact["evidence"]
        if e["document_id"] == line["artifact_id"]
    ]
    assert said and all(e["quote"] in text and e["exact"] for e in said)
    (expired,) = rows("SELECT expired_at FROM gb_edges WHERE id = ?", (removed["id"],))
    assert expired["expired_at"] is not None
