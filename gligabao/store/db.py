"""Opening the SQLite file, transactions, and the small query helpers every module uses.

Every connection is an apsw connection: Python's own `sqlite3` cannot load extensions
on many builds (this machine's, macOS's system Python), and sqlite-vec is an extension.
One binding everywhere, so behaviour never depends on which one happened to load.

Rows come back as plain dicts keyed by column name (a row tracer set on the connection);
computed results (a dataset, a report, statistics) are small frozen dataclasses.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import apsw

from gligabao.store.errors import DatabaseBusy, DatabaseError, NoDatabase, SchemaTooNew

__all__ = [
    "Connection",
    "DatabaseBusy",
    "DatabaseError",
    "NoDatabase",
    "SchemaTooNew",
    "dict_row",
    "integrity_problems",
    "now_iso",
    "open_db",
    "query",
    "query_one",
    "scalar",
    "table_exists",
    "transaction",
    "write",
]

Params = Sequence[Any] | Mapping[str, Any]

# Savepoint names must be unique among the ones open at once; a counter is simplest.
_savepoints = itertools.count(1)


class Connection(apsw.Connection):
    """An apsw connection that remembers what the error messages need to say."""

    path: str
    busy_timeout_ms: int
    _sibling: Connection | None = None

    def sibling(self) -> Connection:
        """A second connection to the same file, opened on first use and closed with
        this one. SQLite runs one statement at a time per connection; work meant to use
        two cores at once (a search's keyword and vector halves) needs two. An in-memory
        database has no second connection: this one is returned."""
        if self.path in ("", ":memory:"):
            return self
        if self._sibling is None:
            self._sibling = open_db(self.path, busy_timeout_ms=self.busy_timeout_ms, create=False)
        return self._sibling

    def close(self, force: bool = False) -> None:
        sibling, self._sibling = self._sibling, None
        if sibling is not None:
            sibling.close(force)
        super().close(force)


def now_iso() -> str:
    """Now, in UTC, as the ISO-8601 text every *_at column holds (sorts as it reads)."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _sqlite_vec_path() -> str:
    """The sqlite-vec loadable extension shipped in the sqlite_vec package, found without
    importing the package: its __init__ imports numpy, 60 ms a `gb search` does not need."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseError("sqlite-vec is not installed; pip install sqlite-vec")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def dict_row(cursor: apsw.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip((d[0] for d in cursor.get_description()), row, strict=True))


def open_db(
    path: str | os.PathLike[str], *, busy_timeout_ms: int = 10_000, create: bool = True
) -> Connection:
    """Open the database at `path`, ready to use; create it (and its folder) if needed.

    Loads sqlite-vec, turns on WAL (a cron job and a person can share the file), foreign
    keys and a busy timeout, then applies any pending schema migrations.

    With `create=False` (every command that only reads or deletes) nothing is created:
    no file, no folder, and no schema written into a file that is not already gligabao's.
    A missing or empty file raises NoDatabase; an SQLite file that holds other tables and
    no `gb_migrations` (another program's) raises DatabaseError before anything is
    written to it, WAL mode included. A gligabao database with an older schema is
    migrated as always.
    """
    from gligabao.store.migrations import migrate  # migrations imports this module

    name = os.fspath(path)
    memory = name == ":memory:" or name == ""
    flags = apsw.SQLITE_OPEN_READWRITE
    if create or memory:
        flags |= apsw.SQLITE_OPEN_CREATE
    if not memory and create:
        try:
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseError(f"cannot create the folder of {name}: {exc.strerror}") from None
    elif not memory and not os.path.lexists(name):
        raise NoDatabase(name)
    try:
        # Without SQLITE_OPEN_CREATE a file removed since the check above is an error
        # here, never a new empty database.
        conn = Connection(name, flags=flags)
    except apsw.CantOpenError as exc:
        if not create and not os.path.lexists(name):
            raise NoDatabase(name) from None
        raise DatabaseError(f"cannot open database {name}: {exc}") from None
    conn.path = name
    conn.busy_timeout_ms = busy_timeout_ms
    try:
        conn.enable_load_extension(True)
        try:
            conn.load_extension(_sqlite_vec_path())
        except apsw.ExtensionLoadingError as exc:
            raise DatabaseError(f"cannot load sqlite-vec ({exc}); reinstall sqlite-vec") from None
        # Nothing else may load code into this process through SQL.
        conn.enable_load_extension(False)
        conn.set_busy_timeout(busy_timeout_ms)
        conn.set_row_trace(dict_row)
        with translate_errors(conn):
            if not create and not memory:
                _check_ours(conn)  # before WAL: that too would write to the file
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA synchronous=NORMAL")
            migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _check_ours(conn: Connection) -> None:
    """Refuse, writing nothing, a file that holds no gligabao database: an empty one
    (NoDatabase) or another program's SQLite file (one with tables, no gb_migrations)."""
    row = query_one(
        conn,
        """SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'gb_migrations') AS ours,
                  EXISTS (SELECT 1 FROM sqlite_master) AS anything""",
    )
    assert row is not None
    if row["ours"]:
        return
    if not row["anything"]:
        raise NoDatabase(conn.path, " (the file is empty)")
    raise DatabaseError(
        f"{conn.path} is an SQLite database but not a gligabao one (it has other tables "
        "and no gb_migrations); check --db"
    )


@contextmanager
def translate_errors(conn: Connection) -> Iterator[None]:
    """Turn SQLite's lock and file errors into the store's one-line errors."""
    try:
        yield
    except (apsw.BusyError, apsw.LockedError):
        raise DatabaseBusy(_path(conn), _timeout(conn)) from None
    except apsw.NotADBError:
        raise DatabaseError(
            f"{_path(conn)} is not a database (not an SQLite file); check --db"
        ) from None
    except apsw.CorruptError:
        raise DatabaseError(f"database {_path(conn)} is corrupt") from None
    except apsw.ReadOnlyError:
        raise DatabaseError(f"database {_path(conn)} is read-only") from None


def _path(conn: apsw.Connection) -> str:
    return getattr(conn, "path", None) or conn.filename or ":memory:"


def _timeout(conn: apsw.Connection) -> int:
    return getattr(conn, "busy_timeout_ms", 0)


@contextmanager
def transaction(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """`BEGIN IMMEDIATE` … `COMMIT`, or `ROLLBACK` and re-raise on any exception.

    IMMEDIATE takes the write lock up front, so two writers wait on the busy timeout at
    BEGIN instead of failing halfway. Nested use (a store function called inside the
    pipeline's per-chunk transaction) becomes a savepoint: the inner block rolls back
    alone on error and commits with the outer one.
    """
    if not conn.get_autocommit():
        name = f"gb_sp_{next(_savepoints)}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return

    with translate_errors(conn):
        conn.execute("BEGIN IMMEDIATE")
    try:
        with translate_errors(conn):
            yield conn
    except BaseException:
        if not conn.get_autocommit():
            conn.execute("ROLLBACK")
        raise
    try:
        with translate_errors(conn):
            conn.execute("COMMIT")
    except BaseException:
        if not conn.get_autocommit():
            conn.execute("ROLLBACK")
        raise


@contextmanager
def read_transaction(conn: apsw.Connection) -> Iterator[apsw.Connection]:
    """One read transaction around several SELECTs, so that they all see the same moment
    of the file (WAL) even while another process writes (an export's entities, facts and
    evidence agree). Inside a transaction already, it adds nothing."""
    if not conn.get_autocommit():
        yield conn
        return
    with translate_errors(conn):  # type: ignore[arg-type]
        conn.execute("BEGIN DEFERRED")
    try:
        yield conn
    finally:
        if not conn.get_autocommit():
            conn.execute("COMMIT")  # nothing was written: it only ends the read


def json_ids(ids: Iterable[int]) -> str:
    """Ids bound as one JSON parameter (`IN (SELECT value FROM json_each(?))`): no limit
    on their number, no SQL pasting."""
    return json.dumps([int(i) for i in ids])


def write(conn: apsw.Connection, sql: str, params: Params = ()) -> int:
    """Run one writing statement in a transaction (so a lock is DatabaseBusy, never a raw
    apsw error); returns the number of rows it changed."""
    with transaction(conn):
        conn.execute(sql, params)
        return conn.changes()


def query(conn: apsw.Connection, sql: str, params: Params = ()) -> list[dict[str, Any]]:
    return list(conn.execute(sql, params))


def query_one(conn: apsw.Connection, sql: str, params: Params = ()) -> dict[str, Any] | None:
    for row in conn.execute(sql, params):
        return row
    return None


def scalar(conn: apsw.Connection, sql: str, params: Params = ()) -> Any:
    """The first column of the first row, or None when there is no row."""
    row = query_one(conn, sql, params)
    return None if row is None else next(iter(row.values()))


def table_exists(conn: apsw.Connection, name: str) -> bool:
    return bool(scalar(conn, "SELECT count(*) FROM sqlite_master WHERE name = ?", (name,)))


def integrity_problems(conn: apsw.Connection) -> list[str]:
    """Everything SQLite finds wrong with the file; an empty list means healthy."""
    problems = [
        r["integrity_check"]
        for r in query(conn, "PRAGMA integrity_check")
        if r["integrity_check"] != "ok"
    ]
    problems += [
        f"foreign key: {r['table']} row {r['rowid']} -> {r['parent']}"
        for r in query(conn, "PRAGMA foreign_key_check")
    ]
    for fts in ("gb_fts_artifacts", "gb_fts_entities", "gb_fts_edges"):
        try:
            conn.execute(f"INSERT INTO {fts}({fts}) VALUES ('integrity-check')")
        except (apsw.BusyError, apsw.LockedError):
            raise DatabaseBusy(_path(conn), _timeout(conn)) from None
        except apsw.Error as exc:  # FTS5 reports a damaged index as an error
            problems.append(f"{fts}: {exc}")
    return problems
