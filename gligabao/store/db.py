"""The small helpers the store's SQL is written with, over any store.Connection.

Rows come back as plain dicts keyed by column name; computed results (a dataset, a
report, statistics) are small frozen dataclasses, or records (base/record.py) where a
search loads them. What a database does its own way (a transaction's locking, checking
its file) the connection does: these only ask it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from contextlib import AbstractContextManager

from gligabao.store.connection import Connection, Params

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "insert",
    "integrity_problems",
    "json_ids",
    "now_iso",
    "query",
    "query_one",
    "read_transaction",
    "scalar",
    "transaction",
    "write",
]


def now_iso() -> str:
    """Now, in UTC, as the ISO-8601 text every *_at column holds (sorts as it reads)."""
    from datetime import datetime, timezone  # ~1 ms of every start: not for reading

    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def transaction(conn: Connection, *, whole: bool = False) -> AbstractContextManager[Connection]:
    """A writing transaction: committed at the end of the block, rolled back (and the
    exception re-raised) on any exception. The write lock is taken up front, so two
    writers wait on the busy timeout at the start instead of failing halfway. Nested use
    (a store function called inside the pipeline's per-chunk transaction) becomes a
    savepoint: the inner block rolls back alone on error and commits with the outer one.

    `whole`: the block is all or nothing, and nothing in it catches an error of the
    store to go on: the transactions nested in it add no savepoint (an error in one
    rolls back the whole block). A savepoint costs two statements, ~36 pairs a document
    of a batch stored.
    """
    return conn.transaction(whole=whole)


def read_transaction(conn: Connection) -> AbstractContextManager[Connection]:
    """One read transaction around several SELECTs, so that they all see the same moment
    of the data even while another process writes (an export's entities, facts and
    evidence agree). Inside a transaction already, it adds nothing."""
    return conn.read_transaction()


def integrity_problems(conn: Connection) -> list[str]:
    """Everything the database finds wrong with itself; an empty list means healthy."""
    return conn.integrity_problems()


def json_ids(ids: Iterable[int]) -> str:
    """Ids bound as one JSON parameter (`IN dialect.of(conn).id_list("?")`): no limit on
    their number, no SQL pasting."""
    return json.dumps([int(i) for i in ids])


def write(conn: Connection, sql: str, params: Params = ()) -> int:
    """Run one writing statement in a transaction (so a lock is DatabaseBusy, never a raw
    driver error); returns the number of rows it changed."""
    with conn.transaction():
        conn.execute(sql, params)
        return conn.changes()


def insert(conn: Connection, sql: str, params: Params = ()) -> int:
    """Run one INSERT of one row and return the id it was given (`RETURNING id`, which
    both databases speak; SQLite's last_insert_rowid has no twin in PostgreSQL)."""
    (row,) = query(conn, f"{sql} RETURNING id", params)
    return int(row["id"])


def query(conn: Connection, sql: str, params: Params = ()) -> list[dict[str, Any]]:
    return list(conn.execute(sql, params))


def query_one(conn: Connection, sql: str, params: Params = ()) -> dict[str, Any] | None:
    for row in conn.execute(sql, params):
        return row
    return None


def scalar(conn: Connection, sql: str, params: Params = ()) -> Any:
    """The first column of the first row, or None when there is no row."""
    row = query_one(conn, sql, params)
    return None if row is None else next(iter(row.values()))
