"""`gb chunk-preview -r FOLDER`: the files gb remember -r would read, found and skipped
the same way, each shown as it would be cut, then the total; --json one object a file.
Nothing is stored: no database is created."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.helpers import configure, gb, stderr_lines, story, write


def _folder() -> None:
    write("docs/a.md", story(1, paragraphs=4))
    write("docs/sub/b.txt", story(2, paragraphs=2))
    write("docs/short.md", story(3))
    write("docs/.hidden/c.md", story(4))
    write("docs/blob.bin", b"\0\1\2binary")
    write("docs/empty.txt", "  \n")


def test_a_folder_is_walked_as_remember_walks_it(gb_cli, monkeypatch) -> None:
    _folder()
    preview = gb(gb_cli, "chunk-preview", "-r", "docs", "--json")
    objects = [json.loads(line) for line in preview.stdout.splitlines()]
    assert not Path("gb.db").exists() and not Path("gligabao.db").exists()

    configure(monkeypatch, None)  # offline: stored, no call
    remembered = gb(gb_cli, "remember", "-r", "docs", "--json")
    sources = [json.loads(line)["source"] for line in remembered.stdout.splitlines()]
    assert [Path(o["source"]).resolve() for o in objects] == [Path(s).resolve() for s in sources]
    assert len(objects) == 3  # hidden, binary and empty files skipped
    skipped = "skipped 1 hidden, 1 binary, 1 empty"
    assert stderr_lines(preview) == [f"gb: {skipped}"]
    assert any(skipped in line for line in stderr_lines(remembered))


def test_the_table_of_a_folder_ends_with_the_total(gb_cli) -> None:
    _folder()
    objects = [
        json.loads(line)
        for line in gb(gb_cli, "chunk-preview", "-r", "docs", "--json").stdout.splitlines()
    ]
    tokens = sum(o["tokens"] for o in objects)
    chunks = sum(o["chunk_count"] or 1 for o in objects)  # a short text is one chunk

    table = gb(gb_cli, "chunk-preview", "-r", "docs").stdout
    assert table.splitlines()[-1] == f"total: 3 documents, {tokens} tokens in {chunks} chunks"
    for o in objects:
        assert o["source"] in table


def test_glob_narrows_the_walk(gb_cli) -> None:
    _folder()
    result = gb(gb_cli, "chunk-preview", "-r", "docs", "--glob", "*.md", "--json")
    sources = [Path(json.loads(line)["source"]).name for line in result.stdout.splitlines()]
    assert sources == ["a.md", "short.md"]


def test_a_folder_without_r_says_to_add_it(gb_cli) -> None:
    _folder()
    result = gb(gb_cli, "chunk-preview", "docs", code=3)
    assert "-r" in result.stderr and "is a directory" in result.stderr
