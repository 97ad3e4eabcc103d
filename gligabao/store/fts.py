"""Keyword search, whichever database holds the index: SQLite's FTS5 (sqlite/fts.py) or
PostgreSQL's tsvectors ranked by bm25 (postgres/fts.py), picked by the connection. Both
rank by bm25 with FTS5's constants, `rank` lower is better."""

from __future__ import annotations

from types import ModuleType

from gligabao.store.connection import Connection
from gligabao.store.sqlite import fts as sqlite
from gligabao.store.terms import words_of

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "artifact_rows",
    "edge_ids",
    "entity_candidates",
    "entity_ids",
    "index_artifact_text",
    "indexed_rows",
    "search_artifacts",
    "words_of",
]


def _of(conn: Connection) -> ModuleType:
    if conn.dialect == "postgresql":
        # Here: an SQLite store (every `gb search` on one) never imports it, ~1 ms.
        from gligabao.store.postgres import fts as postgres

        return postgres
    return sqlite


def index_artifact_text(
    conn: Connection, artifact_id: int, text: str, kind: str, dataset_id: int
) -> None:
    """Put (or replace) the artifact's row in the keyword index."""
    _of(conn).index_artifact_text(conn, artifact_id, text, kind, dataset_id)


def artifact_rows(conn: Connection, after: int, limit: int) -> list[dict[str, Any]]:
    """Rows of the artifacts' keyword index past id `after`, at most `limit`, by id:
    `id`, `dataset_id`, `kind`, and the `text` as indexed (a chunk's context first)."""
    return list(_of(conn).artifact_rows(conn, after, limit))


def indexed_rows(conn: Connection, table: str, ids: list[int]) -> int:
    """How many of `ids` have a row in the keyword index `table` (gb_fts_artifacts,
    gb_fts_entities, gb_fts_edges)."""
    return int(_of(conn).indexed_rows(conn, table, ids))


def search_artifacts(
    conn: Connection, dataset_id: int, text: str, limit: int, session: str | None
) -> list[dict[str, Any]]:
    """Chunks (as embedded), summaries and unchunked documents sharing words with `text`:
    `artifact_id`, `rank`, best first."""
    return list(_of(conn).search_artifacts(conn, dataset_id, text, limit, session))


def edge_ids(conn: Connection, dataset_id: int, text: str, limit: int) -> list[int]:
    return list(_of(conn).edge_ids(conn, dataset_id, text, limit))


def entity_ids(
    conn: Connection, dataset_id: int, text: str, limit: int, *, names: bool
) -> list[int]:
    return list(_of(conn).entity_ids(conn, dataset_id, text, limit, names=names))


def entity_candidates(
    conn: Connection, dataset_id: int, name: str, limit: int
) -> list[dict[str, Any]]:
    """Entities whose name shares words with `name`, each row with its `rank`."""
    return list(_of(conn).entity_candidates(conn, dataset_id, name, limit))
