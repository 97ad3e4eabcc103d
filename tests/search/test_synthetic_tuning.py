"""A dataset learns its fusion weight without the user's gold (`gb eval --tune
--synthetic`): a sample of its chunks each gets a query (written by the chat model, or
taken from headings and summaries with --no-llm), the chunk being that query's gold; the
weight is learnt on those, stored with the model it holds for, and used by later
searches, which say where it comes from."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gligabao.config import load_config
from gligabao.search.hybrid import fusion_for, weight_origin
from gligabao.store.datasets import Dataset
from tests.support.helpers import CORPUS_DIR
from tests.support.llm_server import pseudo_query

GOLD = Path(__file__).parents[1] / "support" / "gold" / "corpus_queries.jsonl"
FILES = ("GPL-3", "MPL-2.0", "Apache-2.0", "NODEJS-LICENSE", "dns.md", "webcrypto.md")
KS = (1, 5, 20)


def _remember(gb_cli, *names: str, stages: str = "graph,summaries,embed") -> None:
    for name in names:
        shutil.copy(CORPUS_DIR / name, name)
    result = gb_cli("remember", *names, "--quiet", "--stages", stages)
    assert result.exit_code == 0, result.stderr


def _json_lines(result) -> list[dict]:
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def _tune(gb_cli, *args: str) -> dict:
    lines = _json_lines(gb_cli("eval", "--tune", "--synthetic", "--json", *args))
    tunings = [line["tuning"] for line in lines if "tuning" in line]
    assert len(tunings) == 1, lines
    return tunings[0]


def _hybrid(gb_cli) -> dict:
    lines = _json_lines(gb_cli("eval", str(GOLD), "--json"))
    return {line["method"]: line for line in lines if "method" in line}


def test_a_dataset_learns_its_weight_from_queries_the_llm_writes_for_its_chunks(
    gb_cli, online, backend, monkeypatch
):
    monkeypatch.setenv("GB_EMBEDDINGS_DIMENSIONS", "384")
    _remember(gb_cli, *FILES)
    tuning = _tune(gb_cli, "--sample", "40")

    # One call a sampled chunk, each showing the model a chunk's text.
    written = online.requests_for("pseudo_query")
    assert len(written) == 40 and tuning["calls"] == 40
    assert tuning["learnt_from"] == "llm" and tuning["queries"] == 40
    assert tuning["written_by"]
    passages = [r.body["messages"][-1]["content"] for r in written]
    assert all("<passage>" in p for p in passages)

    # Later evaluations use the learnt weight, and say where it comes from.
    methods = _hybrid(gb_cli)
    hybrid, bm25 = methods["hybrid"], methods["bm25"]
    assert hybrid["vector_weight"] == tuning["vector_weight"]
    assert "learnt from 40 pseudo-queries written by" in hybrid["weight_origin"]
    # Measured on the hand-written gold it never saw: no worse than BM25 alone at any k.
    for k in KS:
        assert hybrid[f"failed@{k}"] <= bm25[f"failed@{k}"], (tuning, methods)

    # Tuned again: the same chunks drawn, every answer reused, nothing paid.
    again = _tune(gb_cli, "--sample", "40")
    assert again["calls"] == 0 and len(online.requests_for("pseudo_query")) == 40
    assert again["vector_weight"] == tuning["vector_weight"]


def test_the_test_servers_query_is_the_passages_own_longest_words():
    """What the deterministic server answers, so that the tests above can be read."""
    assert pseudo_query("Short one. The longest sentence holds several words here.") == {
        "query": "sentence longest several holds words"
    }


def test_without_an_llm_the_queries_come_from_headings(gb_cli, online):
    _remember(gb_cli, "dns.md", "webcrypto.md")
    tuning = _tune(gb_cli, "--sample", "30", "--no-llm")
    assert online.requests_for("pseudo_query") == []
    assert tuning["learnt_from"] == "headings" and tuning["calls"] == 0
    assert 0 < tuning["queries"] <= 60  # a heading and a summary at most, a chunk
    lines = _json_lines(gb_cli("eval", "--tune", "--synthetic", "--no-llm", "--json"))
    weights = [line for line in lines if "weight_origin" in line]
    assert "pseudo-queries from headings and summaries" in weights[0]["weight_origin"]


def test_plain_text_without_headings_offline_cannot_be_tuned_and_says_why(gb_cli, online):
    _remember(gb_cli, "GPL-3", stages="embed")  # vectors, and no summary to ask from
    result = gb_cli("eval", "--tune", "--synthetic", "--no-llm")
    assert result.exit_code == 2, result.stdout
    assert "no query could be made" in result.stderr
    assert "headings or summaries" in result.stderr


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--synthetic",), "give --tune with --synthetic"),
        ((), "give a QUERIES.jsonl file"),
        (("--tune", "--synthetic", "--sample", "-3"), "--sample must be a positive"),
    ],
)
def test_eval_says_what_it_needs(gb_cli, online, args, said):
    result = gb_cli("eval", *args)
    assert result.exit_code == 2
    assert said in result.stderr


def _dataset(settings: dict | None) -> Dataset:
    return Dataset(
        id=1,
        name="notes",
        embedding_model="all-minilm-l6-v2",
        embedding_dimensions=384,
        created_at="2026-12-06T09:00:00Z",
        search_settings=settings,
    )


def test_a_weight_learnt_for_another_model_is_not_used(tmp_path):
    config = load_config(None, {"database": str(tmp_path / "gb.db")}, env={})
    learnt = {
        "vector_weight": 0.2,
        "tuned_on": 100,
        "tuned_at": "2026-12-06T10:00:00Z",
        "learnt_from": "llm",
        "written_by": "qwen",
        "embedding_model": "all-minilm-l6-v2",
        "keyword_scorer": "bm25",
    }
    here = _dataset(learnt)
    assert fusion_for(config, here).vector_weight == 0.2
    assert weight_origin(config, here) == (
        "learnt from 100 pseudo-queries written by qwen on 2026-12-06"
    )
    moved = _dataset({**learnt, "embedding_model": "text-embedding-3-small"})
    assert fusion_for(config, moved).vector_weight == 0.5  # the default again
    assert "tune again" in weight_origin(config, moved)
    assert "text-embedding-3-small" in weight_origin(config, moved)
    assert weight_origin(config, _dataset(None)).startswith("the default; not tuned")


def test_an_import_learns_the_weight_when_asked_and_none_holds(gb_cli, online, monkeypatch):
    monkeypatch.setenv("GB_SEARCH_TUNE_AFTER_IMPORT", "20")
    shutil.copy(CORPUS_DIR / "dns.md", "dns.md")
    first = gb_cli("remember", "dns.md")
    assert first.exit_code == 0, first.stderr
    assert "learnt the hybrid vector weight of 'default'" in first.stderr
    assert "from 20 pseudo-queries (20 LLM calls)" in first.stderr
    assert len(online.requests_for("pseudo_query")) == 20
    weights = [
        line
        for line in _json_lines(gb_cli("eval", "--tune", "--synthetic", "--sample", "20", "--json"))
        if "weight_origin" in line
    ]
    assert "learnt from 20 pseudo-queries" in weights[0]["weight_origin"]

    # A weight holds now: the next import does not tune again.
    shutil.copy(CORPUS_DIR / "webcrypto.md", "webcrypto.md")
    second = gb_cli("remember", "webcrypto.md")
    assert second.exit_code == 0, second.stderr
    assert "learnt the hybrid vector weight" not in second.stderr
    assert len(online.requests_for("pseudo_query")) == 20


def test_an_import_does_not_tune_unless_asked(gb_cli, online):
    _remember(gb_cli, "dns.md")
    assert online.requests_for("pseudo_query") == []
