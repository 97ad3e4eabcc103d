"""SIGTERM and SIGHUP end a `gb remember` as SIGINT does: one line on
stderr that says what was kept and to run again, exit 128 + the signal (143, 129, 130),
a database that is sound, and a rerun that completes the document without asking the
server again for an answer it already gave.

Real processes (`python -m gligabao`) against the test server in this one; the store
phase is stopped at an exact point by gb's test-only GB_TEST_PAUSE_AT hook
(gligabao/remember/write.py), so the signal lands inside a chunk's transaction.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.remember.test_batch_processes import finish, start, wait_for
from tests.support.helpers import (
    assert_database_sound,
    assert_documents_complete,
    count,
    documents,
    statuses,
    story,
    write,
)
from tests.support.llm_server import Hold

CASES = [
    pytest.param(signal.SIGTERM, 143, id="SIGTERM"),
    pytest.param(signal.SIGHUP, 129, id="SIGHUP"),
    pytest.param(signal.SIGINT, 130, id="SIGINT"),
]
VALID_AT = "2024-05-01"  # fixed, so a rerun's prompts are the first run's (and its answers reused)
CHAT = ("extract_graph", "summarize_chunk")


def _the_line(err: str, name: str) -> str:
    assert "Traceback" not in err, err
    (line,) = [line for line in err.splitlines() if line.strip()]
    assert line.startswith(f"gb: interrupted by {name}: "), line
    assert "what was stored is kept" in line and "run the same command again" in line, line
    return line


def _paused_in_chunk_1(server) -> tuple[str, Path, subprocess.Popen[bytes]]:
    """A `gb remember` of a 4-chunk document, stopped inside chunk 1's transaction (its
    summary and graph written, its vectors not yet)."""
    name = str(write("long.md", story(1300, paragraphs=4)))
    marker = Path("paused").absolute()
    env = {"GB_TEST_PAUSE_AT": "chunk-graph:1", "GB_TEST_PAUSE_FILE": str(marker)}
    proc = start(server, "remember", name, "--valid-at", VALID_AT, "--quiet", env=env)
    wait_for(marker.exists, proc)
    assert proc.poll() is None, finish(proc)
    return name, marker, proc


def _rerun_completes_paying_nothing_twice(server, name: str) -> None:
    asked = {stage: server.calls(stage) for stage in CHAT}
    assert asked == {"extract_graph": 4, "summarize_chunk": 4}  # every answer came once
    returncode, out, err = finish(start(server, "remember", name, "--valid-at", VALID_AT, "--json"))
    assert returncode == 0, err
    assert statuses(out)[name] in ("completed", "unchanged")
    assert_documents_complete()
    assert_database_sound()
    assert {stage: server.calls(stage) for stage in CHAT} == asked


@pytest.mark.parametrize(("signum", "code"), CASES)
def test_a_signal_mid_store_ends_gb_with_one_line_and_its_code(
    server, signum: signal.Signals, code: int
) -> None:
    name, marker, proc = _paused_in_chunk_1(server)

    proc.send_signal(signum)
    marker.unlink()  # let it go on: it stops where the run can stop cleanly
    returncode, _, err = finish(proc)

    assert returncode == code, (returncode, err)
    _the_line(err, signum.name)
    assert_database_sound()  # integrity_check ok; no chunk stored without its parts
    _rerun_completes_paying_nothing_twice(server, name)


@pytest.mark.parametrize(("signum", "code"), CASES[:2])
def test_a_second_signal_inside_a_transaction_rolls_the_chunk_back(
    server, signum: signal.Signals, code: int
) -> None:
    """The impatient second signal stops gb at once, inside chunk 1's transaction: that
    chunk is not stored at all, the one before it is, whole."""
    name, marker, proc = _paused_in_chunk_1(server)

    proc.send_signal(signum)
    time.sleep(0.5)  # two signals sent at once would be delivered as one
    proc.send_signal(signum)
    returncode, _, err = finish(proc)
    marker.unlink()

    assert returncode == code, (returncode, err)
    _the_line(err, signum.name)
    assert_database_sound()
    (doc,) = documents()
    assert doc["status"] == "storing" and doc["chunk_count"] == 4
    stored = count(
        "SELECT count(*) FROM gb_artifacts WHERE parent_id = ? AND chunk_index IS NOT NULL",
        (doc["id"],),
    )
    assert stored == 1  # chunk 0; chunk 1's transaction rolled back whole
    _rerun_completes_paying_nothing_twice(server, name)


@pytest.mark.parametrize(("signum", "code"), CASES[:2])
def test_a_signal_while_waiting_for_the_server_stores_nothing_half(
    server, signum: signal.Signals, code: int
) -> None:
    names = [str(write(f"d{i}.md", story(1310 + i, paragraphs=2))) for i in range(3)]
    ended = threading.Event()  # the requests wait, unanswered, as a slow server's do
    held = server.hold(Hold(count=2, until=ended.is_set))
    proc = start(server, "remember", *names, "--valid-at", VALID_AT, env={"GB_CONCURRENCY": "2"})
    wait_for(lambda: held.waiting == 2, proc)

    proc.send_signal(signum)
    returncode, _, err = finish(proc)
    ended.set()

    assert returncode == code, (returncode, err)
    line = _the_line(err, signum.name)
    assert "0 of 3 inputs done" in line
    assert_database_sound()


def test_sighup_ignored_on_purpose_stays_ignored(server) -> None:
    """`nohup gb remember ...` must outlive the terminal: an ignored SIGHUP is left so."""
    name = str(write("long.md", story(1320, paragraphs=2)))
    hung_up = threading.Event()
    held = server.hold(Hold(count=1, until=hung_up.is_set))
    proc = start(
        server,
        "remember",
        name,
        "--json",
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),
    )
    wait_for(lambda: held.waiting >= 1, proc)
    proc.send_signal(signal.SIGHUP)
    hung_up.set()
    returncode, out, err = finish(proc)
    assert returncode == 0, err
    assert statuses(out) == {name: "remembered"}
