"""What a `gb remember` run pays for, and --max-cost: every answer billed is counted, and the
budget holds even when each answer may bill its whole token limit.

Real SQLite files, and the real openai client over HTTP to the test server, metered here:
it keeps the usage of every answer it sent, which is what an API bills.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gligabao.config import Price
from gligabao.store import open_db
from gligabao.store.db import transaction
from tests.support.helpers import (
    DB,
    configure,
    gb,
    lines_by_source,
    rows,
    stderr_lines,
    story,
    write,
)
from tests.support.llm_server import Fault, LLMServer

CHAT = Price(input=0.5, output=10.0)


def assert_summary_spend(line: str, metered: Any) -> None:
    """The summary line says the tokens the server billed and their cost, to the cent's
    hundredth (a sum of floats may round either way at the fourth decimal)."""
    found = re.search(r" ([\d,]+) tokens, cost \$(\d+\.\d{4}),", line)
    assert found, line
    assert int(found.group(1).replace(",", "")) == metered.tokens()
    assert float(found.group(2)) == pytest.approx(metered.cost(), abs=0.00006)


EMBED = Price(input=0.5, output=0.0)
PRICES = """\
[prices]
"gpt-4o-mini" = { input = 0.5, output = 10.0 }
"text-embedding-3-small" = { input = 0.5, output = 0.0 }
"""
ONE_AT_A_TIME = ("--concurrency", "1")


class MeteredServer(LLMServer):
    """The test server, keeping the usage of every answer it gave (what an API bills).

    With ``think`` its model reasons up to the limit, as a reasoning model may: each chat
    answer bills the whole max_completion_tokens it was sent with, reasoning included."""

    def __init__(self) -> None:
        super().__init__()
        self.think = False
        self.billed: list[tuple[str, dict[str, Any]]] = []  # (stage, usage)

    def _process(self, method: str, path: str, raw: bytes, record: Any) -> Any:
        status, headers, payload = super()._process(method, path, raw, record)
        if status != 200 or not path.rstrip("/").endswith(("/chat/completions", "/embeddings")):
            return status, headers, payload
        response = json.loads(payload)
        usage = response["usage"]
        if self.think and "choices" in response:
            limit = record.body.get("max_completion_tokens") or record.body["max_tokens"]
            details = usage["completion_tokens_details"]
            details["reasoning_tokens"] = limit - usage["completion_tokens"]
            usage["completion_tokens"] = limit
            usage["total_tokens"] = usage["prompt_tokens"] + limit
            payload = json.dumps(response, ensure_ascii=False).encode("utf-8")
        with self._lock:
            self.billed.append((record.stage, usage))
        return status, headers, payload

    def tokens(self) -> int:
        return sum(u["prompt_tokens"] + u.get("completion_tokens", 0) for _, u in self.billed)

    def cost(self) -> float:
        return sum(
            (EMBED if stage == "embed" else CHAT).cost(
                u["prompt_tokens"], u.get("completion_tokens", 0)
            )
            for stage, u in self.billed
        )


@pytest.fixture
def metered(monkeypatch: pytest.MonkeyPatch) -> Iterator[MeteredServer]:
    with MeteredServer() as srv:
        configure(monkeypatch, srv)
        yield srv


def recorded() -> dict[str, Any]:
    """What gb_inferences holds: calls, tokens and cost of them all."""
    (row,) = rows(
        """SELECT count(*) AS n, sum(input_tokens + output_tokens) AS tokens,
                  sum(cost) AS cost, count(cost) AS priced FROM gb_inferences"""
    )
    return row


def summary(result: Any) -> str:
    *_, line = stderr_lines(result)
    return line


# ------------------------------------------------------------------ the reasoning's tokens


def test_max_cost_holds_when_every_answer_bills_its_whole_reasoning_headroom(
    gb_cli, metered
) -> None:
    # At reasoning "high" an answer may bill up to 16,384 reasoning tokens besides its own
    # budget: here every one does, so the budget holds only if each call reserved them.
    write("gligabao.toml", PRICES)
    names = [str(write(f"batch/d{i}.md", story(300 + i, paragraphs=2))) for i in range(6)]
    metered.think = True
    budget = 1.0
    high = [f"{stage}=high" for stage in ("extract_graph", "summarize_chunk", "resolve")]

    result = gb(
        gb_cli,
        "remember",
        *names,
        *ONE_AT_A_TIME,
        *(arg for r in high for arg in ("--reasoning", r)),
        "--max-cost",
        str(budget),
        "--json",
        code=4,
    )

    lines = lines_by_source(result.stdout)
    assert "left" in {line["status"] for line in lines.values()}
    assert metered.billed and any(s == "extract_graph" for s, _ in metered.billed)
    assert 0 < metered.cost() <= budget  # what the API billed stayed within
    spent = recorded()
    assert spent["n"] == spent["priced"]
    # A request cancelled in flight when the budget stopped its document may be billed
    # and not recorded: the budget counted it at its reservation.
    assert 0 < spent["cost"] <= metered.cost()


def test_max_cost_holds_when_every_answer_is_unusable_and_asked_for_again(gb_cli, metered) -> None:
    # Each call pays for two answers, the rejected one and the one asked again: the budget
    # holds only if each call reserved both.
    write("gligabao.toml", PRICES)
    names = [str(write(f"batch/d{i}.md", story(700 + i))) for i in range(8)]
    metered.think = True
    metered.add_fault(Fault(kind="invalid", stage="extract_graph", times=-1))
    budget = 1.0

    result = gb(
        gb_cli,
        "remember",
        *names,
        *ONE_AT_A_TIME,
        "--reasoning",
        "extract_graph=high",
        "--max-cost",
        str(budget),
        "--json",
        code=4,
    )

    lines = lines_by_source(result.stdout)
    assert {line["status"] for line in lines.values()} == {"failed", "left"}
    assert 0 < metered.cost() <= budget
    assert recorded()["cost"] == pytest.approx(metered.cost())  # the rejected ones too


# ------------------------------------------------------------------ answers asked again


def test_an_unusable_answer_asked_again_counts_both_answers_in_the_spend(gb_cli, metered) -> None:
    write("gligabao.toml", PRICES)
    names = [str(write(f"docs/d{i}.md", story(400 + i, paragraphs=3))) for i in range(2)]
    metered.add_fault(Fault(kind="invalid", stage="summarize_chunk", times=1))
    metered.add_fault(Fault(kind="malformed", stage="extract_graph", times=1))

    result = gb(gb_cli, "remember", *names)

    assert metered.calls("summarize_chunk") > 0
    assert len([r for r in metered.requests if r.fault]) == 2  # both paid, both asked again
    spent = recorded()
    assert spent["tokens"] == metered.tokens()
    assert spent["cost"] == pytest.approx(metered.cost())
    # One row a request: the unusable answer's tokens are in the row of the good one.
    chats = rows("SELECT answer FROM gb_inferences WHERE stage <> 'embed'")
    assert chats and all(r["answer"] for r in chats)
    assert len(chats) == len([s for s, _ in metered.billed if s != "embed"]) - 2
    assert_summary_spend(summary(result), metered)


def test_a_call_whose_answers_were_all_rejected_is_recorded_and_counted(gb_cli, metered) -> None:
    write("gligabao.toml", PRICES)
    good = str(write("docs/good.md", story(500, paragraphs=3)))
    bad = str(write("docs/bad.md", story(501, paragraphs=3)))
    metered.add_fault(Fault(kind="invalid", stage="summarize_chunk", match="Report 501", times=-1))

    # One request at a time: none is in flight, to be cancelled unrecorded, when one fails.
    result = gb(gb_cli, "remember", good, bad, *ONE_AT_A_TIME, "--json", code=4)

    assert lines_by_source(result.stdout)[bad]["status"] == "failed"
    spent = recorded()
    assert spent["tokens"] == metered.tokens()  # the rejected answers' tokens included
    assert spent["cost"] == pytest.approx(metered.cost())
    rejected = rows(
        "SELECT * FROM gb_inferences WHERE stage = 'summarize_chunk' AND answer IS NULL"
    )
    assert rejected and all(r["request_hash"] and r["output_tokens"] > 0 for r in rejected)
    assert_summary_spend(summary(result), metered)


# ------------------------------------------------------------------ prices of every stage


def test_max_cost_with_contextual_needs_a_price_for_the_contextualize_model(
    gb_cli, metered
) -> None:
    write("gligabao.toml", PRICES)  # none for gpt-4o
    path = str(write("a.md", story(1, paragraphs=2)))
    args = ("remember", path, "--model", "contextualize_chunk=gpt-4o", "--max-cost", "5")

    result = gb(gb_cli, *args, "--contextual", code=5)

    message = " ".join(result.stderr.split())
    assert "--max-cost" in message and "gpt-4o" in message and "[prices]" in message
    assert "gpt-4o-mini" not in message  # priced
    assert metered.requests == [] and not Path(DB).exists()

    gb(gb_cli, *args)  # without --contextual gpt-4o is never called: no price needed
    assert metered.calls("contextualize_chunk") == 0


def test_max_cost_needs_no_price_for_the_rerank_model_remember_never_calls(gb_cli, metered) -> None:
    write("gligabao.toml", PRICES)  # none for gpt-4o
    path = str(write("a.md", story(1, paragraphs=2)))
    gb(gb_cli, "remember", path, "--model", "rerank=gpt-4o", "--max-cost", "5")
    assert metered.calls("extract_graph") > 0


# ------------------------------------------------------------------ stored answers


def test_a_stored_answer_that_no_longer_validates_is_asked_for_again(gb_cli, metered) -> None:
    path = str(write("a.md", story(600, paragraphs=3)))
    gb(gb_cli, "remember", path)
    summaries = metered.calls("summarize_chunk")
    assert summaries > 0
    # As if the schema changed since they were stored: the answers no longer fit it.
    conn = open_db(DB)
    try:
        with transaction(conn):
            conn.execute(
                """UPDATE gb_inferences SET answer = '{"unexpected": true}'
                   WHERE stage = 'summarize_chunk'"""
            )
    finally:
        conn.close()

    again = gb(gb_cli, "remember", path, "--force", "--json")

    assert json.loads(again.stdout)["status"] == "remembered"
    assert metered.calls("summarize_chunk") == 2 * summaries  # asked again, each once
    gb(gb_cli, "remember", path, "--force")
    assert metered.calls("summarize_chunk") == 2 * summaries  # the new answers are reused
