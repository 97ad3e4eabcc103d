"""What gb does with inputs, database paths and outputs that are not what it expects
(a full disk among them): one line on stderr and a documented exit code, or plain correct
behaviour; never a hang, a traceback, or a write into a file that is not gb's to change.

Everything runs as a real process (`python -m gligabao`) with a timeout, so that a hang
fails the test instead of blocking the suite, and an address-space limit where the old
behaviour was to read without end. Read-only folders are tested with the file modes
enforced even for root (tests/support/privileges.py), skipped where that cannot be arranged.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

from gligabao.errors import ExitCode
from gligabao.store import open_db
from gligabao.store.db import query
from gligabao.store.sqlite.migrations import MIGRATIONS
from tests.support.helpers import story
from tests.support.privileges import as_user, permissions_apply

TEXT = "Herons nest by the river in spring.\n\nOtters fish there at dusk.\n"
MEMORY = 1 << 30  # the address space a run may use where it once read without end

posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs, devices and rlimits: POSIX")


def gb(
    *args: str,
    stdin: Any = subprocess.DEVNULL,
    stdout: Any = subprocess.PIPE,
    preexec_fn: Callable[[], None] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[bytes]:
    """`gb ARGS` as a real process in the test's folder; a hang past ``timeout`` fails."""
    return subprocess.run(
        [sys.executable, "-m", "gligabao", *args],
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        preexec_fn=preexec_fn,
        timeout=timeout,
        check=False,
    )


def the_line(done: subprocess.CompletedProcess[bytes]) -> str:
    """The one line gb wrote on stderr (no traceback, nothing else)."""
    text = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in text, text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def bounded_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def remembered(db: str = "gb.db", name: str = "notes.txt") -> None:
    Path(name).write_text(TEXT)
    done = gb("remember", name, "--db", db, "--quiet")
    assert done.returncode == 0, done.stderr


def files(folder: str | Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir()) if p.is_file()}


# ------------------------------------------------------------------ another program's file


def test_remember_refuses_another_programs_sqlite_file_and_leaves_it_byte_identical() -> None:
    other = apsw.Connection("other.db")
    other.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')")
    other.close()
    before = Path("other.db").read_bytes()
    Path("notes.txt").write_text(TEXT)

    done = gb("remember", "notes.txt", "--db", "other.db")

    assert done.returncode == ExitCode.DATABASE
    line = the_line(done)
    assert "other.db is an SQLite database but not a gligabao one" in line
    assert Path("other.db").read_bytes() == before  # no gb_ table, not even WAL mode
    assert sorted(os.listdir()) == ["notes.txt", "other.db"]  # no -wal, -shm, -journal


def test_remember_still_makes_an_empty_file_a_database() -> None:
    Path("empty.db").touch()
    remembered("empty.db")
    assert json.loads(gb("list", "--db", "empty.db", "--json").stdout)["source"].endswith(
        "notes.txt"
    )


# ------------------------------------------------------------------ not a regular file


@posix_only
def test_a_database_path_that_is_a_device_is_refused_before_opening() -> None:
    journal = Path("/dev/null-journal")
    if journal.exists():
        pytest.skip("/dev/null-journal exists already: this test could not tell gb made it")
    Path("notes.txt").write_text(TEXT)
    try:
        done = gb("remember", "notes.txt", "--db", "/dev/null")
        created = journal.exists()
    finally:
        if journal.exists():  # what the old gb left behind
            journal.unlink()
    assert done.returncode == ExitCode.DATABASE
    assert the_line(done) == "gb: /dev/null is not a regular file, so not a database; check --db"
    assert not created


@posix_only
def test_a_database_path_that_is_a_fifo_is_refused_without_waiting() -> None:
    os.mkfifo("gb.db")
    for args in (["remember", "notes.txt"], ["list"]):
        Path("notes.txt").write_text(TEXT)
        done = gb(*args, "--db", "gb.db", timeout=30)
        assert done.returncode == ExitCode.DATABASE, done.stderr
        assert "gb.db is not a regular file" in the_line(done)


# ------------------------------------------------------------------ FIFOs and devices


@posix_only
@pytest.mark.parametrize(
    "command",
    [["remember"], ["chunk-preview"], ["chunk-preview", "--json"], ["status"]],
    ids=lambda c: " ".join(c),
)
def test_a_fifo_named_as_an_input_is_refused_not_waited_on(command: list[str]) -> None:
    os.mkfifo("a.fifo")  # nobody will ever write to it
    remembered()

    done = gb(*command, "a.fifo", "--db", "gb.db", timeout=30)

    assert done.returncode == ExitCode.BAD_INPUT
    lines = done.stderr.decode().splitlines()
    if command == ["status"]:  # gb status ends with its summary line
        assert lines.pop() == "gb: 1 file: 1 unreadable"
    (line,) = lines
    assert line.startswith("gb: a.fifo: is a FIFO (named pipe), not a regular file")
    assert "standard input (-)" in line


@posix_only
def test_a_device_named_as_an_input_is_refused_and_a_pipe_on_stdin_is_read() -> None:
    done = gb("chunk-preview", "/dev/zero", timeout=30, preexec_fn=bounded_memory)
    assert done.returncode == ExitCode.BAD_INPUT
    assert the_line(done).startswith("gb: /dev/zero: is a character device, not a regular file")

    # Standard input stays an input whatever it is: here a pipe, read to its end.
    piped = subprocess.run(
        [sys.executable, "-m", "gligabao", "chunk-preview", "--json", "-"],
        input=TEXT.encode(),
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["tokens"] > 0


@posix_only
def test_eval_of_a_device_is_refused_not_read_until_memory_runs_out() -> None:
    remembered()
    done = gb("eval", "/dev/zero", "--db", "gb.db", timeout=30, preexec_fn=bounded_memory)
    assert done.returncode == ExitCode.BAD_INPUT
    assert the_line(done).startswith("gb: /dev/zero: is a character device, not a regular file")


@posix_only
def test_eval_of_an_endless_pipe_stops_at_the_limit() -> None:
    remembered()
    zeros = subprocess.Popen(["cat", "/dev/zero"], stdout=subprocess.PIPE)
    try:
        done = gb(
            "eval",
            "/dev/stdin",
            "--db",
            "gb.db",
            stdin=zeros.stdout,
            timeout=60,
            preexec_fn=bounded_memory,
        )
    finally:
        zeros.kill()
        zeros.wait()
    assert done.returncode == ExitCode.BAD_INPUT
    assert "is larger than 64 MiB, too large for a query file" in the_line(done)


@posix_only
@pytest.mark.parametrize("separator", [[], ["-0"]], ids=["lines", "nul"])
def test_files_from_an_endless_stream_stops_at_the_limit(separator: list[str]) -> None:
    with open("/dev/zero", "rb") as zeros:
        done = gb(
            "remember",
            "--files-from",
            "-",
            *separator,
            stdin=zeros,
            timeout=60,
            preexec_fn=bounded_memory,
        )
    assert done.returncode == ExitCode.BAD_INPUT
    assert the_line(done) == "gb: -: is larger than 64 MiB, too large for a list of paths; split it"


@posix_only
def test_files_from_a_device_is_refused_and_a_pipe_is_read() -> None:
    done = gb("remember", "--files-from", "/dev/zero", timeout=30, preexec_fn=bounded_memory)
    assert done.returncode == ExitCode.BAD_INPUT
    assert the_line(done).startswith("gb: /dev/zero: is a character device, not a regular file")

    # `--files-from <(find ...)`: a pipe, read as a list.
    Path("notes.txt").write_text(TEXT)
    lister = subprocess.Popen(["echo", "notes.txt"], stdout=subprocess.PIPE)
    done = gb("remember", "--files-from", "/dev/stdin", "--json", stdin=lister.stdout)
    lister.wait()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["source"] == "notes.txt"


# ------------------------------------------------------------------ stdout


@posix_only
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["table", "json"])
def test_a_full_stdout_is_one_line_and_exit_1(json_flag: list[str]) -> None:
    remembered()
    with open("/dev/full", "w") as full:
        done = gb("list", "--db", "gb.db", *json_flag, stdout=full)
    assert done.returncode == ExitCode.FAILURE
    assert the_line(done) == (
        "gb: cannot write the output: No space left on device; free some space or send it "
        "elsewhere, and run again"
    )


@posix_only
def test_a_reader_that_goes_away_is_quiet_and_exit_141() -> None:
    """`gb ... | head -c 100`: gb stops, says nothing, and exits as SIGPIPE would end it."""
    names = [str(Path(f"n{i:03}.txt")) for i in range(300)]
    for i, name in enumerate(names):
        Path(name).write_text(story(i, paragraphs=3))
    proc = subprocess.Popen(
        [sys.executable, "-m", "gligabao", "chunk-preview", "--json", *names],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.read(100)  # what `head -c 100` reads before it goes away
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == ExitCode.OUTPUT_CLOSED
    assert first.startswith(b'{"source": "n000.txt"')
    assert err == b""


# ------------------------------------------------------------------ read-only


needs_modes = pytest.mark.skipif(
    os.name != "posix" or not permissions_apply(),
    reason="file modes cannot be enforced here (root whose capabilities cannot be dropped)",
)


def _read_only_folder() -> Path:
    folder = Path("ro")
    folder.mkdir()
    (folder / "notes.txt").write_text(TEXT)
    done = gb("remember", str(folder / "notes.txt"), "--db", str(folder / "gb.db"), "--quiet")
    assert done.returncode == 0, done.stderr
    return folder


@needs_modes
@pytest.mark.parametrize("where", ["folder", "file"])
def test_a_read_only_database_can_be_read_and_is_never_written(where: str) -> None:
    folder = _read_only_folder()
    db = str(folder / "gb.db")
    before = files(folder)
    (folder if where == "folder" else folder / "gb.db").chmod(0o555 if where == "folder" else 0o444)
    try:
        for args in (["list", "--json"], ["stats"], ["show", "1"], ["search", "herons"]):
            done = gb(*args, "--db", db, preexec_fn=as_user)
            assert done.returncode == 0, (args, done.stderr)
            assert b"Herons" in done.stdout or args[0] == "stats", args
        for args in (["forget", "1"], ["remember", str(folder / "notes.txt")]):
            done = gb(*args, "--db", db, preexec_fn=as_user)
            assert done.returncode == ExitCode.DATABASE, (args, done.stderr)
            line = the_line(done)
            assert line.startswith(f"gb: cannot write database {db}: "), line
            assert "read-only" in line and "make it writable" in line, line
    finally:
        folder.chmod(0o755)
        (folder / "gb.db").chmod(0o644)
    assert files(folder) == before  # nothing written, no -wal or -shm left


@needs_modes
def test_a_read_only_database_that_needs_migrating_says_so() -> None:
    """A file of an older gligabao cannot be migrated where it cannot be written: one
    line, exit 6, the file as it was."""
    folder = Path("ro")
    folder.mkdir()
    old = open_db(folder / "gb.db")
    old.close()
    conn = apsw.Connection(str(folder / "gb.db"))
    conn.execute("PRAGMA user_version = 1; DELETE FROM gb_migrations WHERE version > 1")
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.close()
    before = files(folder)
    folder.chmod(0o555)
    try:
        done = gb("list", "--db", str(folder / "gb.db"), preexec_fn=as_user)
    finally:
        folder.chmod(0o755)
    assert done.returncode == ExitCode.DATABASE
    line = the_line(done)
    assert f"has schema version 1 and this gligabao needs {len(MIGRATIONS)}" in line
    assert "cannot be migrated" in line
    assert files(folder) == before


# ------------------------------------------------------------------ file names


@posix_only
def test_file_names_that_are_not_utf8_are_stored_and_shown_escaped() -> None:
    os.mkdir("names")
    try:
        fd = os.open(b"names/bad\xff\xfe.txt", os.O_WRONLY | os.O_CREAT)
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    os.write(fd, b"A file whose name is not UTF-8.\n")
    os.close(fd)
    Path("names/good.txt").write_text(TEXT)
    shown = "names/bad\\xff\\xfe.txt"

    done = gb("remember", "-r", "names", "--db", "gb.db", "--json")
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["source"] for line in done.stdout.splitlines()] == [
        shown,
        "names/good.txt",
    ]
    listed = gb("list", "--db", "gb.db", "--json")
    assert sorted(json.loads(line)["source"] for line in listed.stdout.splitlines()) == [
        str(Path.cwd() / shown),
        str(Path.cwd() / "names/good.txt"),
    ]

    status = gb("status", "-r", "names", "--db", "gb.db")
    assert b"Traceback" not in status.stderr
    assert status.stdout.decode().count("names/") == 2
    assert shown in status.stdout.decode()
    preview = gb("chunk-preview", "--json", os.fsdecode(b"names/bad\xff\xfe.txt"))
    assert preview.returncode == 0, preview.stderr
    assert json.loads(preview.stdout)["source"] == shown


# ------------------------------------------------------------------ a full disk


@posix_only
def test_a_full_disk_while_remembering_is_one_line_and_the_database_stays_sound() -> None:
    """A file-size limit (ulimit -f) stands for the full disk: SQLite's write fails the
    same way. The run says so in one line, exit 6; what it stored is sound."""
    Path("big.txt").write_text(story(11, paragraphs=600))
    remembered()  # the database exists, small
    limit = os.path.getsize("gb.db") + 200_000

    def small_disk() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails, EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = gb("remember", "big.txt", "--db", "gb.db", "--chunk-size", "32", preexec_fn=small_disk)

    assert done.returncode == ExitCode.DATABASE, done.stderr
    line = the_line(done)
    assert line.startswith("gb: cannot write database gb.db: no space left ("), line
    assert "free some space and run the same command again to continue" in line
    conn = open_db("gb.db", create=False)
    try:
        assert query(conn, "PRAGMA integrity_check") == [{"integrity_check": "ok"}]
    finally:
        conn.close()
