"""Keyword search in SQLite: the FTS5 tables gb_fts_artifacts, gb_fts_entities and
gb_fts_edges, ranked by bm25 (`rank`, lower is better).

FTS5 has its own query language (AND, OR, NOT, NEAR, quotes, `col:`, `*`, `^`...), so a
name like `C++ "Foo" AND` passed as-is raises a syntax error or means something else.
Each word is taken out and quoted as a string, and the words are joined with OR: every
word is a possible match, and bm25 ranks the rows that match more of them first.

The entity and edge tables follow gb_entities and gb_edges through triggers (see
migrations); an artifact's row is written here (index_artifact_text).
"""

from __future__ import annotations

import json

from gligabao.store.connection import Connection
from gligabao.store.db import query, scalar, transaction
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
    "fts_query",
    "index_artifact_text",
    "indexed_rows",
    "search_artifacts",
    "telling_words",
]


def _phrase(word: str) -> str:
    # A string in double quotes is a phrase of literal tokens; quotes inside are doubled.
    return '"' + word.replace('"', '""') + '"'


def fts_query(
    text: str | list[str], *, column: str | None = None, max_terms: int = 64
) -> str | None:
    """An FTS5 MATCH expression for `text` (or for words already taken out of it, as
    `words_of` gives them), or None when it holds no word at all.

    `column` restricts the match to one column (a fixed identifier, never user text).
    """
    words = words_of(text, max_terms) if isinstance(text, str) else text
    if not words:
        return None
    expr = " OR ".join(_phrase(w) for w in words)
    return f"{column} : ({expr})" if column else expr


def telling_words(conn: Connection, table: str, words: list[str]) -> list[str]:
    """`words` less those found in at least half of the rows of the FTS5 table `table`,
    unless that is every one of them.

    bm25 weighs such a word at nothing: FTS5 gives it an idf of 1e-6, for
    log((rows - n + 0.5) / (n + 0.5)) is not positive, so it changes no row's score by
    more than ~2e-6. Yet FTS5 scores every row that holds it, and scoring is what a
    keyword search spends its time on: at 100,000 chunks the bench's queries matched
    ~60,000 rows, and a question's "how", "the" or "of" match nearly every one. Without
    them the rows that match the other words rank as with them (but for ties closer than
    ~2e-6), ahead of the rows that hold only such words: a caller wanting more rows than
    the other words find searches for all of them (search_artifacts).
    Counting is cheap: FTS5 counts a word's rows from its index alone, up to half.
    """
    if len(words) < 2:
        return words
    # One row of the table's docsize shadow table a row (FTS5's `columnsize`, on by
    # default): the row count bm25 itself reads, without reading the rows.
    rows = scalar(conn, f'SELECT count(*) FROM "{table}_docsize"')
    half = (rows + 1) // 2  # n >= rows / 2, in integers
    common = {
        word
        for word in words
        if scalar(
            conn,
            f'SELECT count(*) FROM (SELECT 1 FROM "{table}" WHERE "{table}" MATCH ? LIMIT {half})',
            (_phrase(word),),
        )
        >= half
    }
    return [w for w in words if w not in common] or words


def index_artifact_text(
    conn: Connection, artifact_id: int, text: str, kind: str, dataset_id: int
) -> None:
    """Put (or replace) the artifact's row in the keyword index."""
    with transaction(conn):
        conn.execute("DELETE FROM gb_fts_artifacts WHERE rowid = ?", (artifact_id,))
        conn.execute(
            "INSERT INTO gb_fts_artifacts(rowid, text, kind, dataset_id) VALUES (?, ?, ?, ?)",
            (artifact_id, text, kind, dataset_id),
        )


def artifact_rows(conn: Connection, after: int, limit: int) -> list[dict[str, Any]]:
    """Rows of the artifacts' keyword index past id `after`: `id`, `dataset_id`, `kind`,
    `text`, at most `limit`, by id."""
    return query(
        conn,
        """SELECT rowid AS id, dataset_id, kind, text FROM gb_fts_artifacts
           WHERE rowid > ? ORDER BY rowid LIMIT ?""",
        (after, limit),
    )


def indexed_rows(conn: Connection, table: str, ids: list[int]) -> int:
    """How many of `ids` have a row in the FTS5 table `table` (forget's report)."""
    return int(
        scalar(
            conn,
            f"SELECT count(*) FROM {table} WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps(ids),),
        )
    )


def search_artifacts(
    conn: Connection, dataset_id: int, text: str, limit: int, session: str | None
) -> list[dict[str, Any]]:
    """artifacts.search_artifacts_fts in FTS5. The words found in half the rows or more,
    which bm25 weighs at nothing, are searched for only when the others find fewer than
    `limit` rows: then the rows holding nothing else come next, as bm25 ranks them (see
    telling_words)."""
    words = words_of(text)
    if not words or limit <= 0:
        return []
    scope = (
        ""
        if session is None
        else (
            " AND rowid IN (SELECT id FROM gb_artifacts WHERE dataset_id = :d AND session_id = :s)"
        )
    )
    # Testing dataset_id, FTS5 reads each row's stored columns, its whole text with them:
    # 400 rows a search, ~1.4 ms at 10,000 chunks, ~3.7 at 100,000. Where the database
    # holds no other dataset every row is this one's (a dataset's artifacts, and their
    # keyword rows with them, go when it goes), and the test is left out.
    alone = not scalar(
        conn, "SELECT EXISTS (SELECT 1 FROM gb_datasets WHERE id <> ?)", (dataset_id,)
    )
    ours = "" if alone else " AND dataset_id = :d"
    sql = f"""SELECT rowid AS artifact_id, rank FROM gb_fts_artifacts
              WHERE gb_fts_artifacts MATCH :m{ours}{scope}
              ORDER BY rank LIMIT :n"""
    telling = telling_words(conn, "gb_fts_artifacts", words)
    hits = query(conn, sql, {"m": fts_query(telling), "d": dataset_id, "s": session, "n": limit})
    if len(hits) < limit and len(telling) < len(words):
        hits = query(conn, sql, {"m": fts_query(words), "d": dataset_id, "s": session, "n": limit})
    return hits


def edge_ids(conn: Connection, dataset_id: int, text: str, limit: int) -> list[int]:
    """facts.edge_ids_fts in FTS5."""
    match = fts_query(text)
    if match is None or limit <= 0:
        return []
    rows = query(
        conn,
        """SELECT rowid AS id FROM gb_fts_edges WHERE gb_fts_edges MATCH ? AND dataset_id = ?
           ORDER BY rank LIMIT ?""",
        (match, dataset_id, limit),
    )
    return [r["id"] for r in rows]


def entity_ids(
    conn: Connection, dataset_id: int, text: str, limit: int, *, names: bool
) -> list[int]:
    """facts.entity_ids_fts in FTS5."""
    match = fts_query(text, column="name" if names else None)
    if match is None or limit <= 0:
        return []
    rows = query(
        conn,
        """SELECT rowid AS id FROM gb_fts_entities
           WHERE gb_fts_entities MATCH ? AND dataset_id = ? ORDER BY rank LIMIT ?""",
        (match, dataset_id, limit),
    )
    return [r["id"] for r in rows]


def entity_candidates(
    conn: Connection, dataset_id: int, name: str, limit: int
) -> list[dict[str, Any]]:
    """graph.entity_candidates_fts in FTS5. Any text is safe here: it is reduced to
    quoted words (fts_query)."""
    match = fts_query(name, column="name")
    if match is None or limit <= 0:
        return []
    # The limit is written into the SQL, not bound: a query over a virtual table (FTS5,
    # json_each) with a bound LIMIT is planned for its value, so SQLite prepares it again
    # at every execution; resolution runs this and current_edges_touching for every item.
    return query(
        conn,
        f"""SELECT e.*, f.rank AS rank FROM gb_fts_entities f JOIN gb_entities e ON e.id = f.rowid
            WHERE gb_fts_entities MATCH ? AND f.dataset_id = ?
            ORDER BY f.rank LIMIT {int(limit)}""",
        (match, dataset_id),
    )
