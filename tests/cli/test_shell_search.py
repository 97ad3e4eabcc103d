"""Search hits as snippets, each method's own score, and the smaller points of
shell use: named metavars, whole command descriptions, -k / -n / --limit on
every listing command, and `gb inferences ID`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from gligabao.base.snippet import snippet
from tests.cli.test_preview import command_names
from tests.support.helpers import CORPUS_DIR, gb

QUERY = "termination of the licence"


@pytest.fixture
def licences(online, isolated, gb_cli) -> Path:
    """MPL-2.0 and GPL-3 remembered against the test server."""
    for name in ("MPL-2.0", "GPL-3"):
        shutil.copy(CORPUS_DIR / name, name)
    gb(gb_cli, "remember", "MPL-2.0", "GPL-3", "--quiet")
    return isolated


def _hits(stdout: str) -> list[tuple[str, list[str]]]:
    """(head, body lines) of each hit as printed."""
    hits = []
    for block in stdout.strip().split("\n\n"):
        head, *body = block.split("\n")
        hits.append((head, body))
    return hits


def test_a_hit_is_a_few_lines_with_their_numbers(licences, gb_cli) -> None:
    """Default: each hit prints at most 3 lines, those the file has at the LINE-LINE its
    head names, holding the query's words; not its whole 25-70 line chunk."""
    out = gb(gb_cli, "search", QUERY, "-n", "5", "--method", "bm25").stdout  # -n is -k
    hits = _hits(out)
    assert len(hits) == 5
    for head, body in hits:
        where = re.search(r"^\d+\. (\S+):(\d+)-(\d+) ", head)
        assert where, head
        source, first, last = where[1], int(where[2]), int(where[3])
        assert 1 <= last - first + 1 <= 3 and len(body) == last - first + 1, (head, body)
        lines = Path(source).read_text().split("\n")[first - 1 : last]
        # A chunk may begin inside a line (its overlap is cut at a token): a suffix.
        for shown, line in zip(body, lines, strict=True):
            assert line.endswith(shown[3:]), (head, shown, line)
        assert body[0].strip() and body[-1].strip(), body  # no blank line at either end
        assert re.search(r"(?i)terminat|licen", " ".join(body)), body


def test_full_prints_the_whole_chunk_and_its_summary(licences, gb_cli) -> None:
    first = json.loads(gb(gb_cli, "search", QUERY, "-k", "1", "--method", "bm25", "--json").stdout)
    out = gb(gb_cli, "search", QUERY, "--limit", "1", "--method", "bm25", "--full").stdout
    head, *body = out.strip().split("\n")
    assert f":{first['line_start']}-{first['line_end']} " in head
    shown = "\n".join(line[3:] for line in body if not line.startswith("   summary: "))
    assert " ".join(shown.split()).startswith(" ".join(first["text"].split()[:30]))
    assert any(line.startswith("   summary: ") for line in body)


def test_bm25_alone_shows_the_bm25_score(licences, gb_cli) -> None:
    """BM25 scores here are several units; a fused RRF score is at most 2/61."""
    hits = [
        json.loads(line)
        for line in gb(gb_cli, "search", QUERY, "--method", "bm25", "--json").stdout.splitlines()
    ]
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > 1.0, scores
    shown = gb(gb_cli, "search", QUERY, "--method", "bm25", "-k", "1").stdout
    assert f"score {scores[0]:.4f} (bm25 #1)" in shown


def test_snippet_picks_the_lines_with_most_query_words() -> None:
    text = "\n".join(
        [
            "Preamble about nothing.",
            "Termination is mentioned here once.",
            "",
            "Filler line.",
            "The licence terminates on breach;",
            "termination of the licence is final.",
            "Afterword.",
        ]
    )
    cut = snippet(text, "termination of the licence", first_line=40)
    assert (cut.line_start, cut.line_end) == (43, 45)
    assert cut.text.split("\n")[1:] == text.split("\n")[4:6]
    meaning_only = snippet(text, "zebra", first_line=None)
    assert (meaning_only.line_start, meaning_only.text.split("\n")[0]) == (
        1,
        "Preamble about nothing.",
    )


# ------------------------------------------------------------------ help


@pytest.mark.parametrize("command", command_names())
def test_help_names_every_value(gb_cli, command: str) -> None:
    out = gb(gb_cli, command, "--help").stdout
    assert not re.search(r"<(str|int|float|text|integer)>", out), out


def test_command_descriptions_are_whole(gb_cli) -> None:
    listing = gb(gb_cli, "--help").stdout.split("Commands:", 1)[1].split("Exit codes", 1)[0]
    lines = [line for line in listing.splitlines() if line.strip()]
    assert len(lines) == len(command_names())
    for line in lines:
        assert "..." not in line and "…" not in line, line
        assert line.rstrip().endswith("."), line


@pytest.mark.parametrize("command", ["search", "facts", "entities", "list", "inferences"])
def test_k_n_and_limit_are_one_option(gb_cli, command: str) -> None:
    out = gb(gb_cli, command, "--help").stdout
    assert re.search(r"-k, -n, --limit N|-n, -k, --limit N", out), out


# ------------------------------------------------------------------ gb inferences ID


def test_one_inference_with_its_answer_and_document(licences, gb_cli) -> None:
    rows = [
        json.loads(line)
        for line in gb(
            gb_cli, "inferences", "--stage", "summarize_chunk", "-n", "1", "--json"
        ).stdout.splitlines()
    ]
    (row,) = rows
    one = json.loads(gb(gb_cli, "inferences", str(row["id"]), "--json").stdout)
    assert one["id"] == row["id"] and one["stage"] == "summarize_chunk"
    assert json.loads(one["answer"])["summary"]
    (served,) = one["documents"]
    assert served["source"].endswith(("MPL-2.0", "GPL-3"))
    assert served["chunk_index"] is not None  # a summary names its chunk too
    shown = gb(gb_cli, "inferences", str(row["id"])).stdout
    assert f"served     document {served['id']} {served['source']}, chunk " in shown
    assert '"summary":' in shown
    # Every stage's call names the document it served, an extraction and embeddings too.
    for stage in ("extract_graph", "embed"):
        (call,) = [
            json.loads(line)
            for line in gb(
                gb_cli, "inferences", "--stage", stage, "-n", "1", "--json"
            ).stdout.splitlines()
        ]
        (doc,) = json.loads(gb(gb_cli, "inferences", str(call["id"]), "--json").stdout)["documents"]
        assert Path(doc["source"]).name in ("MPL-2.0", "GPL-3") and doc["chunk_index"] is None


def test_an_unknown_inference_is_one_line(licences, gb_cli) -> None:
    result = gb(gb_cli, "inferences", "987654", code=1)
    assert "no inference with id 987654" in result.stderr


# ------------------------------------------------------------------ --session


def test_session_filters_list_and_search(online, isolated, gb_cli) -> None:
    """Both licences speak of termination; --session keeps to the one remembered in it,
    by keywords and in hybrid search alike."""
    for name, session in (("MPL-2.0", "mozilla"), ("GPL-3", "gnu")):
        shutil.copy(CORPUS_DIR / name, name)
        gb(gb_cli, "remember", name, "--session", session, "--quiet")
    listed = [
        json.loads(line)["source"]
        for line in gb(gb_cli, "list", "--session", "gnu", "--json").stdout.splitlines()
    ]
    assert [Path(s).name for s in listed] == ["GPL-3"]
    for method in ("bm25", "hybrid"):
        every = gb(gb_cli, "search", QUERY, "--method", method, "-k", "20", "--json").stdout
        assert {Path(json.loads(x)["source"]).name for x in every.splitlines()} == {
            "MPL-2.0",
            "GPL-3",
        }
        only = gb(
            gb_cli, "search", QUERY, "--method", method, "--session", "gnu", "-k", "20", "--json"
        ).stdout
        hits = [json.loads(x) for x in only.splitlines()]
        assert hits and {Path(h["source"]).name for h in hits} == {"GPL-3"}, method
    assert gb(gb_cli, "search", QUERY, "--session", "nobody", "--method", "bm25").stdout == ""
