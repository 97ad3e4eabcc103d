"""Batch imports, in this process: many inputs in one `gb remember` run.

Real SQLite files with sqlite-vec, and the real openai client over HTTP to the test
server, configured through the environment as a cron job would be (the `online`
fixture). The tests that need real processes (a `find` pipe, two writers at once,
kill -9) are in test_batch_processes.py; both use the helpers of tests/support/helpers.py.
"""

from __future__ import annotations

import importlib
import json
import math
import os
from pathlib import Path
from typing import Any

from gligabao.config import load_config
from gligabao.llm import LLM
from gligabao.remember.batch import remember_all
from gligabao.remember.document import Options
from gligabao.remember.result import Remembered
from gligabao.store import open_db
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
    gb,
    lines_by_source,
    rows,
    statuses,
    stderr_lines,
    story,
    write,
)
from tests.support.llm_server import Fault, Hold, LLMServer

# ------------------------------------------------------------------ 1. many inputs


def test_a_folder_with_glob_skips_hidden_and_binary_files_with_a_notice(gb_cli, online) -> None:
    write("docs/a.md", story(1))
    write("docs/sub/b.md", story(2))
    write("docs/notes.txt", story(3))
    write("docs/.draft.md", story(4))
    write("docs/.git/HEAD.md", story(5))
    write("docs/logo.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + story(6).encode())

    result = gb(gb_cli, "remember", "-r", "docs", "--glob", "*.md", "--json", "--verbose")

    assert statuses(result.stdout) == {"docs/a.md": "remembered", "docs/sub/b.md": "remembered"}
    notices = stderr_lines(result)
    assert "gb: skipped docs/.draft.md: hidden" in notices
    assert "gb: skipped docs/.git: hidden" in notices
    assert "gb: skipped docs/logo.md: binary (NUL byte in the first 8 KiB)" in notices
    assert "gb: skipped docs/notes.txt: does not match --glob" in notices
    assert "gb: skipped 2 hidden, 1 binary, 1 not matching --glob" in notices
    # The source stored on each document is its absolute path, whatever the working folder.
    by_source = current_by_source()
    assert set(by_source) == {absolute("docs/a.md"), absolute("docs/sub/b.md")}
    lines = lines_by_source(result.stdout)
    for shown in ("docs/a.md", "docs/sub/b.md"):
        doc = by_source[absolute(shown)]
        assert lines[shown]["artifact_id"] == doc["id"]
        assert doc["text"] == Path(shown).read_text() and doc["status"] == "complete"
    assert online.calls("extract_graph") == 2  # nothing skipped reached the LLM


def test_files_from_a_list_gives_one_json_line_per_input_failed_ones_with_an_error(
    gb_cli, online
) -> None:
    write("docs/a.md", story(1))
    write("docs/with space.md", story(2))
    write("docs/latin1.txt", "Café Müller met Zoë in Köln.\n".encode("latin-1"))
    write("docs/.explicit.md", story(3))  # named explicitly: never filtered
    listing = "docs/a.md\n\ndocs/with space.md\r\nmissing.md\ndocs/latin1.txt\ndocs/.explicit.md\n"
    write("list.txt", listing)  # a blank line, a CRLF line: both as a user's list may have

    result = gb(gb_cli, "remember", "--files-from", "list.txt", "--json", code=4)

    lines = lines_by_source(result.stdout)
    assert {s: line["status"] for s, line in lines.items()} == {
        "docs/a.md": "remembered",
        "docs/with space.md": "remembered",
        "missing.md": "failed",
        "docs/latin1.txt": "failed",
        "docs/.explicit.md": "remembered",
    }
    assert lines["missing.md"]["error"] == "missing.md: no such file"
    assert lines["docs/latin1.txt"]["error"].startswith("docs/latin1.txt: is not valid UTF-8")
    assert "error" not in lines["docs/a.md"] and "artifact_id" not in lines["missing.md"]
    assert "gb: missing.md: no such file" in stderr_lines(result)
    assert set(current_by_source()) == {
        absolute("docs/a.md"),
        absolute("docs/with space.md"),
        absolute("docs/.explicit.md"),
    }


def test_files_from_stdin_nul_separated_takes_names_with_newlines(gb_cli, online) -> None:
    names = ["docs/one.md", "docs/two\nlines.md", "docs/three.md"]
    for seed, name in enumerate(names):
        write(name, story(seed))
    listing = b"".join(name.encode() + b"\0" for name in names)

    result = gb(gb_cli, "remember", "--files-from", "-", "-0", "--json", input=listing)

    assert statuses(result.stdout) == dict.fromkeys(names, "remembered")
    assert set(current_by_source()) == {absolute(name) for name in names}


# ------------------------------------------------------------------ 2. unchanged, --force, versions


def ids(items: list[dict[str, Any]]) -> list[int]:
    return sorted(item["id"] for item in items)


def test_a_second_run_is_all_unchanged_and_makes_no_call(gb_cli, online) -> None:
    names = [
        str(write(f"notes/n{i}.md", story(i, paragraphs=2 if i == 0 else 0))) for i in range(4)
    ]
    first = lines_by_source(gb(gb_cli, "remember", *names, "--json").stdout)
    assert {line["status"] for line in first.values()} == {"remembered"}
    assert len(first[names[0]]["chunks"]) > 1  # one of them is chunked
    online.reset()

    second = lines_by_source(gb(gb_cli, "remember", *names, "--json").stdout)

    assert {s: line["status"] for s, line in second.items()} == dict.fromkeys(names, "unchanged")
    assert online.requests == []  # not one request, not even a retried or failed one
    for name in names:  # the stored document, as it was
        assert second[name]["artifact_id"] == first[name]["artifact_id"]
        assert ids(second[name]["entities"]) == ids(first[name]["entities"])
        assert ids(second[name]["edges"]) == ids(first[name]["edges"])
    assert len(documents()) == 4


def test_force_remembers_again_as_a_new_document_that_supersedes_the_old(gb_cli, online) -> None:
    a, b = str(write("a.md", story(1))), str(write("b.md", story(2)))
    first = lines_by_source(gb(gb_cli, "remember", a, b, "--json").stdout)

    again = lines_by_source(gb(gb_cli, "remember", a, b, "--force", "--json").stdout)

    assert {line["status"] for line in again.values()} == {"remembered"}
    for name in (a, b):
        old, new = first[name]["artifact_id"], again[name]["artifact_id"]
        assert new != old
        (old_row,) = rows("SELECT * FROM gb_artifacts WHERE id = ?", (old,))
        assert old_row["superseded_by"] == new  # kept, and marked
        assert current_by_source()[absolute(name)]["id"] == new
    assert len(documents()) == 4


def test_a_changed_file_is_a_new_version_and_list_shows_the_latest(gb_cli, online) -> None:
    path = write("diary.md", story(7, paragraphs=2))
    other = write("other.md", story(8))
    first = lines_by_source(gb(gb_cli, "remember", str(path), str(other), "--json").stdout)
    old_id = first[str(path)]["artifact_id"]

    write(path, story(7, paragraphs=2) + "\nLena Silva moved to Bergen on 2024-10-01.\n")
    changed = lines_by_source(gb(gb_cli, "remember", str(path), str(other), "--json").stdout)

    assert changed[str(other)]["status"] == "unchanged"
    assert changed[str(path)]["status"] == "remembered"
    new_id = changed[str(path)]["artifact_id"]
    assert new_id != old_id
    (old,) = rows("SELECT * FROM gb_artifacts WHERE id = ?", (old_id,))
    assert old["superseded_by"] == new_id and old["status"] == "complete"
    assert old["chunk_count"] == count(
        "SELECT count(*) FROM gb_artifacts WHERE parent_id = ? AND kind <> 'chunk_summary'",
        (old_id,),
    )  # the old version is kept whole
    other_id = first[str(other)]["artifact_id"]
    listed = [json.loads(line)["id"] for line in gb(gb_cli, "list", "--json").stdout.splitlines()]
    assert listed == sorted([new_id, other_id], reverse=True)  # newest first
    every = gb(gb_cli, "list", "--all", "--json").stdout.splitlines()
    assert [json.loads(line)["id"] for line in every] == sorted(
        [new_id, other_id, old_id], reverse=True
    )
    # The table view lists the latest version only, too.
    table = gb(gb_cli, "list").stdout.splitlines()
    assert [int(line.split("\t")[0]) for line in table[1:]] == listed


# ------------------------------------------------------------------ 3. partial failure


def break_extraction(server: LLMServer) -> Fault:
    return server.add_fault(Fault("malformed", stage="extract_graph", match=BROKEN, times=-1))


def test_one_bad_input_never_sinks_the_batch(gb_cli, online) -> None:
    files = bad_batch()
    fault = break_extraction(online)

    result = gb(gb_cli, "remember", *files.values(), "--json", code=4)

    lines = lines_by_source(result.stdout)
    assert {s: line["status"] for s, line in lines.items()} == {
        files["good1"]: "remembered",
        files["good2"]: "remembered",
        files["latin1"]: "failed",
        files["broken"]: "failed",
    }
    assert fault.hits >= 1
    latin1 = lines[files["latin1"]]["error"]
    assert latin1 == (
        f"{files['latin1']}: is not valid UTF-8 (byte 0xeb at offset 2); "
        "convert it first, e.g. iconv -t UTF-8"
    )
    broken = lines[files["broken"]]["error"]
    assert broken.startswith(f"{files['broken']}: ") and "extract_graph" in broken
    assert "is not valid JSON" in broken and "nothing of it was stored" in broken
    # Each bad input is named with its reason on stderr, as it ended.
    errors = [line for line in stderr_lines(result) if line.startswith("gb: in/")]
    assert sorted(errors) == sorted(f"gb: {lines[files[k]]['error']}" for k in ("latin1", "broken"))
    # The good ones are stored whole, the bad ones not at all.
    assert set(current_by_source()) == {absolute(files["good1"]), absolute(files["good2"])}
    assert_documents_complete()
    assert_database_sound()


def test_exit_codes_when_every_input_fails_or_only_one_was_given(gb_cli, online) -> None:
    files = bad_batch()
    break_extraction(online)
    # Every input refused: 3, as for one refused input.
    result = gb(gb_cli, "remember", files["latin1"], "missing.md", "--json", code=3)
    assert statuses(result.stdout) == {files["latin1"]: "failed", "missing.md": "failed"}
    # Every input failed, for different reasons: 1.
    gb(gb_cli, "remember", files["latin1"], files["broken"], code=1)
    # A single input keeps its own code.
    gb(gb_cli, "remember", files["latin1"], code=3)
    single = gb(gb_cli, "remember", files["broken"], "--json", code=1)
    assert statuses(single.stdout) == {files["broken"]: "failed"}
    assert documents() == []


# ------------------------------------------------------------------ 4. throughput across files


def test_calls_of_several_documents_overlap(gb_cli, online) -> None:
    names = [str(write(f"short/s{i:02}.md", story(100 + i))) for i in range(12)]
    # The first requests wait in the server until as many are out as `concurrency` (8)
    # lets; if the run never sends them at once, the hold times out and says so.
    held = online.hold(Hold(count=8, timeout=10))

    result = gb(gb_cli, "remember", *names, "--json")

    assert set(statuses(result.stdout).values()) == {"remembered"}
    assert held.opened
    assert online.max_in_flight == 8  # overlapping, within the one `concurrency`
    requests = [r for r in online.requests if r.stage in ("extract_graph", "embed")]
    # One extraction and one embeddings request per file, and one embeddings request for
    # each call that rewrote summaries of entities whose facts another file closed: those
    # come once the last file is stored, and may speak of several files.
    assert len(requests) == 24 + online.calls("summarize_entity")
    rewrites = [r.started for r in online.requests_for("summarize_entity")]
    requests = [r for r in requests if r.started < min(rewrites, default=math.inf)]
    assert len(requests) == 24

    facts = [story(100 + i).split(". ", 1)[1].strip() for i in range(12)]  # one per file

    def document_of(request) -> int:
        text = json.dumps(request.body)
        (seed,) = [i for i, fact in enumerate(facts) if fact in text]
        return seed

    # The most documents with a request in flight at one moment, from the server's own
    # record of when each request started and ended.
    most = max(
        len({document_of(r) for r in requests if r.started <= moment < r.ended})
        for moment in (r.started for r in requests)
    )
    assert most == 8  # one request of each of eight documents out at once


# ------------------------------------------------------------------ 7. --max-cost

# Priced by input, so that a call's worst case (what the budget reserves before it starts)
# is close to what it costs; and one request at a time, so that little is reserved at
# once: the budget binds on what was spent, not only on what the calls in flight reserve.
# Unbounded, the 24 texts below cost about $1.93.
PRICES = """\
[prices]
"gpt-4o-mini" = { input = 50.0, output = 0.5 }
"text-embedding-3-small" = { input = 50.0, output = 0.0 }
"""
BUDGET = 1.0
ONE_AT_A_TIME = ("--concurrency", "1")


def over_budget_batch() -> list[str]:
    write("gligabao.toml", PRICES)
    return [str(write(f"batch/d{i:02}.md", story(200 + i, paragraphs=1))) for i in range(24)]


def test_max_cost_stops_cleanly_and_a_rerun_completes_the_rest(gb_cli, online) -> None:
    names = over_budget_batch()

    result = gb(
        gb_cli, "remember", *names, *ONE_AT_A_TIME, "--max-cost", str(BUDGET), "--json", code=4
    )

    lines = lines_by_source(result.stdout)
    assert set(lines) == set(names)
    left = [s for s, line in lines.items() if line["status"] == "left"]
    assert left and {line["status"] for line in lines.values()} <= {"remembered", "left"}
    # An input the budget stopped once it had begun says so; one it never let start has
    # no error, and the LLM was asked nothing about it (its title line is in no request).
    stopped = [name for name in left if "error" in lines[name]]
    never_started = [name for name in left if "error" not in lines[name]]
    assert stopped and never_started
    for name in stopped:
        assert set(lines[name]) == {"source", "status", "error"}
        assert lines[name]["error"].startswith(f"{name}: ")
        assert f"stopped at --max-cost ${BUDGET:g}: $" in lines[name]["error"]
    asked = json.dumps([request.body for request in online.requests])
    for name in never_started:
        assert lines[name] == {"source": name, "status": "left"}
        assert Path(name).read_text().splitlines()[0] not in asked, name
    # Inputs start in the order given: those never started are the last ones.
    assert names[-len(never_started) :] == never_started
    spent = rows(
        "SELECT sum(cost) AS cost, count(*) AS n, count(cost) AS priced FROM gb_inferences"
    )
    assert spent[0]["n"] == spent[0]["priced"] > 0  # every call was priced...
    assert 0 < spent[0]["cost"] <= BUDGET  # ...and all of them together stay within
    # It stopped between stores: what it stored is stored whole.
    assert_database_sound()
    begun = {d["source"]: d["id"] for d in documents()}
    for name in set(names) - set(left):
        assert lines[name]["artifact_id"] == begun[absolute(name)]

    rest = gb(gb_cli, "remember", *names, "--json")

    again = lines_by_source(rest.stdout)
    for name in names:
        expected = {"remembered", "completed"} if name in left else {"unchanged"}
        assert again[name]["status"] in expected, again[name]
        if absolute(name) in begun:  # a document left part-way is finished, not redone
            assert again[name]["artifact_id"] == begun[absolute(name)]
    assert len(documents()) == len(names)
    assert_documents_complete()
    vectors = assert_indexes_complete(gb_cli)
    assert vectors["entities"] > 0 and vectors["edges"] > 0


def test_the_summary_of_a_stopped_run_counts_what_it_spent(gb_cli, online) -> None:
    names = over_budget_batch()
    result = gb(gb_cli, "remember", *names, *ONE_AT_A_TIME, "--max-cost", str(BUDGET), code=4)
    spent = rows(
        "SELECT sum(cost) AS cost, sum(input_tokens + output_tokens) AS n FROM gb_inferences"
    )
    *_, summary = stderr_lines(result)
    assert f" {spent[0]['n']:,} tokens, cost ${spent[0]['cost']:.4f}," in summary, summary


def test_max_cost_without_prices_is_a_configuration_error(gb_cli, online) -> None:
    path = write("a.md", story(1))
    result = gb(gb_cli, "remember", str(path), "--max-cost", "1", code=5)
    message = " ".join(result.stderr.split())
    assert "--max-cost" in message and "gpt-4o-mini" in message
    assert "text-embedding-3-small" in message and "[prices]" in message
    assert online.requests == [] and not Path(DB).exists()


# ------------------------------------------------------------------ 8. progress and summary


def test_quiet_prints_only_errors(gb_cli, online) -> None:
    write("docs/a.md", story(1))
    write("docs/b.md", story(2))
    write("docs/.hidden.md", story(3))
    write("docs/bad.txt", b"caf\xe9\n")

    result = gb(gb_cli, "remember", "-r", "docs", "--quiet", code=4)

    assert stderr_lines(result) == [
        "gb: docs/bad.txt: is not valid UTF-8 (byte 0xe9 at offset 3); convert it first, "
        "e.g. iconv -t UTF-8"
    ]
    assert result.stdout == ""
    assert len(documents()) == 2


def test_a_batch_ends_with_a_summary_line_of_counts(gb_cli, online) -> None:
    write("docs/a.md", story(1, paragraphs=2))
    write("docs/b.md", story(2))
    gb(gb_cli, "remember", "docs/b.md")
    before = count("SELECT max(id) FROM gb_inferences")
    write("docs/c.md", story(3))
    write("docs/bad.txt", b"caf\xe9\n")

    result = gb(gb_cli, "remember", "-r", "docs", code=4)

    *_, summary = stderr_lines(result)
    chunks = count("SELECT count(*) FROM gb_artifacts WHERE chunk_index IS NOT NULL")
    assert chunks > 1
    tokens = count(
        "SELECT sum(input_tokens + output_tokens) FROM gb_inferences WHERE id > ?", (before,)
    )
    unpriced = count("SELECT count(*) FROM gb_inferences WHERE id > ? AND cost IS NULL", (before,))
    assert summary.startswith(
        f"gb: 4 inputs: 1 failed, 2 remembered, 1 unchanged; {chunks} chunks, {tokens:,} tokens, "
        f"cost $0 + {unpriced} calls without a price, "
    )
    assert summary.endswith(" s")
    # One line per input remembered on stdout; no progress display off a terminal.
    assert "remembering" not in result.stderr
    assert len(result.stdout.splitlines()) == 3


# ------------------------------------------------------------------ the same file twice at once


def test_two_runs_of_one_file_at_once_store_it_once(online) -> None:
    """What two cron processes do when both start on the same file, in one event loop:
    the second waits for the first's claim on the text and finds it stored whole."""
    path = write("shared.md", story(9, paragraphs=4))
    config = load_config(None, {"concurrency": 16})
    conn = open_db(DB)
    results: list[Remembered] = []
    try:
        names = [str(path), absolute("shared.md")]  # as two processes would name it
        remember_all(conn, names, config, LLM(config), Options(), results.append)
    finally:
        conn.close()
    assert sorted(r.status for r in results) == ["remembered", "unchanged"]
    (doc,) = documents()
    assert online.calls("extract_graph") == doc["chunk_count"] > 1  # each chunk once
    assert list(current_by_source()) == [absolute("shared.md")]
    assert_documents_complete()


def test_a_failure_the_pipeline_did_not_foresee_is_one_failed_input(
    gb_cli, online, monkeypatch
) -> None:
    """An unexpected exception in one document (here a store error) fails that input
    only; the others still end, each with its line, and the exit code says partial."""
    pipeline = importlib.import_module("gligabao.remember.document")

    names = [str(write(f"u/n{i}.md", story(300 + i))) for i in range(10)]
    real = pipeline._Run._store_parent

    def store_parent(self, result, pending):
        if "Report 301." in self.source.text:
            raise RuntimeError("disk on fire")
        return real(self, result, pending)

    monkeypatch.setattr(pipeline._Run, "_store_parent", store_parent)
    result = gb(gb_cli, "remember", *names, "--json", "--concurrency", "1", code=4)

    lines = lines_by_source(result.stdout)
    assert set(lines) == set(names)
    assert lines[names[1]]["status"] == "failed"
    assert "disk on fire" in lines[names[1]]["error"]
    assert {lines[n]["status"] for n in names if n != names[1]} == {"remembered"}
    assert os.path.exists(DB) and len(documents()) == 9
