"""The temporal knowledge graph: entities, edges (facts), their provenance links, and the
candidate queries resolution needs.

The keyword index of entities and edges is kept by triggers (see migrations), so every
insert, update and delete here is reflected in gb_fts_entities / gb_fts_edges.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterable
from typing import Any

from gligabao.base.evidence import QuoteSpan
from gligabao.base.names import name_key
from gligabao.store import dialect, entity_summaries, fts
from gligabao.store.connection import Connection
from gligabao.store.db import insert, json_ids, now_iso, query, query_one, transaction, write
from gligabao.store.errors import NotFound

__all__ = [
    "close_edge",
    "current_edges_touching",
    "edges_for_artifacts",
    "entities_for_artifacts",
    "entity_candidates_fts",
    "entity_exact",
    "get_edge",
    "get_entity",
    "insert_edge",
    "insert_entity",
    "link_edge",
    "link_entity",
    "normalize_name",
    "settle_in_time",
    "update_entity_summary",
    "upsert_entity",
]


def normalize_name(name: str) -> str:
    """The form entity names are compared in: NFKC, casefolded, whitespace collapsed.

    NFKC first, so that a decomposed "é" or a full-width "Ａ" compares equal to the
    usual one; casefold rather than lower, so "Straße" matches "STRASSE".
    """
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def get_entity(conn: Connection, entity_id: int) -> dict[str, Any] | None:
    return query_one(conn, "SELECT * FROM gb_entities WHERE id = ?", (entity_id,))


def get_edge(conn: Connection, edge_id: int) -> dict[str, Any] | None:
    return query_one(conn, "SELECT * FROM gb_edges WHERE id = ?", (edge_id,))


def insert_entity(
    conn: Connection,
    dataset_id: int,
    name: str,
    type: str = "",
    summary: str = "",
    *,
    created_at: str | None = None,
) -> int:
    """Insert a new entity; an existing (name, type) raises Conflict."""
    norm = normalize_name(name)
    if not norm:
        raise ValueError("an entity name cannot be empty")
    with transaction(conn):
        return insert(
            conn,
            """INSERT INTO gb_entities(dataset_id, name, type, summary, name_norm, name_key,
                   created_at)
               VALUES (?, ?, ?, ?, ?, ?, ?)""",
            (
                dataset_id,
                name.strip(),
                type,
                summary,
                norm,
                name_key(name, type) or norm,  # a name of no letters: itself
                created_at or now_iso(),
            ),
        )


def upsert_entity(
    conn: Connection,
    dataset_id: int,
    name: str,
    type: str = "",
    summary: str = "",
) -> tuple[int, bool]:
    """The entity with this normalized name and type, created if new: (id, created).

    An existing entity keeps its summary unless it had none; replacing a summary is a
    decision for the caller (update_entity_summary).
    """
    with transaction(conn):
        found = entity_exact(conn, dataset_id, name, type)
        if found is None:
            return insert_entity(conn, dataset_id, name, type, summary), True
        if summary and not found["summary"]:
            update_entity_summary(conn, found["id"], summary)
        return found["id"], False


def update_entity_summary(conn: Connection, entity_id: int, summary: str) -> None:
    if not write(conn, "UPDATE gb_entities SET summary = ? WHERE id = ?", (summary, entity_id)):
        raise NotFound(f"no entity with id {entity_id}")


def insert_edge(
    conn: Connection,
    dataset_id: int,
    source_entity_id: int,
    target_entity_id: int,
    relation: str,
    fact: str,
    *,
    valid_at: str | None = None,
    invalid_at: str | None = None,
    artifact_id: int | None = None,
    created_at: str | None = None,
) -> int:
    """Insert a fact between two entities of the dataset; `artifact_id` is the chunk
    (or unchunked artifact) it is first extracted from."""
    with transaction(conn):
        # Unary +: the two rows by their ids, not the dataset's entities scanned through
        # its index for them (SQLite's pick otherwise, which grows with the graph).
        found = query(
            conn,
            "SELECT id FROM gb_entities WHERE +dataset_id = ? AND id IN (?, ?)",
            (dataset_id, source_entity_id, target_entity_id),
        )
        if len(found) != len({source_entity_id, target_entity_id}):
            raise NotFound(
                f"edge endpoints {source_entity_id} and {target_entity_id} are not both "
                f"entities of dataset {dataset_id}"
            )
        return insert(
            conn,
            """INSERT INTO gb_edges(dataset_id, source_entity_id, target_entity_id, relation,
                   fact, valid_at, invalid_at, created_at, artifact_id)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                dataset_id,
                source_entity_id,
                target_entity_id,
                relation,
                fact,
                valid_at,
                invalid_at,
                created_at or now_iso(),
                artifact_id,
            ),
        )


def link_entity(
    conn: Connection, entity_id: int, artifact_id: int, session_id: str | None = None
) -> None:
    """Record that the entity was extracted from this artifact (idempotent)."""
    with transaction(conn):
        conn.execute(
            """INSERT INTO gb_entity_artifacts(entity_id, artifact_id) VALUES (?, ?)
               ON CONFLICT DO NOTHING""",
            (entity_id, artifact_id),
        )
        if session_id is not None:
            conn.execute(
                """INSERT INTO gb_session_entities(dataset_id, session_id, entity_id)
                   SELECT dataset_id, ?, id FROM gb_entities WHERE id = ?
                   ON CONFLICT DO NOTHING""",
                (session_id, entity_id),
            )


def link_edge(
    conn: Connection,
    edge_id: int,
    artifact_id: int,
    session_id: str | None = None,
    evidence: QuoteSpan | None = None,
) -> None:
    """Record that the fact was extracted from (or restated by) this artifact, with the
    quote that states it there and its byte span in the document, where known."""
    ev = evidence or QuoteSpan(None, None, None, False)
    with transaction(conn):
        conn.execute(
            """INSERT INTO gb_edge_artifacts(edge_id, artifact_id, quote,
                   start_offset, end_offset, exact) VALUES (?, ?, ?, ?, ?, ?)
               ON CONFLICT DO NOTHING""",
            (edge_id, artifact_id, ev.quote, ev.start_offset, ev.end_offset, int(ev.exact)),
        )
        if session_id is not None:
            conn.execute(
                """INSERT INTO gb_session_edges(dataset_id, session_id, edge_id)
                   SELECT dataset_id, ?, id FROM gb_edges WHERE id = ?
                   ON CONFLICT DO NOTHING""",
                (session_id, edge_id),
            )


def close_edge(
    conn: Connection,
    edge_id: int,
    invalid_at: str | None,
    expired_at: str | None = None,
    by_edge_id: int | None = None,
    reason: str | None = None,
) -> bool:
    """Close a current fact: it stopped holding at `invalid_at` (the new fact's valid_at)
    and the graph learnt so at `expired_at` (default now). Returns False, changing
    nothing, when the edge was already closed."""
    changed = write(
        conn,
        """UPDATE gb_edges SET invalid_at = ?, expired_at = ?, invalidated_by_edge_id = ?,
               invalidation_reason = ?
           WHERE id = ? AND expired_at IS NULL""",
        (invalid_at, expired_at or now_iso(), by_edge_id, reason, edge_id),
    )
    if changed:
        entity_summaries.mark_ends_stale(conn, [edge_id])
        return True
    if get_edge(conn, edge_id) is None:
        raise NotFound(f"no edge with id {edge_id}")
    return False


def settle_in_time(
    conn: Connection,
    edge_id: int,
    contradicted: Iterable[int],
    reason: str,
    *,
    expired_at: str | None = None,
) -> list[dict[str, Any]]:
    """Place a new fact against the facts it contradicts, by when each became true, so
    that the order documents are remembered in never changes what was true when.

    Only the pairs the resolver named are settled, each by its own dates (facts are
    ordered by `valid_at`, ties by their text, never by the order they came in):

    - a contradicted fact that began first ends where the new one begins, unless it had
      ended already; if a later fact had closed it, the new one falls between the two
      and ends where that later one begins;
    - a contradicted fact that began later ends the new one where it begins, and a fact
      it had closed that began before the new one now ends where the new one begins
      (again walking back only while the dates say the new one falls before).

    A fact whose own text gave an earlier end keeps it. A fact held as current until now
    is expired now (transaction time, when gb learnt it). Returns the facts whose
    interval changed: `id`, `invalid_at`, `invalidated_by`, `reason`.
    """
    new = _edge_row(conn, edge_id)
    rows = {r["id"]: r for r in (_edge_row(conn, c) for c in set(contradicted)) if r}
    now = expired_at or now_iso()
    changed: dict[int, dict[str, Any]] = {}

    def end(fact: dict[str, Any], at: str, by: dict[str, Any]) -> None:
        if fact["invalid_at"] is not None and fact["invalid_at"] <= at:
            return  # it was over by then already
        held = fact["invalid_at"] is None and fact["expired_at"] is None
        fact.update(
            invalid_at=at,
            invalidated_by_edge_id=by["id"],
            invalidation_reason=reason,
            expired_at=now if held and fact["id"] != edge_id else fact["expired_at"],
        )
        write(
            conn,
            """UPDATE gb_edges SET invalid_at = ?, invalidated_by_edge_id = ?,
                   invalidation_reason = ?, expired_at = ? WHERE id = ?""",
            (at, by["id"], reason, fact["expired_at"], fact["id"]),
        )
        changed[fact["id"]] = {
            "id": fact["id"],
            "invalid_at": at,
            "invalidated_by": by["id"],
            "reason": reason,
        }

    for other in sorted(rows.values(), key=_began):
        if other["id"] == edge_id:
            continue
        if _began(other) < _began(new):
            closer = _edge_row(conn, other["invalidated_by_edge_id"])
            if closer is not None and _began(closer) <= _began(new):
                continue  # it ended before the new fact began: nothing between them
            if closer is not None:
                end(new, closer["valid_at"], closer)  # the new one falls between the two
            end(other, new["valid_at"], new)
        else:
            end(new, other["valid_at"], other)
            earlier = other
            while True:  # those it closed that began before the new one now end there
                before = [p for p in _closed_by(conn, earlier["id"]) if p["id"] != edge_id]
                if not before:
                    break
                for fact in before:
                    if _began(fact) < _began(new):
                        end(fact, new["valid_at"], new)
                    else:
                        end(new, fact["valid_at"], fact)
                later = [p for p in before if _began(p) > _began(new)]
                if not later:
                    break
                earlier = min(later, key=_began)
    # What the entities' summaries say of a fact whose interval changed may no longer hold.
    entity_summaries.mark_ends_stale(conn, changed)
    return list(changed.values())


def _began(edge: dict[str, Any]) -> tuple[str, str]:
    # valid_at is gb's one time form (gligabao.base.times); the fact's text breaks a tie the
    # same way whichever of the two came first.
    return (edge["valid_at"] or "", edge["fact"])


def _edge_row(conn: Connection, edge_id: int | None) -> dict[str, Any] | None:
    return None if edge_id is None else get_edge(conn, edge_id)


def _closed_by(conn: Connection, edge_id: int) -> list[dict[str, Any]]:
    return query(conn, "SELECT * FROM gb_edges WHERE invalidated_by_edge_id = ?", (edge_id,))


def entity_exact(
    conn: Connection, dataset_id: int, name: str, type: str = ""
) -> dict[str, Any] | None:
    """The entity with the same normalized name and type, if any (resolved without LLM)."""
    return query_one(
        conn,
        "SELECT * FROM gb_entities WHERE dataset_id = ? AND name_norm = ? AND type = ?",
        (dataset_id, normalize_name(name), type),
    )


def entity_candidates_fts(
    conn: Connection, dataset_id: int, name: str, limit: int = 10
) -> list[dict[str, Any]]:
    """Entities whose name shares words with `name`, best bm25 first (each row has `rank`).
    Any text is safe here."""
    return fts.entity_candidates(conn, dataset_id, name, limit)


def current_edges_touching(
    conn: Connection,
    dataset_id: int,
    entity_ids: Iterable[int] = (),
    *,
    names: Iterable[str] = (),
    nearest: tuple[str, str] | None = None,
    limit: int | None = None,
    closed: bool = False,
) -> list[dict[str, Any]]:
    """Current facts (neither invalid nor expired) with either end among `entity_ids` or
    among the entities whose normalized name is in `names`; with `closed`, closed facts
    too: the candidates an extracted edge is compared against, for an old fact may
    be restated, or contradicted by one older still. Each row also has its ends'
    `source_name`, `source_norm`, `target_name` and `target_norm`.

    In id order; with `nearest=(source_norm, target_norm)`, nearest first instead: the
    current facts before the closed, and among each the facts with both ends so named
    (in that direction), then with one, each newest first. At most `limit` rows.

    The ends are found first, by an index, and the facts then from the edges' indexes
    on either end: an OR across the two ends, or across joined names, would scan every
    edge of the graph. A name the graph does not know costs one lookup.
    """
    named: list[dict[str, Any]] = []
    names = list(names)
    if names:
        named = query(
            conn,
            f"""SELECT id, name_norm FROM gb_entities
               WHERE dataset_id = ? AND name_norm IN {dialect.of(conn).text_list("?")}""",
            (dataset_id, json.dumps(names)),
        )
    ends = sorted(set(entity_ids) | {row["id"] for row in named})
    if not ends:
        return []
    cut = dialect.NO_LIMIT if limit is None else int(limit)
    if nearest is not None:
        a, b = nearest
        ends_a = [row["id"] for row in named if row["name_norm"] == a]
        ends_b = [row["id"] for row in named if row["name_norm"] == b]
        return _nearest_first(conn, dataset_id, ends, ends_a, ends_b, cut, closed)
    # The facts are cut to `limit` by their ids first, then only those kept are read
    # whole with their ends' names. The limit is written into the SQL, not bound (see
    # fts.entity_candidates).
    return query(
        conn,
        f"""WITH ends(id) AS {dialect.of(conn).id_list(":ids")},
            top AS (
              SELECT e.id
              FROM gb_edges e
              WHERE e.id IN (SELECT id FROM gb_edges WHERE source_entity_id IN (SELECT id FROM ends)
                             UNION SELECT id FROM gb_edges
                             WHERE target_entity_id IN (SELECT id FROM ends))
                -- Unary +: found by their ids above, never by scanning the dataset's edges
                -- (the planner's pick otherwise, which grows with the whole graph).
                AND +e.dataset_id = :d
                AND (:closed = 1 OR ({_CURRENT}))
              ORDER BY e.id
              LIMIT {cut})
            {_WITH_NAMES}
            ORDER BY e.id""",
        {"d": dataset_id, "ids": json_ids(ends), "closed": int(closed)},
    )


# Whether a fact holds now; indexed with either end (migrations), so that an end's
# current facts, newest first, are read in index order.
_CURRENT = "e.invalid_at IS NULL AND e.expired_at IS NULL"
# The facts kept in `top`, whole, with their ends' names.
_WITH_NAMES = """SELECT e.*, s.name AS source_name, s.name_norm AS source_norm,
                   t.name AS target_name, t.name_norm AS target_norm
            FROM top
            JOIN gb_edges e ON e.id = top.id
            JOIN gb_entities s ON s.id = e.source_entity_id
            JOIN gb_entities t ON t.id = e.target_entity_id"""


def _nearest_first(
    conn: Connection,
    dataset_id: int,
    ends: list[int],
    ends_a: list[int],
    ends_b: list[int],
    limit: int,
    closed: bool,
) -> list[dict[str, Any]]:
    """The facts touching `ends`, current first, then from an end in `ends_a` to one in
    `ends_b`, then with one of the two, each newest first; at most `limit`.

    A hub's thousands of facts are never all read and sorted: each end gives only its
    first `limit` facts as they come in its index (current first, newest first), and so
    does each pair of ends a-to-b. Whatever ranks in the first `limit` overall is among
    those: a fact is outranked in its end's list only by facts that outrank it overall.
    """
    params: dict[str, Any] = {"d": dataset_id, "a": json_ids(ends_a), "b": json_ids(ends_b)}
    params.update({f"e{i}": end for i, end in enumerate(ends)})
    at = {end: i for i, end in enumerate(ends)}
    ids = dialect.of(conn).id_list
    order = f"({_CURRENT}) DESC, e.id DESC"
    firsts = [
        f"""SELECT id FROM (SELECT e.id FROM gb_edges e WHERE e.{column} = :e{i}
                ORDER BY {order} LIMIT {limit}) AS {column[0]}{i}"""
        for i in range(len(ends))
        for column in ("source_entity_id", "target_entity_id")
    ]
    pairs = [
        f"""SELECT id FROM (SELECT e.id FROM gb_edges e
                WHERE e.source_entity_id = :e{at[a]} AND e.target_entity_id = :e{at[b]}
                ORDER BY {order} LIMIT {limit}) AS p{at[a]}_{at[b]}"""
        for a in ends_a
        for b in ends_b
    ]
    union = "\n            UNION ".join(firsts + pairs)
    return query(
        conn,
        f"""WITH found(id) AS ({union}),
            top AS (
              SELECT e.id, ({_CURRENT}) AS cur,
                CASE WHEN e.source_entity_id IN {ids(":a")} THEN 1 ELSE 0 END
                + CASE WHEN e.target_entity_id IN {ids(":b")} THEN 1 ELSE 0 END AS near
              FROM found JOIN gb_edges e ON e.id = found.id
              WHERE +e.dataset_id = :d {"" if closed else f"AND {_CURRENT}"}
              ORDER BY cur DESC, near DESC, e.id DESC
              LIMIT {limit})
            {_WITH_NAMES}
            ORDER BY top.cur DESC, top.near DESC, e.id DESC""",
        params,
    )


def entities_for_artifacts(conn: Connection, artifact_ids: Iterable[int]) -> list[dict[str, Any]]:
    """Entities linked to any of these artifacts, each once, in id order."""
    return query(
        conn,
        f"""SELECT * FROM gb_entities WHERE id IN (
               SELECT entity_id FROM gb_entity_artifacts
               WHERE artifact_id IN {dialect.of(conn).id_list("?")})
           ORDER BY id""",
        (json_ids(artifact_ids),),
    )


def edges_for_artifacts(conn: Connection, artifact_ids: Iterable[int]) -> list[dict[str, Any]]:
    """Edges linked to any of these artifacts, each once, with their endpoints' names."""
    return query(
        conn,
        f"""SELECT g.*, s.name AS source_name, t.name AS target_name FROM gb_edges g
           JOIN gb_entities s ON s.id = g.source_entity_id
           JOIN gb_entities t ON t.id = g.target_entity_id
           WHERE g.id IN (SELECT edge_id FROM gb_edge_artifacts
                          WHERE artifact_id IN {dialect.of(conn).id_list("?")})
           ORDER BY g.id""",
        (json_ids(artifact_ids),),
    )
