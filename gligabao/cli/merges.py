"""`gb merges` and `gb unmerge`: the entities resolution merged into others, and
undoing one."""

from __future__ import annotations

import typer

from gligabao.cli import options, render
from gligabao.cli.app import command, memory


@command("merges")
def merges_command(
    since: str = typer.Option(
        None, "--since", metavar="TIME", help="Only merges made at or after this time (ISO-8601)."
    ),
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """The entities merged into others, and why.

    Each merge, oldest first: the entity as a chunk extracted it (name and type), the
    entity it was merged into, the chunk, and what decided: the rule "same normalized
    name" (no LLM call), or "resolve" with the id of the LLM call that said so (gb
    inferences ID shows it). An undone merge names the entity it became again.

    Example: gb merges --since 2026-01-01 --json
    """
    service = memory(config_path, {"database": db, "schema": schema, "dataset": dataset})
    shown = service.merges(since=since)
    none = "no merges" + (f" since {since}" if since else "")
    render.listing(shown, as_json, none, render.merges_list)


@command("unmerge")
def unmerge_command(
    merge_id: int = typer.Argument(metavar="MERGE_ID", help="The merge to undo (gb merges)."),
    db: options.Db = None,
    schema: options.Schema = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Undo a merge: the merged entity is its own again.

    In one transaction, the entity as the chunk extracted it is restored as its own,
    with its link to that chunk and the facts that chunk gave it (a fact the chunk only
    restated is copied, its evidence moved to the copy); the entity it was merged into
    keeps the rest. The two are then kept apart: later resolution never merges them by
    name again.

    Example: gb unmerge 3
    """
    undone = memory(config_path, {"database": db, "schema": schema}).unmerge(merge_id)
    if as_json:
        render.json_line(undone.as_json())
        return
    render.notice(render.merge_line(undone))
