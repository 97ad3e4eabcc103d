"""Counts for `gb stats` and `gb vec-stats`: what the database holds, for one dataset or all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gligabao.store.connection import Connection
from gligabao.store.db import query, query_one
from gligabao.store.facts import current
from gligabao.store.vector_rows import KIND

__all__ = ["Stats", "VecIndexStats", "stats", "unpriced_by_model", "vec_index_stats"]


@dataclass(frozen=True)
class Stats:
    documents: int  # parent artifacts (superseded ones included)
    incomplete: int  # current documents not complete (artifacts.document_state)
    chunks: int
    summaries: int
    entities: int
    edges_valid: int  # current facts, as gb facts shows them (store.facts.current)
    edges_closed: int
    inferences: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost: float | None  # of the priced calls; None when no inference had a known price
    unpriced: int  # calls without a price (their model has no [prices]): not in cost


_SQL = """
SELECT
  (SELECT count(*) FROM gb_artifacts WHERE parent_id IS NULL {a}) AS documents,
  (SELECT count(*) FROM gb_artifacts d
    WHERE d.parent_id IS NULL AND d.superseded_by IS NULL {a}
      AND (d.status IS DISTINCT FROM 'complete' OR d.pending != '' OR EXISTS (
           SELECT 1 FROM gb_artifacts c WHERE c.parent_id = d.id AND c.pending != ''))
  ) AS incomplete,
  (SELECT count(*) FROM gb_artifacts
    WHERE chunk_index IS NOT NULL {a}) AS chunks,
  (SELECT count(*) FROM gb_artifacts WHERE kind = 'chunk_summary' {a}) AS summaries,
  (SELECT count(*) FROM gb_entities WHERE TRUE {a}) AS entities,
  (SELECT count(*) FROM gb_edges e WHERE {current} {a}) AS edges_valid,
  (SELECT count(*) FROM gb_edges e WHERE NOT {current} {a}) AS edges_closed,
  i.n AS inferences, i.input_tokens, i.output_tokens, i.cached_tokens, i.cost, i.unpriced
FROM (SELECT count(*) AS n, coalesce(sum(input_tokens), 0) AS input_tokens,
             coalesce(sum(output_tokens), 0) AS output_tokens,
             coalesce(sum(cached_tokens), 0) AS cached_tokens, sum(cost) AS cost,
             count(*) - count(cost) AS unpriced
      FROM gb_inferences WHERE TRUE {a}) AS i
"""


def stats(conn: Connection, dataset_id: int | None = None) -> Stats:
    """Counts for a dataset (inferences recorded against it), or for the whole file."""
    where = "" if dataset_id is None else "AND dataset_id = :d"
    row = query_one(conn, _SQL.format(a=where, current=current(conn)), {"d": dataset_id})
    assert row is not None
    return Stats(**row)


def unpriced_by_model(conn: Connection, dataset_id: int | None = None) -> list[dict[str, Any]]:
    """The calls recorded without a cost, by model: `model`, `calls` and their tokens
    (`input_tokens`, `output_tokens`, `cached_tokens`), for a price learnt since."""
    where = "" if dataset_id is None else "AND i.dataset_id = :d"
    return query(
        conn,
        f"""SELECT m.name AS model, count(*) AS calls,
                   coalesce(sum(i.input_tokens), 0) AS input_tokens,
                   coalesce(sum(i.output_tokens), 0) AS output_tokens,
                   coalesce(sum(i.cached_tokens), 0) AS cached_tokens
            FROM gb_inferences i JOIN gb_models m ON m.id = i.model_id
            WHERE i.cost IS NULL {where} GROUP BY m.name ORDER BY m.name""",
        {"d": dataset_id},
    )


@dataclass(frozen=True)
class VecIndexStats:
    """What a vector index holds against what it should hold (the seed's VectorStats).

    `held` counts rows with a vector, `vectors` the vectors (more than held where chunks
    were embedded as pieces); `pending` rows are not embedded yet on purpose (their
    document still has 'embed' in gb_artifacts.pending); `missing` ones should have a
    vector and have none; `orphans` are vectors whose row is gone. A healthy index has
    held == should - pending.
    """

    index: str
    table: str
    exists: bool
    held: int
    should: int
    pending: int
    missing: int
    orphans: int
    vectors: int = 0


# Artifacts whose embedding is deferred: marked 'embed' in pending, or below one that is.
_PENDING = """
WITH RECURSIVE pend(id) AS (
    SELECT id FROM gb_artifacts
    WHERE dataset_id = :d AND ' ' || pending || ' ' LIKE '% embed %'
    UNION SELECT a.id FROM gb_artifacts a JOIN pend ON a.parent_id = pend.id
)
"""

# Per index: the rows that should have a vector (`id`, and `pend` when deferred).
_SHOULD = {
    "entities": """SELECT e.id, EXISTS (SELECT 1 FROM gb_entity_artifacts l
                       WHERE l.entity_id = e.id AND l.artifact_id IN (SELECT id FROM pend))
                       AS pend
                   FROM gb_entities e WHERE e.dataset_id = :d""",
    "edges": """SELECT e.id, EXISTS (SELECT 1 FROM gb_edge_artifacts l
                    WHERE l.edge_id = e.id AND l.artifact_id IN (SELECT id FROM pend)) AS pend
                FROM gb_edges e WHERE e.dataset_id = :d""",
    "chunks": """SELECT a.id, a.id IN (SELECT id FROM pend) AS pend FROM gb_artifacts a
                 WHERE a.dataset_id = :d AND (a.chunk_index IS NOT NULL
                       OR (a.parent_id IS NULL AND a.chunk_count = 0))""",
    "summaries": """SELECT a.id, a.id IN (SELECT id FROM pend) AS pend FROM gb_artifacts a
                    WHERE a.dataset_id = :d AND a.kind = 'chunk_summary'""",
}


def vec_index_stats(
    conn: Connection, dataset_id: int, index_name: str, table: str, owned: str | None
) -> VecIndexStats:
    """What one vector index holds against what it should: `owned` is the database's
    SELECT of each vector's row id (`oid`) from `table`, None where there is no table."""
    should = f"{_PENDING}, should AS MATERIALIZED ({_SHOULD[index_name]})"
    if owned is not None:
        sql = f"""{should}, owned AS MATERIALIZED ({owned})
            SELECT (SELECT count(*) FROM should WHERE id IN (SELECT oid FROM owned)) AS held,
                   (SELECT count(*) FROM owned) AS vectors,
                   (SELECT count(*) FROM should) AS should,
                   (SELECT count(*) FROM should
                     WHERE pend AND id NOT IN (SELECT oid FROM owned)) AS pending,
                   (SELECT count(*) FROM should
                     WHERE NOT pend AND id NOT IN (SELECT oid FROM owned)) AS missing,
                   (SELECT count(*) FROM owned
                     WHERE oid NOT IN (SELECT id FROM should)) AS orphans"""
    else:
        sql = f"""{should}
            SELECT 0 AS held, count(*) AS should,
                   coalesce(sum(CASE WHEN pend THEN 1 ELSE 0 END), 0) AS pending,
                   coalesce(sum(CASE WHEN pend THEN 0 ELSE 1 END), 0) AS missing,
                   0 AS orphans FROM should"""
    prefix = KIND[index_name] + "-"
    row = query(conn, sql, {"d": dataset_id, "p": prefix})[0]
    return VecIndexStats(index=index_name, table=table, exists=owned is not None, **row)
