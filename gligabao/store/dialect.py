"""The SQL each database writes its own way, as fragments the shared queries are built
with: `dialect.of(conn).id_list("?")`. Everything else in the store's SQL reads the same
in SQLite and PostgreSQL (RETURNING, ON CONFLICT DO NOTHING, string_agg...)."""

from __future__ import annotations

from types import ModuleType

from gligabao.store.connection import Connection
from gligabao.store.sqlite import dialect as sqlite

__all__ = ["NO_LIMIT", "of"]

# What `LIMIT` is given for "no limit": both databases read a number; SQLite's -1 and
# PostgreSQL's ALL are each the other's error.
NO_LIMIT = 1 << 62


def of(conn: Connection) -> ModuleType:
    if conn.dialect == "postgresql":
        # Here: an SQLite store (every `gb search` on one) never imports it, ~1 ms.
        from gligabao.store.postgres import dialect as postgres

        return postgres
    return sqlite
