"""Texts piped into `gb remember -` named with --name: stored under that name, their
source wherever gb shows one, so that two of them are not both `-`. Real parts: the test
LLM server, a real SQLite file.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.helpers import DB, gb, story, write


def _json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_two_texts_piped_in_are_told_apart_by_their_names(gb_cli, online) -> None:
    gb(gb_cli, "remember", "-", "--name", "mail-1.txt", input=story(1).encode())
    said = gb(gb_cli, "remember", "-", "--name", "mail-2.txt", "--json", input=story(2).encode())
    assert json.loads(said.stdout)["source"] == "mail-2.txt"

    listed = _json_lines(gb(gb_cli, "list", "--json").stdout)
    assert [d["source"] for d in listed] == ["mail-2.txt", "mail-1.txt"]
    assert "mail-1.txt" in gb(gb_cli, "list").stdout
    [hit, *_] = _json_lines(gb(gb_cli, "search", "Report 1", "--method", "bm25", "--json").stdout)
    assert hit["source"] == "mail-1.txt"
    facts = _json_lines(gb(gb_cli, "facts", "--json").stdout)
    assert {e["source"] for f in facts for e in f["evidence"]} == {"mail-1.txt", "mail-2.txt"}

    # Unnamed, standard input is `-` as before.
    gb(gb_cli, "remember", "-", input=story(3).encode())
    assert _json_lines(gb(gb_cli, "list", "--json").stdout)[0]["source"] == "-"


def test_a_name_without_standard_input_or_blank_is_refused(gb_cli, online) -> None:
    write("notes.txt", story(4))
    said = gb(gb_cli, "remember", "notes.txt", "--name", "x", code=2).stderr
    assert said.strip() == "gb: --name names standard input: remember - with it"
    said = gb(gb_cli, "remember", "-", "--name", " ", code=2, input=b"text").stderr
    assert said.strip() == "gb: --name must name the text, not ' '"
    assert not Path(DB).exists()  # refused before anything is stored
