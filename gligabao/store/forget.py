"""Forgetting a document (`gb forget ID`), with everything that only it justified.

Only a document is forgotten: a chunk taken out alone would leave its document marked
complete with a hole, so a chunk's id (or its summary's) is refused, naming the document.

Deleting the artifact cascades to its chunks, their summaries and every provenance link
to them; triggers drop their keyword rows. What a cascade cannot do is done here, in
the same transaction: the vectors (vec0 tables are named per dataset), and the graph's
garbage — an entity or edge is kept while at least one remaining artifact links to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gligabao.errors import UsageError
from gligabao.store import dialect, entity_summaries, fts, vectors
from gligabao.store.connection import Connection
from gligabao.store.db import query, query_one, transaction
from gligabao.store.errors import NotFound

__all__ = ["ForgetReport", "NotADocument", "forget"]


@dataclass(frozen=True)
class ForgetReport:
    """What forget() removed or changed."""

    artifact_id: int
    artifacts: int  # rows of gb_artifacts: the artifact, its chunks and summaries
    chunks: int
    summaries: int
    entities: int  # entities left with no provenance, deleted
    edges: int  # edges left with no provenance (or an end deleted), deleted
    edges_repointed: int  # edges whose artifact_id moved to their earliest remaining link
    edges_reopened: int  # facts closed only by a deleted edge, current again
    fts_rows: int
    vectors: int


class NotADocument(UsageError):
    """The id given to forget is a chunk's, a summary's or a situating context's: ids are
    shared by all of them. A usage error (exit 2): the id names the wrong thing, and
    nothing was done."""


def _ids(conn: Connection, sql: str, *params: object) -> list[int]:
    return [next(iter(r.values())) for r in query(conn, sql, params)]


def forget(conn: Connection, artifact_id: int) -> ForgetReport:
    """Delete a document and all that hangs off it, in one transaction; NotADocument
    (before anything is written) for the id of a chunk or of what hangs off one."""
    with transaction(conn):
        root = query_one(
            conn, "SELECT dataset_id, parent_id FROM gb_artifacts WHERE id = ?", (artifact_id,)
        )
        if root is None:
            raise NotFound(f"no artifact with id {artifact_id}")
        if root["parent_id"] is not None:
            raise _not_a_document(conn, artifact_id)
        ds = root["dataset_id"]
        ids_in = dialect.of(conn).id_list("?")
        tree = query(
            conn,
            """WITH RECURSIVE t(id) AS (
                   SELECT CAST(? AS bigint)
                   UNION ALL SELECT a.id FROM gb_artifacts a JOIN t ON a.parent_id = t.id)
               SELECT a.id, a.kind, a.parent_id FROM gb_artifacts a JOIN t ON t.id = a.id""",
            (artifact_id,),
        )
        ids = [r["id"] for r in tree]
        summaries = [r["id"] for r in tree if r["kind"] == "chunk_summary"]
        chunks = [
            r["id"] for r in tree if r["parent_id"] is not None and r["kind"] != "chunk_summary"
        ]
        ids_json = json.dumps(ids)
        entities = _ids(
            conn,
            f"SELECT DISTINCT entity_id FROM gb_entity_artifacts WHERE artifact_id IN {ids_in}",
            ids_json,
        )
        edges = _ids(
            conn,
            f"""SELECT edge_id FROM gb_edge_artifacts WHERE artifact_id IN {ids_in}
                UNION SELECT id FROM gb_edges WHERE artifact_id IN {ids_in}""",
            ids_json,
            ids_json,
        )
        fts_rows = fts.indexed_rows(conn, "gb_fts_artifacts", ids)
        # The document's own vector, when it was too short to chunk, is in the chunks index.
        removed_vectors = vectors.delete_artifact_vectors(
            conn, ds, "chunks", [artifact_id, *chunks]
        ) + vectors.delete_vectors(
            conn, ds, "summaries", [vectors.vector_id("summaries", i) for i in summaries]
        )

        # The cascade: chunks, summaries, their links; edges.artifact_id becomes NULL.
        conn.execute("DELETE FROM gb_artifacts WHERE id = ?", (artifact_id,))

        dead_edges = _ids(
            conn,
            f"""SELECT id FROM gb_edges g WHERE id IN {ids_in}
                AND NOT EXISTS (SELECT 1 FROM gb_edge_artifacts l WHERE l.edge_id = g.id)""",
            json.dumps(edges),
        )
        # An entity stays while a link or a surviving edge still needs it, so deleting
        # one never takes a fact that another document supports with it.
        dead_entities = _ids(
            conn,
            f"""SELECT id FROM gb_entities e WHERE id IN {ids_in}
                AND NOT EXISTS (SELECT 1 FROM gb_entity_artifacts l WHERE l.entity_id = e.id)
                AND NOT EXISTS (SELECT 1 FROM gb_edges g
                    WHERE (g.source_entity_id = e.id OR g.target_entity_id = e.id)
                      AND g.id NOT IN {ids_in})""",
            json.dumps(entities),
            json.dumps(dead_edges),
        )
        # Edges touching a dead entity are dead already (the query above guarantees it),
        # so the ON DELETE CASCADE from entities deletes nothing unexpected.
        dead_json = json.dumps(dead_edges)

        # A fact closed by an edge that is now forgotten was closed on evidence that is
        # gone: it is current again.
        reopening = _ids(
            conn,
            f"""SELECT id FROM gb_edges
                WHERE invalidated_by_edge_id IN {ids_in} AND id NOT IN {ids_in}""",
            dead_json,
            dead_json,
        )
        conn.execute(
            f"""UPDATE gb_edges SET invalid_at = NULL, expired_at = NULL,
                    invalidated_by_edge_id = NULL, invalidation_reason = NULL
                WHERE id IN {ids_in}""",
            (json.dumps(reopening),),
        )
        reopened = len(reopening)

        fts_rows += fts.indexed_rows(conn, "gb_fts_edges", dead_edges)
        fts_rows += fts.indexed_rows(conn, "gb_fts_entities", dead_entities)
        removed_vectors += vectors.delete_vectors(
            conn, ds, "edges", [vectors.vector_id("edges", i) for i in dead_edges]
        ) + vectors.delete_vectors(
            conn, ds, "entities", [vectors.vector_id("entities", i) for i in dead_entities]
        )
        # The summaries of the entities that stay may state what the document said, a
        # fact deleted with it, or the end of a fact now current again.
        gone = set(dead_entities)
        entity_summaries.mark_ends_stale(conn, reopening)
        entity_summaries.mark_stale(conn, [e for e in entities if e not in gone])
        conn.execute(f"DELETE FROM gb_edges WHERE id IN {ids_in}", (dead_json,))
        conn.execute(f"DELETE FROM gb_entities WHERE id IN {ids_in}", (json.dumps(dead_entities),))

        # A surviving edge that pointed at a deleted chunk now points at its earliest
        # remaining source.
        conn.execute(
            f"""UPDATE gb_edges SET artifact_id = (
                    SELECT min(artifact_id) FROM gb_edge_artifacts WHERE edge_id = gb_edges.id)
                WHERE artifact_id IS NULL AND id IN {ids_in}
                  AND EXISTS (SELECT 1 FROM gb_edge_artifacts WHERE edge_id = gb_edges.id)""",
            (json.dumps(edges),),
        )
        repointed = conn.changes()

        # Session links stand for "seen in this session": drop those no artifact of the
        # session supports any more.
        conn.execute(
            f"""DELETE FROM gb_session_entities WHERE entity_id IN {ids_in} AND NOT EXISTS (
                    SELECT 1 FROM gb_entity_artifacts l JOIN gb_artifacts a ON a.id = l.artifact_id
                    WHERE l.entity_id = gb_session_entities.entity_id
                      AND a.session_id = gb_session_entities.session_id)""",
            (json.dumps(entities),),
        )
        conn.execute(
            f"""DELETE FROM gb_session_edges WHERE edge_id IN {ids_in} AND NOT EXISTS (
                    SELECT 1 FROM gb_edge_artifacts l JOIN gb_artifacts a ON a.id = l.artifact_id
                    WHERE l.edge_id = gb_session_edges.edge_id
                      AND a.session_id = gb_session_edges.session_id)""",
            (json.dumps(edges),),
        )

    return ForgetReport(
        artifact_id=artifact_id,
        artifacts=len(ids),
        chunks=len(chunks),
        summaries=len(summaries),
        entities=len(dead_entities),
        edges=len(dead_edges),
        edges_repointed=repointed,
        edges_reopened=reopened,
        fts_rows=fts_rows,
        vectors=removed_vectors,
    )


def _not_a_document(conn: Connection, artifact_id: int) -> NotADocument:
    # Here, not at the top: artifacts imports this module.
    from gligabao.store.artifacts import artifact_place

    place = artifact_place(conn, artifact_id)
    return NotADocument(
        f"{artifact_id} is {place['words']}; forget the document: gb forget {place['document_id']}"
    )
