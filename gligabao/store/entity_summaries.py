"""Entity summaries that follow the facts.

An entity's summary is first what the chunk that introduced it said of it. Once a fact
touching the entity is closed by a contradiction, expired by a new version of its
document or by --prune, or deleted with a forgotten document, that summary may state
what gb no longer holds: the entity is marked stale (`summary_stale_at`, since when),
and the next run with a chat endpoint rewrites it from the facts gb holds now
(remember/summaries.py). A rewrite clears the mark only if no change marked it again
while the answer was on its way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gligabao.store import dialect
from gligabao.store.connection import Connection
from gligabao.store.db import json_ids, now_iso, query, write

__all__ = [
    "current_facts_of",
    "mark_ends_stale",
    "mark_stale",
    "rewrite_summary",
    "stale_entities",
]


def mark_stale(conn: Connection, entity_ids: Iterable[int], at: str | None = None) -> int:
    """Mark these entities' summaries stale as of `at` (default now); how many. A mark
    is always moved to the latest change, so that a rewrite begun before it does not
    clear it (rewrite_summary)."""
    ids = json_ids(entity_ids)
    if ids == "[]":
        return 0
    return write(
        conn,
        f"""UPDATE gb_entities SET summary_stale_at = ?
            WHERE id IN {dialect.of(conn).id_list("?")}""",
        (at or now_iso(), ids),
    )


def mark_ends_stale(conn: Connection, edge_ids: Iterable[int], at: str | None = None) -> int:
    """Mark stale the summaries of both ends of these facts."""
    ids = json_ids(edge_ids)
    if ids == "[]":
        return 0
    ends = query(
        conn,
        f"""SELECT source_entity_id AS a, target_entity_id AS b FROM gb_edges
            WHERE id IN {dialect.of(conn).id_list("?")}""",
        (ids,),
    )
    return mark_stale(conn, {e for row in ends for e in (row["a"], row["b"])}, at)


def stale_entities(conn: Connection, dataset_id: int, limit: int) -> list[dict[str, Any]]:
    """The dataset's entities whose summaries are stale, the longest stale first."""
    return query(
        conn,
        """SELECT id, name, type, summary, summary_stale_at FROM gb_entities
           WHERE dataset_id = ? AND summary_stale_at IS NOT NULL
           ORDER BY summary_stale_at, id LIMIT ?""",
        (dataset_id, limit),
    )


def current_facts_of(
    conn: Connection, entity_ids: Iterable[int], most: int
) -> dict[int, list[dict[str, Any]]]:
    """For each entity, the facts gb holds now that touch it, at most `most` of them, the
    latest begun first; each with its interval. A fact another closed is held as history
    (it held until then); one expired without a successor (no version states it any
    more) is not."""
    # Cut to `most` by the database: a hub's thousand facts are not each made a row here.
    rows = query(
        conn,
        f"""WITH ent(id) AS {dialect.of(conn).id_list("?")},
            ranked AS (
              SELECT ent.id AS entity_id, g.id, g.fact, g.valid_at, g.invalid_at,
                     row_number() OVER (PARTITION BY ent.id
                       ORDER BY coalesce(g.valid_at, '') DESC, g.fact, g.id) AS n
              FROM ent JOIN gb_edges g
                ON (g.source_entity_id = ent.id OR g.target_entity_id = ent.id)
              WHERE g.expired_at IS NULL OR g.invalidated_by_edge_id IS NOT NULL)
            SELECT entity_id, id, fact, valid_at, invalid_at FROM ranked WHERE n <= ?
            ORDER BY entity_id, n""",
        (json_ids(entity_ids), most),
    )
    facts: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        held = facts.setdefault(row.pop("entity_id"), [])
        if len(held) < most:
            held.append(row)
    return facts


def rewrite_summary(conn: Connection, entity_id: int, summary: str, stale_since: str) -> bool:
    """Store a summary written from the facts and clear the mark, unless the entity was
    marked again since `stale_since` was read (its facts changed meanwhile: it stays
    stale for the next run). Whether it was stored."""
    return bool(
        write(
            conn,
            """UPDATE gb_entities SET summary = ?, summary_stale_at = NULL
               WHERE id = ? AND summary_stale_at = ?""",
            (summary, entity_id, stale_since),
        )
    )
