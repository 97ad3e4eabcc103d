"""`gb mcp`, started as a real process and driven by the MCP SDK's own client,
over stdio and over streamable HTTP on 127.0.0.1: the tools listed (write tools only with
--allow-write), each called and its structured content checked against the schema it
declares, bad calls answered with an error by a server that stays up, remember_file kept
under --root, a locked database, no LLM endpoint, and no API key in any answer.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from gligabao.mcp_server import READ_TOOLS, WRITE_TOOLS, HitOutput
from gligabao.search.hybrid import Hit
from gligabao.store import open_db
from tests.service.test_api import DOCS
from tests.support.helpers import DB, SECRET, absolute, gb, story, write
from tests.support.llm_server import Fault

Check = Callable[[ClientSession], Awaitable[None]]


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "gligabao", "mcp", "--db", absolute(DB), *args]


def over_stdio(
    check: Check, *args: str, env: dict[str, str] | None = None, offline: bool = False
) -> None:
    """Run `gb mcp ARGS` as a process of its own and `check` a session with it; with
    `offline`, in an environment that names no LLM endpoint."""
    command = _command(*args)
    environment = {**os.environ, **(env or {})}
    if offline:
        environment = {k: v for k, v in environment.items() if not k.startswith("OPENAI_")}
    params = StdioServerParameters(
        command=command[0], args=command[1:], env=environment, cwd=os.getcwd()
    )

    async def main() -> None:
        with open("server.log", "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write_),
                _session(read, write_) as session,
            ):
                await check(session)

    anyio.run(main)
    assert "Traceback" not in Path("server.log").read_text()  # nothing went wrong unsaid


@asynccontextmanager
async def _session(read: Any, write_: Any):
    async with ClientSession(read, write_) as session:
        await session.initialize()
        yield session


def over_http(check: Check, *args: str, host: str = "127.0.0.1") -> None:
    """Run `gb mcp --http :PORT ARGS` (bound to 127.0.0.1 by default) and `check` a
    session with it over streamable HTTP."""
    port = _free_port()
    address = f"{host}:{port}" if host else f":{port}"
    with open("server.log", "w") as errlog:
        server = subprocess.Popen([*_command(*args), "--http", address], stderr=errlog)
    try:
        _wait_for(port, server)
        if host in ("", "127.0.0.1"):  # bound to 127.0.0.1 alone, not every address
            with socket.socket() as probe:
                assert probe.connect_ex(("127.0.0.2", port)) != 0

        async def main() -> None:
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (
                    read,
                    write_,
                ),
                _session(read, write_) as session,
            ):
                await check(session)

        anyio.run(main)
        assert server.poll() is None  # still up after every bad call
        assert "Traceback" not in Path("server.log").read_text()
    finally:
        server.terminate()
        server.wait(timeout=30)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for(port: int, server: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        assert server.poll() is None, Path("server.log").read_text()
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError("gb mcp --http did not start listening")


async def tools_of(session: ClientSession) -> dict[str, Any]:
    return {tool.name: tool for tool in (await session.list_tools()).tools}


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    """A tool call that must succeed, its structured content valid for its schema."""
    result = await session.call_tool(name, arguments)
    assert not result.is_error, result.content
    schema = (await tools_of(session))[name].output_schema
    assert schema is not None, name
    jsonschema.validate(result.structured_content, schema)
    [text] = result.content
    assert SECRET not in text.text + json.dumps(result.structured_content)
    return result


async def refused(session: ClientSession, name: str, arguments: dict[str, Any]) -> str:
    """A tool call answered with an error; its message."""
    result = await session.call_tool(name, arguments)
    assert result.is_error, (name, arguments, result)
    message = " ".join(c.text for c in result.content)
    assert SECRET not in message and "Traceback" not in message
    return message


@pytest.fixture
def graph(gb_cli, online) -> dict[str, str]:
    """The DOCS remembered online (facts, one closed by the other), by name: absolute path."""
    for name, text in DOCS.items():
        write(name, text)
        gb(gb_cli, "remember", name, "--quiet")
    return {name: absolute(name) for name in DOCS}


async def read_tools_check(session: ClientSession, graph: dict[str, str]) -> None:
    tools = await tools_of(session)
    assert set(tools) == set(READ_TOOLS)  # no write tool without --allow-write

    hits = await call(session, "search", {"query": "Initech", "k": 3, "method": "bm25"})
    [first, *_] = hits.structured_content["hits"]
    assert first["source"] == graph["y2021.txt"] and first["line_start"] == 1
    assert f"{graph['y2021.txt']}:1" in hits.content[0].text  # path:LINE-LINE to cite
    assert (await call(session, "search", {"query": "Initech"})).structured_content["hits"]

    current = await call(session, "facts", {"about": "Acme Corp"})
    [led] = [f for f in current.structured_content["facts"] if f["relation"] == "IS_LED_BY"]
    assert led["target"] == "Chiara Okafor" and f"{graph['y2021.txt']}:2" in current.content[0].text
    then = await call(session, "facts", {"about": "Acme Corp", "at": "2016-01-01"})
    assert {f["target"] for f in then.structured_content["facts"]} >= {"Bruno Tanaka"}
    every = await call(session, "facts", {"query": "led", "include_closed": True, "k": 50})
    closed = next(f for f in every.structured_content["facts"] if f["target"] == "Bruno Tanaka")
    assert closed["status"] == "closed"

    why = await call(session, "why", {"fact_id": closed["id"]})
    assert why.structured_content["closer"]["target"] == "Chiara Okafor"
    assert f"{graph['y2015.txt']}:1" in why.content[0].text

    alice = await call(session, "entity", {"name": "alice moreau", "depth": 2})
    assert alice.structured_content["name"] == "Alice Moreau"
    assert {f["target"] for f in alice.structured_content["facts"]} >= {"Acme Corp", "Initech"}

    listed = await call(session, "list_documents", {})
    documents = listed.structured_content["documents"]
    assert [d["source"] for d in documents] == [graph["y2021.txt"], graph["y2015.txt"]]
    shown = await call(session, "get_document", {"document_id": documents[0]["id"]})
    assert shown.structured_content["text"] == DOCS["y2021.txt"]
    counts = await call(session, "stats", {})
    assert counts.structured_content["documents"] == 2

    # Bad calls: an error each, and the server goes on answering. An argument the schema
    # refuses is one short line naming it, not pydantic's report with its web addresses.
    for arguments, says in [
        ({"query": "x", "k": 0}, "search: k: input should be greater than or equal to 1, not 0"),
        ({"k": 3}, "search: query is required"),
        ({"query": "x", "k": "many"}, "search: k: input should be a valid integer"),
    ]:
        message = await refused(session, "search", arguments)
        assert says in message and "\n" not in message and "pydantic" not in message, message
    await refused(session, "search", {"query": ""})
    await refused(session, "search", {"query": "x", "method": "fuzzy"})
    unknown = await refused(session, "search", {"query": "x", "kk": 3})  # not dropped
    assert "kk is not an argument of this tool; it takes query, k" in unknown, unknown
    assert tools["search"].input_schema["additionalProperties"] is False
    await refused(session, "why", {"fact_id": "forty-two"})
    assert "no fact 999999" in await refused(session, "why", {"fact_id": 999999})
    assert "not an ISO-8601 time" in await refused(session, "facts", {"at": "yesterday"})
    assert "no entity" in await refused(session, "entity", {"name": "Nobody Atall"})
    await refused(session, "get_document", {"document_id": -1})
    await refused(session, "remember_text", {"text": "not without --allow-write"})
    assert (await call(session, "stats", {})).structured_content["documents"] == 2


def test_read_tools_over_stdio_with_no_llm_endpoint(graph) -> None:
    over_stdio(lambda session: read_tools_check(session, graph), offline=True)


def test_read_tools_over_http(graph) -> None:
    over_http(lambda session: read_tools_check(session, graph), host="")


async def write_tools_check(session: ClientSession) -> None:
    tools = await tools_of(session)
    assert set(tools) == {*READ_TOOLS, *WRITE_TOOLS}

    kept = await call(
        session,
        "remember_text",
        {"text": "Zebulon Quartermaine signed the Vantablack accord.", "valid_at": "2024-05-01"},
    )
    assert kept.structured_content["status"] == "offline"  # no endpoint: stored, pending
    found = await call(session, "search", {"query": "Vantablack accord"})
    [hit] = found.structured_content["hits"]
    assert hit["document_id"] == kept.structured_content["artifact_id"]

    long = story(9, paragraphs=40)
    chunked = (await call(session, "remember_text", {"text": long})).structured_content
    document = await call(session, "get_document", {"document_id": chunked["artifact_id"]})
    chunks = document.structured_content["chunks"]
    assert len(chunks) == len(chunked["chunks"]) > 1
    assert all(
        long.encode()[c["start_offset"] : c["end_offset"]].decode() == c["text"] for c in chunks
    )
    message = await refused(session, "get_document", {"document_id": chunks[1]["id"]})
    assert f"chunk 2 of {len(chunks)} of document {chunked['artifact_id']}" in message
    await call(session, "forget", {"document_id": chunked["artifact_id"]})

    inside = await call(session, "remember_file", {"path": "inside.md"})
    assert inside.structured_content["source"] == absolute("notes/inside.md")
    assert (await call(session, "search", {"query": "Kyoto lanterns"})).structured_content["hits"]

    for path in (absolute("outside.md"), "../outside.md", "escape.md", "/etc/hostname"):
        message = await refused(session, "remember_file", {"path": path})
        assert "outside the --root folders" in message
    assert "no such file" in await refused(session, "remember_file", {"path": "missing.md"})
    outside = await call(session, "search", {"query": "secret plans", "method": "bm25"})
    assert outside.structured_content["hits"] == []  # never read

    gone = await call(session, "forget", {"document_id": hit["document_id"]})
    assert gone.structured_content["artifact_id"] == hit["document_id"]
    assert (await call(session, "search", {"query": "Vantablack"})).structured_content["hits"] == []
    await refused(session, "forget", {"document_id": hit["document_id"]})
    assert (await call(session, "stats", {})).structured_content["documents"] == 1


def _write_setup() -> None:
    write("notes/inside.md", "Kyoto lanterns glow in the autumn festival.\n")
    write("outside.md", "The secret plans are under the floor.\n")
    Path("notes/escape.md").symlink_to(absolute("outside.md"))


def test_write_tools_only_with_allow_write_under_root_offline_over_stdio() -> None:
    _write_setup()
    over_stdio(write_tools_check, "--allow-write", "--root", "notes")


def test_write_tools_over_http() -> None:
    _write_setup()
    over_http(write_tools_check, "--allow-write", "--root", "notes")


def test_a_locked_database_is_an_error_after_the_busy_timeout_and_the_server_stays_up(
    gb_cli,
) -> None:
    write("a.md", "Ada Lovelace wrote the first program.\n")
    gb(gb_cli, "remember", "a.md", "--db", DB, "--quiet", code=0)
    gc.collect()  # the connection of the gb run in this process, closed

    async def check(session: ClientSession) -> None:
        holder = open_db(DB)  # a writer holding the file, as a cron job could
        holder.execute("PRAGMA locking_mode=EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("UPDATE gb_datasets SET name = name")
        try:
            message = await refused(session, "search", {"query": "Lovelace"})
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert "locked" in message and "busy_timeout" in message
        [hit] = (await call(session, "search", {"query": "Lovelace"})).structured_content["hits"]
        assert hit["source"] == absolute("a.md")

        writer = open_db(DB)  # a cron `gb remember` in the middle of a write
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE gb_datasets SET name = name")
        try:
            await call(session, "search", {"query": "Lovelace"})  # reads go on meanwhile
            message = await refused(session, "forget", {"document_id": hit["document_id"]})
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        assert "locked" in message
        await call(session, "forget", {"document_id": hit["document_id"]})
        assert (await call(session, "search", {"query": "Lovelace"})).structured_content == {
            "hits": []
        }

    over_stdio(check, "--allow-write", env={"GB_BUSY_TIMEOUT": "0.3"})


def test_no_api_key_in_any_answer_even_one_that_fails(graph, server) -> None:
    # Every chat call fails: errors that could quote the request, and its headers.
    server.add_fault(Fault("500", endpoint="any", times=-1))

    async def check(session: ClientSession) -> None:
        # Its documents are short, each with its own vector: the query's embedding fails,
        # which a hybrid search goes on without; a vector search cannot.
        searched = await refused(session, "search", {"query": "Initech", "method": "vector"})
        assert "HTTP 500" in searched
        hits = await call(session, "search", {"query": "Initech"})
        assert (
            "HTTP 500" in hits.content[0].text and "searching by BM25 only" in hits.content[0].text
        )
        message = await refused(session, "remember_text", {"text": "Quentin founded Hooli."})
        assert "failed" in message or "error" in message.lower()

    over_stdio(check, "--allow-write")
    assert SECRET not in Path("server.log").read_text()


def test_options_that_cannot_work_are_refused_before_serving(gb_cli) -> None:
    write("notes/a.md", "A note.\n")
    for args, says in [
        (["--root", "notes"], "add --allow-write"),
        (["--allow-write", "--root", "nowhere"], "no such folder"),
        (["--http", "localhost"], "expected HOST:PORT"),
        (["--http", "127.0.0.1:99999"], "expected HOST:PORT"),
    ]:
        result = gb_cli("mcp", *args)
        assert result.exit_code == 2, (args, result.stdout, result.stderr)
        assert says in result.stderr and len(result.stderr.strip().splitlines()) == 1
    write("gligabao.toml", "chunk_size = 5\n")
    assert gb_cli("mcp").exit_code == 5  # a bad setting, said at start-up


def test_an_llm_warning_has_gb_s_prefix(online) -> None:
    # A server that refuses stream_options: the client adapts, once, and says so on
    # stderr as every gb command does, not in the MCP SDK's own log format.
    online.takes_stream_options = False

    async def check(session: ClientSession) -> None:
        kept = await call(session, "remember_text", {"text": story(1)})
        assert kept.structured_content["status"] != "offline"

    over_stdio(check, "--allow-write")
    said = Path("server.log").read_text().splitlines()
    adapted = [line for line in said if "refuses stream_options" in line]
    assert len(adapted) == 1 and adapted[0].startswith("gb: warning: "), said


def test_the_search_schema_is_a_hits() -> None:
    """The search tool's output schema is written as a dataclass beside Hit (which is none):
    the same fields, in order, each with the same default."""
    assert tuple(f.name for f in dataclasses.fields(HitOutput)) == Hit._fields
    assert HitOutput.__doc__ == Hit.__doc__
    required = {
        f.name: f.name
        for f in dataclasses.fields(HitOutput)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    assert dataclasses.asdict(HitOutput(**required)) == Hit(**required).as_dict()
