"""Optional LLM reranking: `gb search --rerank`, `search.rerank`, and
`gb eval --method rerank`, against the test server, whose rerank answer orders the
passages by how many distinct query words each holds (ties in the order given)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from gligabao.search.hybrid import Hit
from gligabao.search.rerank import passage, reordered
from gligabao.store import open_db
from gligabao.store.db import query
from tests.support.helpers import DB, SECRET
from tests.support.llm_server import Fault

QUERY = "patent litigation terminates the license"
DEPTH = 20  # search.rerank_depth's default


def _search(gb_cli, *args: str) -> tuple[list[dict], str]:
    result = gb_cli("search", QUERY, "--json", *args)
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()], result.stderr


def _overlap(hit: dict) -> int:
    """How many distinct query words the passage the model was shown holds."""
    words = set(re.findall(r"\w+", QUERY.lower()))
    shown = passage(Hit(**{key: value for key, value in hit.items() if key != "notice"}), QUERY)
    return len(words & set(re.findall(r"\w+", shown.lower())))


def _remembered(gb_cli, corpus: list[str]) -> None:
    result = gb_cli("remember", *corpus, "--quiet")
    assert result.exit_code == 0, result.stderr


def _reranks(path: str = DB) -> list[dict]:
    with open_db(path, create=False) as conn:
        return query(conn, "SELECT * FROM gb_inferences WHERE stage = 'rerank' ORDER BY id")


def _ids(hits: list[dict]) -> list[int]:
    return [h["artifact_id"] for h in hits]


# ------------------------------------------------------------------ the order, by hand


def _hit(n: int) -> Hit:
    return Hit(1.0 / n, {"bm25": n}, n, 1, "x", 0, 1, 1, 1, None, f"text {n}", None)


def test_an_answer_that_omits_repeats_or_invents_numbers_keeps_what_is_valid() -> None:
    hits = [_hit(n) for n in range(1, 6)]
    # 3 first, then 1; the repeated 3, the invented 9 and 0, a string and true dropped;
    # 2, 4, 5 left out by the model follow in fused order.
    order = reordered(hits, [3, 3, 9, 0, "2", True, 1])
    assert order is not None
    assert [h.artifact_id for h in order] == [3, 1, 2, 4, 5]
    assert [h.ranks["rerank"] for h in order] == [1, 2, 3, 4, 5]
    assert order[0].ranks == {"bm25": 3, "rerank": 1}  # the fused ranks kept beside it
    assert reordered(hits, [7, -1, 0]) is None and reordered(hits, []) is None


def test_a_passage_is_its_section_best_lines_and_start_in_bounded_length() -> None:
    text = "1.2 Options\n" + "    filler   words\n" * 60 + "  --quiet   turns off output\n"
    hit = Hit(1.0, {}, 1, 1, "x", 0, 1, 1, 1, "Invoking  wget", text, None)
    shown = passage(hit, "turn the output off", 120)
    # The lines with the query's words first (past any cut of the chunk's start), then
    # the chunk from its heading on, whitespace collapsed, cut to the limit.
    assert shown.startswith("(Invoking wget) filler words filler words --quiet turns off output")
    assert "… 1.2 Options filler words" in shown
    assert len(shown) == 120 and shown.endswith("…")
    first_lines = Hit(1.0, {}, 1, 1, "x", 0, 1, 1, 1, None, "output off\nmore\n", None)
    assert passage(first_lines, "output") == "output off more"  # nothing twice


# ------------------------------------------------------------------ gb search --rerank


def test_rerank_orders_the_hits_as_the_model_answers_and_records_the_call(
    gb_cli, online, corpus
) -> None:
    _remembered(gb_cli, corpus)
    Path("gligabao.toml").write_text('[prices]\n"gpt-4o-mini" = { input = 0.15, output = 0.6 }\n')
    fused, _ = _search(gb_cli, "-k", str(DEPTH))
    assert online.calls("rerank") == 0

    reranked, stderr = _search(gb_cli, "-k", "5", "--rerank")

    assert stderr == ""
    # The model's order (most query words first, ties in fused order), cut to -k.
    predicted = sorted(range(DEPTH), key=lambda i: (-_overlap(fused[i]), i))
    assert _ids(reranked) == [fused[i]["artifact_id"] for i in predicted[:5]]
    assert _ids(reranked) != _ids(fused)[:5]  # the order did change
    assert [h["ranks"]["rerank"] for h in reranked] == [1, 2, 3, 4, 5]
    by_id = {h["artifact_id"]: h for h in fused}
    for hit in reranked:  # the fused ranks and score are kept beside the rerank
        fused_ranks = by_id[hit["artifact_id"]]["ranks"]
        assert {m: r for m, r in hit["ranks"].items() if m != "rerank"} == fused_ranks
    # One call, with the 20 fused candidates, recorded as stage rerank with its cost.
    assert online.calls("rerank") == 1
    (request,) = online.requests_for("rerank")
    shown = request.body["messages"][-1]["content"]
    assert f"[{DEPTH}] " in shown and f"[{DEPTH + 1}] " not in shown and QUERY in shown
    (row,) = _reranks()
    assert row["dataset_id"] is not None and row["answer"] is not None
    assert row["input_tokens"] > 0 and row["output_tokens"] > 0 and row["cost"] > 0
    assert SECRET not in json.dumps(row)

    # The same query again reuses the recorded answer: same order, no request.
    again, _ = _search(gb_cli, "-k", "5", "--rerank")
    assert _ids(again) == _ids(reranked)
    assert online.calls("rerank") == 1 and len(_reranks()) == 1

    # Config search.rerank turns it on without the flag; --no-rerank off again.
    Path("gligabao.toml").write_text("[search]\nrerank = true\n")
    assert _ids(_search(gb_cli, "-k", "5")[0]) == _ids(reranked)
    plain, _ = _search(gb_cli, "-k", "5", "--no-rerank")
    assert _ids(plain) == _ids(fused)[:5] and all("rerank" not in h["ranks"] for h in plain)

    table = gb_cli("search", QUERY, "-k", "3", "--rerank")
    assert table.exit_code == 0 and "rerank #1" in table.stdout


def test_a_failing_or_malformed_rerank_falls_back_to_the_fused_order(
    gb_cli, online, corpus
) -> None:
    _remembered(gb_cli, corpus)
    fused, _ = _search(gb_cli, "-k", "5")
    for kind in ("500", "malformed"):
        online.add_fault(Fault(kind=kind, stage="rerank", times=-1))
        hits, stderr = _search(gb_cli, "-k", "5", "--rerank")
        online.clear_faults()
        assert _ids(hits) == _ids(fused)
        assert all("rerank" not in h["ranks"] for h in hits)
        (line,) = stderr.splitlines()  # one notice, on stderr
        assert line.startswith("gb: reranking failed: rerank (gpt-4o-mini)")
        assert line.endswith("results in fused order")
        assert all(h["notice"] == line.removeprefix("gb: ") for h in hits)
        assert SECRET not in stderr
    assert _reranks() == [] or all(r["answer"] is None for r in _reranks())


def test_rerank_without_a_chat_endpoint_keeps_the_order_with_a_notice(
    gb_cli, online, corpus, monkeypatch
) -> None:
    _remembered(gb_cli, corpus)
    fused, _ = _search(gb_cli, "-k", "5", "--method", "bm25")
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    hits, stderr = _search(gb_cli, "-k", "5", "--rerank")
    assert _ids(hits) == _ids(fused)
    assert "BM25" in stderr and "no chat endpoint configured" in stderr
    assert online.calls("rerank") == 0


# ------------------------------------------------------------------ gb eval --method rerank


def test_eval_measures_rerank_beside_hybrid_with_one_call_a_query(gb_cli, online, corpus) -> None:
    _remembered(gb_cli, corpus)
    phrases = [
        ("Apache-2.0", QUERY, "litigation is filed"),
        ("MPL-2.0", "what is a Larger Work", "means a work that combines Covered Software"),
        ("GPL-3", "installation information for user products", "Installation Information"),
    ]
    lines = []
    for name, text, phrase in phrases:
        start = Path(name).read_bytes().index(phrase.encode())
        lines.append({"query": text, "source": name, "start": start, "end": start + len(phrase)})
    Path("queries.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))

    args = ("eval", "queries.jsonl", "--method", "hybrid", "--method", "rerank", "--json")
    # A query whose reranking fails keeps its fused order, with a notice; the others go on.
    online.add_fault(Fault(kind="500", stage="rerank", match="Larger Work", times=-1))
    failing = gb_cli(*args)
    assert failing.exit_code == 0, failing.stderr
    (notice,) = failing.stderr.splitlines()
    assert notice.startswith("gb: line 2: reranking failed") and "HTTP 500" in notice
    assert online.calls("rerank") == 2
    online.clear_faults()

    result = gb_cli(*args)

    assert result.exit_code == 0, result.stderr
    assert result.stderr == "" and online.calls("rerank") == 3
    hybrid, rerank = (json.loads(line) for line in result.stdout.splitlines())
    assert (hybrid["method"], rerank["method"]) == ("hybrid", "rerank")
    assert rerank["skipped"] is None and rerank["queries"] == 3
    # Reordering the 20 fused candidates cannot change what the top 20 hold.
    assert rerank["failure@20"] == hybrid["failure@20"]
    assert len([r for r in _reranks() if r["answer"] is not None]) == 3
    # Measured again: every answer reused.
    assert gb_cli(*args).stdout == result.stdout and online.calls("rerank") == 3

    refused = gb_cli("eval", "queries.jsonl", "--method", "llm")
    assert refused.exit_code == 2 and "rerank" in refused.stderr
