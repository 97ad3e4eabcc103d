"""An answer that repeats itself: a small model in a loop writes the same fact until its
output limit. gb stops reading a streamed one as soon as it sees the loop (the server
stops generating), keeps what came whole before it, and does not ask again."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from gligabao.config import load_config
from gligabao.llm import (
    LLM,
    LLMError,
    extract_graph_request,
    resolve_request,
    summarize_chunk_request,
)
from gligabao.llm.prompts import EXTRACT_GRAPH_ANSWER_SCHEMA
from gligabao.llm.salvage import loop_cut, salvaged
from tests.support.helpers import gb
from tests.support.llm_server import Fault, LLMServer, extract_graph

KEY = "sk-loop-test-00000000000"
TEXT = (
    "Alice Moreau works at Acme Corp in Lyon. Bruno Tanaka met Alice Moreau in Geneva "
    "on 2024-03-02. Chiara Okafor founded Bluefin Labs in Kyoto."
)


def _llm(server: LLMServer, **flags: Any) -> LLM:
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
    config = load_config(None, flags={"embeddings.dimensions": 64, **flags}, env=env)
    return LLM(config, env=env, backoff_base=0.01, backoff_cap=0.05)


def _chat(llm: LLM, request: Any) -> Any:
    async def go() -> Any:
        try:
            return await llm.chat(request)
        finally:
            await llm.aclose()

    return asyncio.run(go())


def test_a_streamed_loop_is_stopped_early_and_its_whole_items_kept() -> None:
    request = extract_graph_request(TEXT, "2026-01-01T00:00:00Z")
    # 300 tokens a second: the whole looping answer (its output limit, 2,048) would take
    # seven seconds; the loop shows within its first few hundred characters.
    with LLMServer(slots=2, token_rate=300) as server:
        server.add_fault(Fault("loop", stage="extract_graph"))
        answer = _chat(_llm(server), request)
        server.wait_until(lambda: all(g.ended for g in server.generations))
        generated = server.generated_tokens()
        calls = server.calls("extract_graph", include_faults=True)
    expected = extract_graph(TEXT)
    assert calls == 1  # used as it stood: not asked again
    assert generated < 2048 // 3, generated  # stopped, far before its limit of 2,048
    assert answer.value == expected  # every fact once, the repeats dropped
    assert answer.inference.output_tokens > 0  # what it read is counted all the same


def test_a_whole_answer_cut_off_in_a_loop_keeps_what_came_before_it() -> None:
    request = extract_graph_request(TEXT, "2026-01-01T00:00:00Z")
    with LLMServer() as server:
        server.add_fault(Fault("loop", stage="extract_graph"))
        answer = _chat(_llm(server, **{"llm.stream": False}), request)
        calls = server.calls("extract_graph", include_faults=True)
    assert calls == 1
    assert answer.value == extract_graph(TEXT)


def test_a_loop_inside_a_string_is_asked_again() -> None:
    """A summary that loops has nothing whole to keep: it is asked again, as a cut-off
    answer is."""
    with LLMServer(slots=2, token_rate=300) as server:
        server.add_fault(Fault("loop", stage="summarize_chunk"))
        answer = _chat(_llm(server), summarize_chunk_request(TEXT))
        server.wait_until(lambda: all(g.ended for g in server.generations))
        looped = server.generations[0].tokens
        calls = server.calls("summarize_chunk", include_faults=True)
    assert looped < 512 // 2, looped  # the first stopped, far before its limit of 512
    assert calls == 2 and answer.value["summary"].startswith("Alice Moreau")


def test_a_resolve_answer_that_loops_is_never_taken_in_part() -> None:
    """An item a resolve answer leaves out would count as new: the loop is a cut-off
    answer, which the pipeline asks again in halves."""
    items = {
        "entities": [
            {
                "id": f"e{i}",
                "name": f"Alice Moreau {i}",
                "type": "Person",
                "candidates": [
                    {"id": i, "name": "Alice Moreau", "type": "Person", "summary": "An engineer."}
                ],
            }
            for i in range(1, 4)
        ],
        "edges": [],
    }
    with LLMServer() as server:
        server.add_fault(Fault("loop", stage="resolve"))
        try:
            _chat(_llm(server), resolve_request(items))
        except LLMError as exc:
            assert exc.cut_off and "repeated itself" in str(exc)
        else:
            raise AssertionError("a looping resolve answer was taken")
        assert server.calls("resolve", include_faults=True) == 1


def test_remember_stores_the_facts_of_an_extraction_that_looped(gb_cli, online) -> None:
    online.add_fault(Fault("loop", stage="extract_graph"))
    result = gb(gb_cli, "remember", "-", "--json", input=TEXT.encode())
    line = json.loads(result.stdout.splitlines()[0])
    assert line["status"] == "remembered"
    assert online.calls("extract_graph", include_faults=True) == 1
    facts = [json.loads(f) for f in gb(gb_cli, "facts", "--json").stdout.splitlines()]
    assert sorted(f["fact"] for f in facts) == sorted(
        e["fact"] for e in extract_graph(TEXT)["edges"]
    )


def test_what_counts_as_a_loop() -> None:
    fact = '{"source": "A", "target": "B", "fact": "A knows B well and often."}'
    sound = '{"edges": [' + ", ".join(fact.replace("A", f"A{i}") for i in range(40)) + "]}"
    assert loop_cut(sound) is None  # many alike facts, each its own: no loop
    looping = '{"entities": [], "edges": [' + ", ".join([fact] * 12)
    at = loop_cut(looping)
    assert at is not None
    assert salvaged(looping[:at], EXTRACT_GRAPH_ANSWER_SCHEMA) == {
        "entities": [],
        "edges": [json.loads(fact)],
    }
    spaces = '{"entities": [{"name": "A", "type": "T", "summary": "s"}]' + " " * 900
    assert salvaged(spaces[: loop_cut(spaces)], EXTRACT_GRAPH_ANSWER_SCHEMA) == {
        "entities": [{"name": "A", "type": "T", "summary": "s"}],
        "edges": [],  # never reached: empty
    }
