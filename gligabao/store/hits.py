"""What a search reads beyond its indexes: which entry an index row stands for, how many
rows superseded versions hold, and what a hit shows (gligabao/search/hybrid.py ranks; this
reads)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from gligabao.store import dialect
from gligabao.store.artifacts import SUMMARY_KIND
from gligabao.store.connection import Connection
from gligabao.store.db import query

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["details", "kinds", "summaries", "superseded_rows"]


def kinds(conn: Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """id, parent_id, kind and whether its document is superseded (`superseded_by`), for
    each artifact: no text, which for a document's row is the whole document.

    superseded_by is the table's last column, after the text: read from the row, it
    meant walking the document's whole text, page by page, for every hit (4.4 ms of a
    search at 100,000 chunks). It is read from its index instead, among the superseded
    documents alone ("+" keeps SQLite from looking the ids up in the table): 1.4 ms."""
    id_list = dialect.of(conn).id_list("?")
    rows = query(
        conn,
        f"SELECT id, parent_id, kind FROM gb_artifacts WHERE id IN {id_list}",
        (json.dumps(list(ids)),),
    )
    documents = {r["id"] if r["parent_id"] is None else r["parent_id"] for r in rows}
    superseded = {
        r["id"]: r["superseded_by"]
        for r in query(
            conn,
            f"""SELECT id, superseded_by FROM gb_artifacts
               WHERE superseded_by > 0 AND +id IN {id_list}""",
            (json.dumps(sorted(documents)),),
        )
    }
    for r in rows:
        r["superseded_by"] = superseded.get(r["id"] if r["parent_id"] is None else r["parent_id"])
    return {r["id"]: r for r in rows}


def superseded_rows(conn: Connection, dataset_id: int) -> int:
    """How many keyword and vector index rows the dataset's superseded versions hold at
    most: their chunks and summaries, or the document itself when unchunked.

    Read by the superseded_by index alone, which holds ids: `> 0` rather than `IS NOT
    NULL`, which SQLite answered by reading every document (2.5 ms at 1,000 documents,
    24 ms from a cold cache), and "+" so that neither the dataset nor the parent index
    is taken instead."""
    row = query(
        conn,
        """SELECT count(*) AS documents,
                  coalesce(sum((SELECT count(*) FROM gb_artifacts c
                                WHERE c.parent_id = d.id)), 0) AS chunks
           FROM gb_artifacts d
           WHERE +d.dataset_id = ? AND +d.parent_id IS NULL AND d.superseded_by > 0""",
        (dataset_id,),
    )[0]
    return row["documents"] + 2 * row["chunks"]


def details(conn: Connection, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """What each chunk or unchunked document shows as a hit, by id: its text, offsets,
    lines, section and locations, its document's id and source, and, for a chunk stored
    without its lines (before they were kept), `head`, the document up to the chunk's
    end as UTF-8 bytes, to count them from (else None): a long document's text, read
    for every hit."""
    rows = query(
        conn,
        f"""SELECT a.id, a.parent_id, a.text, a.start_offset, a.end_offset, a.section,
                  a.locations, a.line_start, a.line_end, d.id AS document_id, d.source,
                  CASE WHEN a.parent_id IS NULL OR a.line_start IS NOT NULL THEN NULL
                       ELSE {dialect.of(conn).byte_prefix("d.text", "a.end_offset")} END AS head
           FROM gb_artifacts a JOIN gb_artifacts d ON d.id = coalesce(a.parent_id, a.id)
           WHERE a.id IN {dialect.of(conn).id_list("?")}""",
        (json.dumps(list(ids)),),
    )
    return {r["id"]: r for r in rows}


def summaries(conn: Connection, chunk_ids: Sequence[int]) -> dict[int, str]:
    """The summary of each of these chunks that has one, by chunk id."""
    rows = query(
        conn,
        f"""SELECT parent_id, text FROM gb_artifacts WHERE kind = '{SUMMARY_KIND}'
            AND parent_id IN {dialect.of(conn).id_list("?")} ORDER BY id""",
        (json.dumps(list(chunk_ids)),),
    )
    return {r["parent_id"]: r["text"] for r in rows}
