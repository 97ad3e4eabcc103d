"""Plain helpers of the tests that run `gb` against the test LLM server
(tests/support/llm_server.py) and read its SQLite file back; the fixtures built on them
(`server`, `online`, `corpus`) are in conftest.py.

Everything here works in the test's own folder, where the autouse fixture has chdir'd:
the database is ``./gb.db`` there, and file names are relative to it.
"""

from __future__ import annotations

import json
import os
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gligabao.store import open_db, vectors
from gligabao.store.db import integrity_problems, query, scalar
from tests.support.llm_server import LLMServer

DB = "gb.db"
# Where the `backend` fixture puts the URL of the test's PostgreSQL database.
BACKEND_VARIABLE = "GLIGABAO_TEST_DB"
# The API key of every test that configures the test server; no output, stored file or
# trace may ever hold it. Not shaped like an OpenAI key, so that only gb's knowledge of
# the configured key, not a pattern, can keep it out.
SECRET = "gbtest-Q7w3E9r1T5y8U2i4o6P0"

# Real texts nobody here wrote, shipped under tests/support/corpus (its README says whose and on
# what terms): three licences (the `corpus` fixture) and two Node.js API references.
CORPUS_DIR = Path(__file__).parent / "corpus"
CORPUS = ("Apache-2.0", "MPL-2.0", "GPL-3")


# ------------------------------------------------------------------ environment


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    """A hand-written HTTP server on 127.0.0.1 (a free port), for what the tests' LLM
    server cannot do; shut down on leaving."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def gb_env(server: LLMServer | None, **extra: str) -> dict[str, str]:
    """The environment a user (or a cron job) would set: ./gb.db, 64-dimension vectors,
    128-token chunks, one retry, and the test server with its key; no endpoint at all
    when ``server`` is None. ``extra`` adds or replaces variables."""
    env = {
        "GB_DB": database(),
        "GB_LLM_MAX_RETRIES": "1",
        "GB_EMBEDDINGS_DIMENSIONS": "64",
        "GB_CHUNK_SIZE": "128",
        **extra,
    }
    if server is not None:
        env.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=SECRET)
    return env


def database() -> str:
    """The database of the test's gb: ./gb.db, or a PostgreSQL one where the test runs on
    both stores (the `backend` fixture sets it)."""
    return os.environ.get(BACKEND_VARIABLE) or absolute(DB)


def configure(monkeypatch: pytest.MonkeyPatch, server: LLMServer | None, **extra: str) -> None:
    """Set ``gb_env(server, **extra)`` for the rest of the test, for gb in this process and
    in the processes it starts."""
    for name, value in gb_env(server, **extra).items():
        monkeypatch.setenv(name, value)


# ------------------------------------------------------------------ files


def write(name: str | Path, data: str | bytes) -> Path:
    """Write ``data`` (text as UTF-8) to ``name``, making its folders; returns the path as
    named, relative to the test's folder unless ``name`` is absolute."""
    path = Path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def absolute(name: str) -> str:
    """``name`` in the test's folder as an absolute path: how gb stores a source."""
    return str(Path.cwd() / name)


_FIRST = "Alice Bruno Chiara Dmitri Elena Farid Greta Hugo Ines Jonas Kaito Lena".split()  # noqa: SIM905
_LAST = "Moreau Tanaka Okafor Lindqvist Novak Rossi Haddad Keller Silva Brandt".split()  # noqa: SIM905
_PLACES = "Lisbon Oslo Nairobi Kyoto Quito Tallinn Porto Dakar Hanoi Bergen".split()  # noqa: SIM905


def story(seed: int, paragraphs: int = 0) -> str:
    """A text of ``paragraphs`` paragraphs of five sentences (people meeting in places, on
    dates) after a title line ``Report SEED.`` that no other seed's text holds. With
    ``paragraphs=0`` it is one short line: one artifact, not chunked."""
    rng = random.Random(seed)

    def sentence() -> str:
        return (
            f"{rng.choice(_FIRST)} {rng.choice(_LAST)} met {rng.choice(_FIRST)} "
            f"{rng.choice(_LAST)} in {rng.choice(_PLACES)} on 2024-0{rng.randint(1, 9)}-"
            f"{rng.randint(10, 28)}."
        )

    if not paragraphs:
        return f"Report {seed}. {sentence()}\n"
    body = [" ".join(sentence() for _ in range(5)) for _ in range(paragraphs)]
    return "\n\n".join([f"Report {seed}.", *body]) + "\n"


BROKEN = "Zebulon Quartermaine signed the Vantablack accord in Reykjavik."


def bad_batch() -> dict[str, str]:
    """Two good files, one not UTF-8, and one holding ``BROKEN`` (for a fault to match)."""
    return {
        "good1": str(write("in/good1.md", story(1))),
        "good2": str(write("in/good2.md", story(2, paragraphs=2))),
        "latin1": str(write("in/latin1.txt", "Zoë Ærø from Tromsø.\n".encode("latin-1"))),
        "broken": str(write("in/broken.md", f"Report 3. {BROKEN}\n")),
    }


# ------------------------------------------------------------------ running gb


def gb(gb_cli, *args: str, code: int = 0, input: bytes | None = None) -> Any:
    """Run `gb ARGS` in this process; it must exit with ``code``, deliberately."""
    result = gb_cli(*args, input=input)
    # A traceback also exits 1: only a deliberate exit counts.
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    return result


def lines_by_source(stdout: str) -> dict[str, dict[str, Any]]:
    """The --json lines of a run, by source; each input exactly once."""
    lines = [json.loads(line) for line in stdout.splitlines()]
    for line in lines:
        assert list(line)[:2] == ["source", "status"], line
    by_source = {line["source"]: line for line in lines}
    assert len(by_source) == len(lines), [line["source"] for line in lines]
    return by_source


def statuses(stdout: str) -> dict[str, str]:
    return {source: line["status"] for source, line in lines_by_source(stdout).items()}


def stderr_lines(result: Any) -> list[str]:
    """The lines of a run's stderr that say something."""
    return [line for line in result.stderr.splitlines() if line.strip()]


# ------------------------------------------------------------------ reading the database back


def rows(sql: str, params: Any = (), *, db: str | None = None) -> list[dict[str, Any]]:
    conn = open_db(db or database())
    try:
        return query(conn, sql, params)
    finally:
        conn.close()


def count(sql: str, params: Any = (), *, db: str | None = None) -> int:
    conn = open_db(db or database())
    try:
        return int(scalar(conn, sql, params))
    finally:
        conn.close()


def documents() -> list[dict[str, Any]]:
    """Every stored document (every version), oldest first."""
    return rows("SELECT * FROM gb_artifacts WHERE parent_id IS NULL ORDER BY id")


def current_by_source() -> dict[str, dict[str, Any]]:
    """The latest version of each stored source (not superseded); one per source."""
    current = [d for d in documents() if d["superseded_by"] is None]
    by_source = {d["source"]: d for d in current}
    assert len(by_source) == len(current), [d["source"] for d in current]
    return by_source


def vec_stats(gb_cli) -> dict[str, dict[str, Any]]:
    result = gb(gb_cli, "vec-stats", "--json")
    return {row["index"]: row for row in map(json.loads, result.stdout.splitlines())}


def assert_indexes_complete(gb_cli) -> dict[str, int]:
    """Every index holds exactly the vectors it should, by `gb vec-stats`; returns what
    each holds."""
    stats = vec_stats(gb_cli)
    assert sorted(stats) == ["chunks", "edges", "entities", "summaries"]
    for row in stats.values():
        assert row["held"] == row["should"], row
        assert (row["missing"], row["orphans"], row["pending"]) == (0, 0, 0), row
    return {name: row["held"] for name, row in stats.items()}


def assert_documents_complete() -> None:
    """Every current document complete, with all its chunks stored."""
    for doc in current_by_source().values():
        assert (doc["status"], doc["pending"]) == ("complete", ""), doc
        stored = count(
            """SELECT count(*) FROM gb_artifacts WHERE parent_id = ?
               AND kind <> 'chunk_summary'""",
            (doc["id"],),
        )
        assert stored == doc["chunk_count"], doc


def assert_database_sound() -> None:
    """integrity_check ok, and no chunk without what its transaction stores with it: its
    summary, and (unless its embeddings are marked pending) its chunk and summary vectors;
    each document's stored chunks are its first ones, in order."""
    conn = open_db(database())
    try:
        if conn.dialect == "sqlite":
            assert query(conn, "PRAGMA integrity_check") == [{"integrity_check": "ok"}]
        assert integrity_problems(conn) == []
        chunks = query(
            conn,
            """SELECT c.id, c.parent_id, c.chunk_index, c.pending, s.id AS summary_id,
                      s.inference_id AS summary_inference
               FROM gb_artifacts c
               LEFT JOIN gb_artifacts s ON s.parent_id = c.id AND s.kind = 'chunk_summary'
               WHERE c.parent_id IS NOT NULL AND c.kind <> 'chunk_summary'""",
        )
        for chunk in chunks:
            if chunk["pending"]:
                continue
            assert chunk["summary_id"] is not None and chunk["summary_inference"], chunk
            assert vectors.artifact_vectors(conn, 1, "chunks", chunk["id"]), chunk
            assert vectors.artifact_vectors(conn, 1, "summaries", chunk["summary_id"]), chunk
        by_document: dict[int, list[int]] = {}
        for chunk in chunks:
            by_document.setdefault(chunk["parent_id"], []).append(chunk["chunk_index"])
        for indexes in by_document.values():
            assert sorted(indexes) == list(range(len(indexes))), indexes
    finally:
        conn.close()
