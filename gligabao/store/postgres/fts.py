"""Keyword search in PostgreSQL: tsvectors ranked by bm25, as SQLite's FTS5 ranks them.

PostgreSQL's own ranking (ts_rank_cd) has no inverse document frequency: measured on
the same rows it shared 0-2 of FTS5 bm25's top 10, and hybrid search leans on the
keyword half's order. So bm25 is computed here, with FTS5's constants (k1 = 1.2,
b = 0.75, an idf of 1e-6 for a word in half the rows or more), from statistics the
triggers keep (migrations: gb_fts_totals, gb_fts_terms): a query reads one row of
statistics a word, and then only the rows that hold its words, never all of them. The
artifacts (chunks of ~1,000 words) are scored from their postings (gb_fts_postings: a
word's count in a row, and the row's length), read in an index, not from their
tsvectors, each of which would be read whole; entities and facts, a sentence each,
from their tsvectors. As on SQLite, the words in half the rows or more, which bm25
weighs at nothing, are left out of a search unless the others find too few rows
(_ranked).

Words are PostgreSQL's `english` configuration's (the Porter stemmer, as FTS5's
`porter` tokenizer; its stop words are not indexed at all).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from gligabao.store.connection import Connection
from gligabao.store.db import json_ids, query, scalar, transaction
from gligabao.store.dialect import of as dialect_of
from gligabao.store.terms import words_of

__all__ = [
    "artifact_rows",
    "edge_ids",
    "entity_candidates",
    "entity_ids",
    "index_artifact_text",
    "indexed_rows",
    "search_artifacts",
]

_K1 = 1.2
_B = 0.75
_TABLES = ("gb_fts_artifacts", "gb_fts_entities", "gb_fts_edges")


def index_artifact_text(
    conn: Connection, artifact_id: int, text: str, kind: str, dataset_id: int
) -> None:
    """Put (or replace) the artifact's row in the keyword index."""
    with transaction(conn):
        conn.execute("DELETE FROM gb_fts_artifacts WHERE id = ?", (artifact_id,))
        conn.execute(
            """INSERT INTO gb_fts_artifacts(id, dataset_id, kind, text, words, length)
               SELECT ?, ?, ?, ?, w, gb_length(w) FROM gb_words(?) AS w""",
            (artifact_id, dataset_id, kind, text, text),
        )


def artifact_rows(conn: Connection, after: int, limit: int) -> list[dict[str, Any]]:
    """Rows of the artifacts' keyword index past id `after`: `id`, `dataset_id`, `kind`,
    `text`, at most `limit`, by id."""
    return query(
        conn,
        """SELECT id, dataset_id, kind, text FROM gb_fts_artifacts
           WHERE id > ? ORDER BY id LIMIT ?""",
        (after, limit),
    )


def indexed_rows(conn: Connection, table: str, ids: list[int]) -> int:
    if table not in _TABLES:
        raise ValueError(f"not a keyword index: {table!r}")
    ids_in = dialect_of(conn).id_list("?")
    return int(scalar(conn, f"SELECT count(*) FROM {table} WHERE id IN {ids_in}", (json_ids(ids),)))


@dataclass(frozen=True)
class _Index:
    """One keyword index: the name its statistics are kept under, its table, and its
    tsvector column and length."""

    name: str
    table: str
    words: str = "words"
    length: str = "length"
    posted: bool = False  # scored from gb_fts_postings, not from its rows' tsvectors


_ARTIFACTS = _Index("artifacts", "gb_fts_artifacts", posted=True)
_EDGES = _Index("edges", "gb_fts_edges")
_ENTITIES = _Index("entities", "gb_fts_entities")
_ENTITY_NAMES = _Index("entity_names", "gb_fts_entities", "name_words", "name_length")


def _terms(conn: Connection, words: list[str]) -> list[str]:
    """The index's words (stems) of these words, in order, each once."""
    if not words:
        return []
    rows = query(
        conn,
        "SELECT lexeme FROM unnest(gb_words(?)) ORDER BY positions[1]",
        (" ".join(words),),
    )
    return list(dict.fromkeys(r["lexeme"] for r in rows))


def _statistics(conn: Connection, index: _Index, terms: list[str]) -> tuple[int, float, dict]:
    """(rows, average row length, {term: rows holding it}) of the index."""
    totals = query(
        conn, "SELECT rows, words FROM gb_fts_totals WHERE index_name = ?", (index.name,)
    )
    rows = int(totals[0]["rows"]) if totals else 0
    average = (int(totals[0]["words"]) / rows) if rows else 1.0
    found = query(
        conn,
        f"""SELECT term, rows FROM gb_fts_terms
            WHERE index_name = ? AND term IN {dialect_of(conn).text_list("?")}""",
        (index.name, json.dumps(terms)),
    )
    return rows, average or 1.0, {r["term"]: int(r["rows"]) for r in found}


def _idf(rows: int, n: int) -> float:
    # FTS5's: a word in half the rows or more gets almost nothing, never a negative weight.
    value = math.log((rows - n + 0.5) / (n + 0.5)) if rows else 0.0
    return value if value > 0 else 1e-6


def _score(tf: str, length: str) -> str:
    """Minus a row's bm25, summed over the query words `q` it holds. The constants are
    float8: as SQL's numeric literals they made the sum numeric, 1.6 times as slow."""
    k1, b = f"CAST({_K1} AS float8)", f"CAST({_B} AS float8)"
    norm = f"{k1} * (1 - {b} + {b} * {length} / :average)"
    return f"-sum(q.idf * {tf} * ({k1} + 1) / ({tf} + {norm}))"


def _tsquery(terms: list[str]) -> str:
    return " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms)


# The query's words and their weights, as a table `q` of (term, idf), from the
# parameters :terms and :idf, which _ranked passes with :d, :average and :limit.
_QUERY_WORDS = """q AS (SELECT * FROM unnest(CAST(:terms AS text[]), CAST(:idf AS float8[]))
                   AS q(term, idf))"""


def _bm25(
    conn: Connection,
    index: _Index,
    found_by: list[str],
    where: str,
    args: dict[str, Any],
    columns: str,
) -> list[dict[str, Any]]:
    """The rows of `index` holding any of `found_by`, best bm25 of the query's words
    first, with `rank` (minus the score: lower is better, as FTS5's).

    A row's counts are read for the query's words only: setweight marks their
    positions and ts_filter keeps them, in C, where unnesting the whole row (~220 words
    a chunk) cost 3.6 times as long."""
    sql = f"""
        WITH {_QUERY_WORDS}
        SELECT {columns}, {_score("w.tf", f"f.{index.length}")} AS rank
        FROM {index.table} f
        CROSS JOIN LATERAL (
            SELECT lexeme, coalesce(array_length(positions, 1), 1) AS tf
            FROM unnest(ts_filter(
                setweight(f.{index.words}, 'A', CAST(:terms AS text[])), '{{a}}'))) AS w
        JOIN q ON q.term = w.lexeme
        WHERE f.dataset_id = :d AND f.{index.words} @@ CAST(:match AS tsquery)
          AND {where.format(id="f.id")}
        GROUP BY f.id
        ORDER BY rank, f.id
        LIMIT :limit"""
    return query(conn, sql, {**args, "match": _tsquery(found_by)})


def _bm25_posted(
    conn: Connection, found_by: list[str], where: str, args: dict[str, Any], columns: str
) -> list[dict[str, Any]]:
    """_bm25 of the artifacts, from their postings (gb_fts_postings), read in the index
    alone: the postings of `found_by` give the rows; where the query holds more words,
    each of those rows' postings of them are looked up, a probe a row and word. The
    rows' own columns are read for the best `limit` alone."""
    rows = (
        "gb_fts_postings p"
        if set(found_by) >= set(args["terms"])
        else """(SELECT DISTINCT id FROM gb_fts_postings
                 WHERE dataset_id = :d AND term = ANY(CAST(:found_by AS text[]))) c
                JOIN gb_fts_postings p ON p.id = c.id"""
    )
    sql = f"""
        WITH {_QUERY_WORDS},
        best AS (
            SELECT p.id, {_score("p.tf", "p.length")} AS rank
            FROM {rows} JOIN q ON q.term = p.term
            WHERE p.dataset_id = :d AND {where.format(id="p.id")}
            GROUP BY p.id
            ORDER BY rank, p.id
            LIMIT :limit)
        SELECT {columns}, best.rank
        FROM best JOIN gb_fts_artifacts f ON f.id = best.id
        ORDER BY best.rank, best.id"""
    return query(conn, sql, {**args, "found_by": found_by})


# A word in at most this share of the rows is rare: the rows holding one are few to score.
_RARE = 0.05


def _ranked(
    conn: Connection,
    index: _Index,
    text: str,
    dataset_id: int,
    limit: int,
    *,
    where: str = "TRUE",
    params: dict[str, Any] | None = None,
    columns: str = "f.id",
) -> list[dict[str, Any]]:
    """The best `limit` rows by bm25 of `text`'s words, as if every row holding one
    were scored, scoring fewer where that gives the same answer.

    Scoring is what a keyword search spends its time on, each row holding a word. So
    the rows holding a rare word are scored first, on all the words; a row holding none
    of them scores at most what the others can give (a word adds less than its idf
    times k1 + 1), so when the last of the `limit` best scores at least that, no row
    left out could rank among them. Else the words in fewer than half the rows are
    searched for and scored, and the ones in half or more, which bm25 weighs at
    nothing, only when those find too few rows, as on SQLite. `where` names the row's
    id as `{id}`."""
    terms = _terms(conn, words_of(text))
    if not terms or limit <= 0:
        return []
    rows, average, held = _statistics(conn, index, terms)
    idf = {t: _idf(rows, held.get(t, 0)) for t in terms}

    def ranked(scored: list[str], found_by: list[str]) -> list[dict[str, Any]]:
        args = {
            **(params or {}),
            "d": dataset_id,
            "terms": scored,
            "idf": [idf[t] for t in scored],
            "average": average,
            "limit": limit,
        }
        if index.posted:
            return _bm25_posted(conn, found_by, where, args, columns)
        return _bm25(conn, index, found_by, where, args, columns)

    rare = [t for t in terms if held.get(t, 0) <= rows * _RARE]
    telling = [t for t in terms if held.get(t, 0) < (rows + 1) // 2]
    # Only worth a try when the rows holding a rare word may be `limit` at all.
    if rare and len(rare) < len(telling) and sum(held.get(t, 0) for t in rare) >= limit:
        hits = ranked(telling, rare)
        most_left_out = sum(idf[t] for t in telling if t not in rare) * (_K1 + 1)
        if len(hits) >= limit and -hits[-1]["rank"] >= most_left_out:
            return hits
    if telling and len(telling) < len(terms):
        hits = ranked(telling, telling)
        if len(hits) >= limit:
            return hits
    return ranked(terms, terms)


def search_artifacts(
    conn: Connection, dataset_id: int, text: str, limit: int, session: str | None
) -> list[dict[str, Any]]:
    where = (
        "TRUE"
        if session is None
        else "{id} IN (SELECT id FROM gb_artifacts WHERE dataset_id = :d AND session_id = :s)"
    )
    return _ranked(
        conn,
        _ARTIFACTS,
        text,
        dataset_id,
        limit,
        where=where,
        params={"s": session},
        columns="f.id AS artifact_id",
    )


def edge_ids(conn: Connection, dataset_id: int, text: str, limit: int) -> list[int]:
    return [r["id"] for r in _ranked(conn, _EDGES, text, dataset_id, limit)]


def entity_ids(
    conn: Connection, dataset_id: int, text: str, limit: int, *, names: bool
) -> list[int]:
    index = _ENTITY_NAMES if names else _ENTITIES
    return [r["id"] for r in _ranked(conn, index, text, dataset_id, limit)]


def entity_candidates(
    conn: Connection, dataset_id: int, name: str, limit: int
) -> list[dict[str, Any]]:
    ranked = _ranked(conn, _ENTITY_NAMES, name, dataset_id, limit)
    if not ranked:
        return []
    rank = {r["id"]: r["rank"] for r in ranked}
    rows = query(
        conn,
        f"SELECT * FROM gb_entities WHERE id IN {dialect_of(conn).id_list('?')}",
        (json_ids(rank),),
    )
    for row in rows:
        row["rank"] = rank[row["id"]]
    return sorted(rows, key=lambda r: (r["rank"], r["id"]))
