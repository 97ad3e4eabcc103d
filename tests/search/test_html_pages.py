"""A web page remembered and searched is cited by the lines of its HTML file: a real
Sphinx page (Python's IDLE page, tests/read/fixtures) on both stores, through gb remember,
gb search (its --json and its snippets), gb facts and gb why, with the test LLM server."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from tests.read.test_html import SPHINX_PAGE, first_word
from tests.support.helpers import gb, rows

PAGE = "idle-help.html"
QUERIES = (
    "IDLE shell restart",
    "completions box",
    "code context",
    "startup failure socket",
    "Debugger stack viewer",
)
# `gb search`'s head of a hit: its number, then path:LINE-LINE.
_HEAD = re.compile(r"^\d+\. (\S+):(\d+)-(\d+)")


def _remembered(gb_cli) -> list[str]:
    shutil.copy(SPHINX_PAGE, PAGE)
    gb(gb_cli, "remember", PAGE, "--quiet")
    return Path(PAGE).read_text(encoding="utf-8").split("\n")


def _json_lines(gb_cli, *args: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in gb(gb_cli, *args).stdout.splitlines()]


def test_a_sphinx_page_is_searched_and_cited_by_the_lines_of_its_file(
    gb_cli, backend, online
) -> None:
    file_lines = _remembered(gb_cli)
    seen = 0
    for query in QUERIES:
        hits = _json_lines(gb_cli, "search", query, "--json", "-k", "10")
        assert hits, query
        for hit in hits:
            seen += 1
            first, last = hit["line_start"], hit["line_end"]
            assert first_word(hit["text"]) in file_lines[first - 1], (query, hit["text"][:60])
            assert hit["locations"] == {"lines": [first, last]}
            assert "¶" not in hit["text"] and "Permalink" not in hit["text"]
            assert "¶" not in (hit["section"] or "")
    assert seen > 20
    # gb show of a chunk says the same lines.
    hit = hits[0]
    shown = json.loads(gb(gb_cli, "show", str(hit["artifact_id"]), "--json").stdout)
    assert (shown["line_start"], shown["line_end"]) == (hit["line_start"], hit["line_end"])
    assert shown["locations"] == {"lines": [hit["line_start"], hit["line_end"]]}
    # Nothing of the permalinks reached what is stored, keyword-indexed and embedded.
    stored = rows("SELECT text, section, context FROM gb_artifacts")
    assert stored
    for row in stored:
        for value in row.values():
            assert "¶" not in (value or "") and "Permalink to this" not in (value or "")
    assert not _json_lines(gb_cli, "search", "Permalink", "--method", "bm25", "--json")


def test_a_snippet_of_a_page_shows_the_file_line_of_its_first_words(gb_cli, online) -> None:
    file_lines = _remembered(gb_cli)
    for query in QUERIES:
        out = gb(gb_cli, "search", query, "-k", "5").stdout.splitlines()
        heads = [(n, _HEAD.match(line)) for n, line in enumerate(out) if _HEAD.match(line)]
        assert heads, out
        for n, head in heads:
            assert head is not None and head.group(1).endswith(PAGE)
            snippet = out[n + 1].strip()
            assert first_word(snippet) in file_lines[int(head.group(2)) - 1], (query, snippet)
            assert "¶" not in out[n]


def test_the_evidence_of_a_fact_from_a_page_is_the_line_of_its_quote(
    gb_cli, backend, online
) -> None:
    file_lines = _remembered(gb_cli)
    facts = _json_lines(gb_cli, "facts", "--json", "--all", "-k", "200")
    assert len(facts) > 10
    for fact in facts:
        for evidence in fact["evidence"]:
            if not evidence["quote"]:
                continue
            line = file_lines[evidence["line_start"] - 1]
            assert first_word(evidence["quote"]) in line, (evidence["quote"][:60], line)
            assert evidence["locations"]["lines"] == [
                evidence["line_start"],
                evidence["line_end"],
            ]
    why = json.loads(gb(gb_cli, "why", str(facts[0]["id"]), "--json").stdout)
    text = json.dumps(why)
    assert "line_map" not in text
    shown = gb(gb_cli, "why", str(facts[0]["id"])).stdout
    place = re.search(re.escape(PAGE) + r":(\d+)", shown)
    assert place is not None, shown
    assert int(place.group(1)) == facts[0]["evidence"][0]["line_start"]


SMALL_PAGE = """<html><head><title>Team</title></head><body>
<nav>Home</nav>
<main>
<h1>Team<a class="headerlink" href="#team" title="Permalink to this heading">¶</a></h1>


<p>Who works where.
Alice Moreau works at Acme Corp.</p>

<p>Bruno Tanaka leads Acme Corp.</p>
</main></body></html>
"""


def test_a_page_too_short_to_chunk_is_cited_by_its_file_lines_too(gb_cli, backend, online) -> None:
    Path("team.html").write_text(SMALL_PAGE, encoding="utf-8")
    gb(gb_cli, "remember", "team.html", "--quiet")
    [hit] = _json_lines(gb_cli, "search", "Bruno Tanaka", "--json", "-k", "1")
    assert hit["kind"] == "document" and "¶" not in hit["text"]
    assert (hit["line_start"], hit["line_end"]) == (4, 10)
    where = {
        evidence["quote"]: (evidence["line_start"], evidence["line_end"])
        for fact in _json_lines(gb_cli, "facts", "--json", "--all")
        for evidence in fact["evidence"]
    }
    assert where == {
        "Alice Moreau works at Acme Corp.": (8, 8),
        "Bruno Tanaka leads Acme Corp.": (10, 10),
    }


def test_a_changed_page_is_cited_by_the_lines_of_its_new_version(gb_cli, online) -> None:
    file_lines = _remembered(gb_cli)
    [before] = _json_lines(gb_cli, "search", "Shell menu", "--json", "-k", "1")
    # Five lines more above the content: the same chunks (taken over, not extracted
    # again), five lines further down.
    html = Path(PAGE).read_text(encoding="utf-8").replace("<head>", "<head>\n\n\n\n\n", 1)
    Path(PAGE).write_text(html, encoding="utf-8")
    gb(gb_cli, "remember", PAGE, "--quiet")
    [after] = _json_lines(gb_cli, "search", "Shell menu", "--json", "-k", "1")
    assert after["text"] == before["text"] and after["artifact_id"] != before["artifact_id"]
    assert after["line_start"] == before["line_start"] + 5
    assert after["locations"] == {"lines": [after["line_start"], after["line_end"]]}
    new_lines = html.split("\n")
    assert new_lines[after["line_start"] - 1] == file_lines[before["line_start"] - 1]
    # The facts taken over with the chunks are cited in the new version, by its lines.
    facts = _json_lines(gb_cli, "facts", "--json", "-k", "200")
    assert len(facts) > 10
    for fact in facts:
        for evidence in fact["evidence"]:
            line = new_lines[evidence["line_start"] - 1]
            assert first_word(evidence["quote"]) in line, (evidence["quote"][:60], line)


def test_an_answer_cites_a_page_by_the_file_lines_of_each_quote(gb_cli, online) -> None:
    file_lines = _remembered(gb_cli)

    def quote_every_source(question: str, sources: dict[int, tuple[str, str]]) -> dict[str, Any]:
        # Each source quoted by its last line with words: a quote deep in a chunk.
        citations = [
            {"source": n, "quote": [line for line in text.split("\n") if line.strip()][-1]}
            for n, (_, text) in sources.items()
        ]
        marks = "".join(f"[{n}]" for n in sources)  # every citation marked, so listed
        return {"answer": f"The shell restarts. {marks}", "citations": citations}

    online.answer_with = quote_every_source
    shown = json.loads(gb(gb_cli, "ask", "How does the IDLE shell restart?", "--json").stdout)
    chunks = [c for c in shown["citations"] if c["kind"] == "chunk"]
    assert len(chunks) >= 3
    for citation in chunks:
        line = file_lines[citation["line_start"] - 1]
        assert first_word(citation["quote"]) in line, (citation["quote"][:60], line)
        assert citation["locations"]["lines"] == [citation["line_start"], citation["line_end"]]
