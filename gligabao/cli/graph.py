"""`gb facts`, `gb entity`, `gb entities` and `gb why`: the temporal knowledge graph, read
back with its evidence.

All only read: they open the database without creating one (exit 6 when there is none).
"""

from __future__ import annotations

import typer

from gligabao.cli import options, render
from gligabao.cli.app import command, open_dataset
from gligabao.errors import GbError


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
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """The facts, and where each is stated.

    The facts of a dataset: current ones, newest first, each with where it is stated.

    With QUERY, facts are searched by BM25 and by meaning (their vectors), fused as
    gb search does; BM25 alone without vectors or an embeddings endpoint. A fact is
    current when nothing closed it; --at asks what was true then, --known-at what the
    graph held then, --all shows closed facts too.

    Example: gb facts --about "Acme" --at 2019-06-01
    """
    from gligabao.graph.queries import facts, find_entities

    options.count("--limit", limit)
    query = options.query_text(query, optional=True)
    about = options.query_text(about, optional=True, what="--about name")
    at_time, known_time = options.iso_time("--at", at), options.iso_time("--known-at", known_at)
    config, conn, found = open_dataset(config_path, db, dataset)
    entity_ids = [e["id"] for e in find_entities(conn, found, about)] if about else None
    query_vector = _query_vector(config, conn, found, query, "edges") if query else None
    shown = facts(
        conn,
        found,
        query or None,
        about=entity_ids,
        at=at_time,
        known_at=known_time,
        closed=closed,
        relation=relation.upper() if relation else None,
        session=session,
        limit=limit,
        query_vector=query_vector,
        depth=config["search.depth"],
        rrf_k=config["search.rrf_k"],
    )
    if as_json:
        for fact in shown:
            render.json_line(fact.as_json())
        return
    if not shown:
        render.notice("no facts" + (f" for {query!r}" if query else ""))
        return
    render.facts_list(shown)


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
    from gligabao.graph.queries import entity

    options.count("--depth", depth, low=0)
    name = options.query_text(name, optional=False, what="name")
    at_time = options.iso_time("--at", at)
    config, conn, found = open_dataset(config_path, db, dataset)
    vector = _query_vector(config, conn, found, name, "entities", quiet=True)
    view = entity(conn, found, name, at=at_time, depth=depth, query_vector=vector)
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
    dataset: options.Dataset = None,
    config_path: options.ConfigPath = None,
    as_json: options.Json = False,
) -> None:
    """The entities, by name or like a query.

    The entities of a dataset, by name, with their numbers of facts and documents;
    with QUERY, searched by their names and summaries and by meaning.

    Example: gb entities "software companies" -k 5
    """
    from gligabao.graph.queries import entities

    options.count("--limit", limit)
    query = options.query_text(query, optional=True)
    config, conn, found = open_dataset(config_path, db, dataset)
    vector = _query_vector(config, conn, found, query, "entities") if query else None
    shown = entities(
        conn,
        found,
        query or None,
        limit=limit,
        query_vector=vector,
        depth=config["search.depth"],
        rrf_k=config["search.rrf_k"],
    )
    if as_json:
        for item in shown:
            render.json_line(item.as_json())
        return
    if not shown:
        render.notice("no entities" + (f" for {query!r}" if query else ""))
        return
    render.entities_table(shown)


def _query_vector(config, conn, dataset, text: str, index: str, *, quiet: bool = False):
    """A function embedding `text` for a KNN over the dataset's `index` vectors (edges or
    entities), or None, with a notice unless `quiet`, when they cannot be compared with
    it: BM25 alone then."""
    from gligabao.search.hybrid import bm25_only, vector_obstacle

    obstacle = vector_obstacle(config, conn, dataset, (index,))
    if obstacle is not None:
        if not quiet:
            render.notice(bm25_only(obstacle, dataset, index))
        return None
    from gligabao.llm.query import embed_query  # its HTTP: only when embedding

    return lambda: embed_query(config, text)


@command("why")
def why_command(
    fact_id: int = typer.Argument(metavar="FACT_ID", help="The fact's id, as gb facts shows it."),
    db: options.Db = None,
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
    from gligabao.graph.queries import get_fact

    _, conn, found = open_dataset(config_path, db, dataset)
    fact = get_fact(conn, found, fact_id)
    if fact is None:
        raise GbError(f"no fact {fact_id} in dataset '{found.name}'; gb facts lists them")
    closer = get_fact(conn, found, fact.closed_by["id"]) if fact.closed_by else None
    if as_json:
        render.json_line({**fact.as_json(), "closer": closer.as_json() if closer else None})
        return
    render.why(fact, closer, lambda doc_id, start, end: _lines(conn, doc_id, start, end))


def _lines(conn, document_id: int, start: int, end: int) -> tuple[bytes, int]:
    """The document's bytes from the line before `start` to the line after `end`, and the
    offset they begin at."""
    from gligabao.store.facts import document_bytes

    data = document_bytes(conn, document_id, end + 4096)
    first = data.rfind(b"\n", 0, max(0, data.rfind(b"\n", 0, start))) + 1
    after = data.find(b"\n", end)
    after = data.find(b"\n", after + 1) if after >= 0 else -1
    return data[first : after if after >= 0 else len(data)], first
