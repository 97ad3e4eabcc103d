"""The store on a real PostgreSQL with pgvector: opening, the schema, and what a user sees
when the server is down or the URL is wrong."""

from __future__ import annotations

import subprocess
import sys
from urllib.parse import urlsplit

import pytest

from gligabao.store import DatabaseError, NoDatabase, datasets, db, open_db
from gligabao.store.postgres import migrations
from gligabao.store.postgres.connect import safe_db_url
from tests.support.helpers import configure, gb, story, write


def test_a_url_opens_a_migrated_schema(pg_url: str) -> None:
    conn = open_db(pg_url)
    assert conn.dialect == "postgresql"
    assert migrations.schema_version(conn) == migrations.SCHEMA_VERSION
    ds = datasets.get_or_create_dataset(conn, "default")
    assert datasets.get_or_create_dataset(conn, "default") == ds
    conn.close()


def test_the_password_is_never_in_a_message() -> None:
    url = "postgresql://gb:s3cret-pass@127.0.0.1:1/gb?sslmode=disable"
    assert safe_db_url(url) == "postgresql://gb:****@127.0.0.1:1/gb?sslmode=disable"
    with pytest.raises(DatabaseError) as err:
        open_db(url)
    message = str(err.value)
    assert "s3cret" not in message
    assert message.startswith("cannot connect to PostgreSQL at postgresql://gb:****@127.0.0.1:1/gb")


def test_a_reading_command_does_not_create_the_schema(pg_url: str) -> None:
    with pytest.raises(NoDatabase):
        open_db(pg_url, create=False, schema="elsewhere")
    conn = open_db(pg_url, schema="elsewhere")
    assert db.scalar(conn, "SELECT current_schema()") == "elsewhere"
    conn.close()


def test_without_psycopg_a_url_says_what_to_install() -> None:
    # psycopg hidden, as in an install without the [postgres] extra.
    program = (
        "import sys; sys.modules['psycopg'] = None; from gligabao.cli import main; "
        "sys.argv = ['gb', 'list', '--db', 'postgresql://gb:pw@127.0.0.1:1/gb']; main()"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 6, done.stderr
    assert done.stderr.strip() == (
        "gb: a postgresql:// database needs psycopg: pip install 'gligabao-gb[postgres]'"
    )


def test_other_urls_are_refused_not_made_files(tmp_path) -> None:
    with pytest.raises(DatabaseError, match="not a database gb can open"):
        open_db("mysql://u:secret@h/db")
    assert list(tmp_path.iterdir()) == []  # no ./mysql:/ folder


def test_reading_commands_read_a_server_that_takes_no_writes(
    gb_cli, server, monkeypatch, pg_url, postgres
) -> None:
    """A read replica takes no writes at all: search, facts and list read it; remember
    says in one line that it cannot write there."""
    configure(monkeypatch, server, GB_DB=pg_url)
    write("a.txt", story(5, paragraphs=2))
    gb(gb_cli, "remember", "a.txt", "--quiet")
    name = urlsplit(pg_url).path.lstrip("/")
    postgres.admin(f"ALTER DATABASE {name} SET default_transaction_read_only = on")

    assert gb(gb_cli, "search", "report", "--json").stdout
    assert gb(gb_cli, "list", "--json").stdout
    gb(gb_cli, "facts", "--json")
    write("b.txt", story(6, paragraphs=2))
    refused = gb(gb_cli, "remember", "b.txt", code=6)
    assert "reads only" in refused.stderr and len(refused.stderr.splitlines()) == 1


def test_the_postings_follow_the_keyword_rows(pg_url: str) -> None:
    """Each chunk's words are its postings, with their counts; indexed again, they are
    replaced; forgotten, they are gone, and a search finds it no more."""
    from gligabao.store.artifacts import index_artifact_text, insert_chunk, insert_document
    from gligabao.store.forget import forget
    from gligabao.store.fts import search_artifacts

    conn = open_db(pg_url)
    ds = datasets.get_or_create_dataset(conn, "default")
    text = "zebras graze; the zebra grazes slowly"
    doc = insert_document(conn, dataset_id=ds.id, text=text, chunk_count=1, status="complete")
    chunk = insert_chunk(
        conn,
        document_id=doc,
        text=text,
        chunk_index=0,
        start_offset=0,
        end_offset=len(text),
        tokens=6,
    )

    def postings() -> dict[str, int]:
        rows = db.query(conn, "SELECT term, tf FROM gb_fts_postings WHERE id = ?", (chunk,))
        return {r["term"]: r["tf"] for r in rows}

    assert postings() == {"zebra": 2, "graze": 2, "the": 1, "slowli": 1}
    assert [r["artifact_id"] for r in search_artifacts(conn, ds.id, "zebra", 5, None)] == [chunk]
    index_artifact_text(conn, chunk, "a lion", "document", ds.id)
    assert postings() == {"a": 1, "lion": 1}
    forget(conn, doc)
    assert postings() == {} and search_artifacts(conn, ds.id, "lion", 5, None) == []
    conn.close()
