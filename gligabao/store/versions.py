"""Versions of a file: what a new version takes over from the one it replaces,
and what the graph stops holding when no version states it any more.

A chunk of the new version that is a chunk of the old one is copied whole, with no LLM
call: its row (new index and offsets), its summary and situating context (the same
inferences), its entity links, its fact links (each quote found again in the chunk at
its new place) and its two vectors. A fact whose every link lies in superseded or
removed versions is expired: the graph learnt it is no longer stated, so `--known-at`
before then still shows it, current no more.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gligabao.base.evidence import locate_quote
from gligabao.store import artifacts, dialect, entity_summaries, graph, vectors
from gligabao.store.connection import Connection
from gligabao.store.db import json_ids, now_iso, query, query_one, transaction, write

__all__ = [
    "copy_chunk",
    "expire_unstated",
    "older_current_versions",
    "previous_version",
    "replaced_by",
    "reusable_chunks",
]


def previous_version(
    conn: Connection, dataset_id: int, source: str, sha256: str, before_id: int | None
) -> dict[str, Any] | None:
    """The stored version a new version of `source` (with content `sha256`) replaces: the
    latest complete one with other content that nothing superseded, or that the new
    version (`before_id`, once stored) superseded already, older than it."""
    return query_one(
        conn,
        """SELECT * FROM gb_artifacts
           WHERE dataset_id = :d AND source = :s AND parent_id IS NULL
             AND (superseded_by IS NULL OR superseded_by = :new)
             AND status = 'complete' AND content_sha256 <> :sha AND (:new IS NULL OR id < :new)
           ORDER BY id DESC LIMIT 1""",
        {"d": dataset_id, "s": source, "sha": sha256, "new": before_id},
    )


def replaced_by(conn: Connection, document_id: int) -> list[int]:
    """The versions this document superseded."""
    rows = query(
        conn,
        "SELECT id FROM gb_artifacts WHERE superseded_by = ? AND id <> ? ORDER BY id",
        (document_id, document_id),
    )
    return [row["id"] for row in rows]


def older_current_versions(
    conn: Connection, dataset_id: int, source: str, document_id: int
) -> list[int]:
    """The versions of `source` older than `document_id` that nothing superseded yet: a
    newer one, stored meanwhile by another run, is the latest and is not among them."""
    rows = query(
        conn,
        """SELECT id FROM gb_artifacts WHERE dataset_id = ? AND source = ?
           AND parent_id IS NULL AND superseded_by IS NULL AND id < ? ORDER BY id""",
        (dataset_id, source, document_id),
    )
    return [row["id"] for row in rows]


def reusable_chunks(
    conn: Connection, dataset_id: int, document_id: int
) -> tuple[list[dict[str, Any]], set[int]]:
    """A document's chunk rows in index order (with `summary_id`, `summary_text`,
    `summary_inference`, `situating`, `situating_inference`, and the blobs
    `chunk_vectors`, one a piece, and `summary_vector`), and the ids of those that can be
    reused whole: every stage done, a summary, and both vectors stored."""
    rows = query(
        conn,
        """SELECT c.*, s.id AS summary_id, s.text AS summary_text,
                  s.inference_id AS summary_inference,
                  x.text AS situating, x.inference_id AS situating_inference
           FROM gb_artifacts c
           LEFT JOIN gb_artifacts s ON s.id = (SELECT min(id) FROM gb_artifacts
               WHERE parent_id = c.id AND kind = 'chunk_summary')
           LEFT JOIN gb_artifacts x ON x.id = (SELECT min(id) FROM gb_artifacts
               WHERE parent_id = c.id AND kind = 'chunk_context')
           WHERE c.parent_id = ? AND c.chunk_index IS NOT NULL
           ORDER BY c.chunk_index""",
        (document_id,),
    )
    has_vectors = vectors.has_vector_tables(conn, dataset_id)
    reusable = set()
    for row in rows:
        row["chunk_vectors"], row["summary_vector"] = [], None
        if row["pending"] or row["summary_id"] is None or not has_vectors:
            continue
        row["chunk_vectors"] = vectors.artifact_vectors(conn, dataset_id, "chunks", row["id"])
        summary = vectors.artifact_vectors(conn, dataset_id, "summaries", row["summary_id"])
        row["summary_vector"] = summary[0] if summary else None
        if row["chunk_vectors"] and row["summary_vector"] is not None:
            reusable.add(row["id"])
    return rows, reusable


def copy_chunk(
    conn: Connection,
    dataset_id: int,
    document: Mapping[str, Any],
    old: Mapping[str, Any],
    chunk: Any,
    lines: tuple[int, int] | None = None,
) -> int:
    """Store `chunk` (gligabao.chunk.Chunk) of `document` as the copy of the stored chunk
    row `old` (from reusable_chunks), spanning `lines`, in one transaction, and return
    its id. Where an
    offline run stored its row, stages pending, that row is completed; where another run
    stored it whole meanwhile, nothing is done."""
    session = document["session_id"]
    with transaction(conn):
        stored = query_one(
            conn,
            "SELECT id, pending FROM gb_artifacts WHERE parent_id = ? AND chunk_index = ?",
            (document["id"], chunk.index),
        )
        if stored is not None and not stored["pending"]:
            return stored["id"]
        context = chunk.context.strip() if chunk.context else ""
        embedding_context = "\n".join(p for p in (context, old["situating"] or "") if p)
        chunk_id = stored and stored["id"]
        if chunk_id is None:
            chunk_id = artifacts.insert_cut_chunk(
                conn, document["id"], chunk, index_text=False, lines=lines
            )
        artifacts.index_artifact_text(
            conn,
            chunk_id,
            artifacts.embedded_text(chunk.text, embedding_context),
            document["kind"],
            dataset_id,
        )
        if old["situating"]:
            artifacts.insert_derived(
                conn,
                chunk_id=chunk_id,
                kind=artifacts.CONTEXT_KIND,
                text=old["situating"],
                inference_id=old["situating_inference"],
                index_text=False,
            )
        summary_id = artifacts.insert_summary(
            conn,
            chunk_id=chunk_id,
            text=old["summary_text"] or "",
            inference_id=old["summary_inference"],
        )
        _copy_links(conn, old["id"], chunk_id, chunk, session)
        doc_id, index = document["id"], chunk.index
        vectors.upsert_vectors(
            conn,
            dataset_id,
            "chunks",
            vectors.chunk_rows(chunk_id, doc_id, index, old["chunk_vectors"]),
        )
        vectors.upsert_vectors(
            conn,
            dataset_id,
            "summaries",
            [vectors.summary_row(summary_id, chunk_id, doc_id, index, old["summary_vector"])],
        )
        artifacts.set_pending(conn, chunk_id, ())
    return chunk_id


def _copy_links(
    conn: Connection, old_id: int, chunk_id: int, chunk: Any, session: str | None
) -> None:
    """The old chunk's entity and fact links, for the new one; each quote is found again
    in the new chunk's text, at its new offsets. A quote found in the old chunk but not in
    the new one stood in the overlap the edit changed (the chunks match by the text after
    it): that fact is no longer stated here, and its link is not copied."""
    for row in query(
        conn, "SELECT entity_id FROM gb_entity_artifacts WHERE artifact_id = ?", (old_id,)
    ):
        graph.link_entity(conn, row["entity_id"], chunk_id, session)
    for row in query(
        conn,
        "SELECT edge_id, quote, start_offset FROM gb_edge_artifacts WHERE artifact_id = ?",
        (old_id,),
    ):
        evidence = locate_quote(row["quote"], chunk.text, chunk.start_offset)
        if row["start_offset"] is not None and evidence.start_offset is None:
            continue
        graph.link_edge(conn, row["edge_id"], chunk_id, session, evidence)


def expire_unstated(
    conn: Connection, document_ids: Iterable[int], reason: str, at: str | None = None
) -> int:
    """Expire the facts linked to these (superseded or removed) documents or their chunks
    that no version still current states: `expired_at` = `at` (default now). Facts
    expired already are left as they are; a fact closed in time but never expired (one
    that came in closed by a later fact) is expired too, and keeps the reason it was
    closed for. Returns how many."""
    ids = json_ids(document_ids)
    rows = query(
        conn,
        f"""WITH docs(id) AS {dialect.of(conn).id_list(":docs")},
           old(id) AS (
               SELECT id FROM docs
               UNION SELECT a.id FROM gb_artifacts a WHERE a.parent_id IN (SELECT id FROM docs))
           SELECT DISTINCT l.edge_id AS id FROM gb_edge_artifacts l
           JOIN gb_edges e ON e.id = l.edge_id
           WHERE l.artifact_id IN (SELECT id FROM old) AND e.expired_at IS NULL
             AND NOT EXISTS (
                 SELECT 1 FROM gb_edge_artifacts k
                 JOIN gb_artifacts a ON a.id = k.artifact_id
                 JOIN gb_artifacts d ON d.id = coalesce(a.parent_id, a.id)
                 WHERE k.edge_id = l.edge_id AND d.superseded_by IS NULL)""",
        {"docs": ids},
    )
    when = at or now_iso()
    with transaction(conn):
        for row in rows:
            write(
                conn,
                # A fact closed already keeps the reason it was closed for.
                """UPDATE gb_edges SET expired_at = ?,
                       invalidation_reason = coalesce(invalidation_reason, ?)
                   WHERE id = ? AND expired_at IS NULL""",
                (when, reason, row["id"]),
            )
        entity_summaries.mark_ends_stale(conn, [row["id"] for row in rows], when)
    return len(rows)
