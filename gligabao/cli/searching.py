"""`gb search`'s work, and its arguments read without typer.

A search is what scripts run most, and typer's import and its reading of the command's
signature were ~20 ms of a ~120 ms `gb search --json`. So main() reads a plain argument
list here, each option as `--name VALUE`, `--name=VALUE` or a flag, and runs the search
without typer; anything else (help, a value that is not a number, an unknown or attached
option, a second query) goes to typer, which says what is wrong as for every command.
search.py declares the same options for typer and calls search() too; a test checks
that both read every argument list alike.
"""

from __future__ import annotations

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


# Each option that takes a value: the name of search()'s parameter it gives.
_VALUES = {
    "--method": "method",
    "-k": "k",
    "-n": "k",
    "--limit": "k",
    "--db": "db",
    "--schema": "schema",
    "--dataset": "dataset",
    "--config": "config_path",
    "--session": "session",
    "--role": "role",
}
# Each flag: its parameter and value.
_FLAGS = {
    "--full": ("full", True),
    "--json": ("as_json", True),
    "--rerank": ("rerank", True),
    "--no-rerank": ("rerank", False),
}


def plain(args: list[str]) -> dict[str, Any] | None:
    """search()'s arguments from `gb search ARGS`, or None where typer should read them."""
    found: dict[str, Any] = {}
    query: str | None = None
    rest = iter(args)
    for arg in rest:
        if arg in _FLAGS:
            name, flag = _FLAGS[arg]
            found[name] = flag
        elif arg.startswith("-"):
            option, eq, value = arg.partition("=")
            if option not in _VALUES or (eq and not option.startswith("--")):
                return None
            if not eq:
                value = next(rest, "-")  # none left: typer says it is missing
                if value.startswith("-"):
                    return None
            found[_VALUES[option]] = value
        elif query is None:
            query = arg
        else:
            return None
    if query is None:
        return None
    if "k" in found:
        try:
            found["k"] = int(found["k"])  # as click reads an int
        except ValueError:
            return None
    return {"query": query, **found}


def search(
    query: str,
    *,
    method: str = "hybrid",
    k: int = 10,
    db: str | None = None,
    schema: str | None = None,
    dataset: str | None = None,
    config_path: str | None = None,
    session: str | None = None,
    role: str | None = None,
    full: bool = False,
    rerank: bool | None = None,
    as_json: bool = False,
) -> None:
    """`gb search`: the hits as JSON lines, or drawn for a person."""
    from gligabao.base.jsonl import json_line
    from gligabao.cli.running import FLAGS, log_warnings, memory

    flags = {"database": db, "schema": schema, "dataset": dataset}
    service = memory(config_path, flags, {**FLAGS, "k": "-k"}, logs=False)
    # Only the chat model's client logs (a server adapted to), and only a rerank calls it:
    # logging's import is ~3 ms of every other search.
    if rerank or (rerank is None and service.config["search.rerank"]):
        log_warnings()
    hits = service.search(query, k, method=method, session=session, role=role, rerank=rerank)
    if as_json:
        for line in hits.as_json():
            json_line(line)
        return
    from gligabao.cli import render

    if not hits:
        render.notice(f"no hits for {query!r}")
        return
    render.search_hits(hits, query, full=full)
