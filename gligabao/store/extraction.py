"""What one document gave the graph, for `gb eval --graph`: the facts whose evidence is
in it (closed ones too), the entities linked to it, and the tokens of the LLM calls
recorded for it. Only SELECTs."""

from __future__ import annotations

from typing import Any

from gligabao.store.connection import Connection
from gligabao.store.db import query, query_one

__all__ = ["document_entities", "document_facts", "document_usage"]


# The document itself and its chunks: evidence and provenance point at either.
def _in_document(column: str) -> str:
    return f"""({column} = :doc
               OR {column} IN (SELECT id FROM gb_artifacts WHERE parent_id = :doc))"""


def document_facts(conn: Connection, document_id: int) -> list[dict[str, Any]]:
    """Every fact with evidence in the document, current or closed: `id`, `source_id`,
    `source`, `target_id`, `target`, `relation`, `fact`, `valid_at`, `invalid_at`."""
    return query(
        conn,
        f"""SELECT e.id, e.source_entity_id AS source_id, s.name AS source,
                   e.target_entity_id AS target_id, t.name AS target, e.relation, e.fact,
                   e.valid_at, e.invalid_at
            FROM gb_edges e
            JOIN gb_entities s ON s.id = e.source_entity_id
            JOIN gb_entities t ON t.id = e.target_entity_id
            WHERE e.id IN (SELECT edge_id FROM gb_edge_artifacts
                           WHERE {_in_document("artifact_id")})
            ORDER BY e.id""",
        {"doc": document_id},
    )


def document_entities(conn: Connection, document_id: int) -> list[dict[str, Any]]:
    """The entities linked to the document or named by its facts: `id`, `name`, `type`."""
    return query(
        conn,
        f"""SELECT id, name, type FROM gb_entities
            WHERE id IN (SELECT entity_id FROM gb_entity_artifacts
                         WHERE {_in_document("artifact_id")})
               OR id IN (SELECT e.source_entity_id FROM gb_edges e
                         JOIN gb_edge_artifacts a ON a.edge_id = e.id
                         WHERE {_in_document("a.artifact_id")})
               OR id IN (SELECT e.target_entity_id FROM gb_edges e
                         JOIN gb_edge_artifacts a ON a.edge_id = e.id
                         WHERE {_in_document("a.artifact_id")})
            ORDER BY id""",
        {"doc": document_id},
    )


def document_usage(conn: Connection, document_id: int) -> dict[str, int]:
    """The document's own tokens (its chunks' where it has none) and the calls recorded
    for it with their `input_tokens` and `output_tokens`."""
    row = query_one(
        conn,
        """SELECT coalesce((SELECT tokens FROM gb_artifacts WHERE id = :doc),
                           (SELECT sum(tokens) FROM gb_artifacts
                            WHERE parent_id = :doc AND chunk_index IS NOT NULL), 0) AS tokens,
                  (SELECT count(*) FROM gb_inferences WHERE document_id = :doc) AS calls,
                  (SELECT coalesce(sum(input_tokens), 0) FROM gb_inferences
                   WHERE document_id = :doc) AS input_tokens,
                  (SELECT coalesce(sum(output_tokens), 0) FROM gb_inferences
                   WHERE document_id = :doc) AS output_tokens""",
        {"doc": document_id},
    )
    assert row is not None
    return {key: int(value or 0) for key, value in row.items()}
