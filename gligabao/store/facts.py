"""Reading the graph back: facts with their time filters, the evidence of each,
entities and their neighbours. Only SELECTs: every command built on this reads.

Times are compared as instants (dialect.instant), not as text, so that "2024-01-01",
"2024-01-01T00:00:00Z" and "2024-01-01T00:00:00.000Z" are one moment; a time the database
cannot read counts as unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gligabao.store import dialect, fts
from gligabao.store.connection import Connection
from gligabao.store.db import json_ids, query
from gligabao.store.dialect import NO_LIMIT

__all__ = [
    "document_bytes",
    "edge_ends",
    "edge_ids_fts",
    "entities",
    "entity_documents",
    "entity_ids_fts",
    "evidence",
    "facts",
    "neighbours",
]


def current(conn: Connection) -> str:
    """A fact is current when nothing closed it and no end it was given has passed; an
    end that is no time is no end."""
    d = dialect.of(conn)
    return f"""(e.expired_at IS NULL AND ({d.instant("e.invalid_at")} IS NULL
              OR {d.instant("e.invalid_at")} > {d.now()}))"""


def _true_at(conn: Connection) -> str:
    d = dialect.of(conn)
    at = d.instant_of(":at")
    return f"""(coalesce({d.instant("e.valid_at")}, {d.instant_of("e.created_at")}) <= {at}
              AND ({d.instant("e.invalid_at")} IS NULL OR {at} < {d.instant("e.invalid_at")}))"""


def _known_at(conn: Connection) -> str:
    d = dialect.of(conn)
    known = d.instant_of(":known")
    return f"""({d.instant_of("e.created_at")} <= {known}
              AND (e.expired_at IS NULL OR {known} < {d.instant_of("e.expired_at")}))"""


def facts(
    conn: Connection,
    dataset_id: int,
    *,
    ids: Sequence[int] | None = None,
    entity_ids: Sequence[int] | None = None,
    at: str | None = None,
    known_at: str | None = None,
    closed: bool = False,
    relation: str | None = None,
    session: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Facts of a dataset with their ends' names and types, and what closed each
    (`closer_fact`): newest first (by `valid_at`), or in the order of `ids` when given.

    `at`: true at that time; `known_at`: held by the graph at that time; neither: current
    only, unless `closed` (every fact). `entity_ids`: touching one of them.
    """
    # With ids to look up, the unary + keeps SQLite from walking the dataset's index
    # (every fact of it) instead of fetching those rows by id.
    where = [
        "+e.dataset_id = :d" if ids is not None or entity_ids is not None else "e.dataset_id = :d"
    ]
    d = dialect.of(conn)
    where += _in_time(conn, at, known_at, closed)
    if ids is not None:
        where.append(f"e.id IN {d.id_list(':ids')}")
    if entity_ids is not None:
        where.append(_touching(conn))
    if relation is not None:
        where.append("e.relation = :rel")
    if session is not None:
        where.append(
            """e.id IN (SELECT edge_id FROM gb_session_edges
                        WHERE dataset_id = :d AND session_id = :s)"""
        )
    rows = query(
        conn,
        f"""SELECT e.*, s.name AS source_name, s.type AS source_type,
                   t.name AS target_name, t.type AS target_type,
                   c.fact AS closer_fact, {current(conn)} AS current
            FROM gb_edges e
            JOIN gb_entities s ON s.id = e.source_entity_id
            JOIN gb_entities t ON t.id = e.target_entity_id
            LEFT JOIN gb_edges c ON c.id = e.invalidated_by_edge_id
            WHERE {" AND ".join(where)}
            ORDER BY coalesce(e.valid_at, e.created_at) DESC, e.id DESC
            LIMIT :n""",
        {
            "d": dataset_id,
            "at": at,
            "known": known_at,
            "ids": json_ids(ids or ()),
            "ents": json_ids(entity_ids or ()),
            "rel": relation,
            "s": session,
            "n": NO_LIMIT if limit is None or ids is not None else limit,
        },
    )
    return _in_order(rows, ids, limit)


def _in_time(conn: Connection, at: str | None, known_at: str | None, closed: bool) -> list[str]:
    """The conditions of `facts`' time filters on `e`: true at `at`, held at `known_at`,
    else current unless `closed` (every fact)."""
    where = []
    if at is not None:
        where.append(_true_at(conn))
    if known_at is not None:
        where.append(_known_at(conn))
    if at is None and known_at is None and not closed:
        where.append(current(conn))
    return where


def _touching(conn: Connection) -> str:
    """The condition that fact `e` has one of the entities `:ents` at either end."""
    ents = dialect.of(conn).id_list(":ents")
    return f"""e.id IN (SELECT id FROM gb_edges WHERE source_entity_id IN {ents}
                      UNION SELECT id FROM gb_edges WHERE target_entity_id IN {ents})"""


def edge_ends(
    conn: Connection,
    dataset_id: int,
    entity_ids: Sequence[int],
    *,
    at: str | None = None,
    known_at: str | None = None,
) -> list[dict[str, Any]]:
    """The facts touching any of `entity_ids`, filtered in time as `facts` filters them,
    as no more than their ends (`id`, `source_entity_id`, `target_entity_id`), by id: one
    step of a walk over the graph, for a whole frontier of entities at once."""
    where = ["+e.dataset_id = :d", _touching(conn), *_in_time(conn, at, known_at, False)]
    return query(
        conn,
        f"""SELECT e.id, e.source_entity_id, e.target_entity_id FROM gb_edges e
            WHERE {" AND ".join(where)} ORDER BY e.id""",
        {"d": dataset_id, "at": at, "known": known_at, "ents": json_ids(entity_ids)},
    )


def _in_order(
    rows: list[dict[str, Any]], ids: Sequence[int] | None, limit: int | None
) -> list[dict[str, Any]]:
    """`rows` in the order of `ids` (a ranking), at most `limit`; as they are without ids."""
    if ids is None:
        return rows
    order = {row_id: i for i, row_id in enumerate(ids)}
    rows.sort(key=lambda r: order[r["id"]])
    return rows[:limit] if limit is not None else rows


def edge_ids_fts(conn: Connection, dataset_id: int, text: str, limit: int) -> list[int]:
    """Facts whose text shares words with `text`, best bm25 first."""
    return fts.edge_ids(conn, dataset_id, text, limit)


def entity_ids_fts(
    conn: Connection, dataset_id: int, text: str, limit: int, *, names: bool = False
) -> list[int]:
    """Entities whose name or summary (only name, with `names`) shares words with
    `text`, best bm25 first."""
    return fts.entity_ids(conn, dataset_id, text, limit, names=names)


def evidence(conn: Connection, edge_ids: Sequence[int]) -> list[dict[str, Any]]:
    """Each (fact, chunk) link of these facts: the chunk (or unchunked document) and its
    byte span, the document and its source, and the quote with its span where known.
    Oldest link first within a fact. Links in versions superseded (or removed) are left
    out where a current version states the fact: a fact no current version states shows
    where it was stated."""
    return query(
        conn,
        f"""SELECT l.edge_id, l.artifact_id AS chunk_id, l.quote, l.exact,
                  l.start_offset AS quote_start, l.end_offset AS quote_end,
                  coalesce(a.parent_id, a.id) AS document_id, d.source, a.locations,
                  coalesce(a.start_offset, 0) AS chunk_start,
                  coalesce(a.end_offset, {dialect.of(conn).byte_length("a.text")}) AS chunk_end
           FROM gb_edge_artifacts l
           JOIN gb_artifacts a ON a.id = l.artifact_id
           JOIN gb_artifacts d ON d.id = coalesce(a.parent_id, a.id)
           WHERE l.edge_id IN {dialect.of(conn).id_list("?")}
             AND (d.superseded_by IS NULL OR NOT EXISTS (
                 SELECT 1 FROM gb_edge_artifacts k
                 JOIN gb_artifacts ka ON ka.id = k.artifact_id
                 JOIN gb_artifacts kd ON kd.id = coalesce(ka.parent_id, ka.id)
                 WHERE k.edge_id = l.edge_id AND kd.superseded_by IS NULL))
           ORDER BY l.edge_id, a.id""",
        (json_ids(edge_ids),),
    )


def document_bytes(conn: Connection, document_id: int, end: int) -> bytes:
    """The first `end` bytes of a document's text (to count its lines)."""
    rows = query(
        conn,
        f"SELECT {dialect.of(conn).byte_prefix('text', ':end')} AS head "
        "FROM gb_artifacts WHERE id = :id",
        {"end": end, "id": document_id},
    )
    return bytes(rows[0]["head"]) if rows else b""


def entities(
    conn: Connection,
    dataset_id: int,
    *,
    ids: Sequence[int] | None = None,
    name_norm: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """Entities with their number of facts (any) and of documents, by name, or in the
    order of `ids`."""
    where = ["+n.dataset_id = :d" if ids is not None else "n.dataset_id = :d"]
    if ids is not None:
        where.append(f"n.id IN {dialect.of(conn).id_list(':ids')}")
    if name_norm is not None:
        where.append("n.name_norm = :norm")
    rows = query(
        conn,
        f"""SELECT n.*,
               (SELECT count(*) FROM gb_edges WHERE source_entity_id = n.id)
               + (SELECT count(*) FROM gb_edges
                  WHERE target_entity_id = n.id AND source_entity_id <> n.id) AS fact_count,
               (SELECT count(DISTINCT coalesce(a.parent_id, a.id))
                FROM gb_entity_artifacts l JOIN gb_artifacts a ON a.id = l.artifact_id
                WHERE l.entity_id = n.id) AS document_count
            FROM gb_entities n WHERE {" AND ".join(where)}
            ORDER BY n.name_norm, n.id LIMIT :n""",
        {
            "d": dataset_id,
            "ids": json_ids(ids or ()),
            "norm": name_norm,
            "n": NO_LIMIT if limit is None or ids is not None else limit,
        },
    )
    return _in_order(rows, ids, limit)


def neighbours(
    conn: Connection, entity_ids: Sequence[int], *, at: str | None = None
) -> list[dict[str, Any]]:
    """The entities one fact away from any of `entity_ids`, through current facts (or
    facts true at `at`), each once: `id`, `name`, `type`."""
    status = "AND " + (_true_at(conn) if at is not None else current(conn))
    return query(
        conn,
        f"""WITH f(id) AS {dialect.of(conn).id_list(":ids")},
            other(id) AS (
                SELECT e.target_entity_id FROM gb_edges e
                WHERE e.source_entity_id IN (SELECT id FROM f) {status}
                UNION SELECT e.source_entity_id FROM gb_edges e
                WHERE e.target_entity_id IN (SELECT id FROM f) {status})
            SELECT id, name, type FROM gb_entities
            WHERE id IN (SELECT id FROM other) AND id NOT IN (SELECT id FROM f)
            ORDER BY name_norm, id""",
        {"ids": json_ids(entity_ids), "at": at},
    )


def entity_documents(conn: Connection, entity_id: int) -> list[dict[str, Any]]:
    """The documents that mention an entity: `id`, `source`, oldest first."""
    return query(
        conn,
        """SELECT DISTINCT d.id, d.source FROM gb_entity_artifacts l
           JOIN gb_artifacts a ON a.id = l.artifact_id
           JOIN gb_artifacts d ON d.id = coalesce(a.parent_id, a.id)
           WHERE l.entity_id = ? ORDER BY d.id""",
        (entity_id,),
    )
