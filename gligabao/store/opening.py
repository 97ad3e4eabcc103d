"""Opening the store: a `postgresql://` URL is a PostgreSQL database, anything else the
path of an SQLite file. The one place that tells them apart."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from gligabao.base.redact import safe_url
from gligabao.store.connection import Connection
from gligabao.store.errors import DatabaseError, NoDatabase
from gligabao.store.postgres.urls import DEFAULT_SCHEMA, is_url, safe_db_url
from gligabao.store.sqlite import connect as sqlite

__all__ = ["DEFAULT_SCHEMA", "is_url", "open_db", "peek_db", "safe_db_url"]


def _refuse_other_urls(name: str) -> None:
    # Without this, mysql://… would be a file under ./mysql:/, made silently.
    if "://" in name:
        raise DatabaseError(
            f"{safe_url(name)} is not a database gb can open: give a postgresql:// URL "
            "or the path of an SQLite file"
        )


def open_db(
    target: str | os.PathLike[str],
    *,
    busy_timeout_ms: int = 10_000,
    create: bool = True,
    schema: str = DEFAULT_SCHEMA,
) -> Connection:
    """The store at `target`, ready to use (see sqlite.connect.open_db and
    postgres.connect.open_pg): created where needed with `create`."""
    name = os.fspath(target)
    if is_url(name):
        from gligabao.store.postgres.connect import open_pg

        return open_pg(name, schema=schema, busy_timeout_ms=busy_timeout_ms, create=create)
    _refuse_other_urls(name)
    return sqlite.open_db(name, busy_timeout_ms=busy_timeout_ms, create=create)


@contextmanager
def peek_db(
    target: str | os.PathLike[str], *, busy_timeout_ms: int = 1_000, schema: str = DEFAULT_SCHEMA
) -> Iterator[Connection | None]:
    """A read-only look into the store at `target`, or None where there is none yet:
    nothing is created or written (see sqlite.connect.peek_db)."""
    name = os.fspath(target)
    if not is_url(name):
        _refuse_other_urls(name)
        with sqlite.peek_db(name, busy_timeout_ms=busy_timeout_ms) as conn:
            yield conn
        return
    from gligabao.store.postgres.connect import open_pg

    try:
        conn = open_pg(
            name, schema=schema, busy_timeout_ms=busy_timeout_ms, create=False, read_only=True
        )
    except NoDatabase:
        yield None
        return
    try:
        yield conn
    finally:
        conn.close()
