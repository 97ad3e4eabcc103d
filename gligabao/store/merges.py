"""Entity merges: names compared by key, each merge kept as a row, and undone.

A merge is an extracted entity found to be one already known (by the same normalized
name, or by the LLM's `resolve` answer): its chunk is linked to the kept entity, its
facts point at it. The row keeps what came in through it, so that unmerging puts back
the entity as its own, with those links and facts, and keeps the pair apart after.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gligabao.base.names import name_key
from gligabao.errors import GbError
from gligabao.store import dialect, entity_summaries, graph, vectors
from gligabao.store.connection import Connection
from gligabao.store.db import (
    insert,
    json_ids,
    now_iso,
    query,
    query_one,
    scalar,
    transaction,
    write,
)
from gligabao.store.errors import NotFound

__all__ = [
    "RULE_NAME",
    "RULE_RESOLVE",
    "SOURCE",
    "TARGET",
    "CannotUnmerge",
    "entities_by_key",
    "fill_name_keys",
    "get_merge",
    "is_linked",
    "kept_apart",
    "list_merges",
    "record_merge",
    "unmerge",
]


class CannotUnmerge(GbError):
    """A merge undone already, or whose entity's name another entity has taken since."""


RULE_NAME = "same normalized name"
RULE_RESOLVE = "resolve"
# Which ends of a fact the merged entity was: a bit each.
SOURCE, TARGET = 1, 2


def fill_name_keys(conn: Connection, dataset_id: int) -> int:
    """Give the entities stored before names had a key theirs; how many there were."""
    rows = query(
        conn,
        "SELECT id, name, type FROM gb_entities WHERE dataset_id = ? AND name_key IS NULL",
        (dataset_id,),
    )
    if rows:
        with transaction(conn):
            for row in rows:
                write(
                    conn,
                    "UPDATE gb_entities SET name_key = ? WHERE id = ?",
                    (
                        name_key(row["name"], row["type"]) or graph.normalize_name(row["name"]),
                        row["id"],
                    ),
                )
    return len(rows)


def entities_by_key(conn: Connection, dataset_id: int, key: str) -> list[dict[str, Any]]:
    """The dataset's entities whose name has this key, oldest first."""
    return query(
        conn,
        "SELECT * FROM gb_entities WHERE dataset_id = ? AND name_key = ? ORDER BY id",
        (dataset_id, key),
    )


def kept_apart(conn: Connection, entity_ids: Iterable[int]) -> set[tuple[int, int]]:
    """The pairs among and around these entities that an unmerge keeps apart, each
    both ways round."""
    ids = json_ids(entity_ids)
    rows = query(
        conn,
        f"""SELECT entity_id, other_id FROM gb_kept_apart
           WHERE entity_id IN {dialect.of(conn).id_list("?")}
              OR other_id IN {dialect.of(conn).id_list("?")}""",
        (ids, ids),
    )
    pairs = {(r["entity_id"], r["other_id"]) for r in rows}
    return pairs | {(b, a) for a, b in pairs}


def is_linked(conn: Connection, entity_id: int, artifact_id: int) -> bool:
    return bool(
        scalar(
            conn,
            "SELECT count(*) FROM gb_entity_artifacts WHERE entity_id = ? AND artifact_id = ?",
            (entity_id, artifact_id),
        )
    )


def record_merge(
    conn: Connection,
    dataset_id: int,
    entity_id: int,
    name: str,
    type_: str,
    summary: str,
    artifact_id: int,
    rule: str,
    *,
    inference_id: int | None = None,
    score: float | None = None,
    linked: bool = True,
    vector: bytes | None = None,
    edges: Iterable[tuple[int, bool, int, bytes | None]] = (),
) -> int:
    """One merge of the entity extracted as `name`, `type_` and `summary` (and embedded
    as `vector`): `linked` when the kept entity's link to the chunk came through it
    alone; `edges` the facts the merged extraction brought, each (id, made by it, ends:
    SOURCE | TARGET, its vector as that chunk stated it)."""
    with transaction(conn):
        merge_id = insert(
            conn,
            """INSERT INTO gb_merges(dataset_id, entity_id, name, type, summary, artifact_id,
                   rule, inference_id, score, linked, created_at, vector)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                dataset_id,
                entity_id,
                name,
                type_,
                summary,
                artifact_id,
                rule,
                inference_id,
                score,
                int(linked),
                now_iso(),
                vector,
            ),
        )
        for edge_id, created, ends, edge_vector in edges:
            conn.execute(
                """INSERT INTO gb_merge_edges(merge_id, edge_id, created, ends, vector)
                   VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING""",
                (merge_id, edge_id, int(created), ends, None if created else edge_vector),
            )
    return merge_id


_MERGE = """SELECT m.id, m.dataset_id, m.entity_id, m.name, m.type, m.summary,
                   m.artifact_id, m.rule, m.inference_id, m.score, m.linked, m.created_at,
                   m.undone_at, m.restored_id, e.name AS entity_name, e.type AS entity_type
            FROM gb_merges m JOIN gb_entities e ON e.id = m.entity_id"""


def get_merge(conn: Connection, merge_id: int) -> dict[str, Any] | None:
    return query_one(conn, f"{_MERGE} WHERE m.id = ?", (merge_id,))


def list_merges(
    conn: Connection,
    dataset_id: int,
    *,
    since: str | None = None,
    entity_id: int | None = None,
) -> list[dict[str, Any]]:
    """The dataset's merges, oldest first: from `since` on, or into (or restored from)
    one entity."""
    where, params = ["m.dataset_id = :d"], {"d": dataset_id, "since": since, "e": entity_id}
    if since is not None:
        where.append("m.created_at >= :since")
    if entity_id is not None:
        where.append("(m.entity_id = :e OR m.restored_id = :e)")
    return query(conn, f"{_MERGE} WHERE {' AND '.join(where)} ORDER BY m.id", params)


def _session(conn: Connection, artifact_id: int) -> tuple[int, str] | None:
    """The dataset and session of the document a chunk is of, if it has one."""
    row = query_one(
        conn,
        """SELECT d.dataset_id, d.session_id FROM gb_artifacts c
           JOIN gb_artifacts d ON d.id = coalesce(c.parent_id, c.id)
           WHERE c.id = ?""",
        (artifact_id,),
    )
    if row is None or row["session_id"] is None:
        return None
    return row["dataset_id"], row["session_id"]


def unmerge(conn: Connection, merge_id: int) -> dict[str, Any]:
    """Undo a merge, in one transaction: the entity as extracted is its own again, with
    its link to the chunk and the facts its extraction brought there; the kept entity
    loses what came through the merge alone, and the two are kept apart from then on.

    A fact the chunk made is the restored entity's at the ends it was; a fact the chunk
    restated (stored before, by another) is copied with the restored entity at those
    ends, and the chunk's evidence moves to the copy. Returns the merge row, undone."""
    with transaction(conn):
        merge = get_merge(conn, merge_id)
        if merge is None:
            raise NotFound(f"no merge with id {merge_id}")
        if merge["undone_at"] is not None:
            raise CannotUnmerge(
                f"merge {merge_id} was undone at {merge['undone_at']}: "
                f"entity {merge['restored_id']} is {merge['name']!r}"
            )
        kept, chunk = merge["entity_id"], merge["artifact_id"]
        if graph.entity_exact(conn, merge["dataset_id"], merge["name"], merge["type"]):
            raise CannotUnmerge(
                f"an entity {merge['name']!r} ({merge['type']}) exists already: "
                f"merge {merge_id} cannot be undone into a second one"
            )
        restored = graph.insert_entity(
            conn,
            merge["dataset_id"],
            merge["name"],
            merge["type"],
            merge["summary"],
            created_at=merge["created_at"],
        )
        session = _session(conn, chunk) if chunk is not None else None
        dataset_id = merge["dataset_id"]
        vector = scalar(conn, "SELECT vector FROM gb_merges WHERE id = ?", (merge_id,))
        if vector is not None:
            vectors.upsert_vectors(
                conn, dataset_id, "entities", [vectors.entity_row(restored, bytes(vector))]
            )
        if chunk is not None:
            if merge["linked"]:
                write(
                    conn,
                    "DELETE FROM gb_entity_artifacts WHERE entity_id = ? AND artifact_id = ?",
                    (kept, chunk),
                )
            graph.link_entity(conn, restored, chunk, session[1] if session else None)
        for row in query(
            conn, "SELECT * FROM gb_merge_edges WHERE merge_id = ? ORDER BY edge_id", (merge_id,)
        ):
            edge_id = row["edge_id"]
            if not row["created"]:
                edge_id = _copy_restated(conn, edge_id, chunk, session)
                if row["vector"] is not None:
                    edge_vector = vectors.edge_row(edge_id, bytes(row["vector"]))
                    vectors.upsert_vectors(conn, dataset_id, "edges", [edge_vector])
            write(
                conn,
                """UPDATE gb_edges SET
                       source_entity_id = CASE WHEN ? = 1 THEN ? ELSE source_entity_id END,
                       target_entity_id = CASE WHEN ? = 1 THEN ? ELSE target_entity_id END
                   WHERE id = ?""",
                (
                    int(bool(row["ends"] & SOURCE)),
                    restored,
                    int(bool(row["ends"] & TARGET)),
                    restored,
                    edge_id,
                ),
            )
        write(
            conn,
            "UPDATE gb_merges SET undone_at = ?, restored_id = ? WHERE id = ?",
            (now_iso(), restored, merge_id),
        )
        conn.execute(
            "INSERT INTO gb_kept_apart(entity_id, other_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (min(kept, restored), max(kept, restored)),
        )
        # The kept entity's summary may state facts that are the restored one's again.
        entity_summaries.mark_stale(conn, [kept])
        undone = get_merge(conn, merge_id)
        assert undone is not None
        return undone


def _copy_restated(
    conn: Connection, edge_id: int, chunk: int | None, session: tuple[int, str] | None
) -> int:
    """A copy of a stored fact the merged chunk restated, with that chunk's evidence
    moved to it: the restored entity is put at its ends by the caller."""
    copy = insert(
        conn,
        """INSERT INTO gb_edges(dataset_id, source_entity_id, target_entity_id, relation,
               fact, valid_at, invalid_at, created_at, expired_at, artifact_id)
           SELECT dataset_id, source_entity_id, target_entity_id, relation, fact, valid_at,
                  invalid_at, created_at, expired_at, ?
           FROM gb_edges WHERE id = ?""",
        (chunk, edge_id),
    )
    if chunk is not None:
        conn.execute(
            """INSERT INTO gb_edge_artifacts(edge_id, artifact_id, quote, start_offset,
                   end_offset, exact)
               SELECT ?, artifact_id, quote, start_offset, end_offset, exact
               FROM gb_edge_artifacts WHERE edge_id = ? AND artifact_id = ?""",
            (copy, edge_id, chunk),
        )
        write(
            conn,
            "DELETE FROM gb_edge_artifacts WHERE edge_id = ? AND artifact_id = ?",
            (edge_id, chunk),
        )
        if session is not None:
            conn.execute(
                """INSERT INTO gb_session_edges(dataset_id, session_id, edge_id)
                   VALUES (?, ?, ?) ON CONFLICT DO NOTHING""",
                (session[0], session[1], copy),
            )
    return copy
