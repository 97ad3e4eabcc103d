"""`gb facts`, `gb entity`, `gb entities`, `gb path` and `gb why`: the temporal knowledge
graph, read back with its evidence.

All only read: they open the database without creating one (exit 6 when there is none).
"""

from __future__ import annotations

import typer

from gligabao.cli import options, render
from gligabao.cli.app import command, memory
from gligabao.errors import ExitCode


@command("facts")
def facts_command(
    query: str = typer.Argument(
        None, metavar="QUERY", help="Facts about this, in your own words (optional)."
    ),
    about: str = typer.Option(
        None, "--about", metavar="NAME", help="Only facts touching this entity (name or id)."
    ),
    at: str = typer.Option(
        None, "--at", metavar="TIME", help="Facts true at this time (ISO-8601)."
    ),
    known_at: str = typer.Option(
        None, "--known-at", metavar="TIME", help="Facts the graph held at this time (ISO-8601)."
    ),
    closed: bool = typer.Option(False, "--all", help="Closed facts too, not only current ones."),
    relation: str = typer.Option(
        None, "--relation", metavar="NAME", help="Only this relation (WORKS_AT...)."
    ),
    session: str = typer.Option(
        None, "--session", metavar="ID", help="Only facts of this session."
    ),
    limit: int = typer.Option(
        20, "-k", "-n", "--limit", metavar="N", help="How many facts to show."
    ),
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """The facts, and where each is stated.

    The facts of a dataset: current ones, newest first, each with where it is stated.

    With QUERY, facts are searched by BM25 and by meaning (their vectors), fused by
    reciprocal rank; BM25 alone without vectors or an embeddings endpoint. A fact is
    current when nothing closed it; --at asks what was true then, --known-at what the
    graph held then, --all shows closed facts too.

    Example: gb facts --about "Acme" --at 2019-06-01
    """
    service = memory(config_path, {"database": db, "schema": schema, "dataset": dataset})
    shown = service.facts(
        query,
        about=about,
        at=at,
        known_at=known_at,
        include_closed=closed,
        relation=relation,
        session=session,
        k=limit,
    )
    none = "no facts" + (f" for {query!r}" if query else "")
    render.listing(shown, as_json, none, render.facts_list)


@command("entity")
def entity_command(
    name: str = typer.Argument(
        metavar="NAME|ID", help="The entity's name (any case and spacing) or id."
    ),
    at: str = typer.Option(
        None, "--at", metavar="TIME", help="Only facts true at this time (ISO-8601)."
    ),
    depth: int = typer.Option(
        1, "--depth", metavar="N", help="Neighbours up to this many facts away."
    ),
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """One entity and its facts as a timeline.

    One entity: its type and summary, its facts as a timeline (closed ones marked,
    with what closed them and why), its neighbours and the documents that mention it.

    A name is matched exactly (case, accents and spacing aside), else by its words: when
    several entities are close, they are listed with their ids and gb exits 1.

    Example: gb entity "Alice Moreau" --at 2019-01-01 --depth 2
    """
    service = memory(config_path, {"database": db, "schema": schema, "dataset": dataset})
    view = service.entity(name, depth=depth, at=at)
    if as_json:
        render.json_line(view.as_json())
        return
    render.entity_view(view)


@command("entities")
def entities_command(
    query: str = typer.Argument(
        None, metavar="QUERY", help="Entities like this, in your own words (optional)."
    ),
    limit: int = typer.Option(
        20, "-k", "-n", "--limit", metavar="N", help="How many entities to show."
    ),
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """The entities, by name or like a query.

    The entities of a dataset, by name, with their numbers of facts and documents;
    with QUERY, searched by their names and summaries and by meaning.

    Example: gb entities "software companies" -k 5
    """
    service = memory(config_path, {"database": db, "schema": schema, "dataset": dataset})
    shown = service.entities(query, k=limit)
    none = "no entities" + (f" for {query!r}" if query else "")
    render.listing(shown, as_json, none, render.entities_table)


@command("path")
def path_command(
    first: str = typer.Argument(metavar="A", help="One entity: its name (any case) or id."),
    second: str = typer.Argument(metavar="B", help="The other entity: its name or id."),
    at: str = typer.Option(
        None, "--at", metavar="TIME", help="Through the facts true at this time (ISO-8601)."
    ),
    known_at: str = typer.Option(
        None,
        "--known-at",
        metavar="TIME",
        help="Through the facts the graph held at this time (ISO-8601).",
    ),
    max_depth: int = typer.Option(4, "--max-depth", metavar="N", help="Chains of at most N facts."),
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """How two entities are linked: the shortest chains of facts.

    The shortest chains of facts linking two entities, a few at most: each fact with
    its interval and where it is stated. A fact links its two entities either way; it is
    shown in its own direction. Only current facts, unless --at asks for those true then
    or --known-at for those the graph held then.

    Names are matched as gb entity matches them: several close entities are listed with
    their ids (exit 1). No chain of at most --max-depth facts: exit 1 (--json still
    prints the answer, with "found": false). No LLM is asked anything.

    Example: gb path "Alice Moreau" "Dmitri Novak" --at 2022-01-01 --max-depth 3
    """
    service = memory(config_path, {"database": db, "schema": schema, "dataset": dataset})
    found = service.path(first, second, at=at, known_at=known_at, max_depth=max_depth)
    if as_json:
        render.json_line(found.as_json())
    else:
        render.paths_view(found)
    if not found.found:
        render.error(render.no_path(found))
        raise typer.Exit(int(ExitCode.FAILURE))


@command("why")
def why_command(
    fact_id: int = typer.Argument(metavar="FACT_ID", help="The fact's id, as gb facts shows it."),
    db: options.Db = None,
    schema: options.Schema = None,
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """Where a fact is stated, and what closed it.

    Why gb holds a fact: each place that states it, as path:LINE with the quote
    highlighted in its lines, and, for a closed fact, the fact that closed it, its own
    evidence and the reason given.

    Example: gb why 42
    """
    service = memory(config_path, {"database": db, "schema": schema, "dataset": dataset})
    fact = service.why(fact_id)
    if as_json:
        render.json_line(fact.as_json())
        return
    render.why(fact, fact.closer, service.evidence_lines)
