"""A value given on the command line that cannot work is a usage error: exit 2 and one
`gb: ...` line, whoever checks it (click, the service, the configuration). The same value
from the environment or the config file is a configuration error (5) naming its source;
an id or a dataset that is not there is said in the user's words (1)."""

from __future__ import annotations

from pathlib import Path

import pytest

HELLO = "Ada Lovelace wrote the first program in 1843.\n"


@pytest.fixture
def stored(gb_process) -> None:
    Path("notes.txt").write_text(HELLO)
    assert gb_process("remember", "notes.txt", "--quiet", env={"GB_DB": "gb.db"}).returncode == 0


def _one_line(result) -> str:
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["facts", "--at", "garbage"], "gb: --at 'garbage' is not an ISO-8601 time"),
        (["remember", "notes.txt", "--valid-at", "yesterday"], "--valid-at 'yesterday' is not"),
        (["remember", "notes.txt", "--chunk-size", "10"], "chunk_size = 10 (from flag) is out"),
        (["remember", "notes.txt", "--model", "bogus=x"], "'bogus=x': expected MODEL or STAGE="),
        (["chunk-preview", "notes.txt", "--mode", "prose"], "mode = 'prose' (from flag) is not"),
        (["chunk-preview", "notes.txt", "--tokenizer", "bpe"], "tokenizer 'bpe' is not known"),
        (["search", "x", "--method", "foo"], "--method must be one of hybrid, bm25, vector"),
        (["search", "x", "-k", "0"], "-k must be a whole number from 1"),
        (["remember", "notes.txt", "--max-cost", "nan"], "--max-cost must be a finite number"),
        # What click itself refuses: one line too, and where the options are listed.
        (
            ["search", "x", "-k", "abc"],
            "gb: invalid value for '-k' / '-n' / '--limit': 'abc' is not a valid int; "
            "gb search -h lists the options",
        ),
        (["facts", "--valid-at", "x"], "gb: no such option: --valid-at; gb facts -h lists"),
        (["search"], "gb: missing argument 'QUERY'; gb search -h lists the options"),
        (["serach", "x"], "gb: no such command 'serach'"),
    ],
)
def test_a_bad_value_on_the_command_line_is_a_usage_error_in_one_line(
    gb_process, stored, args: list[str], says: str
) -> None:
    result = gb_process(*args, env={"GB_DB": "gb.db"})
    assert result.returncode == 2, result.stderr
    assert result.stdout == b""
    line = _one_line(result)
    assert line.startswith("gb: ") and says in line, line


def test_the_same_value_from_the_environment_or_the_file_is_a_configuration_error(
    gb_process, stored
) -> None:
    from_env = gb_process("remember", "notes.txt", env={"GB_DB": "gb.db", "GB_CHUNK_SIZE": "10"})
    assert from_env.returncode == 5
    assert "chunk_size = '10' (from env GB_CHUNK_SIZE) is out of range" in _one_line(from_env)
    Path("gligabao.toml").write_text("chunk_size = 10\n")
    from_file = gb_process("remember", "notes.txt", env={"GB_DB": "gb.db"})
    assert from_file.returncode == 5
    assert "chunk_size = 10 (from gligabao.toml) is out of range" in _one_line(from_file)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["forget", "99999"], "gb: no document 99999 in gb.db; gb list shows the documents"),
        (["show", "99999"], "gb: no document or chunk 99999 in gb.db; gb list shows"),
        (
            ["list", "--dataset", "nosuch"],
            "gb: no dataset named 'nosuch' in gb.db; it has 'default'",
        ),
    ],
)
def test_what_is_not_there_is_said_in_the_users_words(
    gb_process, stored, args: list[str], says: str
) -> None:
    result = gb_process(*args, env={"GB_DB": "gb.db"})
    assert result.returncode == 1
    assert _one_line(result).startswith(says)


def test_gb_alone_still_shows_the_help(gb_process) -> None:
    result = gb_process()
    assert result.returncode == 2
    assert b"[OPTIONS] COMMAND [ARGS]" in result.stderr
