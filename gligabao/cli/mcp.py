"""`gb mcp`: serve the database to MCP clients (Claude Desktop, Claude Code, Cursor)."""

from __future__ import annotations

import os
import signal
import sys

import typer

from gligabao.cli import options, signals
from gligabao.cli.app import command, log_warnings
from gligabao.errors import UsageError


@command("mcp")
def mcp_command(
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    allow_write: bool = typer.Option(
        False, "--allow-write", help="Also offer remember_text, remember_file and forget."
    ),
    root: list[str] = typer.Option(
        None,
        "--root",
        metavar="DIR",
        help="A folder remember_file may read files under (repeatable).",
    ),
    http: str = typer.Option(
        None,
        "--http",
        metavar="HOST:PORT",
        help="Serve streamable HTTP at HOST:PORT (default host 127.0.0.1).",
    ),
    config_path: options.ConfigPath = None,
) -> None:
    """Serve this memory to agents over MCP.

    Serve this memory to an agent over MCP, on standard input and output.

    Read tools (search, facts, entity, why, get_document, list_documents, stats) always;
    remember_text, remember_file (only files under a --root) and forget with
    --allow-write. Works with no LLM endpoint: BM25 search and the graph.

    \b
    Example: gb mcp --db ~/notes.db --allow-write --root ~/notes
    In Claude Desktop, Claude Code or Cursor:
      {"mcpServers": {"gb": {"command": "gb", "args": ["mcp", "--db", "/abs/gligabao.db"]}}}
    """
    from gligabao.cli import render
    from gligabao.service.memory import Memory

    if root and not allow_write:
        raise UsageError("--root names folders remember_file may read: add --allow-write")
    for folder in root or ():
        if not os.path.isdir(folder):
            raise UsageError(f"--root {folder}: no such folder; name a folder that exists")
    memory = Memory(db, dataset, config=config_path, schema=schema)  # a bad setting: exit 5
    for message in memory.config.warnings:
        render.warning(message)
    # Here, not at the top: the MCP SDK (pydantic, starlette) is for this command only.
    from gligabao.mcp_server import parse_http, serve

    address = parse_http(http) if http is not None else None
    if address is None:
        _stdio_stops_at_ctrl_c()
    # The library's warnings (an LLM server adapted to) as the other commands say them;
    # set only now, once every option is known good, since it is for the serving process.
    log_warnings(alone=True)
    serve(memory, allow_write=allow_write, roots=root or (), http=address)


def _stdio_stops_at_ctrl_c() -> None:
    """Over stdio, the SDK reads standard input in a worker thread that a Ctrl-C cannot
    stop: asyncio would wait for that read (a second Ctrl-C, or Ctrl-D) before ending.
    So the first SIGINT (and SIGTERM or SIGHUP, which signals.py forwards to it) ends gb
    at once with its one line; a tool that was writing left its chunk's transaction
    unfinished, and SQLite rolls it back. On a terminal, a person started it: one line
    says what it is doing and how to stop it (a client speaks on a pipe: nothing)."""
    signal.signal(signal.SIGINT, lambda signum, frame: signals.stop_now("the MCP server stopped"))
    if sys.stdin is not None and sys.stdin.isatty():
        sys.stderr.write(
            "gb: serving MCP on stdio: an MCP client (Claude, Cursor...) starts gb mcp "
            "itself and speaks on its standard input; Ctrl-C stops it\n"
        )
        sys.stderr.flush()
