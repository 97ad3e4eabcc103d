"""Connecting to PostgreSQL, and its locking: the PostgreSQL side of store.Connection.

A `postgresql://` URL (libpq's: `sslmode` and the other parameters pass through) opens
one psycopg connection in autocommit mode; the store's own transactions say BEGIN and
COMMIT, as they do on SQLite. Everything gb keeps lives in one schema (`gligabao` unless
told), so gb can share a database with other programs.

Writers are serialized as SQLite serializes them: a writing transaction first takes one
advisory lock of the schema, held to its end, so the store's read-then-write steps (a
claim, an entity found or made) see no other writer between the two; readers never wait.
The wait is the busy timeout, as on SQLite, and a writer that outwaits it is
DatabaseBusy. psycopg is imported here only, when a URL is opened (~300 ms).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from gligabao.store.errors import Conflict, DatabaseBusy, DatabaseError, NoDatabase, SchemaTooNew
from gligabao.store.postgres import migrations
from gligabao.store.postgres.urls import DEFAULT_SCHEMA, is_url, safe_db_url

__all__ = ["DEFAULT_SCHEMA", "PostgresConnection", "is_url", "open_pg", "safe_db_url"]

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_SAVEPOINT = "gb_sp"


def _password(url: str) -> str | None:
    """The password in the URL, to scrub from the server's own messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    params = dict(parse_qsl(parts.query))
    return parts.password or params.get("password")


@lru_cache(maxsize=512)
def _translated(sql: str) -> str:
    """The store's SQL with `?` and `:name` placeholders in psycopg's form (`%s`,
    `%(name)s`), and a literal % doubled; quoted text, identifiers and `::` casts kept."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"":
            end = sql.find(c, i + 1)
            while end != -1 and end + 1 < n and sql[end + 1] == c:  # '' inside a literal
                end = sql.find(c, end + 2)
            end = n - 1 if end == -1 else end
            out.append(sql[i : end + 1].replace("%", "%%"))
            i = end + 1
        elif c == "?":
            out.append("%s")
            i += 1
        elif c == ":" and i + 1 < n and sql[i + 1] == ":":
            out.append("::")
            i += 2
        elif c == ":" and i + 1 < n and (sql[i + 1].isalpha() or sql[i + 1] == "_"):
            j = i + 1
            while j < n and (sql[j].isalnum() or sql[j] == "_"):
                j += 1
            out.append(f"%({sql[i + 1 : j]})s")
            i = j
        elif c == "%":
            out.append("%%")
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _params(params: Any) -> Any:
    """Parameters as PostgreSQL's columns take them: a bool is the 0 or 1 an INTEGER
    column holds, as SQLite stores it."""
    if params is None:
        return None
    if isinstance(params, dict):
        return {k: int(v) if isinstance(v, bool) else v for k, v in params.items()}
    return [int(v) if isinstance(v, bool) else v for v in params]


class PostgresConnection:
    """A psycopg connection that speaks store.Connection."""

    dialect = "postgresql"

    def __init__(
        self, raw: Any, url: str, schema: str, busy_timeout_ms: int, read_only: bool
    ) -> None:
        self.raw = raw
        self.url = url
        self.path = safe_db_url(url)  # what messages name: never the password
        self.schema = schema
        self.busy_timeout_ms = busy_timeout_ms
        self.read_only = read_only
        self._changes = 0
        self._sibling: PostgresConnection | None = None
        self._whole = False  # in a `whole` transaction: nested ones add no savepoint
        # The one lock every writer of this schema takes (see the module's docstring).
        self._write_lock = zlib.crc32(f"gligabao:{schema}".encode())

    # ---- running SQL

    def execute(self, statements: str, bindings: Any = None) -> Iterator[dict[str, Any]]:
        with self._errors():
            cur = self.raw.execute(
                _translated(statements) if bindings is not None else statements,
                _params(bindings),
            )
            self._changes = max(cur.rowcount, 0)
            rows = cur.fetchall() if cur.description is not None else []
        return iter(rows)

    def executemany(self, statements: str, sequenceofbindings: Iterable[Any]) -> None:
        with self._errors():
            cur = self.raw.cursor()
            cur.executemany(_translated(statements), [_params(p) for p in sequenceofbindings])
            self._changes = max(cur.rowcount, 0)

    def changes(self) -> int:
        return self._changes

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw.info.transaction_status != TransactionStatus.IDLE

    # ---- transactions

    @contextmanager
    def transaction(self, *, whole: bool = False) -> Iterator[PostgresConnection]:
        """BEGIN, the schema's write lock, … COMMIT; ROLLBACK and re-raise on any
        exception. Nested use is a savepoint, as on SQLite, and adds nothing inside a
        `whole` block (db.transaction)."""
        if self.in_transaction:
            if self._whole:
                yield self
                return
            self.execute(f"SAVEPOINT {_SAVEPOINT}")
            self._whole = whole
            try:
                yield self
            except BaseException:
                self.execute(f"ROLLBACK TO SAVEPOINT {_SAVEPOINT}")
                self.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")
                raise
            finally:
                self._whole = False
            self.execute(f"RELEASE SAVEPOINT {_SAVEPOINT}")
            return
        if self.read_only:
            raise DatabaseError(f"database {self.path} was opened to read only; nothing written")
        self.execute("BEGIN")
        self._whole = whole
        try:
            self.execute(f"SET LOCAL lock_timeout = {int(self.busy_timeout_ms)}")
            self.execute("SELECT pg_advisory_xact_lock(?)", (self._write_lock,))
            yield self
        except BaseException:
            self._end("ROLLBACK")
            raise
        finally:
            self._whole = False
        try:
            self.execute("COMMIT")
        except BaseException:
            self._end("ROLLBACK")
            raise

    @contextmanager
    def read_transaction(self) -> Iterator[PostgresConnection]:
        """One snapshot for several reads; inside a transaction already, nothing more."""
        if self.in_transaction:
            yield self
            return
        self.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        try:
            yield self
        finally:
            self._end("COMMIT")

    def _end(self, statement: str) -> None:
        if self.in_transaction and not self.raw.closed:
            self.raw.execute(statement)

    # ---- the rest of store.Connection

    def for_search(self) -> PostgresConnection:
        return self

    def sibling(self) -> PostgresConnection:
        """A second connection to the same database, for a search's second thread."""
        if self._sibling is None:
            self._sibling = open_pg(
                self.url, schema=self.schema, busy_timeout_ms=self.busy_timeout_ms, create=False
            )
        return self._sibling

    def integrity_problems(self) -> list[str]:
        """PostgreSQL checks its constraints as it writes; what is left to look at is an
        index a failed build left invalid."""
        rows = self.execute(
            """SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = ? AND NOT i.indisvalid""",
            (self.schema,),
        )
        return [f"index {r['relname']} is invalid; REINDEX it" for r in rows]

    def close(self, force: bool = False) -> None:
        sibling, self._sibling = self._sibling, None
        if sibling is not None:
            sibling.close(force)
        self.raw.close()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """psycopg's errors as the store's one-line errors, the password never in them."""
        import psycopg
        from psycopg import errors

        try:
            yield
        except psycopg.IntegrityError as exc:
            raise Conflict(
                f"database {self.path} refused a write: {_reason(exc, self.url)}"
            ) from None
        except errors.LockNotAvailable:
            raise DatabaseBusy(self.path, self.busy_timeout_ms) from None
        except errors.ReadOnlySqlTransaction:
            raise DatabaseError(
                f"cannot write database {self.path}: the server takes reads only (a replica?)"
            ) from None
        except psycopg.OperationalError as exc:
            raise DatabaseError(
                f"lost the connection to {self.path}: {_reason(exc, self.url)}"
            ) from None


def _reason(exc: Exception, url: str) -> str:
    """The server's or libpq's first line, with the password scrubbed."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    password = _password(url)
    if password:
        text = text.replace(password, "****")
    return text


def open_pg(
    url: str,
    *,
    schema: str = DEFAULT_SCHEMA,
    busy_timeout_ms: int = 10_000,
    create: bool = True,
    read_only: bool = False,
) -> PostgresConnection:
    """Connect to the database at `url`, ready to use: the schema made and migrated with
    `create`; without it (every command that only reads or deletes) a schema gb never
    made is NoDatabase, and one that needs migrating is migrated all the same."""
    if not _SCHEMA_NAME.fullmatch(schema):
        raise DatabaseError(
            f"schema name {schema!r} is not one gb uses: lowercase letters, digits and _"
        )
    try:
        import psycopg
        from psycopg.rows import dict_row
    except ImportError:
        raise DatabaseError(
            "a postgresql:// database needs psycopg: pip install 'gligabao-gb[postgres]'"
        ) from None
    try:
        # Parameters bound on the client, as literals: the store's SQL binds None and
        # untyped values where SQLite needs no type, and a literal NULL or '…' takes its
        # type from where it stands, as PostgreSQL's own SQL would.
        raw = psycopg.connect(
            url,
            autocommit=True,
            row_factory=dict_row,
            cursor_factory=psycopg.ClientCursor,
            connect_timeout=10,
        )
    except psycopg.Error as exc:
        raise DatabaseError(
            f"cannot connect to PostgreSQL at {safe_db_url(url)}: {_reason(exc, url)}"
        ) from None
    conn = PostgresConnection(raw, url, schema, busy_timeout_ms, read_only)
    try:
        with conn._errors():
            raw.execute("SET TimeZone = 'UTC'")
            exists = raw.execute(
                "SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)
            ).fetchone()
            if not exists and not create:
                raise NoDatabase(conn.path, f" (no schema {schema} in it)")
            # A reading command writes nothing it need not: it can read a replica, which
            # takes no writes at all (the schema is there, and up to date, or it says so).
            if create and not read_only:
                _prepare(conn, schema)
            raw.execute(f"SET search_path TO {_search_path(conn, schema)}")
            if not create and migrations.schema_version(conn) == 0:
                raise NoDatabase(conn.path, f" (schema {schema} holds no gligabao tables)")
            if read_only:
                raw.execute("SET default_transaction_read_only = on")
                _check_schema(conn)
            else:
                migrations.migrate(conn)
    except BaseException:
        raw.close()
        raise
    return conn


def _prepare(conn: PostgresConnection, schema: str) -> None:
    """The schema and the extensions, made once (under the write lock: two first runs
    at once would both try): pgvector, which gb needs, and unaccent where gb may add it
    (keyword search folds accents with it, as FTS5 does)."""
    with conn.transaction():
        conn.raw.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        if not _extension_schema(conn, "vector"):
            try:
                with conn.transaction():
                    conn.raw.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except Exception as exc:
                raise DatabaseError(
                    f"database {conn.path} has no pgvector and gb could not add it "
                    f"({_reason(exc, conn.url)}); ask its owner to CREATE EXTENSION vector"
                ) from None
        if not _extension_schema(conn, "unaccent"):
            try:
                with conn.transaction():  # a savepoint: refused, the rest goes on
                    conn.raw.execute("CREATE EXTENSION IF NOT EXISTS unaccent")
            except Exception:  # not allowed here: accents stay as written
                pass


def _extension_schema(conn: PostgresConnection, name: str) -> str | None:
    row = conn.raw.execute(
        """SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
           WHERE e.extname = %s""",
        (name,),
    ).fetchone()
    return row["nspname"] if row else None


def _search_path(conn: PostgresConnection, schema: str) -> str:
    """gb's schema first, then public and wherever the extensions live (a managed
    database may keep them in a schema of their own, as Supabase's `extensions`)."""
    found = [_extension_schema(conn, name) for name in ("vector", "unaccent")]
    schemas = dict.fromkeys([schema, "public", *(s for s in found if s)])
    return ", ".join(f'"{s}"' for s in schemas)


def _check_schema(conn: PostgresConnection) -> None:
    found = migrations.schema_version(conn)
    if found > migrations.SCHEMA_VERSION:
        raise SchemaTooNew(conn.path, found, migrations.SCHEMA_VERSION)
    if found < migrations.SCHEMA_VERSION:
        raise DatabaseError(
            f"database {conn.path} has schema version {found} and this gligabao needs "
            f"{migrations.SCHEMA_VERSION}; run a writing gb command (gb remember) to migrate it"
        )
