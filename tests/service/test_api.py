"""The public Python API: `from gligabao import Memory`, configured as `gb` is,
answering the objects `gb ... --json` prints; the README's example, run as it is written.

Real parts: a real SQLite file, the test LLM server over HTTP for the online runs, the
environment with no endpoint at all for the offline ones.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import gligabao
from gligabao import Memory
from gligabao.errors import ExitCode, GbError, InputError, Stopped
from tests.support.helpers import DB, SECRET, gb, story, write
from tests.support.llm_server import Hold

README = Path(__file__).resolve().parents[2] / "README.md"

DOCS = {
    "y2015.txt": (
        "Alice Moreau works at Acme Corp since 2015-03-01. "
        "Acme Corp is led by Bruno Tanaka since 2015-01-10.\n"
    ),
    "y2021.txt": (
        "Alice Moreau works at Initech since 2021-09-01.\n"
        "Acme Corp is led by Chiara Okafor since 2021-01-04.\n"
    ),
}


def _json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_all_is_sorted_complete_and_each_name_resolves() -> None:
    from gligabao.service import facts
    from gligabao.service import memory as api

    assert gligabao.__all__ == sorted(gligabao.__all__)
    # Every public name of the API, and the result objects it answers, is exported...
    wanted = {*api.__all__, "Hit", "GbError", *(n for n in facts.__all__ if n[0].isupper())}
    assert wanted | {"__version__"} == set(gligabao.__all__)
    for name in gligabao.__all__:
        assert getattr(gligabao, name) is not None, name
        assert name in dir(gligabao)
    assert gligabao.Memory is api.Memory and gligabao.Fact is facts.Fact
    with pytest.raises(AttributeError):
        gligabao.NoSuchThing  # noqa: B018


def test_import_gligabao_imports_nothing_heavy() -> None:
    code = (
        "import sys, gligabao; gligabao.__version__; "
        "print(sorted(m for m in sys.modules if m.startswith(('gligabao.', 'apsw', "
        "'openai', 'mcp', 'pydantic', 'rich', 'typer'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_the_readme_example_runs_as_written(online) -> None:
    block = README.read_text().split("### Use from Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", block, re.S).group(1)
    write("notes.md", DOCS["y2015.txt"] + "\n" + DOCS["y2021.txt"])
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    notes = str(Path("notes.md").resolve())
    assert any(line.startswith(f"{notes}:1-") for line in lines), lines  # a hit, cited
    assert f"Acme Corp IS_LED_BY Bruno Tanaka {notes}:1" in lines  # true in 2016, cited
    assert any(line.startswith("Alice Moreau [") and "Initech" in line for line in lines)
    assert SECRET not in run.stdout + run.stderr


def test_results_are_what_the_cli_prints_with_json(gb_cli, online) -> None:
    for name, text in DOCS.items():
        write(name, text)
    memory = Memory(DB)
    # One call each: remembered in one batch, the two documents' contradicting facts are
    # both left current (the pipeline's doing, seen with `gb remember a b` too).
    [first] = memory.remember("y2015.txt")
    [second] = memory.remember(["y2021.txt"])
    assert (first.status, second.status) == ("remembered", "remembered")
    assert first.source == "y2015.txt" and first.document_id is not None

    assert [h.as_json() for h in memory.search("Initech", k=3, method="bm25")] == _json_lines(
        gb(gb_cli, "search", "Initech", "-k", "3", "--method", "bm25", "--json").stdout
    )
    write("long.md", story(4, paragraphs=6))  # chunked, embedded: a hybrid search
    [long] = memory.remember("long.md")
    assert len(long.response["chunks"]) > 1 and long.response["embedded_chunks"] > 1
    hybrid = memory.search("Kyoto Tanaka", k=4)
    assert {"bm25", "vector"} <= {method for hit in hybrid for method in hit.ranks}
    assert [h.as_json() for h in hybrid] == _json_lines(
        gb(gb_cli, "search", "Kyoto Tanaka", "-k", "4", "--json").stdout
    )
    memory.forget(long.document_id)
    at_2016 = memory.facts(about="Acme Corp", at="2016-01-01")
    assert [f.as_json() for f in at_2016] == _json_lines(
        gb(gb_cli, "facts", "--about", "Acme Corp", "--at", "2016-01-01", "--json").stdout
    )
    assert {(f.relation, f.target) for f in at_2016} >= {("IS_LED_BY", "Bruno Tanaka")}
    led = next(f for f in memory.facts(include_closed=True, k=100) if f.target == "Bruno Tanaka")
    assert led.status == "closed"  # Chiara Okafor leads Acme Corp since 2021
    why = memory.why(led.id)
    assert why.closer is not None and why.closer.target == "Chiara Okafor"
    assert why.as_json() == json.loads(gb(gb_cli, "why", str(led.id), "--json").stdout)
    assert memory.entity("alice moreau", depth=2).as_json() == json.loads(
        gb(gb_cli, "entity", "alice moreau", "--depth", "2", "--json").stdout
    )
    assert memory.documents() == _json_lines(gb(gb_cli, "list", "--json").stdout)
    assert memory.document(first.document_id) == json.loads(
        gb(gb_cli, "show", str(first.document_id), "--json").stdout
    )
    counts = memory.stats()
    assert counts.documents == 2 and counts.edges_closed >= 1

    gone = memory.forget(first.document_id)
    assert gone.artifact_id == first.document_id
    assert [d["id"] for d in memory.documents()] == [second.document_id]
    memory.close()


def test_offline_remember_then_bm25_search_with_a_notice(tmp_path) -> None:
    notices: list[str] = []
    with Memory("mem.db", on_notice=notices.append) as memory:
        done = memory.remember_text("Zebulon signed the Vantablack accord.", name="chat")
        assert (done.source, done.status) == ("chat", "offline")
        assert "no LLM endpoint" in done.notices[0]
        [hit] = memory.search("Vantablack accord")
        assert hit.document_id == done.document_id and hit.line_start == 1
    assert any("searching by BM25 only" in n for n in notices)


def test_settings_are_taken_as_the_cli_takes_them(monkeypatch) -> None:
    text = " ".join(f"Sentence number {n} is here." for n in range(200))
    monkeypatch.setenv("GB_CHUNK_SIZE", "64")
    with Memory("env.db") as memory:  # the environment, as gb
        assert memory.config["chunk_size"] == 64
        assert len(memory.remember_text(text).response["chunks"]) > 1
    write("gligabao.toml", "chunk_size = 300\n")
    monkeypatch.delenv("GB_CHUNK_SIZE")
    assert Memory("file.db").config["chunk_size"] == 300  # the config file
    over = Memory("kw.db", chunk_size=100, llm_base_url="http://127.0.0.1:9/v1")
    assert (over.config["chunk_size"], over.config.sources["chunk_size"]) == (100, "flag")
    assert over.config["llm.base_url"] == "http://127.0.0.1:9/v1"
    with pytest.raises(TypeError, match="chunk_sise"):
        Memory("x.db", chunk_sise=100)
    with pytest.raises(GbError) as bad:
        Memory("x.db", chunk_size=5)
    # A keyword argument is a value given in the call, as a flag is: a usage error.
    assert bad.value.exit_code == ExitCode.USAGE


def test_errors_are_the_cli_s_one_line_messages_and_create_nothing(tmp_path) -> None:
    memory = Memory("missing.db")
    with pytest.raises(GbError) as missing:
        memory.search("anything")
    assert missing.value.exit_code == ExitCode.DATABASE
    assert not Path("missing.db").exists()
    with pytest.raises(InputError, match="only whitespace"):
        memory.remember_text("   \n")
    assert not Path("missing.db").exists()  # refused before anything was opened
    memory.remember_text("Ada wrote the first program.")
    for call, code in [
        (lambda: memory.search(""), ExitCode.USAGE),
        (lambda: memory.search("x", k=0), ExitCode.USAGE),
        (lambda: memory.search("x", method="fuzzy"), ExitCode.USAGE),
        (lambda: memory.facts(at="yesterday"), ExitCode.USAGE),
        (lambda: memory.why(999), ExitCode.FAILURE),
        (lambda: memory.search("x", dataset="nope"), ExitCode.FAILURE),
    ]:
        with pytest.raises(GbError) as caught:
            call()
        assert caught.value.exit_code == code
        assert "\n" not in str(caught.value)
    [result] = memory.remember(["no-such-file.md"])  # one bad input: reported, not raised
    assert result.status == "failed" and "no such file" in (result.error or "")


def test_folders_are_remembered_as_gb_remember_r_does() -> None:
    write("docs/a.md", "Ada Lovelace wrote the first program.\n")
    write("docs/sub/b.md", "Grace Hopper found the first bug.\n")
    write("docs/c.txt", "Not markdown.\n")
    write("docs/empty.md", "")
    notices: list[str] = []
    with Memory("mem.db", on_notice=notices.append) as memory:
        done = memory.remember("docs", recursive=True, glob=["*.md"])
        assert sorted(Path(r.source).name for r in done) == ["a.md", "b.md"]
        assert {r.status for r in done} == {"offline"}
        assert [h.source for h in memory.search("Grace Hopper")] == [
            str(Path("docs/sub/b.md").resolve())
        ]
    assert "skipped" in notices[0] and "1 empty" in notices[0] and "glob" in notices[0]


def test_reads_go_on_by_bm25_when_the_embeddings_server_goes_down(gb_cli, online) -> None:
    write("notes.txt", story(4, paragraphs=3))
    gb(gb_cli, "remember", "notes.txt")
    online.stop()

    notices: list[str] = []
    with Memory(DB, on_notice=notices.append) as memory:
        hits = memory.search("Lisbon")
        assert hits and hits.fallback == notices[-1]
        assert hits.fallback.startswith("the query could not be embedded (embed (")
        assert memory.facts("Lisbon") and memory.entities("Lisbon")
        assert len(notices) == 3 and all("searching by BM25 only" in n for n in notices)
        with pytest.raises(GbError, match="could not reach"):
            memory.search("Lisbon", method="vector")


def test_remember_text_stores_its_name_as_the_source(online) -> None:
    with Memory(DB) as memory:
        done = memory.remember_text(story(5), name="clipboard")
        assert done.source == "clipboard"
        (listed,) = memory.documents()
        assert listed["source"] == "clipboard"
        assert memory.document(done.document_id)["source"] == "clipboard"


def test_a_remember_stopped_from_another_thread_keeps_what_it_paid_for(online) -> None:
    """As Ctrl-C: the run ends at once, nothing is stored half, and the next run of the
    same text asks only for what the stopped one had not been answered."""
    text = story(14, paragraphs=6)
    stop = gligabao.Stop()
    # Every extraction but the first chunk's waits until the run is stopped.
    online.hold(
        Hold(
            select=lambda stage, prompt: stage == "extract_graph" and "Report 14." not in prompt,
            until=lambda: stop.requested,
        )
    )

    def stop_once_answered() -> None:
        online.wait_until(lambda: online.calls("extract_graph") >= 1)
        time.sleep(0.3)  # its answer recorded
        stop.request("the test asked")

    threading.Thread(target=stop_once_answered).start()
    with Memory(DB) as memory:
        with pytest.raises(Stopped, match="stopped, the test asked; the answers paid for"):
            memory.remember_text(text, stop=stop)
        answered = online.calls()
        assert answered > 0 and memory.documents() == []
        done = memory.remember_text(text)
        chunks = done.response["chunks"]
        assert done.status == "remembered" and all(c["summary"] for c in chunks)
    again = online.calls() - answered
    with Memory("alone.db") as alone:
        alone.remember_text(text)
    assert again < online.calls() - answered - again  # fewer than a whole run's calls
