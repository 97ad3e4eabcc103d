"""Reading when the embeddings server is down: a search, `gb facts QUERY` and `gb entities
QUERY` ask for their query's vector once, and go on by BM25 alone with a one-line notice
(exit 0) when it cannot be had; `--method vector` alone still fails. Real parts: the test
LLM server, stopped mid-session, and a server that never answers in time.
"""

from __future__ import annotations

import json
import time

from tests.support.helpers import gb, stderr_lines, story, write
from tests.support.llm_server import Fault


def _remembered(gb_cli) -> None:
    write("notes.txt", story(4, paragraphs=3))
    gb(gb_cli, "remember", "notes.txt")


def _fallback_line(result) -> str:
    [line] = stderr_lines(result)
    assert line.startswith("gb: the query could not be embedded (embed ("), line
    assert line.endswith("; searching by BM25 only"), line
    return line


def test_a_read_goes_on_by_bm25_at_once_when_the_server_is_gone(gb_cli, online) -> None:
    _remembered(gb_cli)
    online.stop()  # connection refused from now on

    started = time.monotonic()
    result = gb(gb_cli, "search", "Lisbon", "--json")
    assert time.monotonic() - started < 1.5  # one attempt, no retries
    line = _fallback_line(result)
    assert "could not reach" in line
    hits = [json.loads(h) for h in result.stdout.splitlines()]
    assert hits
    for hit in hits:
        assert (hit["method"], hit["fallback"]) == ("bm25", line.removeprefix("gb: "))
        assert hit["ranks"].keys() == {"bm25"}

    for command in ("facts", "entities"):
        found = gb(gb_cli, command, "Lisbon")
        _fallback_line(found)
        assert "Lisbon" in found.stdout, command

    refused = gb(gb_cli, "search", "Lisbon", "--method", "vector", code=1)
    [error] = stderr_lines(refused)
    assert error.startswith("gb: embed (") and "could not reach" in error, error


def test_a_query_vector_is_waited_for_search_query_timeout_only(
    gb_cli, online, monkeypatch
) -> None:
    _remembered(gb_cli)
    monkeypatch.setenv("GB_SEARCH_QUERY_TIMEOUT", "0.5")
    online.add_fault(Fault("timeout", stage="embed", times=-1))

    started = time.monotonic()
    result = gb(gb_cli, "search", "Lisbon")
    assert time.monotonic() - started < 3
    assert "timed out (limit 0.5 s)" in _fallback_line(result)
    assert "Lisbon" in result.stdout
