"""What `gb` prints when numbers, names, texts and URLs are hostile: a huge id or count
is a one-line message, never a traceback; an empty query is refused alike by every method;
nan and inf are refused wherever a number is read; escape sequences from documents and LLM
answers never reach the terminal raw; a key written into a base URL is never shown."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import apsw
import pytest

from tests.support.helpers import DB, SECRET, gb, story, write

HUGE = "99999999999999999999999"  # beyond SQLite's 64-bit integers
CLEAR = "\x1b[2J\x1b[H"  # clears the screen and homes the cursor
RED = "\x1b[31m"
CSI = "\x9b"  # C1: a CSI of its own on terminals that take 8-bit controls
BIDI = "\u202e"  # right-to-left override: reorders what follows on screen
HOSTILE_NAME = f"Evil{CLEAR}Corp"
# Every byte sequence a terminal would act on, as UTF-8.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own styles, under FORCE_COLOR

HOSTILE_TEXT = (
    f"Alice Moreau works at Acme Corp since 2019-01-01 {CLEAR}here.\n\n"
    f"Bruno Tanaka joined Acme Corp on 2020-02-02 {RED}in red {BIDI}txt{CSI}2J.\n\n"
)


def _raw_controls(text: str) -> list[str]:
    return RAW.findall(text)


def _one_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def stored(gb_cli, online) -> dict[str, int]:
    """A dataset with chunks, vectors, entities and facts (the test server's), from a
    document and a file name holding escape sequences, and one entity renamed by SQL as a
    hostile model would name it. Returns the ids: document, entity, fact."""
    name = f"notes{RED}{BIDI}.txt"
    write(name, HOSTILE_TEXT + story(1, paragraphs=3))
    gb(gb_cli, "remember", name)
    conn = apsw.Connection(DB)
    conn.execute(
        "UPDATE gb_entities SET name = ?, summary = ? WHERE name = 'Alice Moreau'",
        (HOSTILE_NAME, f"Summary {RED}in red{CSI}"),
    )
    (entity,) = conn.execute(
        "SELECT id FROM gb_entities WHERE name = ?", (HOSTILE_NAME,)
    ).fetchone()
    (fact,) = conn.execute(
        "SELECT id FROM gb_edges WHERE fact LIKE 'Bruno Tanaka joined%'"
    ).fetchone()
    conn.close()
    return {"document": 1, "entity": entity, "fact": fact, "file": name}


# ------------------------------------------------------------------ 9: numbers and names


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (
            ["search", "Alice", "-k", HUGE],
            2,
            f"-k must be a whole number from 1 to 1,000,000,000, not {HUGE}",
        ),
        (["search", "Alice", "-k", "0"], 2, "-k must be a whole number from 1"),
        (["list", "-n", HUGE], 2, "--limit must be a whole number from 1"),
        (["list", "-n", "0"], 2, "--limit must be a whole number from 1"),
        (["inferences", "--limit", HUGE], 2, "--limit must be a whole number from 1"),
        (["facts", "-k", HUGE], 2, "--limit must be a whole number from 1"),
        (["facts", "Alice", "-k", HUGE], 2, "--limit must be a whole number from 1"),
        (["entities", "Alice", "-k", HUGE], 2, "--limit must be a whole number from 1"),
        (["entity", "Acme Corp", "--depth", HUGE], 2, "--depth must be a whole number from 0"),
        (["show", HUGE], 1, f"no document or chunk {HUGE} in gb.db"),
        (["forget", HUGE], 1, f"no document {HUGE} in gb.db"),
        (["why", HUGE], 1, f"no fact {HUGE}"),
    ],
)
def test_a_huge_number_is_a_message_never_a_traceback(
    gb_cli, stored, args: list[str], code: int, says: str
) -> None:
    result = gb(gb_cli, *args, code=code)
    assert result.stdout == ""
    assert says in _one_line(result)


def test_counts_at_the_edge_of_the_range_work(gb_cli, stored) -> None:
    # The largest count allowed runs (no overflow in the pools drawn from it).
    for args in (
        ["search", "Alice", "-k"],
        ["facts", "Alice", "-k"],
        ["entities", "Acme", "-k"],
        ["list", "-n"],
        ["inferences", "-n"],
        ["entity", "Acme Corp", "--depth"],
    ):
        assert gb(gb_cli, *args, "1000000000").stdout


def test_a_blank_dataset_or_database_is_a_usage_error_from_a_flag_and_a_config_error_else(
    gb_cli, online, monkeypatch
) -> None:
    write("doc.txt", "Some text to remember.\n")
    for args in (["remember", "doc.txt"], ["list"], ["search", "text"]):
        result = gb(gb_cli, *args, "--dataset", "", code=2)
        assert "dataset = '' (from flag) must not be empty" in _one_line(result)
    assert not Path(DB).exists()  # refused before anything was created
    result = gb(gb_cli, "list", "--db", " ", code=2)
    assert "database = ' ' (from flag) must not be empty" in _one_line(result)
    monkeypatch.setenv("GB_DATASET", "  ")
    result = gb(gb_cli, "remember", "doc.txt", code=5)
    assert "dataset = '  ' (from env GB_DATASET) must not be empty" in _one_line(result)
    monkeypatch.delenv("GB_DATASET")
    write("gligabao.toml", 'dataset = ""\n')
    result = gb(gb_cli, "remember", "doc.txt", code=5)
    assert "dataset = '' (from gligabao.toml) must not be empty" in _one_line(result)
    assert not Path(DB).exists()


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_query_is_refused_alike_by_every_method(
    gb_cli, online, stored, query: str
) -> None:
    embeds = online.calls("embed")
    said = set()
    for args in (
        ["search", query, "--method", "hybrid"],
        ["search", query, "--method", "bm25"],
        ["search", query, "--method", "vector"],
        ["facts", query],
        ["entities", query],
        ["facts", "--about", query],
        ["entity", query],
    ):
        result = gb(gb_cli, *args, code=2)
        assert result.stdout == ""
        line = _one_line(result)
        assert "is empty: say what to look for" in line, args
        said.add(re.sub(r" '.*' is empty", " ... is empty", line))
    assert said == {
        f"gb: the {what} ... is empty: say what to look for{rest}"
        for what, rest in (
            ("query", ""),
            ("query", " (or leave it out to list them all)"),
            ("--about name", " (or leave it out to list them all)"),
            ("name", ""),
        )
    }
    assert online.calls("embed") == embeds  # nothing was embedded for it


# ------------------------------------------------------------------ 10: nan and inf


@pytest.mark.parametrize("value", ["nan", "inf", "NaN", "1e999"])
def test_a_max_cost_that_is_not_finite_is_refused_before_any_call(
    gb_cli, online, value: str
) -> None:
    write(
        "gligabao.toml",
        "[prices]\n"
        + "".join(
            f'"{m}" = {{ input = 1, output = 1 }}\n'
            for m in ("gpt-4o-mini", "text-embedding-3-small")
        ),
    )
    write("doc.txt", story(2, paragraphs=2))
    result = gb(gb_cli, "remember", "doc.txt", "--max-cost", value, code=2)
    assert f"--max-cost must be a finite number, 0 or more, not {float(value)}" in _one_line(result)
    assert online.calls() == 0
    assert not Path(DB).exists()


@pytest.mark.parametrize(
    ("toml", "env", "says"),
    [
        (
            "[prices]\ngpt-4o-mini = { input = nan, output = 1 }",
            {},
            "prices.gpt-4o-mini.input = nan",
        ),
        (
            "[prices]\ngpt-4o-mini = { input = 1, output = inf }",
            {},
            "prices.gpt-4o-mini.output = inf",
        ),
        (
            "[prices]\nm = { input = 1, output = 1, cached_input = -inf }",
            {},
            "prices.m.cached_input = -inf",
        ),
        (
            "busy_timeout = nan",
            {},
            "busy_timeout = nan (from gligabao.toml) must be a finite number",
        ),
        (
            "",
            {"GB_LLM_TIMEOUT": "inf"},
            "llm.timeout = 'inf' (from env GB_LLM_TIMEOUT) must be a finite",
        ),
        (
            "",
            {"GB_BUSY_TIMEOUT": "NaN"},
            "busy_timeout = 'NaN' (from env GB_BUSY_TIMEOUT) must be a finite",
        ),
    ],
)
def test_a_number_that_is_not_finite_in_the_configuration_exits_5_naming_its_key(
    gb_cli, online, monkeypatch, toml: str, env: dict[str, str], says: str
) -> None:
    write("gligabao.toml", toml + "\n")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    write("doc.txt", story(3))
    for args in (["config"], ["remember", "doc.txt", "--max-cost", "0.01"]):
        result = gb(gb_cli, *args, code=5)
        assert says in _one_line(result)
    assert online.calls() == 0  # a nan price never disables the budget: nothing is called


# ------------------------------------------------------------------ 11: the terminal


def test_no_escape_sequence_of_a_document_or_an_answer_reaches_the_terminal(gb_cli, stored) -> None:
    shown = {}
    for args in (
        ["remember", stored["file"], "--force"],  # its panel, titled by the file name
        ["show", "1"],
        ["search", "Alice Bruno"],
        ["search", "Alice", "--method", "bm25"],
        ["facts"],
        ["facts", "--all", "Bruno"],
        ["entity", str(stored["entity"])],
        ["entities"],
        ["why", str(stored["fact"])],
        ["list"],
        ["inferences"],
        ["status", stored["file"]],
        ["chunk-preview", stored["file"]],
        ["chunk-preview", "--chunk-size", "2000", stored["file"]],
    ):
        result = gb(gb_cli, *args)
        assert not _raw_controls(result.stdout + result.stderr), (args, result.stdout)
        shown[args[0]] = shown.get(args[0], "") + result.stdout
    # ...and what they were is shown, written out.
    assert "\\x1b[2J\\x1b[H" in shown["show"] and "\\x1b[2J\\x1b[H" in shown["search"]
    assert "Evil\\x1b[2J\\x1b[HCorp" in shown["entity"]
    assert "\\x1b[31min red \\u202etxt\\x9b2J" in shown["why"]
    assert "notes\\x1b[31m\\u202e.txt" in shown["status"]  # the file name too


def test_json_output_escapes_every_control_character_and_reads_back_the_same(
    gb_cli, stored
) -> None:
    for args in (
        ["show", "1"],
        ["search", "Bruno"],
        ["facts", "--all"],
        ["entity", str(stored["entity"])],
        ["list"],
    ):
        result = gb(gb_cli, *args, "--json")
        assert not _raw_controls(result.stdout), args
        assert "\\u001b" in result.stdout or "\\u202e" in result.stdout, args
    entity = json.loads(gb(gb_cli, "entity", str(stored["entity"]), "--json").stdout)
    assert entity["name"] == HOSTILE_NAME
    document = json.loads(gb(gb_cli, "show", "1", "--json").stdout)
    assert document["text"].startswith(HOSTILE_TEXT)


def test_why_highlights_exactly_the_quote_on_a_colour_terminal(gb_process, stored) -> None:
    result = gb_process("why", str(stored["fact"]), env={"FORCE_COLOR": "1", "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert "\x1b" not in SGR.sub("", out)  # the only escapes are rich's own colours
    quote = f"Bruno Tanaka joined Acme Corp on 2020-02-02 {RED}in red {BIDI}txt{CSI}2J."
    shown = quote.replace("\x1b", "\\x1b").replace(BIDI, "\\u202e").replace(CSI, "\\x9b")
    highlighted = re.findall(r"\x1b\[1;33m(.*?)\x1b\[0m", out)
    assert shown in highlighted, highlighted


# ------------------------------------------------------------------ 12: keys in URLs

KEY2 = "gbquery-Z9x8C7v6B5n4M3"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_key_in_the_base_url_is_masked_by_gb_config(gb_process, online, monkeypatch) -> None:
    url = f"http://gbuser:{SECRET}@127.0.0.1:{online.port}/v1?api_key={KEY2}&api-version=2024-02"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("GB_EMBEDDINGS_BASE_URL", f"http://{KEY2}@[::1]:9/v1")
    masked = f"http://****@127.0.0.1:{online.port}/v1?api_key=****&api-version=2024-02"
    table = gb_process("config", env={"COLUMNS": "250"})
    assert table.returncode == 0, table.stderr
    out = table.stdout.decode()
    assert SECRET not in out and KEY2 not in out and "gbuser" not in out
    assert masked in out and "http://****@[::1]:9/v1" in out
    as_json = gb_process("config", "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert SECRET.encode() not in as_json.stdout and KEY2.encode() not in as_json.stdout
    values = json.loads(as_json.stdout)
    assert values["llm.base_url"] == {"value": masked, "source": "env OPENAI_BASE_URL"}
    assert values["embeddings.base_url"]["value"] == "http://****@[::1]:9/v1"


def test_a_failing_call_to_a_url_holding_a_key_never_shows_it(
    gb_cli, online, stored, monkeypatch
) -> None:
    port = _closed_port()
    url = f"http://gbuser:{SECRET}@127.0.0.1:{port}/v1?api_key={KEY2}"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    write("more.txt", story(4, paragraphs=2))
    results = [
        gb_cli("remember", "more.txt"),  # the openai SDK's call
        gb_cli("search", "Alice"),  # the query's embedding, over urllib
        gb_cli("facts", "Alice"),
    ]
    for result in results:
        said = result.stdout + result.stderr
        assert SECRET not in said and KEY2 not in said, said
    assert results[0].exit_code != 0
    for result in results[1:]:  # reads go on by BM25 alone, saying why in one line
        assert result.exit_code == 0
        assert f"could not reach http://****@127.0.0.1:{port}/v1?api_key=****" in _one_line(result)
    data = b"".join(p.read_bytes() for p in Path(".").glob(DB + "*"))
    assert SECRET.encode() not in data and KEY2.encode() not in data
