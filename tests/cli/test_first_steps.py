"""What a new user hits first: the small things gb says on the way, said once, right and
in agreement with each other. Real parts: the test LLM server, a real SQLite file.
"""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from gligabao.base.words import counted, plural
from tests.support.helpers import gb, gb_env, stderr_lines, story, write
from tests.support.terminal import read_until

PRICES = """\
[prices]
"gpt-4o-mini" = { input = 50.0, output = 0.5 }
"text-embedding-3-small" = { input = 50.0, output = 0.0 }
"""


def test_a_folder_without_r_points_to_r(gb_cli, online) -> None:
    Path("notes").mkdir()
    write("notes/a.txt", story(1))
    said = gb(gb_cli, "remember", "notes", code=3).stderr.strip()
    assert said == (
        "gb: notes: is a directory; use -r (--recursive) for the files in it and below, "
        "or name the files"
    )
    # gb status walks folders with -r as well, and says so alike.
    said = gb(gb_cli, "status", "notes", code=3).stderr.strip()
    assert "use -r (--recursive)" in said
    gb(gb_cli, "remember", "-r", "notes")


def test_max_cost_says_its_stop_once_with_the_summary_s_total(gb_cli, online) -> None:
    # Priced by input and one request at a time, so that the budget stops the batch
    # part-way with several inputs begun or waiting.
    write("gligabao.toml", PRICES)
    names = [str(write(f"batch/d{i:02}.md", story(200 + i, paragraphs=1))) for i in range(24)]
    result = gb(gb_cli, "remember", *names, "--concurrency", "1", "--max-cost", "1", code=4)
    said = stderr_lines(result)
    stops = [line for line in said if "--max-cost" in line]
    assert len(stops) == 1, said
    *_, summary = said
    spent = re.search(r"\$(\d+\.\d{4}) spent, (\d+) inputs left", stops[0])
    assert spent, stops[0]
    assert f"cost ${spent.group(1)}," in summary
    assert f" {spent.group(2)} left," in summary


def test_a_count_of_one_takes_the_singular(gb_cli) -> None:
    write("one.txt", "Hi")
    said = gb(gb_cli, "chunk-preview", "one.txt").stdout
    assert said.startswith("one.txt: 1 token, fits in one chunk"), said
    # The one helper every such line goes through.
    assert [plural(n, "fact") for n in (0, 1, 2)] == ["facts", "fact", "facts"]
    assert [plural(2, noun) for noun in ("entity", "summary", "day", "pass")] == [
        "entities",
        "summaries",
        "days",
        "passes",
    ]
    assert counted(1, "input") == "1 input" and counted(3, "chunk") == "3 chunks"


def test_every_warning_has_gb_s_prefix(gb_process, online) -> None:
    # A server that refuses stream_options: the client adapts, once, and says so.
    online.takes_stream_options = False
    write("notes.txt", story(1))
    done = gb_process("remember", "notes.txt")
    assert done.returncode == 0, done.stderr
    said = done.stderr.decode().splitlines()
    adapted = [line for line in said if "refuses stream_options" in line]
    assert len(adapted) == 1 and adapted[0].startswith("gb: warning: "), said
    # So is an unknown key of the config file.
    write("gligabao.toml", "[chunking]\nsize = 3\n")
    said = gb_process("config").stderr.decode().splitlines()
    assert next(line for line in said if "unknown key" in line).startswith("gb: warning: ")


def test_a_rerank_s_warnings_have_gb_s_prefix(gb_process, online, corpus) -> None:
    # gb search sets up gb's warnings only when it may call the chat model: a rerank.
    assert gb_process("remember", *corpus, "--quiet").returncode == 0
    online.structured_outputs = False
    done = gb_process("search", "licence terms", "--rerank", "--json")
    assert done.returncode == 0, done.stderr
    said = done.stderr.decode().splitlines()
    adapted = [line for line in said if "structured output" in line]
    assert len(adapted) == 1 and adapted[0].startswith("gb: warning: "), said


WAITING = "gb: reading standard input: type or paste the text, then Ctrl-D on a line of its own"


def test_standard_input_on_a_terminal_says_gb_waits_for_it(isolated) -> None:
    # Standard input is a pseudo-terminal, as when a person types `gb remember -`; the
    # notice must come before gb reads, since until the text ends nothing else would.
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gligabao", "remember", "-"],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **gb_env(None), "TERM": "dumb"},
        close_fds=True,
    )
    os.close(slave)
    try:
        assert proc.stderr is not None
        said = read_until(proc.stderr.fileno(), b"Ctrl-D", 30)
        assert said.decode().strip() == WAITING
        os.write(master, b"Typed at the terminal, a line of text to remember.\n")
        os.write(master, b"\x04")  # Ctrl-D on a line of its own: the end of the text
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    assert proc.returncode in (0, 4), err  # offline: stored, its stages pending (4)
    assert b"(offline)" in out  # the text typed was stored
    assert WAITING.encode() not in err  # said once


def test_standard_input_from_a_pipe_is_read_without_a_word(gb_process) -> None:
    done = gb_process("remember", "-", input=story(2).encode(), env=gb_env(None))
    assert b"standard input" not in done.stderr


def test_m_model_sets_the_default_model_and_stage_model_still_picks_one(gb_cli, online) -> None:
    write("a.md", story(3, paragraphs=3))
    gb(gb_cli, "remember", "a.md", "-m", "gpt-4o", "--model", "summarize_chunk=gpt-4.1-mini")
    chat = [r for r in online.requests if r.stage != "embed"]
    assert {r.stage for r in chat} >= {"extract_graph", "summarize_chunk"}
    for request in chat:
        wanted = "gpt-4.1-mini" if request.stage == "summarize_chunk" else "gpt-4o"
        assert request.body["model"] == wanted, request.stage
    # The long form takes a model alone too; a pair with no known stage is refused as a usage error.
    gb(gb_cli, "remember", "a.md", "--model", "gpt-4o", "--force")
    said = gb(gb_cli, "remember", "a.md", "--model", "nope=gpt-4o", code=2).stderr
    assert "expected MODEL or STAGE=VALUE" in said


def test_what_a_person_reads_calls_edges_facts(gb_cli, online) -> None:
    write("a.md", story(4))
    panel = gb(gb_cli, "remember", "a.md").stdout
    assert "facts " in panel and "edge" not in panel
    shown = gb(gb_cli, "show", "1").stdout
    assert "facts" in shown and "edge" not in shown
    stats = gb(gb_cli, "stats").stdout
    assert "current facts" in stats and "edge" not in stats
    forgot = gb(gb_cli, "forget", "1").stdout
    assert " fact" in forgot and "edge" not in forgot
    # --json keeps its field names: scripts read them.
    assert "edges" in gb(gb_cli, "remember", "a.md", "--json").stdout
