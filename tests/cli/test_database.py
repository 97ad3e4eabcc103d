"""The database as a user meets it: locked by another process, or not a database at all."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from gligabao.errors import ExitCode
from gligabao.store import open_db
from gligabao.store.db import scalar
from tests.support.llm_server import Fault

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


# ------------------------------------------------------------------ commands that only read


READERS = [
    ("show", "1"),
    ("list",),
    ("forget", "1"),
    ("stats",),
    ("vec-stats",),
    ("inferences",),
    ("search", "Ada"),
    ("eval", "queries.jsonl"),
    ("status", "notes.txt"),
]


def _reader_inputs() -> None:
    Path("notes.txt").write_text(TEXT)
    Path("queries.jsonl").write_text(
        json.dumps({"query": "Ada", "source": "notes.txt", "start": 0, "end": 12}) + "\n"
    )


@pytest.mark.parametrize("args", READERS, ids=lambda a: a[0])
def test_a_reading_command_never_creates_a_database(gb_cli, args) -> None:
    _reader_inputs()
    result = gb_cli(*args, "--db", "sub/typo.db")
    assert result.exit_code == ExitCode.DATABASE, result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert line.endswith("there is no database at sub/typo.db yet; `gb remember` creates it")
    assert not Path("sub").exists() and result.stdout == ""


def test_status_with_no_arguments_is_a_usage_error_and_creates_nothing(gb_cli) -> None:
    result = gb_cli("status")
    assert result.exit_code == ExitCode.USAGE and "name the files" in result.stderr
    assert not Path("gligabao.db").exists()


def test_remember_still_creates_the_database_and_its_folder(gb_cli) -> None:
    Path("notes.txt").write_text(TEXT)
    assert gb_cli("remember", "notes.txt", "--db", "sub/new.db", "--quiet").exit_code == 0
    result = gb_cli("list", "--db", "sub/new.db", "--json")
    assert result.exit_code == 0 and len(result.stdout.splitlines()) == 1


@pytest.mark.parametrize("args", READERS, ids=lambda a: a[0])
def test_another_programs_sqlite_file_is_refused_untouched(gb_cli, args) -> None:
    _reader_inputs()
    other = apsw.Connection("other.sqlite")
    other.execute("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')")
    other.close()
    before = Path("other.sqlite").read_bytes()
    result = gb_cli(*args, "--db", "other.sqlite")
    assert result.exit_code == ExitCode.DATABASE
    (line,) = result.stderr.strip().splitlines()
    assert "other.sqlite is an SQLite database but not a gligabao one" in line
    assert Path("other.sqlite").read_bytes() == before  # no gb_ tables, not even WAL mode
    assert not Path("other.sqlite-wal").exists()


def test_an_empty_file_is_no_database_yet_and_stays_empty(gb_cli) -> None:
    Path("empty.db").touch()
    result = gb_cli("stats", "--db", "empty.db")
    assert result.exit_code == ExitCode.DATABASE
    assert "no database at empty.db yet (the file is empty)" in result.stderr
    assert Path("empty.db").read_bytes() == b""


def test_open_without_create_migrates_an_older_gligabao_schema(tmp_path, monkeypatch) -> None:
    from gligabao.store import migrations
    from gligabao.store.errors import NoDatabase

    with pytest.raises(NoDatabase):
        open_db(tmp_path / "none.db", create=False)
    assert not (tmp_path / "none.db").exists()
    open_db(tmp_path / "gb.db").close()  # at today's schema version
    today = len(migrations.MIGRATIONS)
    step = "CREATE TABLE gb_probe (x INTEGER);"
    monkeypatch.setattr(migrations, "MIGRATIONS", [*migrations.MIGRATIONS, step])
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", len(migrations.MIGRATIONS))
    conn = open_db(tmp_path / "gb.db", create=False)
    assert scalar(conn, "PRAGMA user_version") == today + 1
    assert scalar(conn, "SELECT count(*) FROM gb_probe") == 0


# ------------------------------------------------------------------ datasets


def _two_datasets(gb_cli) -> None:
    Path("a.txt").write_text("Alpha text about herons.\n")
    Path("b.txt").write_text("Beta text about otters.\n")
    assert gb_cli("remember", "a.txt", "--dataset", "one", "--quiet").exit_code == 0
    assert gb_cli("remember", "b.txt", "--dataset", "two", "--quiet").exit_code == 0


def _listed(gb_cli, *args: str) -> list[str]:
    result = gb_cli("list", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return sorted(Path(json.loads(line)["source"]).name for line in result.stdout.splitlines())


def _documents(gb_cli, *args: str) -> int:
    result = gb_cli("stats", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)["documents"]


def test_list_and_stats_cover_every_dataset_unless_one_is_named(gb_cli, monkeypatch) -> None:
    _two_datasets(gb_cli)
    assert _listed(gb_cli) == ["a.txt", "b.txt"] and _documents(gb_cli) == 2
    assert _listed(gb_cli, "--dataset", "one") == ["a.txt"]
    assert _documents(gb_cli, "--dataset", "one") == 1

    Path("gligabao.toml").write_text('dataset = "one"\n')  # the config file names one
    assert _listed(gb_cli) == ["a.txt"] and _documents(gb_cli) == 1
    monkeypatch.setenv("GB_DATASET", "two")  # the environment wins over the file
    assert _listed(gb_cli) == ["b.txt"] and _documents(gb_cli) == 1
    assert _listed(gb_cli, "--dataset", "one") == ["a.txt"]  # and the flag over both

    for name in ("list", "stats"):
        help_text = " ".join(gb_cli(name, "--help").stdout.split())
        assert "default: every dataset" in help_text and "(default: default)" not in help_text


@pytest.mark.parametrize("command", [("list",), ("stats",), ("vec-stats",), ("search", "x")])
def test_an_unknown_dataset_names_the_ones_there_are(gb_cli, command) -> None:
    _two_datasets(gb_cli)
    result = gb_cli(*command, "--dataset", "nowhere")
    assert result.exit_code == ExitCode.FAILURE
    (line,) = result.stderr.strip().splitlines()
    assert "no dataset named 'nowhere'" in line and "it has 'one', 'two'" in line


def test_a_database_with_no_dataset_says_so(gb_cli) -> None:
    open_db("gligabao.db").close()
    result = gb_cli("vec-stats")
    assert result.exit_code == ExitCode.FAILURE
    assert "it has none yet" in result.stderr


# ------------------------------------------------------------------ start-up, README


def test_starting_gb_does_not_load_the_remember_pipeline() -> None:
    code = (
        "import sys, gligabao.cli; "
        "print(sorted(m for m in sys.modules if m.startswith('gligabao.remember')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, text=True)
    assert out.stdout.strip() == "[]"


def _readme_exit_codes() -> dict[int, str]:
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = readme.split("### Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| (.+) \|$", section, flags=re.M)
    return {int(code): meaning for code, meaning in rows}


def test_the_readme_exit_codes_match_what_gb_does(gb_cli, server, monkeypatch) -> None:
    """Each code of the README's table is what gb exits with in a case its row names."""
    monkeypatch.setenv("GB_DB", str(Path.cwd() / "gb.db"))
    Path("notes.txt").write_text(TEXT)
    Path("long.txt").write_text(TEXT * 10)
    table = _readme_exit_codes()
    seen: dict[int, str] = {}

    def exits(code: int, *args: str) -> None:
        result = gb_cli(*args)
        assert not isinstance(result.exception, Exception) or isinstance(
            result.exception, SystemExit
        ), result.exception
        assert result.exit_code == code, (args, result.stderr)
        seen[code] = " ".join(args)

    exits(0, "remember", "notes.txt")  # offline: stored, stages pending
    exits(2, "remember", "--no-such-option")
    exits(3, "remember", "missing.txt")
    exits(4, "remember", "notes.txt", "missing.txt")
    # A bad value on the command line is a usage error (2); from the environment, 5.
    exits(2, "remember", "notes.txt", "--chunk-size", "5")
    monkeypatch.setenv("GB_CHUNK_SIZE", "5")
    exits(5, "remember", "notes.txt")
    monkeypatch.delenv("GB_CHUNK_SIZE")
    exits(6, "list", "--db", "typo.db")
    Path("notes.txt").write_text(TEXT + "An edit.\n")
    exits(1, "status", "notes.txt")  # not in sync
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-exit-codes")
    monkeypatch.setenv("GB_LLM_MAX_RETRIES", "0")
    server.add_fault(Fault("500", stage="extract_graph", times=-1))
    exits(1, "remember", "long.txt", "--chunk-size", "64")  # a call failed

    # Interrupted: a real process, sent a signal while it waits for the server.
    server.clear_faults()
    server.latency = 30
    Path("other.txt").write_text(TEXT * 3)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        asked = len(server.requests)
        proc = subprocess.Popen(
            [sys.executable, "-m", "gligabao", "remember", "other.txt", "--chunk-size", "64"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while len(server.requests) == asked and proc.poll() is None:
            assert time.monotonic() < deadline, "gb never sent a request"
            time.sleep(0.01)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + signum, err.decode()
        seen[128 + signum] = f"remember, then {signum.name}"

    # The reader of the output gone: `gb chunk-preview --json ... | head -c 100`.
    names = [f"n{i}.txt" for i in range(300)]
    for name in names:
        Path(name).write_text(TEXT * 3)
    proc = subprocess.Popen(
        [sys.executable, "-m", "gligabao", "chunk-preview", "--json", *names],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    proc.stdout.read(100)
    proc.stdout.close()
    assert proc.wait(timeout=60) == 141
    seen[141] = "chunk-preview | head -c 100"

    assert set(table) == set(seen)
    assert "gb status" in table[1] and "gb status" in table[3]
    assert "no database" in table[6] and "gb remember" in table[6]


def test_the_list_table_says_which_dataset_each_document_is_in(gb_cli) -> None:
    _two_datasets(gb_cli)
    by_id = {
        json.loads(line)["id"]: Path(json.loads(line)["source"]).name
        for line in gb_cli("list", "--json").stdout.splitlines()
    }
    result = gb_cli("list")
    assert result.exit_code == 0, result.stderr
    cells = [line.split("\t") for line in result.stdout.splitlines()[1:]]
    shown = sorted((by_id[int(c[0])], c[1]) for c in cells)
    assert shown == [("a.txt", "one"), ("b.txt", "two")]
