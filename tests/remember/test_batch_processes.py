"""Batch imports with real processes: a `find -print0` pipe, a batch with bad
inputs, two `gb remember` processes on one database at once, and `kill -9` mid-run.

Each `gb` here is `python -m gligabao` in its own process, talking HTTP to the test
server that runs in this one; the database is a real file that this process reads
back while (and after) they write it. Nothing here waits for a moment to pass: the
server holds requests until the processes have got where a test needs them (a `Hold`),
and gb's test-only GB_TEST_PAUSE_AT (gligabao/remember/write.py) stops a run at an exact
point of its store phase, for a kill -9 to land there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.helpers import (
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
    rows,
    statuses,
    story,
    write,
)
from tests.support.llm_server import Fault, Hold, LLMServer

GB = [sys.executable, "-m", "gligabao"]


def start(
    server: LLMServer, *args: str, env: dict[str, str] | None = None, **popen: Any
) -> subprocess.Popen[bytes]:
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    env = {**os.environ, **gb_env(server), **(env or {})}
    return subprocess.Popen([*GB, *args], env=env, **popen)


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


def complete_sources() -> set[str]:
    """The sources of the documents stored whole so far (none while there is no schema)."""
    if not Path(DB).exists():
        return set()
    try:
        return {d["source"] for d in documents() if d["status"] == "complete"}
    except Exception:  # not migrated yet
        return set()


# ------------------------------------------------------------------ many inputs, from find


def test_find_print0_piped_into_gb_files_from_stdin(server) -> None:
    names = ["docs/a.md", "docs/sub/with space.md", "docs/sub/new\nline.md", "docs/x/é.md"]
    for seed, name in enumerate(names):
        write(name, story(seed))
    write("docs/notes.txt", story(9))  # not *.md: find leaves it out

    find = subprocess.Popen(["find", "docs", "-name", "*.md", "-print0"], stdout=subprocess.PIPE)
    gb = start(server, "remember", "--files-from", "-", "-0", "--json", stdin=find.stdout)
    find.stdout.close()  # type: ignore[union-attr]  # gb holds the only reading end now
    code, out, err = finish(gb)

    assert find.wait() == 0  # not cut short by a SIGPIPE: gb read the pipe to its end
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


def watch_stderr(proc: subprocess.Popen[bytes], needle: str) -> tuple[threading.Event, list[str]]:
    """Collect ``proc``'s stderr lines as they come; the event is set at the first line
    holding ``needle``."""
    seen, lines = threading.Event(), []

    def read() -> None:
        for raw in proc.stderr or ():
            lines.append(raw.decode())
            if needle in lines[-1]:
                seen.set()

    threading.Thread(target=read, daemon=True).start()
    return seen, lines


def test_two_processes_on_one_database_both_finish_with_everything_stored(
    server, gb_cli, monkeypatch
) -> None:
    monkeypatch.setenv("GB_DB", absolute(DB))
    one = [str(write(f"one/a{i}.md", story(600 + i, paragraphs=2))) for i in range(5)]
    two = [str(write(f"two/b{i}.md", story(700 + i, paragraphs=2))) for i in range(5)]
    write("shared.md", story(800, paragraphs=4))
    server.latency = 0.02
    # Both processes start on shared.md (named first): one claims it, and its first
    # extraction waits in the server until each process has stored a document of its own
    # folder meanwhile; the other waits for that claim while it works on its folder, and
    # then finds shared.md stored whole. (One process starting on a document the other is
    # half-way through storing is the test below.)
    own = [{absolute(name) for name in names} for names in (one, two)]
    held = server.hold(
        Hold(
            select=lambda stage, text: stage == "extract_graph" and "Report 800." in text,
            until=lambda: all(complete_sources() & mine for mine in own),
        )
    )

    procs = [
        start(server, "remember", "shared.md", "-r", folder, "--json") for folder in ("one", "two")
    ]
    ended = [finish(proc) for proc in procs]

    for code, _, err in ended:
        assert code == 0, err
    assert held.opened
    seen = [statuses(out) for _, out, _ in ended]
    assert seen[0] == {"shared.md": seen[0]["shared.md"], **dict.fromkeys(one, "remembered")}
    assert seen[1] == {"shared.md": seen[1]["shared.md"], **dict.fromkeys(two, "remembered")}
    assert sorted(s["shared.md"] for s in seen) == ["remembered", "unchanged"]
    # They did write the database at the same time: each stored a document of its folder
    # before shared.md was stored (ids are handed out in write order).
    (copy,) = [d["id"] for d in documents() if d["source"] == absolute("shared.md")]
    firsts = [min(d["id"] for d in documents() if d["source"] in mine) for mine in own]
    assert copy > max(firsts)
    assert server.calls("extract_graph") == sum(d["chunk_count"] or 1 for d in documents())

    assert_database_sound()
    vectors = assert_indexes_complete(gb_cli)
    assert vectors["entities"] > 0 and vectors["edges"] > 0
    stored = {d["source"]: d for d in documents() if d["status"] == "complete"}
    assert set(stored) == {absolute(name) for name in ["shared.md", *one, *two]}
    for doc in documents():
        assert (doc["status"], doc["pending"]) == ("complete", "")
        chunks = count(
            "SELECT count(*) FROM gb_artifacts WHERE parent_id = ? AND kind <> 'chunk_summary'",
            (doc["id"],),
        )
        assert chunks == doc["chunk_count"] > 1


def test_two_hosts_importing_one_folder_store_each_document_and_fact_once(server, backend) -> None:
    """Two machines' nightly imports of the same folder into one store at once (two
    processes that claim as two hosts: neither can see the other's process, only its
    claim's heartbeat): each document stored once, each fact once, each chunk extracted
    once, as one run alone stores them."""
    for i in range(4):
        write(f"shared/d{i}.md", story(950 + i, paragraphs=3))
    server.latency = 0.02
    alone = absolute("alone.db")
    code, _, err = finish(start(server, "remember", "-r", "shared", env={"GB_DB": alone}))
    assert code == 0, err
    facts = count("SELECT count(*) FROM gb_edges", db=alone)
    entities = count("SELECT count(*) FROM gb_entities", db=alone)
    assert facts > 10
    server.requests.clear()

    procs = [
        start(server, "remember", "-r", "shared", "--json", env={"GB_TEST_HOSTNAME": host})
        for host in ("host-a", "host-b")
    ]
    ended = [finish(proc, timeout=120) for proc in procs]

    for code, _, err in ended:
        assert code == 0, err
    seen = [statuses(out) for _, out, _ in ended]
    for name in seen[0]:
        assert sorted(s[name] for s in seen) == ["remembered", "unchanged"], name
    assert len(documents()) == 4
    assert count("SELECT count(*) FROM gb_edges") == facts
    # No entity made twice by the two at once. (Which names the resolver merges with
    # one already stored can depend on the order the documents came in: one fewer
    # entity than one run alone made is seen now and then, never one more.)
    assert count("SELECT count(*) FROM gb_entities") <= entities
    assert (
        count(
            """SELECT count(*) FROM gb_entities e WHERE NOT EXISTS
           (SELECT 1 FROM gb_entity_artifacts l WHERE l.entity_id = e.id)"""
        )
        == 0
    )
    assert server.calls("extract_graph") == sum(d["chunk_count"] or 1 for d in documents())
    assert_database_sound()
    assert_documents_complete()


def test_a_second_process_on_a_document_being_stored_waits_and_finds_it_whole(server) -> None:
    text = story(900, paragraphs=6)
    write("long.md", text)
    last = text.rstrip().rsplit(". ", 1)[1]  # the last sentence: in the last chunk only
    # The first process waits on the last chunk's embeddings, its parent and the chunks
    # before stored; the second starts on the same file meanwhile, and the server lets
    # the first go on once the second has said that it waits for it.
    said = threading.Event()
    held = server.hold(
        Hold(select=lambda stage, text: stage == "embed" and last in text, until=said.is_set)
    )
    first = start(server, "remember", "long.md", "--json")
    wait_for(lambda: held.waiting == 1 and stored_chunks() > 0, first)
    second = start(server, "remember", "long.md", "--json")
    waiting, lines = watch_stderr(second, "waiting")
    waiting.wait(timeout=30)
    said.set()

    out = second.stdout.read().decode() if second.stdout else ""
    second.wait(timeout=60)
    code, _, err = finish(first)

    assert code == 0, err
    assert second.returncode == 0, lines
    assert held.opened  # the first stayed halfway until the second waited for it
    assert statuses(out) == {"long.md": "unchanged"}
    assert_database_sound()
    (doc,) = documents()
    assert doc["status"] == "complete"
    assert_documents_complete()


# ------------------------------------------------------------------ kill -9


# The points of the store phase where gb's test-only GB_TEST_PAUSE_AT stops a run, each
# for one run (POINT:CHUNK, see gligabao/remember/write.py): between a document's row
# and its first chunk, inside a chunk's transaction (after its row, after its summary
# and graph, before its commit), and between two chunks. In this order each one is
# reached: no run before it stored that chunk of any document, and none stored a
# document whole.
KILL_POINTS = ("chunk:0", "chunk-row:0", "chunk-graph:1", "chunk:2", "chunk-commit:2")


def test_kill_9_at_any_moment_leaves_a_sound_database_the_next_run_completes(
    server, gb_cli, monkeypatch
) -> None:
    monkeypatch.setenv("GB_DB", absolute(DB))
    monkeypatch.setenv("GB_CONCURRENCY", "4")
    # Three documents of four chunks: no document can be stored whole without passing
    # the point a run stops at, so each point is reached in its run.
    names = [str(write(f"docs/d{i}.md", story(500 + i, paragraphs=4))) for i in range(3)]

    # Killed during the fetch: every request slot out, no answer back, nothing stored.
    killed = threading.Event()
    held = server.hold(Hold(count=4, until=killed.is_set))
    proc = start(server, "remember", *names, "--quiet")
    wait_for(lambda: held.waiting == 4, proc)
    os.kill(proc.pid, signal.SIGKILL)
    code, _, err = finish(proc)
    killed.set()  # the server answers them (to nobody)
    assert code == -signal.SIGKILL, err
    assert_database_sound()
    assert documents() == []

    # Killed in the store phase, at each point where a transaction could be split.
    for point in KILL_POINTS:
        marker = Path(f"paused at {point}").absolute()
        env = {"GB_TEST_PAUSE_AT": point, "GB_TEST_PAUSE_FILE": str(marker)}
        proc = start(server, "remember", *names, "--quiet", env=env)
        wait_for(marker.exists, proc)
        assert marker.exists() and proc.poll() is None, finish(proc)  # stopped there
        os.kill(proc.pid, signal.SIGKILL)
        code, _, err = finish(proc)
        assert code == -signal.SIGKILL, err
        where, index, document = marker.read_text().split(":")
        assert where == point.split(":")[0]
        marker.unlink()
        assert_database_sound()
        (doc,) = rows("SELECT status FROM gb_artifacts WHERE id = ?", (int(document),))
        assert doc["status"] == "storing", point  # its row stored, in a step of its own
        # The chunk being stored when it died is stored not at all: only those before it.
        stored = count(
            "SELECT count(*) FROM gb_artifacts WHERE parent_id = ? AND chunk_index IS NOT NULL",
            (int(document),),
        )
        assert stored == int(index), point

    code, out, err = finish(start(server, "remember", *names, "--json"))

    assert code == 0, err
    assert set(statuses(out)) == set(names)
    assert set(statuses(out).values()) <= {"remembered", "completed"}
    assert set(current_by_source()) == {absolute(name) for name in names}
    assert_documents_complete()
    assert_database_sound()
    assert all(doc["chunk_count"] == 4 for doc in documents())
    vectors = assert_indexes_complete(gb_cli)
    assert vectors["entities"] > 0 and vectors["edges"] > 0
