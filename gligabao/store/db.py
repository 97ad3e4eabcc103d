"""Opening the SQLite file, transactions, and the small query helpers every module uses.

Every connection is an apsw connection: Python's own `sqlite3` cannot load extensions
on many builds (this machine's, macOS's system Python), and sqlite-vec is an extension.
One binding everywhere, so behaviour never depends on which one happened to load.

Rows come back as plain dicts keyed by column name (a row tracer set on the connection);
computed results (a dataset, a report, statistics) are small frozen dataclasses.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import stat
import urllib.parse
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

# Every savepoint has this one name: nested ones are opened and ended in LIFO order, and
# RELEASE and ROLLBACK TO take the latest of a name, so it is always this block's own. A
# name of its own each time was SQL never seen before, ~27 times a document stored, each
# pushing a statement out of the connection's statement cache.
_SAVEPOINT = "gb_sp"
# apsw's statement cache holds the statements of the last N executions, not the last N
# distinct ones. A document stored runs ~180 statements, so at apsw's default (100) most
# were evicted before their next use: 86 prepares a document (with the savepoints above),
# about a tenth of a batch's CPU; 1.6 at this size.
STATEMENT_CACHE = 512  # apsw takes no more


class Connection(apsw.Connection):
    """An apsw connection that remembers what the error messages need to say."""

    path: str
    busy_timeout_ms: int
    read_only: bool  # opened read-only: the file or its folder cannot be written
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
    A missing or empty file raises NoDatabase. Whatever `create` says, a path that is not
    a regular file (/dev/null) and an SQLite file that holds other tables and no
    `gb_migrations` (another program's) raise DatabaseError before anything is written
    to them, WAL mode included. A gligabao database with an older schema is migrated.

    A file that cannot be written (it, or its folder: the -wal and -shm files live
    there) is opened read-only with `create=False`, and then nothing is ever written:
    no WAL switch, no migration (one that is needed is a DatabaseError), and a command
    that tries to change it gets DatabaseError; with `create=True` it is DatabaseError.
    """
    name = os.fspath(path)
    if name in (":memory:", ""):
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        return _ready(_connect(name, flags, busy_timeout_ms))
    exists = _existing(name, create)
    if create and not exists:
        try:
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseError(f"cannot create the folder of {name}: {exc.strerror}") from None
    unwritable = _unwritable(name, exists)
    if unwritable:
        if create:
            raise DatabaseError(
                f"cannot write database {name}: {unwritable}; make it writable, or choose "
                "another --db"
            )
        return _ready(_connect_read_only(name, busy_timeout_ms), read_only=True)
    flags = apsw.SQLITE_OPEN_READWRITE | (apsw.SQLITE_OPEN_CREATE if create else 0)
    # Without SQLITE_OPEN_CREATE a file removed since the check above is an error here,
    # never a new empty database.
    conn = _connect(name, flags, busy_timeout_ms, create=create)
    # Another program's file is refused before WAL mode: that too would write to it.
    return _ready(conn, check=exists, empty_ok=create)


def _existing(name: str, create: bool) -> bool:
    """Whether there is a file at `name`: DatabaseError for something else there (a
    device, a FIFO: SQLite would write a -journal beside /dev/null), NoDatabase for
    nothing unless `create`."""
    try:
        mode = os.stat(name).st_mode
    except FileNotFoundError:  # a broken symbolic link too: SQLite creates its target
        if not create:
            raise NoDatabase(name) from None
        return False
    except OSError as exc:
        raise DatabaseError(f"cannot open database {name}: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise DatabaseError(f"{name} is a directory, not a database file; check --db")
    if not stat.S_ISREG(mode):
        raise DatabaseError(f"{name} is not a regular file, so not a database; check --db")
    return True


def _unwritable(name: str, exists: bool) -> str | None:
    """What stops SQLite writing the database, or None: the file, or its folder (for
    the -wal, -shm and -journal files beside the file a symbolic link points to)."""
    if exists and not os.access(name, os.W_OK):
        return "it is read-only"
    if not os.access(os.path.dirname(os.path.realpath(name)), os.W_OK | os.X_OK):
        return "its folder is read-only (SQLite writes its -wal and -shm files there)"
    return None


def _connect(
    name: str, flags: int, busy_timeout_ms: int = 10_000, *, create: bool = True
) -> Connection:
    try:
        conn = Connection(name, flags=flags, statementcachesize=STATEMENT_CACHE)
    except apsw.CantOpenError as exc:
        if not create and not os.path.lexists(name):
            raise NoDatabase(name) from None
        raise DatabaseError(f"cannot open database {name}: {exc}") from None
    conn.path = name
    conn.busy_timeout_ms = busy_timeout_ms
    conn.read_only = False
    return conn


def _connect_read_only(name: str, busy_timeout_ms: int) -> Connection:
    """A read-only connection to a file that cannot be written. With nothing in its
    write-ahead log (the usual case: the last writer checkpointed and removed it) it is
    opened immutable, as SQLite needs to create no -shm file then; with a log it is read
    through, which SQLite can do only if the -shm file is already there."""
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    wal = f"{name}-wal"
    logged = os.path.exists(wal) and os.path.getsize(wal) > 0
    uri = "file:" + urllib.parse.quote(os.path.abspath(name)) + ("" if logged else "?immutable=1")
    conn = _connect(uri, flags, busy_timeout_ms, create=False)
    conn.path = name
    conn.read_only = True
    try:
        with translate_errors(conn):  # not a database: one line
            try:
                conn.execute("SELECT count(*) FROM sqlite_master")  # SQLite opens files here
            except apsw.CantOpenError:
                raise DatabaseError(
                    f"cannot read database {name}: it is read-only and its last changes, in "
                    f"{wal}, can be read only where its -shm file can be made; make its "
                    "folder writable"
                ) from None
    except BaseException:
        conn.close()
        raise
    return conn


def _ready(
    conn: Connection, *, read_only: bool = False, check: bool = True, empty_ok: bool = False
) -> Connection:
    """`conn` with sqlite-vec loaded, its pragmas set and its schema current; closed if
    any of that fails."""
    from gligabao.store.migrations import migrate  # migrations imports this module

    memory = conn.path in ("", ":memory:")
    try:
        conn.enable_load_extension(True)
        try:
            conn.load_extension(_sqlite_vec_path())
        except apsw.ExtensionLoadingError as exc:
            raise DatabaseError(f"cannot load sqlite-vec ({exc}); reinstall sqlite-vec") from None
        # Nothing else may load code into this process through SQL.
        conn.enable_load_extension(False)
        conn.set_busy_timeout(conn.busy_timeout_ms)
        conn.set_row_trace(dict_row)
        with translate_errors(conn):
            if check and not memory:
                _check_ours(conn, empty_ok=empty_ok)
            conn.execute("PRAGMA foreign_keys=ON")
            if read_only:
                conn.execute("PRAGMA query_only=ON")  # a write is ReadOnlyError, never tried
                _check_schema(conn)
                return conn
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _check_schema(conn: Connection) -> None:
    """A file opened read-only is used as it is: one that needs migrating is refused."""
    from gligabao.store.migrations import SCHEMA_VERSION, schema_version

    found = schema_version(conn)
    if found > SCHEMA_VERSION:
        raise SchemaTooNew(conn.path, found, SCHEMA_VERSION)
    if found < SCHEMA_VERSION:
        raise DatabaseError(
            f"database {conn.path} has schema version {found} and this gligabao needs "
            f"{SCHEMA_VERSION}, but it is read-only (it or its folder) so it cannot be "
            "migrated; make it writable and run again"
        )


def _check_ours(conn: Connection, *, empty_ok: bool = False) -> None:
    """Refuse, writing nothing, a file that holds no gligabao database: an empty one
    (NoDatabase, unless `empty_ok`: it is made one) or another program's SQLite file
    (one with tables, no gb_migrations)."""
    row = query_one(
        conn,
        """SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'gb_migrations') AS ours,
                  EXISTS (SELECT 1 FROM sqlite_master) AS anything""",
    )
    assert row is not None
    if row["ours"]:
        return
    if not row["anything"]:
        if empty_ok:
            return
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
    except apsw.CantOpenError as exc:
        raise DatabaseError(
            f"cannot open database {_path(conn)}: {exc}; check that it and its folder can be read"
        ) from None
    except apsw.ReadOnlyError:
        raise DatabaseError(
            f"cannot write database {_path(conn)}: it (or its folder) is read-only; make it "
            "writable to change it"
        ) from None
    except apsw.FullError:
        raise _no_space(conn, "database or disk is full") from None
    except apsw.IOError as exc:
        raise _io_error(conn, exc) from None


# A write refused for want of room: a full disk, a quota, a file-size limit (ulimit -f).
_NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def _no_space(conn: apsw.Connection, reason: str) -> DatabaseError:
    return DatabaseError(
        f"cannot write database {_path(conn)}: no space left ({reason}); what was stored "
        "before is kept: free some space and run the same command again to continue"
    )


def _io_error(conn: apsw.Connection, exc: apsw.IOError) -> DatabaseError:
    """SQLite's "disk I/O error", with what the system said (conn.system_errno)."""
    code = getattr(conn, "system_errno", 0)
    if code in _NO_SPACE:
        return _no_space(conn, os.strerror(code))
    reason = f"{exc} ({os.strerror(code)})" if code else str(exc)
    return DatabaseError(
        f"cannot use database {_path(conn)}: {reason}; check the disk it is on and run again"
    )


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
        conn.execute(f"SAVEPOINT {_SAVEPOINT}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {_SAVEPOINT}")
            conn.execute(f"RELEASE {_SAVEPOINT}")
            raise
        conn.execute(f"RELEASE {_SAVEPOINT}")
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
