"""Nothing lost, nothing paid twice: documents completed offline after a kill,
one document when several runs take the same file at once, a rerun's prompts the same as
the first run's, dates normalised, a resolve answer too long for one call, and a server
that cannot be reached at all.

Each `gb` is a real process (`python -m gligabao`) or typer's runner, talking HTTP to the
test server; the database is a real file read back here.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

from gligabao.store import fts, open_db
from tests.remember.test_batch_processes import finish, start, wait_for, watch_stderr
from tests.remember.test_end_to_end import calls, plan, unique_marker
from tests.support.helpers import (
    CORPUS_DIR,
    DB,
    absolute,
    assert_database_sound,
    assert_documents_complete,
    assert_indexes_complete,
    count,
    database,
    documents,
    gb,
    gb_env,
    rows,
    statuses,
    story,
    write,
)
from tests.support.llm_server import Fault, Hold, LLMServer

OFFLINE_STAGES = "extract_graph summarize_chunk embed"
CLOSED = "SELECT count(*) FROM gb_edges WHERE expired_at IS NOT NULL"


def chunks_of(document_id: int) -> list[dict]:
    return rows(
        """SELECT * FROM gb_artifacts WHERE parent_id = ? AND chunk_index IS NOT NULL
           ORDER BY chunk_index""",
        (document_id,),
    )


def keyword_rows(document_id: int) -> int:
    conn = open_db(database())
    try:
        return fts.indexed_rows(conn, "gb_fts_artifacts", [c["id"] for c in chunks_of(document_id)])
    finally:
        conn.close()


def kill_at(server: LLMServer | None, point: str, *args: str, env: dict | None = None) -> int:
    """Start `gb ARGS`, stopped by GB_TEST_PAUSE_AT at ``point``, and kill -9 it there;
    returns the id of the document it was storing."""
    marker = Path("paused").absolute()
    pause = {"GB_TEST_PAUSE_AT": point, "GB_TEST_PAUSE_FILE": str(marker), **(env or {})}
    proc = start(server, *args, env=pause) if server else start_offline(*args, env=pause)
    wait_for(marker.exists, proc, limit=60)
    assert marker.exists() and proc.poll() is None, finish(proc)
    os.kill(proc.pid, signal.SIGKILL)
    code, _, err = finish(proc)
    assert code == -signal.SIGKILL, err
    document = int(marker.read_text().split(":")[2])
    marker.unlink()
    return document


def start_offline(*args: str, env: dict | None = None):
    """`gb ARGS` with no LLM endpoint at all (the server's variables removed)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GB_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "gligabao", *args],
        env={**base, **gb_env(None), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def run_offline(*args: str) -> tuple[int, str, str]:
    return finish(start_offline(*args), timeout=120)


# ------------------------------------------------------------------ 1. completed offline


def test_a_document_killed_halfway_is_completed_by_an_offline_run(server, backend) -> None:
    """Killed after 3 of its chunks, then run again where no endpoint is configured:
    every other chunk is stored and keyword-indexed, with its stages pending, and a run
    with the endpoint completes them from the answers already recorded."""
    name = "GPL-3"
    Path(name).write_bytes((CORPUS_DIR / name).read_bytes())
    n = len(plan((CORPUS_DIR / name).read_text(), 128))
    document = kill_at(server, "chunk:3", "remember", name)
    assert len(chunks_of(document)) == 3

    code, out, err = run_offline("remember", name, "--json")

    assert code == 0, err
    assert json.loads(out)["status"] == "offline"
    stored = chunks_of(document)
    assert [c["chunk_index"] for c in stored] == list(range(n))
    assert [c["pending"] for c in stored[3:]] == [OFFLINE_STAGES] * (n - 3)
    assert all(c["pending"] == "" for c in stored[:3])
    assert keyword_rows(document) == n
    (doc,) = documents()
    assert doc["status"] == "complete" and doc["pending"] == OFFLINE_STAGES
    assert_database_sound()

    server.requests.clear()
    code, out, err = finish(start(server, "remember", name, "--json"))

    assert code == 0, err
    assert json.loads(out)["status"] == "completed"
    paid = calls(server)
    assert paid["extract_graph"] == paid["summarize_chunk"] == 0  # the first run's answers
    (doc,) = documents()
    assert doc["pending"] == "" and all(c["pending"] == "" for c in chunks_of(document))
    assert_documents_complete()


def test_an_offline_run_killed_while_storing_is_completed_by_the_next(server) -> None:
    """A text cut into 1,800 chunks, killed during its offline store (after the first
    500, in a transaction of the next): the next offline run stores the rest."""
    text = "\n\n".join(story(i, paragraphs=3) for i in range(120))
    write("big.txt", text)
    document = kill_at(None, "offline-chunk:700", "remember", "big.txt", "--chunk-size", "32")
    assert_database_sound()
    (doc,) = documents()
    assert doc["status"] == "storing"
    assert len(chunks_of(document)) == 500  # the first transaction's

    code, _, err = run_offline("remember", "big.txt", "--chunk-size", "32", "--json")

    assert code == 0, err
    (doc,) = documents()
    assert doc["status"] == "complete" and doc["chunk_count"] > 1000
    assert len(chunks_of(document)) == doc["chunk_count"] == keyword_rows(document)
    assert_database_sound()


# ------------------------------------------------------------------ 3. the same file at once


def test_four_runs_of_one_file_at_once_store_one_document_and_one_set_of_facts(
    server, backend
) -> None:
    text = (CORPUS_DIR / "MPL-2.0").read_text()
    write("mpl.txt", text)
    n = len(plan(text, 128))
    server.latency = 0.02
    # What one writer alone stores, in a database of its own.
    code, _, err = finish(start(server, "remember", "mpl.txt", env={"GB_DB": absolute("one.db")}))
    assert code == 0, err
    alone = {
        "edges": count("SELECT count(*) FROM gb_edges", db="one.db"),
        "entities": count("SELECT count(*) FROM gb_entities", db="one.db"),
    }
    assert alone["edges"] > 10
    server.requests.clear()

    procs = [start(server, "remember", "mpl.txt", "--json") for _ in range(4)]
    ended = [finish(proc, timeout=120) for proc in procs]

    for code, _, err in ended:
        assert code == 0, err
    seen = sorted(statuses(out)["mpl.txt"] for _, out, _ in ended)
    assert seen == ["remembered", "unchanged", "unchanged", "unchanged"]
    (doc,) = documents()
    assert doc["status"] == "complete" and doc["superseded_by"] is None
    assert count("SELECT count(*) FROM gb_edges") == alone["edges"]
    assert count("SELECT count(*) FROM gb_entities") == alone["entities"]
    assert calls(server)["extract_graph"] == n  # each chunk extracted once, by one run
    assert count("SELECT count(*) FROM gb_claims") == 0
    assert_documents_complete()
    assert_database_sound()


def test_a_run_waits_for_one_storing_the_same_text_and_says_so(server) -> None:
    write("a.md", story(31, paragraphs=4))
    write("b.md", story(31, paragraphs=4))  # the same content under another name
    # The first run is held at its first embeddings request until the second says it
    # waits for it.
    gate = threading.Event()
    held = server.hold(Hold(select=lambda stage, _: stage == "embed", until=gate.is_set))
    first = start(server, "remember", "a.md")
    wait_for(lambda: held.waiting > 0, first)
    second = start(server, "remember", "b.md", "--json")
    said, lines = watch_stderr(second, "waiting")
    said.wait(timeout=30)
    gate.set()
    out = second.stdout.read().decode() if second.stdout else ""
    second.wait(timeout=60)
    first_code, _, first_err = finish(first)

    assert first_code == 0, first_err
    assert held.opened, "the first run was let go only by the timeout"
    assert second.returncode == 0, lines
    assert statuses(out) == {"b.md": "unchanged"}
    (line,) = lines
    assert line.startswith(f"gb: b.md: another gb run (process {first.pid}) is storing")
    assert len(documents()) == 1


def test_a_claim_of_a_killed_run_is_taken_over(server, backend) -> None:
    write("a.md", story(32, paragraphs=4))
    kill_at(server, "chunk:1", "remember", "a.md")
    assert count("SELECT count(*) FROM gb_claims WHERE owner IS NOT NULL") == 1

    code, out, err = finish(start(server, "remember", "a.md", "--json"), timeout=30)

    assert code == 0, err
    assert statuses(out) == {"a.md": "completed"}
    assert "waiting" not in err
    assert_documents_complete()


# ------------------------------------------------------------------ 4. dates


def test_dates_the_llm_gives_are_stored_as_iso_utc_or_unknown(gb_cli, online) -> None:
    # An unreadable start is no start of its own: the fact starts with its document, as
    # one whose text gives no date does. An unreadable end is unknown.
    given = {
        "yesterday": None,
        "2024-13-45": None,
        "0000-00-00": None,
        "last March": None,
        "1700000000": None,
        "2019": "2019-01-01T00:00:00.000Z",
        "2024-05-01 09:30+02:00": "2024-05-01T07:30:00.000Z",
        "0987-06-05": "0987-06-05T00:00:00.000Z",
    }
    text = "\n".join(
        f'Alice Moreau met Bruno Tanaka in Lisbon when="{when}" until="{when}"' for when in given
    )
    write("dates.txt", text)

    result = gb(gb_cli, "remember", "dates.txt", "--chunk-size", "1024", "--trace", "--json")

    stored = rows("SELECT fact, valid_at, invalid_at FROM gb_edges")
    (doc,) = documents()
    assert len(stored) == len(given)
    for edge in stored:
        when = edge["fact"].split('when="')[1].split('"')[0]
        assert edge["valid_at"] == (given[when] or doc["valid_at"]), edge
        assert edge["invalid_at"] == given[when], edge
    trajectory = json.loads(result.stdout)["trajectory"]
    (step,) = [s for s in trajectory if s["step"] == "extract_graph"]
    assert step["unreadable_dates"] == 10  # five unreadable, as valid_at and invalid_at
    assert "10 dates unreadable (stored unknown)" in step["message"]


# ------------------------------------------------------------------ 6. the same prompts again


def test_a_rerun_after_a_failed_fetch_asks_nothing_already_answered(server) -> None:
    """No --valid-at: the first run's moment is kept (in its claim) though it stored
    nothing, so the rerun's extraction prompts are the same and found answered."""
    name = "Apache-2.0"
    text = (CORPUS_DIR / name).read_text()
    Path(name).write_text(text)
    chunks = plan(text, 128)
    n = len(chunks)
    marker = unique_marker(text, chunks, 5)
    server.add_fault(Fault("500", stage="extract_graph", match=marker, times=-1))
    code, _, err = finish(start(server, "remember", name))
    assert code == 1 and "nothing of it was stored" in err, err
    assert documents() == []
    answered = calls(server)
    assert 0 < answered["extract_graph"] < n
    server.clear_faults()
    server.requests.clear()

    code, _, err = finish(start(server, "remember", name, "--json"))

    assert code == 0, err
    again = calls(server)
    assert again["extract_graph"] == n - answered["extract_graph"]
    assert again["summarize_chunk"] == n - answered["summarize_chunk"]
    assert len(documents()) == 1
    assert_documents_complete()
    assert count("SELECT count(*) FROM gb_claims") == 0  # stored whole: nothing to keep


# ------------------------------------------------------------------ 7. resolve cut off


def test_a_resolve_answer_cut_off_is_asked_again_in_halves(gb_cli, online, monkeypatch) -> None:
    name = "Apache-2.0"
    Path(name).write_text((CORPUS_DIR / name).read_text())
    monkeypatch.setenv("GB_DB", absolute("whole.db"))
    gb(gb_cli, "remember", name)
    whole = {
        "edges": count("SELECT count(*) FROM gb_edges", db="whole.db"),
        "entities": count("SELECT count(*) FROM gb_entities", db="whole.db"),
        "closed": count(
            "SELECT count(*) FROM gb_edges WHERE expired_at IS NOT NULL", db="whole.db"
        ),
    }
    resolves = online.calls("resolve")
    assert resolves > 0
    monkeypatch.setenv("GB_DB", absolute(DB))
    # A model whose answer to two or more items of a kind runs past its output limit.
    for kind in ("e", "r"):
        online.add_fault(Fault("truncated", stage="resolve", match='},{"id":"' + kind, times=-1))
    online.requests.clear()

    gb(gb_cli, "remember", name)

    cut = [r for r in online.requests_for("resolve") if r.fault is not None]
    assert cut, "no resolve answer was cut off: the test shows nothing"
    assert online.calls("resolve") > resolves  # the halves, each answered
    assert count("SELECT count(*) FROM gb_edges") == whole["edges"]
    assert count("SELECT count(*) FROM gb_entities") == whole["entities"]
    assert count(CLOSED) == whole["closed"]
    assert_documents_complete()


# ------------------------------------------------------------------ 15. unreachable


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_stores_the_text_offline_and_exits_4(gb_cli, online) -> None:
    server = online
    name = "MPL-2.0"
    text = (CORPUS_DIR / name).read_text()
    Path(name).write_text(text)
    n = len(plan(text, 128))
    down = {"OPENAI_BASE_URL": f"http://127.0.0.1:{closed_port()}/v1"}

    code, out, err = finish(start(server, "remember", name, "--json", "--quiet", env=down))

    assert code == 4, err
    assert json.loads(out)["status"] == "pending"
    (line,) = err.splitlines()  # said even with --quiet: the night's import is not done
    assert "could not reach" in line and "run the same command again" in line
    (doc,) = documents()
    assert doc["status"] == "complete" and doc["pending"] == OFFLINE_STAGES
    assert len(chunks_of(doc["id"])) == n == keyword_rows(doc["id"])
    found = gb(gb_cli, "search", "Mozilla", "--method", "bm25", "--json")
    assert found.stdout.strip()

    code, out, err = finish(start(server, "remember", name, "--json"))

    assert code == 0, err
    assert json.loads(out)["status"] == "remembered"  # every stage of it done now
    assert server.calls("extract_graph") == n
    assert_indexes_complete(gb_cli)
