"""The database as a user meets it: locked by another process, or not a database at all."""

from __future__ import annotations

from pathlib import Path

import apsw

from gligabao.errors import ExitCode
from gligabao.store import open_db
from gligabao.store.db import scalar

TEXT = "Ada Lovelace wrote the first program. " * 20


def test_a_locked_database_is_a_clear_error_and_stores_nothing(tmp_path: Path, gb_process):
    (tmp_path / "notes.txt").write_text(TEXT)
    db = tmp_path / "gb.db"
    open_db(db).close()  # created and migrated
    holder = apsw.Connection(str(db))
    holder.execute("BEGIN IMMEDIATE")  # another process in the middle of a write
    try:
        result = gb_process(
            "remember", "notes.txt", "--db", str(db), env={"GB_BUSY_TIMEOUT": "0.2"}
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    stderr = result.stderr.decode()
    assert result.returncode == ExitCode.DATABASE
    assert "locked" in stderr and "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1
    conn = open_db(db)
    assert scalar(conn, "SELECT count(*) FROM gb_artifacts") == 0


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path, gb_process):
    (tmp_path / "notes.txt").write_text(TEXT)
    bogus = tmp_path / "bogus.db"
    bogus.write_bytes(b"this is a text file, not SQLite\n" * 200)
    result = gb_process("remember", "notes.txt", "--db", str(bogus))
    stderr = result.stderr.decode()
    assert result.returncode == ExitCode.DATABASE
    assert "bogus.db" in stderr and "Traceback" not in stderr
    assert bogus.read_bytes() == b"this is a text file, not SQLite\n" * 200
