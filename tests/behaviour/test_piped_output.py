"""What `gb` prints into a pipe or a file is one record a line,
paths whole, no box drawing, tables as tab-separated lines; on a terminal `gb list` keeps
the file name of a long path, shows dates to the minute and marks superseded versions.

Every command runs as a real process (`gb_process`), so its stdout is really a pipe; the
terminal case runs under a real pseudo-terminal.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import story, write

# Three long folder names: a line holding a run of one of their letters but not a whole
# path is a piece of a path that was wrapped or cut.
FOLDERS = ("piped_" + "x" * 40, "records_" + "y" * 40, "stay_whole_" + "z" * 40)
PIECE = re.compile("x{8}|y{8}|z{8}")
BOXES = set("│┃━─┏┓┗┛┡┩└┘┌┐╇┳┻╋")
NARROW = {"COLUMNS": "40"}


@pytest.fixture
def deep(online) -> dict[str, str]:
    """Two stories remembered (against the test server) from a folder whose paths are over
    120 characters; returns the folder and the two files' absolute paths."""
    folder = Path.cwd().joinpath(*FOLDERS)
    paths = {name: str(folder / f"{name}.txt") for name in ("alpha", "bravo")}
    for seed, path in enumerate(paths.values(), start=1):
        write(path, story(seed, paragraphs=3))
    assert all(len(p) > 120 for p in paths.values())
    return {"folder": str(folder), **paths}


def _out(gb_process, *args: str) -> str:
    result = gb_process(*args, env=NARROW)
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def _assert_records_whole(out: str, paths: list[str]) -> list[str]:
    """No box drawing, and every line that shows part of a long path shows a whole one."""
    lines = out.splitlines()
    assert not BOXES & set(out), out
    for line in lines:
        if PIECE.search(line):
            assert any(p in line for p in paths), f"a path split or cut: {line!r}"
    return lines


def test_every_command_piped_prints_one_record_a_line_with_full_paths(gb_process, deep) -> None:
    paths = [deep["alpha"], deep["bravo"]]
    batch = _out(gb_process, "remember", "-r", deep["folder"])
    remembered = _assert_records_whole(batch, paths)
    assert sorted(p for line in remembered for p in paths if p in line) == sorted(paths)

    # gb list: a line of column names, then one line of 8 tab-separated fields a document
    listed = _assert_records_whole(_out(gb_process, "list"), paths)
    assert listed[0].split("\t")[:3] == ["id", "dataset", "source"]
    fields = [line.split("\t") for line in listed[1:]]
    assert {len(f) for f in fields} == {8}
    assert sorted(f[2] for f in fields) == sorted(paths)

    # gb status -r DIR | cut -f1 counts states, one per file
    status = _assert_records_whole(_out(gb_process, "status", "-r", deep["folder"]), paths)
    assert sorted(line.split("\t")[1] for line in status) == sorted(paths)
    assert [line.split("\t")[0] for line in status] == ["in sync", "in sync"], status

    hits = _assert_records_whole(_out(gb_process, "search", "Report 1"), paths)
    heads = [line for line in hits if re.match(r"\d+\. /", line)]
    assert heads and all(re.search(r"\.txt:\d+-\d+", h) for h in heads), hits

    facts = [json.loads(line) for line in _out(gb_process, "facts", "--json").splitlines()]
    entities = [json.loads(line) for line in _out(gb_process, "entities", "--json").splitlines()]
    assert facts and entities
    shown = {
        "facts": _out(gb_process, "facts"),
        "why": _out(gb_process, "why", str(facts[0]["id"])),
        "entities": _out(gb_process, "entities"),
        "entity": _out(gb_process, "entity", entities[0]["name"]),
        "inferences": _out(gb_process, "inferences"),
        "stats": _out(gb_process, "stats"),
        "show": _out(gb_process, "show", str(fields[0][0])),
        "chunk-preview": _out(gb_process, "chunk-preview", deep["alpha"]),
    }
    for command, out in shown.items():
        lines = _assert_records_whole(out, paths)
        assert lines, command
    assert any(p in line for line in shown["facts"].splitlines() for p in paths)
    assert any(p in line for line in shown["entity"].splitlines() for p in paths)
    assert shown["show"].splitlines()[0].count(fields[0][2]) == 1  # its source, whole
    assert shown["chunk-preview"].splitlines()[0] == deep["alpha"]
    # tables: each row as many tab-separated fields as the header has names
    for command in ("entities", "inferences", "stats"):
        header, *rows = shown[command].splitlines()
        assert rows and {len(r.split("\t")) for r in rows} == {len(header.split("\t"))}, command

    # one file remembered: its panel becomes plain lines, the path whole on the first
    write(deep["alpha"], story(7, paragraphs=3))
    single = _assert_records_whole(_out(gb_process, "remember", deep["alpha"]), paths)
    assert single[0] == deep["alpha"]


def _on_a_terminal(*args: str, columns: int) -> str:
    """`gb ARGS` with its stdout on a pseudo-terminal `columns` wide; what it showed."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm"}
    with subprocess.Popen(
        [sys.executable, "-m", "gligabao", *args],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
    ) as process:
        os.close(follower)
        shown = b""
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not data:
                break
            shown += data
        assert process.wait(timeout=60) == 0, process.stderr.read().decode()
    os.close(leader)
    return re.sub(r"\x1b\[[0-9;]*m", "", shown.decode())


def test_list_on_a_terminal_keeps_file_names_shows_minutes_and_marks_superseded(
    gb_process, deep
) -> None:
    for path in (deep["alpha"], deep["bravo"]):
        assert gb_process("remember", path).returncode == 0
    write(deep["alpha"], story(9, paragraphs=3))
    assert gb_process("remember", deep["alpha"]).returncode == 0
    current = json.loads(gb_process("list", "--json").stdout.decode().splitlines()[0])

    shown = _on_a_terminal("list", "--all", columns=150)
    rows = [line for line in shown.splitlines() if line.startswith("│") and "txt" in line]
    assert len(rows) == 3, shown
    # the path is cut from the left: the file name and its folder stay
    assert sum("…/" in r and f"{FOLDERS[-1][-4:]}/alpha.txt" in r for r in rows) == 2, shown
    assert sum("/bravo.txt" in r for r in rows) == 1, shown
    # dates to the minute, not ISO-8601 to the millisecond
    assert all(re.search(r"\b\d{4}-\d\d-\d\d \d\d:\d\d\b", r) for r in rows), shown
    assert not re.search(r"T\d\d:\d\d:\d\d", shown), shown
    # the old version of alpha.txt says it is superseded, and by which document
    assert sum(f"superseded by {current['id']}" in r for r in rows) == 1, shown


@pytest.mark.parametrize("columns", [100, 120])
def test_list_on_a_terminal_shortens_the_state_before_the_file_name(gb_process, columns) -> None:
    path = Path.cwd().joinpath(*FOLDERS) / "alpha_report_2024.txt"
    write(path, story(1, paragraphs=3))
    assert gb_process("remember", str(path)).returncode == 0  # offline: stages pending

    shown = _on_a_terminal("list", columns=columns)
    assert "…/alpha_report_2024.txt" in shown, shown  # the file name whole
    assert re.search(r"incomplete +(\(\d\)|│)", shown) and "extract_graph" not in shown, shown
    assert max(len(line) for line in shown.splitlines()) <= columns, shown
    # Off the terminal, each field whole: the stages by name.
    piped = gb_process("list").stdout.decode()
    assert str(path) in piped and "incomplete: extract_graph" in piped, piped


SEPARATED = re.compile(r"\b\d{1,3}(?:,\d{3})+\b")  # 3,727


def test_numbers_are_plain_when_piped_and_separated_on_a_terminal(gb_process) -> None:
    write("long.txt", story(2, paragraphs=40))  # thousands of bytes and tokens
    assert gb_process("remember", "long.txt").returncode == 0  # offline

    for command in (("chunk-preview", "long.txt"), ("list",), ("stats",), ("show", "1")):
        out = _out(gb_process, *command)
        assert not SEPARATED.search(out), (command, out)
    preview = _out(gb_process, "chunk-preview", "long.txt")
    assert re.search(r"^\d+\t\d{4,}\t\d{4,}\t", preview, re.MULTILINE), preview
    assert re.search(r"\t\d{4,}\t", _out(gb_process, "list")), "tokens, whole"

    shown = _on_a_terminal("chunk-preview", "long.txt", columns=150)
    assert SEPARATED.search(shown), shown  # for a person: 3,727
