"""Batch imports (issue 4) with real processes: a `find -print0` pipe, a batch with bad
inputs, two `gb remember` processes on one database at once, and `kill -9` mid-run.

Each `gb` here is `python -m gligabao` in its own process, talking HTTP to the test
server that runs in this one; the database is a real file that this process reads
back while (and after) they write it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.helpers import (
    BROKEN,
    DB,
    absolute,
    assert_database_sound,
    assert_documents_complete,
    assert_indexes_complete,
    bad_batch,
    count,
    current_by_source,
    documents,
    gb_env,
    lines_by_source,
    statuses,
    story,
    write,
)
from tests.llm_server import Fault, LLMServer

GB = [sys.executable, "-m", "gligabao"]


def start(server: LLMServer, *args: str, **popen: Any) -> subprocess.Popen[bytes]:
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    return subprocess.Popen([*GB, *args], env={**os.environ, **gb_env(server)}, **popen)


def finish(proc: subprocess.Popen[bytes], timeout: float = 60) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out.decode(), err.decode()


def wait_for(
    condition: Callable[[], bool], proc: subprocess.Popen[bytes], limit: float = 30
) -> None:
    """Poll until ``condition()`` holds or ``proc`` has ended."""
    deadline = time.monotonic() + limit
    while not condition() and proc.poll() is None:
        assert time.monotonic() < deadline, "gb never got that far"
        time.sleep(0.01)


def stored_chunks() -> int:
    if not Path(DB).exists():
        return 0
    try:
        return count("SELECT count(*) FROM gb_artifacts WHERE chunk_index IS NOT NULL")
    except Exception:  # not migrated yet: the process is still creating the schema
        return 0


# ------------------------------------------------------------------ many inputs, from find


def test_find_print0_piped_into_gb_files_from_stdin(server) -> None:
    names = ["docs/a.md", "docs/sub/with space.md", "docs/sub/new\nline.md", "docs/x/é.md"]
    for seed, name in enumerate(names):
        write(name, story(seed))
    write("docs/notes.txt", story(9))  # not *.md: find leaves it out

    find = subprocess.Popen(["find", "docs", "-name", "*.md", "-print0"], stdout=subprocess.PIPE)
    gb = start(server, "remember", "--files-from", "-", "-0", "--json", stdin=find.stdout)
    assert find.stdout is not None
    find.stdout.close()  # gb holds the only reading end now
    code, out, err = finish(gb)

    assert find.wait() == 0
    assert code == 0, err
    assert statuses(out) == dict.fromkeys(names, "remembered")
    stored = current_by_source()
    assert set(stored) == {absolute(name) for name in names}
    for name in names:
        assert stored[absolute(name)]["text"] == Path(name).read_text()


# ------------------------------------------------------------------ partial failure


def test_a_process_with_bad_inputs_stores_the_good_ones_and_exits_4(server) -> None:
    files = bad_batch()
    server.add_fault(Fault("500", stage="extract_graph", match=BROKEN, times=-1))

    code, out, err = finish(start(server, "remember", *files.values(), "--json"))

    assert code == 4, err
    lines = lines_by_source(out)
    assert {s: line["status"] for s, line in lines.items()} == {
        files["good1"]: "remembered",
        files["good2"]: "remembered",
        files["latin1"]: "failed",
        files["broken"]: "failed",
    }
    assert "is not valid UTF-8" in lines[files["latin1"]]["error"]
    assert "HTTP 500" in lines[files["broken"]]["error"]
    for key in ("latin1", "broken"):
        assert f"gb: {lines[files[key]]['error']}" in err.splitlines()
    assert set(current_by_source()) == {absolute(files["good1"]), absolute(files["good2"])}
    assert_documents_complete()
    assert_database_sound()


# ------------------------------------------------------------------ two writers at once


def test_two_processes_on_one_database_both_finish_with_everything_stored(
    server, gb_cli, monkeypatch
) -> None:
    monkeypatch.setenv("GB_DB", absolute(DB))
    one = [str(write(f"one/a{i}.md", story(600 + i, paragraphs=2))) for i in range(5)]
    two = [str(write(f"two/b{i}.md", story(700 + i, paragraphs=2))) for i in range(5)]
    write("shared.md", story(800, paragraphs=4))
    server.latency = 0.02
    # Both processes start on shared.md (named first) before either has stored any of
    # it: its first extraction is held a second, for each of them. (One process starting
    # on a document the other is half-way through storing is the test below.)
    held = server.add_fault(Fault("timeout", stage="extract_graph", match="Report 800.", times=2))
    server.timeout_sleep = 1.0

    procs = [
        start(server, "remember", "shared.md", "-r", folder, "--json") for folder in ("one", "two")
    ]
    ended = [finish(proc) for proc in procs]

    for code, _, err in ended:
        assert code == 0, err
    assert held.hits == 2
    seen = [statuses(out) for _, out, _ in ended]
    assert seen[0] == dict.fromkeys(["shared.md", *one], "remembered")
    assert seen[1] == dict.fromkeys(["shared.md", *two], "remembered")
    # They did write at the same time: the two runs' requests overlap.
    spans = []
    for names in (one, two):
        texts = [Path(name).read_text().split("\n")[2][:60] for name in names]
        mine = [r for r in server.requests if any(t in json.dumps(r.body) for t in texts)]
        spans.append((min(r.started for r in mine), max(r.ended for r in mine)))
    assert max(s for s, _ in spans) < min(e for _, e in spans)

    assert_database_sound()
    vectors = assert_indexes_complete(gb_cli)
    assert vectors["entities"] > 0 and vectors["edges"] > 0
    stored = {d["source"]: d for d in documents() if d["status"] == "complete"}
    assert set(stored) == {absolute(name) for name in ["shared.md", *one, *two]}
    for doc in documents():  # both copies of shared.md included
        assert (doc["status"], doc["pending"]) == ("complete", "")
        chunks = count(
            "SELECT count(*) FROM gb_artifacts WHERE parent_id = ? AND kind <> 'chunk_summary'",
            (doc["id"],),
        )
        assert chunks == doc["chunk_count"] > 1


def test_a_second_process_on_a_document_being_stored_leaves_it_whole(server) -> None:
    text = story(900, paragraphs=6)
    write("long.md", text)
    last = text.rstrip().rsplit(". ", 1)[1]  # the last sentence: in the last chunk only
    # The first process stalls on the last chunk's embeddings, its parent and the chunks
    # before stored; the second starts on the same file meanwhile.
    server.timeout_sleep = 2.0
    held = server.add_fault(Fault("timeout", endpoint="embeddings", match=last, times=1))
    first = start(server, "remember", "long.md", "--json")
    wait_for(lambda: held.hits == 1 and stored_chunks() > 0, first)
    second = start(server, "remember", "long.md", "--json")

    results = [finish(second), finish(first)]

    for code, _, err in results:
        assert code == 0, err
    assert_database_sound()
    (doc,) = documents()
    assert doc["status"] == "complete"
    assert_documents_complete()


# ------------------------------------------------------------------ kill -9


def test_kill_9_at_any_moment_leaves_a_sound_database_the_next_run_completes(
    server, gb_cli, monkeypatch
) -> None:
    monkeypatch.setenv("GB_DB", absolute(DB))
    monkeypatch.setenv("GB_CONCURRENCY", "4")
    names = [str(write(f"docs/d{i}.md", story(500 + i, paragraphs=6))) for i in range(5)]
    server.latency = 0.1  # a run of them takes seconds: time enough to be killed mid-way
    # When to kill: a delay after this run's first request, or after its first stored chunk.
    moments = [("request", 0.0), ("request", 0.3), ("chunk", 0.0), ("request", 0.8)]
    moments += [("chunk", 0.05), ("request", 1.5)]
    killed, storing = 0, 0
    for after, delay in moments:
        requests, chunks = len(server.requests), stored_chunks()
        proc = start(server, "remember", *names, "--quiet")
        if after == "request":
            wait_for(lambda: len(server.requests) > requests, proc)  # noqa: B023
        else:
            wait_for(lambda: stored_chunks() > chunks, proc)  # noqa: B023
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            killed += 1
        code, _, err = finish(proc)
        assert code in (0, -signal.SIGKILL), err
        assert_database_sound()
        storing += any(d["status"] == "storing" for d in documents())
    assert killed >= 4  # most of them landed mid-run
    assert storing >= 1  # and at least one in the store phase, between two chunks

    code, out, err = finish(start(server, "remember", *names, "--json"))

    assert code == 0, err
    assert set(statuses(out)) == set(names)
    assert set(statuses(out).values()) <= {"remembered", "completed", "unchanged"}
    assert set(current_by_source()) == {absolute(name) for name in names}
    assert_documents_complete()
    assert_database_sound()
    vectors = assert_indexes_complete(gb_cli)
    assert vectors["entities"] > 0 and vectors["edges"] > 0
