"""Connecting to an SQLite file, and its locking: the SQLite side of store.Connection.

Every connection is an apsw connection: Python's own `sqlite3` cannot load extensions
on many builds (this machine's, macOS's system Python), and sqlite-vec is an extension.
One binding everywhere, so behaviour never depends on which one happened to load.

`SQLiteConnection` is an apsw connection itself, not a wrapper around one: the store's
statements go straight to apsw's C methods, and rows come back as plain dicts keyed by
column name through a row tracer set on the connection. It adds the few things the
store.Connection protocol asks for that apsw has under other names or not at all.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import stat
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager

import apsw

from gligabao.store.db import query, query_one, scalar
from gligabao.store.errors import Conflict, DatabaseBusy, DatabaseError, NoDatabase, SchemaTooNew
from gligabao.store.sqlite import migrations

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "SQLiteConnection",
    "open_db",
    "peek_db",
    "table_exists",
    "translate_errors",
]

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

# A search reads much of the file (a KNN scan reads every vector): mapped, SQLite reads
# it straight from the OS page cache rather than copying it into its own, ~40% faster
# (29 -> 18 ms for the KNN at 10,000 chunks of 1,536 dimensions). Only for searching:
# mapped pages count in a process's resident memory, and a long `gb remember -r` has no
# use for them. SQLite caps the size at its compiled maximum.
_MAP_BYTES = 1 << 40

# The FTS5 tables, each able to check itself against the rows it indexes.
_FTS_TABLES = ("gb_fts_artifacts", "gb_fts_entities", "gb_fts_edges")


class SQLiteConnection(apsw.Connection):
    """An apsw connection that speaks store.Connection, and remembers what the error
    messages need to say."""

    dialect = "sqlite"
    path: str
    busy_timeout_ms: int
    read_only: bool  # opened read-only: the file or its folder cannot be written
    _sibling: SQLiteConnection | None = None
    _whole = False  # in a `whole` transaction: nested ones add no savepoint

    def sibling(self) -> SQLiteConnection:
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

    def for_search(self) -> SQLiteConnection:
        """This connection with the file mapped into memory (see _MAP_BYTES)."""
        self.execute(f"PRAGMA mmap_size={_MAP_BYTES}")
        return self

    @contextmanager
    def transaction(self, *, whole: bool = False) -> Iterator[SQLiteConnection]:
        """`BEGIN IMMEDIATE` … `COMMIT`, or `ROLLBACK` and re-raise on any exception.

        IMMEDIATE takes the write lock up front, so two writers wait on the busy timeout
        at BEGIN instead of failing halfway. Nested use (a store function called inside
        the pipeline's per-chunk transaction) becomes a savepoint: the inner block rolls
        back alone on error and commits with the outer one. Inside a `whole` block
        (db.transaction) nested use adds nothing.
        """
        if not self.get_autocommit():
            if self._whole:
                yield self
                return
            self.execute(f"SAVEPOINT {_SAVEPOINT}")
            self._whole = whole
            try:
                yield self
            except BaseException:
                self.execute(f"ROLLBACK TO {_SAVEPOINT}")
                self.execute(f"RELEASE {_SAVEPOINT}")
                raise
            finally:
                self._whole = False
            self.execute(f"RELEASE {_SAVEPOINT}")
            return

        with translate_errors(self):
            self.execute("BEGIN IMMEDIATE")
        self._whole = whole
        try:
            with translate_errors(self):
                yield self
        except BaseException:
            if not self.get_autocommit():
                self.execute("ROLLBACK")
            raise
        finally:
            self._whole = False
        try:
            with translate_errors(self):
                self.execute("COMMIT")
        except BaseException:
            if not self.get_autocommit():
                self.execute("ROLLBACK")
            raise

    @contextmanager
    def read_transaction(self) -> Iterator[SQLiteConnection]:
        """One read transaction around several SELECTs, so that they all see the same
        moment of the file (WAL) even while another process writes. Inside a transaction
        already, it adds nothing."""
        if not self.get_autocommit():
            yield self
            return
        with translate_errors(self):
            self.execute("BEGIN DEFERRED")
        try:
            yield self
        finally:
            if not self.get_autocommit():
                self.execute("COMMIT")  # nothing was written: it only ends the read

    def integrity_problems(self) -> list[str]:
        """Everything SQLite finds wrong with the file; an empty list means healthy."""
        problems = [
            r["integrity_check"]
            for r in query(self, "PRAGMA integrity_check")
            if r["integrity_check"] != "ok"
        ]
        problems += [
            f"foreign key: {r['table']} row {r['rowid']} -> {r['parent']}"
            for r in query(self, "PRAGMA foreign_key_check")
        ]
        for fts in _FTS_TABLES:
            try:
                self.execute(f"INSERT INTO {fts}({fts}) VALUES ('integrity-check')")
            except (apsw.BusyError, apsw.LockedError):
                raise DatabaseBusy(_path(self), _timeout(self)) from None
            except apsw.Error as exc:  # FTS5 reports a damaged index as an error
                problems.append(f"{fts}: {exc}")
        return problems


def dict_row(cursor: apsw.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    # Every row read goes through here (~150 a document stored): the names as a list,
    # not a generator, take half the time; a description is as long as its rows.
    return dict(zip([d[0] for d in cursor.get_description()], row))  # noqa: B905


def table_exists(conn: SQLiteConnection, name: str) -> bool:
    return bool(scalar(conn, "SELECT count(*) FROM sqlite_master WHERE name = ?", (name,)))


def _sqlite_vec_path() -> str:
    """The sqlite-vec loadable extension shipped in the sqlite_vec package, found without
    importing the package: its __init__ imports numpy, 60 ms a `gb search` does not need."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseError("sqlite-vec is not installed; pip install sqlite-vec")
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def open_db(
    path: str | os.PathLike[str], *, busy_timeout_ms: int = 10_000, create: bool = True
) -> SQLiteConnection:
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
        from pathlib import Path  # ~1 ms of every start: here, for a file to create

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


@contextmanager
def peek_db(
    path: str | os.PathLike[str], *, busy_timeout_ms: int = 1_000
) -> Iterator[SQLiteConnection | None]:
    """A query-only look into the database file at `path`, or None where there is no
    file there (or only an in-memory name).

    Never creates the file and never writes to it: it is opened without SQLite's create
    flag, no migration runs, sqlite-vec is not loaded, and the connection is query-only.
    A file that cannot be read (locked past `busy_timeout_ms`, not a database, another
    schema) raises DatabaseError (DatabaseBusy when locked), with one line saying why.
    """
    name = os.fspath(path)
    if name in ("", ":memory:") or not os.path.isfile(name):
        yield None
        return
    try:
        # READWRITE without CREATE: a missing file is an error, never a new database.
        # (Not READONLY where it can be written: SQLite could not remove the -wal and -shm
        # files on close. Where it cannot, as on a read-only folder, READONLY reads it.)
        folder = os.path.dirname(os.path.abspath(name))
        writable = os.access(name, os.W_OK) and os.access(folder, os.W_OK)
        flags = apsw.SQLITE_OPEN_READWRITE if writable else apsw.SQLITE_OPEN_READONLY
        conn = SQLiteConnection(name, flags=flags)
    except apsw.Error as exc:
        raise DatabaseError(f"cannot open database {name}: {exc}") from None
    conn.path = conn.filename
    conn.busy_timeout_ms = busy_timeout_ms
    conn.read_only = True
    try:
        conn.set_busy_timeout(busy_timeout_ms)
        conn.set_row_trace(dict_row)
        with translate_errors(conn):  # locked, not a database, corrupt: one line each
            conn.execute("PRAGMA query_only=ON")
            yield conn
    except apsw.Error as exc:  # anything else, e.g. an SQLite file that is not gb's
        raise DatabaseError(f"cannot read database {name}: {exc}") from None
    finally:
        conn.close()


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
) -> SQLiteConnection:
    try:
        conn = SQLiteConnection(name, flags=flags, statementcachesize=STATEMENT_CACHE)
    except apsw.CantOpenError as exc:
        if not create and not os.path.lexists(name):
            raise NoDatabase(name) from None
        raise DatabaseError(f"cannot open database {name}: {exc}") from None
    conn.path = name
    conn.busy_timeout_ms = busy_timeout_ms
    conn.read_only = False
    return conn


def _connect_read_only(name: str, busy_timeout_ms: int) -> SQLiteConnection:
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
    conn: SQLiteConnection, *, read_only: bool = False, check: bool = True, empty_ok: bool = False
) -> SQLiteConnection:
    """`conn` with sqlite-vec loaded, its pragmas set and its schema current; closed if
    any of that fails."""
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
            _use_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            migrations.migrate(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _use_wal(conn: SQLiteConnection) -> None:
    """Switch the file to WAL mode, once: a file already in it is only read.

    The switch of a new file is the one lock SQLite does not wait for: two processes
    creating the same database at once (two cron jobs) each hold a read lock and want the
    write lock, so SQLite answers one of them "locked" at once rather than call its busy
    handler, which could wait forever. That one tries again here, within the busy
    timeout, by when the other has switched the file and there is nothing left to do."""
    deadline = time.monotonic() + conn.busy_timeout_ms / 1000
    pause = 0.001
    while True:
        try:
            if scalar(conn, "PRAGMA journal_mode") == "wal":
                return
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except (apsw.BusyError, apsw.LockedError):
            if time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)


def _check_schema(conn: SQLiteConnection) -> None:
    """A file opened read-only is used as it is: one that needs migrating is refused."""
    found = migrations.schema_version(conn)
    known = migrations.SCHEMA_VERSION
    if found > known:
        raise SchemaTooNew(conn.path, found, known)
    if found < known:
        raise DatabaseError(
            f"database {conn.path} has schema version {found} and this gligabao needs "
            f"{known}, but it is read-only (it or its folder) so it cannot be "
            "migrated; make it writable and run again"
        )


def _check_ours(conn: SQLiteConnection, *, empty_ok: bool = False) -> None:
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
def translate_errors(conn: apsw.Connection) -> Iterator[None]:
    """Turn SQLite's lock and file errors into the store's one-line errors."""
    try:
        yield
    except (apsw.BusyError, apsw.LockedError):
        raise DatabaseBusy(_path(conn), _timeout(conn)) from None
    except apsw.ConstraintError as exc:
        raise Conflict(f"database {_path(conn)} refused a write: {exc}") from None
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
