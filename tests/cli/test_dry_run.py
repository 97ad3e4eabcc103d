"""`gb remember --dry-run`: what a run would cut, and the LLM calls and input tokens it
would take, priced where prices are known, with nothing stored, no request made and no
database created; it works with no endpoint reachable.

Real SQLite files, and the real openai client over HTTP to the test server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gligabao.config import BUILTIN_CHAT_PRICES, BUILTIN_EMBEDDING_PRICES
from tests.support.helpers import DB, configure, gb, rows, stderr_lines, story, write

STAGES = ("extract_graph", "summarize_chunk", "embed")


def _folder() -> None:
    write("docs/a.md", story(1, paragraphs=4))
    write("docs/b.txt", story(2, paragraphs=2))
    write("docs/short.md", story(3))
    write("docs/empty.md", "")


def _lines(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_dry_run_counts_what_the_run_then_makes_and_asks_nothing(gb_cli, online) -> None:
    _folder()
    *documents, total = _lines(gb(gb_cli, "remember", "-r", "docs", "--dry-run", "--json"))
    assert online.calls() == 0 and not Path(DB).exists()
    assert [Path(d["source"]).name for d in documents] == ["a.md", "b.txt", "short.md"]
    assert all(list(d)[:2] == ["source", "status"] for d in (*documents, total))
    assert total["status"] == "total" and total["documents"] == 3
    assert total["chunks"] == sum(d["chunks"] for d in documents)
    short = documents[2]
    assert (short["chunked"], short["calls"]) == (False, {"extract_graph": 1, "embed": 1})

    gb(gb_cli, "remember", "-r", "docs")
    made = {
        r["stage"]: r
        for r in rows(
            "SELECT stage, count(*) AS n, sum(input_tokens) AS tokens FROM gb_inferences "
            "GROUP BY stage"
        )
    }
    # The summaries rewritten once later facts closed earlier ones are not foreseen: what
    # the graph then holds decides them. Each call of theirs is embedded once.
    rewrites = made["summarize_entity"]["n"] if "summarize_entity" in made else 0
    made["embed"]["n"] -= rewrites
    for stage in STAGES:  # the same calls; the tokens as the server counts them, near
        assert total["calls"][stage] == made[stage]["n"], stage
    for stage in ("extract_graph", "summarize_chunk"):
        # The schema counted as prompt, as a provider bills it (this server does not): high.
        assert 1 <= total["input_tokens"][stage] / made[stage]["tokens"] < 3, stage


def test_dry_run_works_with_no_endpoint_and_prices_the_default_models(gb_cli, monkeypatch) -> None:
    configure(monkeypatch, None)  # OpenAI's API, as with no endpoint set: built-in prices
    _folder()
    *_, total = _lines(gb(gb_cli, "remember", "-r", "docs", "--dry-run", "--json"))
    prices = {**BUILTIN_CHAT_PRICES, **BUILTIN_EMBEDDING_PRICES}
    expected = sum(prices[total["models"][s]].cost(total["input_tokens"][s], 0) for s in STAGES)
    assert total["unpriced"] == [] and total["cost"] == pytest.approx(expected)
    assert not Path(DB).exists()

    shown = gb(gb_cli, "remember", "-r", "docs", "--dry-run")
    assert f"cost ${expected:.4f} for the input tokens" in " ".join(shown.stdout.split())
    assert "skipped 1 empty" in shown.stderr


def test_dry_run_at_a_server_without_prices_says_the_cost_is_unknown(gb_cli, monkeypatch) -> None:
    configure(monkeypatch, None, OPENAI_BASE_URL="http://127.0.0.1:1/v1")  # nothing there
    write("a.md", story(1, paragraphs=2))
    result = gb(gb_cli, "remember", "a.md", "--dry-run", "--contextual")
    said = " ".join(result.stdout.split())
    assert "cost unknown: no price for gpt-4o-mini, text-embedding-3-small" in said
    assert "contextualize_chunk" in said
    *_, total = _lines(gb(gb_cli, "remember", "a.md", "--dry-run", "--json", "--no-graph"))
    assert total["cost"] is None and list(total["calls"]) == ["embed"]


def test_dry_run_of_standard_input_with_a_name(gb_cli, monkeypatch) -> None:
    configure(monkeypatch, None)
    text = story(7, paragraphs=2).encode()
    [document, _] = _lines(
        gb(gb_cli, "remember", "-", "--name", "mail.txt", "--dry-run", "--json", input=text)
    )
    assert document["source"] == "mail.txt" and document["chunks"] >= 1


def test_dry_run_of_inputs_refused_says_why_and_exits_as_a_run(gb_cli, monkeypatch) -> None:
    configure(monkeypatch, None)
    write("a.md", story(1))
    result = gb(gb_cli, "remember", "a.md", "missing.md", "--dry-run", code=4)
    assert any("missing.md" in line for line in stderr_lines(result))
    gb(gb_cli, "remember", "missing.md", "--dry-run", code=3)
    assert not Path(DB).exists()
