"""`gb eval`: failure@k on gold spans in licence texts nobody here wrote,
per dataset and search method, as a table and as JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gligabao.errors import InputError
from gligabao.search.evaluate import (
    KS,
    GoldQuery,
    covers,
    evaluate_dataset,
    failed_at,
    parse_queries,
)
from gligabao.search.hybrid import Hit, search
from gligabao.store import open_db
from gligabao.store.datasets import find_dataset

RESULT_KEYS = {
    "dataset",
    "method",
    "queries",
    "failure@1",
    "failure@5",
    "failure@20",
    "failed@1",
    "failed@5",
    "failed@20",
    "mean_tokens",
    "retrieved",
    "skipped",
    "ranks",
}


def _write_queries(items: list[dict]) -> str:
    Path("queries.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items))
    return "queries.jsonl"


def by_method(rows: list[dict], method: str) -> list[dict]:
    return [r for r in rows if r["method"] == method]


def _span(name: str, phrase: str) -> tuple[int, int]:
    data = Path(name).read_bytes()
    start = data.index(phrase.encode())
    return start, start + len(phrase.encode())


# ------------------------------------------------------------------ the rule, by hand


def test_covers_needs_half_of_the_gold_span() -> None:
    # gold [100, 200): 50 bytes of overlap is enough, 49 is not
    assert covers(150, 400, 100, 200) and covers(0, 150, 100, 200)
    assert not covers(151, 400, 100, 200) and not covers(0, 149, 100, 200)
    assert covers(120, 170, 100, 200)  # inside, 50 bytes
    assert not covers(200, 300, 100, 200) and not covers(None, None, 100, 200)
    assert covers(0, 1000, 100, 101)  # a one-byte span inside


def _hit(doc: int, start: int, end: int) -> Hit:
    return Hit(1.0, {"bm25": 1}, 0, doc, "x", start, end, 1, 1, None, "", None)


def test_failed_at_looks_at_the_top_k_hits_of_the_gold_document_only() -> None:
    gold = GoldQuery(1, "q", "/x", 100, 200)
    hits = [_hit(2, 100, 200), _hit(1, 0, 120), _hit(1, 90, 180)]  # good hit: rank 3
    assert failed_at(hits, 1, gold, 1) and failed_at(hits, 1, gold, 2)
    assert not failed_at(hits, 1, gold, 3) and not failed_at(hits, 1, gold, 20)
    assert failed_at(hits, 3, gold, 20)  # right span, wrong document


def test_bad_lines_are_named_by_number() -> None:
    good = '{"query": "q", "source": "a.txt", "start": 0, "end": 5}'
    (gold,) = parse_queries([good], base="/data")
    assert gold == GoldQuery(1, "q", "/data/a.txt", 0, 5)
    for bad, words in [
        ("{not json", "not JSON"),
        ('{"query": "q", "source": "a"}', "missing start, end"),
        ('{"query": "q", "source": "a", "start": 9, "end": 3}', "start < end"),
        ('{"query": "", "source": "a", "start": 0, "end": 3}', "query"),
        ('{"query": "q", "source": "a", "start": "0", "end": 3}', "integers"),
        ("[1, 2]", "object"),
    ]:
        with pytest.raises(InputError, match=f"line 3: .*{words}"):
            parse_queries([good, "", bad])


# ------------------------------------------------------------------ exact failure@k, bm25


def test_failure_at_k_is_exact_on_crafted_gold_spans(gb_cli, corpus, monkeypatch) -> None:
    monkeypatch.setenv("GB_DB", str(Path.cwd() / "gb.db"))
    monkeypatch.setenv("GB_CHUNK_SIZE", "64")
    assert gb_cli("remember", *corpus, "--quiet").exit_code == 0
    conn = open_db("gb.db")
    ds = find_dataset(conn, "default")
    assert ds is not None

    def gold_at(line: int, query: str, rank: int) -> GoldQuery:
        """A gold span: the middle half of the chunk bm25 puts at `rank` for the query;
        a neighbour shares at most the chunk's overlap, so only that chunk covers half."""
        hit = search(conn, ds, query, method="bm25", k=20)[rank - 1]
        quarter = (hit.end_offset - hit.start_offset) // 4
        assert quarter > 0
        return GoldQuery(
            line, query, hit.source, hit.start_offset + quarter, hit.end_offset - quarter
        )

    patent = "patent infringement litigation"
    assert len(search(conn, ds, patent, method="bm25", k=20)) == 20
    mpl = str(Path("MPL-2.0").resolve())
    size = Path("MPL-2.0").stat().st_size
    queries = [
        gold_at(1, "Larger Work", 1),  # found first: fails at no k
        gold_at(2, patent, 3),  # third: fails at 1 only
        gold_at(3, patent, 12),  # twelfth: fails at 1 and 5
        GoldQuery(4, "Larger Work", mpl, 0, size),  # the whole file: no chunk covers half
    ]
    (bm25, vector, hybrid) = evaluate_dataset(conn, ds, queries)
    assert (bm25.method, bm25.queries) == ("bm25", 4)
    assert bm25.failures == {1: 3, 5: 2, 20: 1}
    assert [bm25.fail_rate(k) for k in KS] == [0.75, 0.5, 0.25]
    assert bm25.failed_queries == {1: [2, 3, 4], 5: [3, 4], 20: [4]}
    assert bm25.ranks == {1: 1, 2: 3, 3: 12, 4: None}  # query by query
    # Chunks of at most 64 tokens, as the remember run cut them.
    assert bm25.mean_tokens is not None and 32 < bm25.mean_tokens <= 64
    # Offline, nothing to embed the queries with: vector and hybrid are skipped.
    assert vector.skipped and hybrid.skipped and vector.fail_rate(1) is None

    # The same gold spans through gb eval, as a user writes them (paths relative).
    lines = [
        {"query": q.query, "source": Path(q.source).name, "start": q.start, "end": q.end}
        for q in queries
    ]
    result = gb_cli("eval", _write_queries(lines), "--json")
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["method"] for r in rows] == ["bm25", "vector", "hybrid"]
    assert all(set(r) == RESULT_KEYS for r in rows)
    assert (rows[0]["failure@1"], rows[0]["failure@5"], rows[0]["failure@20"]) == (
        0.75,
        0.5,
        0.25,
    )
    assert rows[0]["ranks"] == {"1": 1, "2": 3, "3": 12, "4": None}
    assert rows[1]["skipped"] and rows[1]["failure@20"] is None
    assert "vector and hybrid skipped" in result.stderr

    # With a kind on each query, failures are also counted by kind.
    for line, kind in zip(lines, ("names", "patents", "patents", "whole"), strict=True):
        line["kind"] = kind
    result = gb_cli("eval", _write_queries(lines), "--json")
    assert result.exit_code == 0, result.stderr
    bm25_row = json.loads(result.stdout.splitlines()[0])
    assert bm25_row["by_kind"]["patents"] == {
        "queries": 2,
        "failure@1": 1.0,
        "failure@5": 0.5,
        "failure@20": 0.0,
        "failed@1": 2,
        "failed@5": 1,
        "failed@20": 0,
    }
    assert bm25_row["by_kind"]["names"]["failure@1"] == 0.0
    assert bm25_row["by_kind"]["whole"]["failure@20"] == 1.0
    table = gb_cli("eval", "queries.jsonl").stdout
    by_kind = table.split("by kind of query", 1)[1].splitlines()
    assert "default\tbm25\tpatents\t2\t100.0%\t50.0%\t0.0%" in by_kind, table


# ------------------------------------------------------------------ two datasets side by side


def test_two_datasets_side_by_side_with_every_method(gb_cli, corpus, online) -> None:
    for name, size in (("small", "64"), ("large", "256")):
        result = gb_cli("remember", *corpus, "--chunk-size", size, "--dataset", name, "--quiet")
        assert result.exit_code == 0, result.stderr
    phrases = [
        ("MPL-2.0", "Larger Work", "means a work that combines Covered Software"),
        ("Apache-2.0", "Grant of Patent License", "Grant of Patent License"),
        ("GPL-3", "Installation Information", "Installation Information"),
        ("GPL-3", "Corresponding Source object code", "Corresponding Source"),
    ]
    items = []
    for name, query, phrase in phrases:
        start, end = _span(name, phrase)
        items.append({"query": query, "source": name, "start": start, "end": end})
    path = _write_queries(items)

    result = gb_cli("eval", path, "--dataset", "small", "--dataset", "large", "--json")
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["dataset"], r["method"]) for r in rows] == [
        (d, m) for d in ("small", "large") for m in ("bm25", "vector", "hybrid")
    ]
    # Hybrid says which vector weight it used, and where it comes from.
    weighted = RESULT_KEYS | {"vector_weight", "weight_origin"}
    assert all(
        set(r) == (weighted if r["method"] == "hybrid" else RESULT_KEYS) and r["skipped"] is None
        for r in rows
    )
    assert {r["weight_origin"] for r in rows if r["method"] == "hybrid"} == {
        "the default; not tuned (gb eval --tune --synthetic learns it)"
    }
    assert all(r["queries"] == 4 and 0 < r["retrieved"] <= 4 * 20 for r in rows)
    assert by_method(rows, "vector")[0]["retrieved"] == 4 * 20  # KNN always fills k
    for r in rows:
        rates = [r[f"failure@{k}"] for k in KS]
        assert rates == sorted(rates, reverse=True)  # more hits, fewer failures
    by = {(r["dataset"], r["method"]): r for r in rows}
    for d in ("small", "large"):  # fusion fails no more often than the better method at 20
        best = min(by[d, "bm25"]["failure@20"], by[d, "vector"]["failure@20"])
        assert by[d, "hybrid"]["failure@20"] <= best
    assert by["small", "bm25"]["mean_tokens"] < by["large", "bm25"]["mean_tokens"] <= 256
    # Each query embedded once, for both datasets: one request besides remember's.
    embeds = [r for r in online.requests if r.path.endswith("/embeddings")]
    assert sum(1 for r in embeds if r.body["input"] == [i["query"] for i in items]) == 1

    table = gb_cli("eval", path, "--dataset", "small", "--dataset", "large")
    assert table.exit_code == 0, table.stderr
    out = table.stdout
    for word in ("dataset", "fail@1", "fail@5", "fail@20", "mean tokens", "small", "large"):
        assert word in out
    assert out.count("hybrid") == 2 and "%" in out


# ------------------------------------------------------------------ clear errors


def test_missing_dataset_unremembered_source_and_bad_file(gb_cli, corpus, monkeypatch) -> None:
    monkeypatch.setenv("GB_DB", str(Path.cwd() / "gb.db"))
    assert gb_cli("remember", corpus[0], "--quiet").exit_code == 0
    start, end = _span("Apache-2.0", "Grant of Patent License")
    good = {"query": "patent", "source": "Apache-2.0", "start": start, "end": end}
    path = _write_queries([good])

    # An unknown dataset, or a gold source the dataset does not hold: a failure (1).
    result = gb_cli("eval", path, "--dataset", "default", "--dataset", "nowhere")
    assert result.exit_code == 1 and "nowhere" in result.stderr

    _write_queries([good, {**good, "source": "GPL-3"}])
    result = gb_cli("eval", path)
    assert result.exit_code == 1
    assert "line 2" in result.stderr and "GPL-3" in result.stderr
    assert "not remembered" in result.stderr

    # A queries file that cannot be read or parsed: a refused input (3).
    Path(path).write_text(json.dumps(good) + "\n{oops\n")
    result = gb_cli("eval", path)
    assert result.exit_code == 3 and "line 2" in result.stderr

    result = gb_cli("eval", "absent.jsonl")
    assert result.exit_code == 3 and "absent.jsonl" in result.stderr


# ------------------------------------------------------------------ why vectors are skipped

HERON = " ".join(f"The heron number {i} waits by the river for fish." for i in range(60))


def _heron_queries() -> str:
    Path("heron.txt").write_text(HERON)
    start, end = _span("heron.txt", "The heron number 7 waits")
    return _write_queries([{"query": "heron 7", "source": "heron.txt", "start": start, "end": end}])


def test_eval_without_an_endpoint_never_imports_the_openai_sdk(gb_process, online, monkeypatch):
    """Whether an embeddings endpoint is configured is read from the settings, as
    gb search does; the SDK (~0.45 s) is only imported to embed queries."""
    path = _heron_queries()
    remembered = gb_process("remember", "heron.txt", "--chunk-size", "64", "--quiet")
    assert remembered.returncode == 0, remembered.stderr
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    argv = ["gb", "eval", path, "--json"]
    code = f"import sys; sys.argv = {argv!r}; from gligabao.cli import main; main()"
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "no embeddings endpoint configured; vector and hybrid skipped" in result.stderr
    imported = [
        line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if "|" in line
    ]
    assert "gligabao.search.evaluate" in imported  # the listing is there...
    assert "openai" not in imported  # ...and the SDK is not in it


def test_eval_and_search_give_the_same_reason_for_another_model(gb_cli, online, monkeypatch):
    """One check decides why vectors cannot be used: a dataset embedded with another model
    is named as such by both commands, even when no endpoint is configured either."""
    path = _heron_queries()
    assert gb_cli("remember", "heron.txt", "--chunk-size", "64", "--quiet").exit_code == 0
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("GB_EMBEDDINGS_DIMENSIONS", "32")
    result = gb_cli("eval", path, "--json")
    assert result.exit_code == 0, result.stderr
    assert "embedded with text-embedding-3-small (64), not the configured" in result.stderr
    searched = gb_cli("search", "heron")
    assert searched.exit_code == 5 and "64 dimensions" in searched.stderr


def test_eval_names_the_datasets_there_are_and_creates_no_database(gb_cli, monkeypatch):
    monkeypatch.setenv("GB_DB", str(Path.cwd() / "gb.db"))
    path = _heron_queries()
    result = gb_cli("eval", path)
    assert result.exit_code == 6 and "no database at" in result.stderr
    assert not Path("gb.db").exists()
    assert gb_cli("remember", "heron.txt", "--dataset", "birds", "--quiet").exit_code == 0
    result = gb_cli("eval", path, "--dataset", "fish")
    assert result.exit_code == 1 and "no dataset named 'fish'" in result.stderr
    assert "it has 'birds'" in result.stderr
