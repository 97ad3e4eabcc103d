"""Tests of the LLM layer (gligabao.llm) against the deterministic test server."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from gligabao.base.redact import scrub
from gligabao.config import Config, load_config
from gligabao.errors import ConfigError
from gligabao.llm import (
    LLM,
    ChatRequest,
    Flight,
    LLMError,
    SchemaMismatch,
    contextualize_chunk_request,
    extract_graph_request,
    load_answer,
    parse_lenient,
    resolve_request,
    summarize_chunk_request,
    validate,
)
from gligabao.llm.client import JSON_ALONE, REASONING_HEADROOM
from gligabao.llm.prompts import CANDIDATE_SUMMARY_CHARS
from gligabao.llm.schema import checked
from tests.support.helpers import serving
from tests.support.llm_server import Fault, Hold, LLMServer, answer_model

SECRET = "sk-test-secret-123456"
TEXT = "Alice Smith works at Acme Corp since 2021-03-01. Bob Jones met Alice Smith in Paris."
CHUNK = "Alice Smith met Bob Jones in Paris on 2022-05-06. They signed a contract worth 4.2M."
ITEMS = {
    "entities": [
        {
            "id": "e0",
            "name": "Alice",
            "type": "Person",
            "candidates": [{"id": 12, "name": "Alice Smith", "type": "Person", "summary": "x"}],
        }
    ],
    "edges": [
        {
            "id": "r0",
            "source": "Alice Smith",
            "target": "Globex",
            "relation": "WORKS_AT",
            "fact": "Alice Smith works at Globex.",
            "valid_at": "2023-01-01T00:00:00Z",
            "candidates": [
                {
                    "id": 7,
                    "source": "Alice Smith",
                    "target": "Acme Corp",
                    "relation": "WORKS_AT",
                    "fact": "Alice Smith works at Acme Corp.",
                    "valid_at": "2021-03-01T00:00:00Z",
                }
            ],
        }
    ],
}

REQUESTS = {
    "extract_graph": lambda: extract_graph_request(TEXT, "2024-05-01T00:00:00+00:00"),
    "summarize_chunk": lambda: summarize_chunk_request(CHUNK),
    "contextualize_chunk": lambda: contextualize_chunk_request(TEXT + "\n\n" + CHUNK, CHUNK),
    "resolve": lambda: resolve_request(ITEMS),
}


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as srv:
        yield srv


@pytest.fixture
def srv(server: LLMServer) -> Iterator[LLMServer]:
    server.reset()
    yield server
    server.reset()


def make_config(srv: LLMServer | None, path: Path | None = None, **flags: Any) -> Config:
    env = {"OPENAI_API_KEY": SECRET}
    if srv is not None:
        env["OPENAI_BASE_URL"] = srv.base_url
    flags = {"llm.max_retries": 2, **{k.replace("__", "."): v for k, v in flags.items()}}
    return load_config(str(path) if path else None, flags=flags, env=env)


def make_llm(srv: LLMServer | None, path: Path | None = None, **flags: Any) -> LLM:
    return LLM(
        make_config(srv, path, **flags),
        env={"OPENAI_API_KEY": SECRET},
        backoff_base=0.01,
        backoff_cap=0.05,
    )


async def chat(llm: LLM, request: ChatRequest) -> Any:
    try:
        return await llm.chat(request)
    finally:
        await llm.aclose()


async def until(condition: Callable[[], bool], limit: float = 30) -> None:
    """Let the event loop run until ``condition()`` holds (AssertionError after ``limit`` s)."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, "waited in vain"
        await asyncio.sleep(0.005)


# The request hashes of REQUESTS (and of one embeddings request), computed in a Python
# process of their own, with another hash seed: what a later run on another machine
# computes, to find the answers this one stored.
ELSEWHERE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from gligabao.config import load_config
from gligabao.llm import LLM
from tests.llm.test_client import REQUESTS
llm = LLM(load_config(None, env={"OPENAI_API_KEY": "sk-another-key-999999"}))
hashes = {stage: llm.request_hash(build()) for stage, build in REQUESTS.items()}
hashes["embed"] = llm.request_hash(["Alice met Bob.", "Paris"])
print(json.dumps(hashes))
"""


@pytest.fixture(scope="module")
def hashes_elsewhere(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    home = tmp_path_factory.mktemp("elsewhere")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GB_", "OPENAI_"))}
    env.update(
        XDG_CONFIG_HOME=str(home / ".config"),  # no user settings, as in every test here
        XDG_CACHE_HOME=str(home / ".cache"),
        PYTHONHASHSEED="1" if os.environ.get("PYTHONHASHSEED") != "1" else "2",
    )
    root = str(Path(__file__).resolve().parents[2])
    out = subprocess.run(
        [sys.executable, "-c", ELSEWHERE, root],
        capture_output=True,
        text=True,
        check=True,
        cwd=home,
        env=env,
        timeout=60,
    )
    return json.loads(out.stdout)


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("stage", list(REQUESTS))
def test_each_stage_round_trips(
    srv: LLMServer, stage: str, hashes_elsewhere: dict[str, str]
) -> None:
    request = REQUESTS[stage]()
    answer = run(chat(make_llm(srv), request))
    validate(answer.value, request.schema)
    inference = answer.inference
    assert inference.stage == stage
    assert inference.requested_model == "gpt-4o-mini"
    assert inference.model == answer_model("gpt-4o-mini") != "gpt-4o-mini"
    assert inference.reasoning == "none"
    assert inference.input_tokens > 0 and inference.output_tokens > 0
    assert inference.cost is None  # no [prices] in the config
    assert inference.attempts == 1 and inference.duration_ms >= 0
    assert json.loads(inference.answer) == answer.value
    # The hash stored with the answer is the one another process, elsewhere, computes.
    assert inference.request_hash == hashes_elsewhere[stage]
    (record,) = srv.requests
    assert record.stage == stage  # recognised by the schema name
    body = record.body
    assert body["response_format"]["json_schema"] == {
        "name": stage,
        "strict": True,
        "schema": request.schema,
    }
    assert "reasoning_effort" not in body
    assert body["max_completion_tokens"] == request.max_output_tokens
    assert record.headers["authorization"] == f"Bearer {SECRET}"


def test_answers_are_what_the_stage_asked_for(srv: LLMServer) -> None:
    async def go() -> list[Any]:
        llm = make_llm(srv)
        try:
            return [await llm.chat(REQUESTS[s]()) for s in REQUESTS]
        finally:
            await llm.aclose()

    graph, summary, context, resolved = (a.value for a in run(go()))
    assert {"Alice Smith", "Acme Corp", "Paris"} <= {e["name"] for e in graph["entities"]}
    works = next(e for e in graph["edges"] if e["target"] == "Acme Corp")
    assert works["valid_at"] == "2021-03-01T00:00:00Z"
    assert summary["summary"].startswith("Alice Smith met Bob Jones in Paris")
    assert context["context"].startswith("This chunk is part of a document that begins: Alice")
    assert resolved["entities"] == [{"id": "e0", "duplicate_of": 12}]
    assert resolved["edges"][0]["contradicts"] == [7]


def test_prompts_use_the_tags_and_put_the_document_first() -> None:
    extract = extract_graph_request("Some text.", "2024-05-01T00:00:00Z")
    assert "<text>\nSome text.\n</text>" in extract.messages[-1]["content"]
    assert "2024-05-01T00:00:00Z" in extract.messages[-1]["content"]
    summary = summarize_chunk_request("A chunk.")
    assert summary.max_output_tokens == 512
    assert summary.messages[-1]["content"] == "<chunk>\nA chunk.\n</chunk>"
    context = contextualize_chunk_request("The whole document.", "A chunk.")
    contents = [m["content"] for m in context.messages]
    assert contents[1] == "<document>\nThe whole document.\n</document>"
    assert "<chunk>\nA chunk.\n</chunk>" in contents[-1]
    assert all("<document>" not in c for c in (contents[0], contents[-1]))
    # The prefix (instructions + document) is the same for every chunk of a document.
    other = contextualize_chunk_request("The whole document.", "Another chunk.")
    assert other.messages[:2] == context.messages[:2]
    resolve = resolve_request(ITEMS)
    content = resolve.messages[-1]["content"]
    shown = json.loads(content.removeprefix("<items>").removesuffix("</items>"))
    assert shown["candidate_entities"] == ITEMS["entities"][0]["candidates"]
    assert shown["candidate_facts"] == ITEMS["edges"][0]["candidates"]
    assert shown["entities"] == [{**ITEMS["entities"][0], "candidates": [12]}]
    assert shown["edges"] == [{**ITEMS["edges"][0], "candidates": [7]}]


def test_a_resolve_prompt_lists_each_candidate_once_its_summary_cut_short() -> None:
    clause = "Subject to the terms and conditions of this License, each Contributor " + " ".join(
        f"grants right {k}," for k in range(60)
    )
    hub = {"id": -1, "name": "Grant of Patent License", "type": "concept", "summary": clause}
    other = {"id": 4, "name": "Apache License", "type": "concept", "summary": "A licence."}
    items = {
        "entities": [
            {"id": f"e1.{i}", "name": name, "type": "concept", "candidates": [hub, other]}
            for i, name in enumerate(["Patent grant", "Copyright grant", "Disclaimer"])
        ],
        "edges": [],
    }
    content = resolve_request(items).messages[-1]["content"]
    shown = json.loads(content.removeprefix("<items>").removesuffix("</items>"))
    assert [c["id"] for c in shown["candidate_entities"]] == [-1, 4]  # once, as first offered
    assert all(e["candidates"] == [-1, 4] for e in shown["entities"])
    cut = shown["candidate_entities"][0]["summary"]
    assert (
        cut.endswith("…")
        and len(cut) <= CANDIDATE_SUMMARY_CHARS + 1
        and clause.startswith(cut[:-1])
    )
    assert shown["candidate_entities"][1]["summary"] == "A licence."
    assert content.count("Subject to the terms") == 1
    # Written out in each item as before, the prompt was three times as long.
    assert len(content) * 3 < len(json.dumps(items))


def test_schemas_are_strict() -> None:
    def walk(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield schema
        for sub in schema.get("properties", {}).values():
            yield from walk(sub)
        if "items" in schema:
            yield from walk(schema["items"])

    for build in REQUESTS.values():
        for node in walk(build().schema):
            if node.get("type") == "object":
                assert node["additionalProperties"] is False
                assert sorted(node["required"]) == sorted(node["properties"])


def test_model_and_reasoning_per_stage(srv: LLMServer) -> None:
    llm = make_llm(srv, models__summarize_chunk="gpt-4o", reasoning__summarize_chunk="high")
    answer = run(chat(llm, summarize_chunk_request(CHUNK)))
    body = srv.requests[-1].body
    assert body["model"] == "gpt-4o"
    assert body["reasoning_effort"] == "high"
    assert body["max_completion_tokens"] == 512 + REASONING_HEADROOM["high"]
    # What --max-cost reserves for: the limit sent, for each answer the call may pay for.
    assert llm.chat_limits(summarize_chunk_request(CHUNK)) == (2, body["max_completion_tokens"])
    assert answer.inference.model == "gpt-4o-2024-07-18"
    assert answer.inference.requested_model == "gpt-4o"
    assert answer.inference.reasoning == "high"


def test_cost_from_prices(srv: LLMServer, tmp_path: Path) -> None:
    path = tmp_path / "gligabao.toml"
    path.write_text(
        '[prices]\n"gpt-4o-mini" = { input = 0.15, output = 0.60 }\n'
        '"text-embedding-3-small" = { input = 0.02, output = 0 }\n',
        encoding="utf-8",
    )
    llm = make_llm(srv, path)
    answer = run(chat(llm, summarize_chunk_request(CHUNK)))
    inf = answer.inference
    expected = (inf.input_tokens * 0.15 + inf.output_tokens * 0.60) / 1e6
    assert inf.cost == pytest.approx(expected) and inf.cost > 0
    embeddings = run(make_llm(srv, path).embed(["one", "two"]))
    assert embeddings.inference.cost == pytest.approx(embeddings.inference.input_tokens * 0.02e-6)


# ------------------------------------------------------------------ retries


def test_429_retry_after_pauses_every_request(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="429", stage="summarize_chunk", match="Alpha", retry_after=0.5))

    async def go() -> tuple[Any, Any]:
        llm = make_llm(srv)
        flight = Flight()
        try:
            alpha = summarize_chunk_request("Alpha went home.")
            first = asyncio.create_task(llm.chat(alpha, flight=flight))
            # The 429 is answered, and read: its request is no longer out.
            await until(lambda: any(r.status == 429 for r in srv.requests) and not flight.sending)
            second = await llm.chat(summarize_chunk_request("Beta stayed."))
            return await first, second
        finally:
            await llm.aclose()

    first, second = run(go())
    assert first.inference.attempts == 2 and second.inference.attempts == 1
    limited = next(r for r in srv.requests if r.status == 429)
    alpha = [r for r in srv.requests if r.status == 200 and "Alpha" in json.dumps(r.body)]
    beta = [r for r in srv.requests if "Beta" in json.dumps(r.body)]
    assert alpha[0].started - limited.ended >= 0.45  # retried after Retry-After
    assert beta[0].started - limited.ended >= 0.45  # and the other request waited too


def test_500_is_retried_then_succeeds(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="500", stage="extract_graph"))
    answer = run(chat(make_llm(srv), REQUESTS["extract_graph"]()))
    assert answer.inference.attempts == 2
    assert [r.status for r in srv.requests] == [500, 200]


def test_503_and_non_json_body_are_retried(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="503", stage="summarize_chunk"))
    srv.add_fault(Fault(kind="badjson_body", stage="summarize_chunk"))
    answer = run(chat(make_llm(srv), summarize_chunk_request(CHUNK)))
    assert answer.inference.attempts == 3


def test_persistent_500_fails_after_max_retries(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="500", stage="summarize_chunk", times=-1))
    with pytest.raises(LLMError) as caught:
        run(chat(make_llm(srv, llm__max_retries=3), summarize_chunk_request(CHUNK)))
    err = caught.value
    assert str(err) == (
        "summarize_chunk (gpt-4o-mini): HTTP 500 after 3 retries: "
        "The server had an error while processing your request. Sorry about that!"
    )
    assert err.status == 500 and "\n" not in str(err)
    assert len(srv.requests) == 4


def test_other_4xx_is_not_retried(srv: LLMServer) -> None:
    request = ChatRequest("summarize_chunk", ({"role": "user", "content": "hi"},), "nope", {}, 10)
    with pytest.raises(LLMError, match=r"HTTP 400: Unknown stage") as caught:
        run(chat(make_llm(srv), request))
    assert caught.value.status == 400
    assert len(srv.requests) == 1


def test_timeout_is_retried(srv: LLMServer) -> None:
    srv.timeout_sleep = 60  # stalled until the client gives up (and the test ends it)
    srv.add_fault(Fault(kind="timeout", stage="summarize_chunk"))
    started = time.monotonic()
    answer = run(chat(make_llm(srv, llm__timeout=1), summarize_chunk_request(CHUNK)))
    assert answer.inference.attempts == 2
    assert time.monotonic() - started >= 1.0  # the first attempt waited out its limit


def test_timeout_without_retries_names_the_limit(srv: LLMServer) -> None:
    srv.timeout_sleep = 60  # stalled until the client gives up (and the test ends it)
    srv.add_fault(Fault(kind="timeout", stage="summarize_chunk"))
    llm = make_llm(srv, llm__timeout=1, llm__max_retries=0)
    with pytest.raises(
        LLMError, match=r"^summarize_chunk \(gpt-4o-mini\): timed out \(limit 1 s\)$"
    ):
        run(chat(llm, summarize_chunk_request(CHUNK)))


def test_unreachable_server(srv: LLMServer) -> None:
    config = load_config(
        None,
        flags={"llm.max_retries": 1, "llm.base_url": "http://127.0.0.1:9/v1"},
        env={"OPENAI_API_KEY": SECRET},
    )
    llm = LLM(config, env={"OPENAI_API_KEY": SECRET}, backoff_base=0.01)
    with pytest.raises(LLMError, match=r"could not reach http://127.0.0.1:9/v1 after 1 retry"):
        run(chat(llm, summarize_chunk_request(CHUNK)))


# ------------------------------------------------------------------ bad answers


def test_a_truncated_answer_is_asked_once_more_then_is_an_error(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="truncated", stage="summarize_chunk", times=-1))
    with pytest.raises(LLMError) as caught:
        run(chat(make_llm(srv), summarize_chunk_request(CHUNK)))
    assert str(caught.value) == (
        "summarize_chunk (gpt-4o-mini): the answer was cut off (finish_reason length)"
    )
    assert caught.value.cut_off
    assert len(srv.requests) == 2  # a sampling model may end its second answer well
    first, second = srv.requests
    assert caught.value.inference.output_tokens > 0  # both answers were paid for
    assert first.body == second.body


def test_a_truncated_answer_then_a_whole_one_is_the_answer(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="truncated", stage="summarize_chunk", times=1))
    answer = run(chat(make_llm(srv), summarize_chunk_request(CHUNK)))
    assert answer.value["summary"].strip()
    assert len(srv.requests) == 2


def test_a_truncated_resolve_answer_is_not_asked_again(srv: LLMServer) -> None:
    """The pipeline asks again for a cut-off resolve batch in two halves instead."""
    srv.add_fault(Fault(kind="truncated", stage="resolve", times=-1))
    request = resolve_request(ITEMS)
    with pytest.raises(LLMError) as caught:
        run(chat(make_llm(srv), request))
    assert caught.value.cut_off and len(srv.requests) == 1


def test_an_answer_that_is_only_reasoning_is_asked_once_for_the_json_alone(
    srv: LLMServer,
) -> None:
    srv.add_fault(Fault(kind="think_only", stage="extract_graph", times=1))
    answer = run(chat(make_llm(srv), extract_graph_request(CHUNK, "2024-01-01T00:00:00Z")))
    assert answer.value["edges"] and answer.value["entities"]
    first, second = srv.requests
    assert first.fault == "think_only" and second.fault is None
    assert "JSON object alone" not in json.dumps(first.body)
    assert second.body["messages"][-1]["content"].endswith(JSON_ALONE)
    assert "<text>" in second.body["messages"][-1]["content"]  # the text is still there


def test_an_answer_that_is_only_reasoning_twice_is_a_clear_error(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="think_only", stage="extract_graph", times=-1))
    with pytest.raises(LLMError) as caught:
        run(chat(make_llm(srv), extract_graph_request(CHUNK, "2024-01-01T00:00:00Z")))
    assert "only reasoning, no JSON after its <think> block" in str(caught.value)
    assert len(srv.requests) == 2


def test_facts_without_their_quotes_are_an_answer(srv: LLMServer) -> None:
    """A quote is evidence, not a condition of the fact: an answer that leaves it out
    is taken (each fact's chunk stands for its evidence); the other checks hold."""
    srv.add_fault(Fault(kind="no_quotes", stage="extract_graph", times=1))
    answer = run(chat(make_llm(srv), extract_graph_request(CHUNK, "2024-01-01T00:00:00Z")))
    assert answer.value["edges"] and all("quote" not in e for e in answer.value["edges"])
    assert len(srv.requests) == 1
    request = extract_graph_request(CHUNK, "2024-01-01T00:00:00Z")
    sent = request.schema["properties"]["edges"]["items"]
    assert "quote" in sent["required"]  # strict structured output asks for it all the same
    edge = {"source": "A", "target": "B", "relation": "R", "fact": "F", "quote": "q"}
    for missing in ("fact", "valid_at"):
        value = {"entities": [], "edges": [{k: v for k, v in edge.items() if k != missing}]}
        with pytest.raises(ValueError, match=f"missing '{missing}'"):
            checked(request, value)


@pytest.mark.parametrize(
    ("kind", "cause"),
    [
        ("empty", "the answer was empty"),
        ("malformed", "the answer is not valid JSON"),
        ("invalid", "the answer does not match the schema: $: missing 'entities'"),
    ],
)
def test_bad_answers_are_errors(srv: LLMServer, kind: str, cause: str) -> None:
    srv.add_fault(Fault(kind=kind, stage="extract_graph", times=-1))
    with pytest.raises(LLMError) as caught:
        run(chat(make_llm(srv), REQUESTS["extract_graph"]()))
    assert str(caught.value).startswith(f"extract_graph (gpt-4o-mini): {cause}")
    assert len(srv.requests) == 2  # asked once more, then given up


def test_a_bad_answer_once_is_asked_again(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="invalid", stage="summarize_chunk"))
    answer = run(chat(make_llm(srv), summarize_chunk_request(CHUNK)))
    assert answer.inference.attempts == 2
    assert answer.value["summary"]


def test_every_answer_paid_for_is_in_the_inference(srv: LLMServer, tmp_path: Path) -> None:
    path = tmp_path / "gligabao.toml"
    path.write_text('[prices]\n"gpt-4o-mini" = { input = 1.0, output = 2.0 }\n')
    request = summarize_chunk_request(CHUNK)
    one = run(chat(make_llm(srv, path), request)).inference
    rejected = 5  # the test server's off-schema answer, {"unexpected": true}, in tokens

    srv.add_fault(Fault(kind="invalid", stage="summarize_chunk"))
    both = run(chat(make_llm(srv, path), request)).inference
    assert (both.input_tokens, both.output_tokens) == (
        2 * one.input_tokens,
        one.output_tokens + rejected,
    )
    assert both.cost == pytest.approx((both.input_tokens + 2 * both.output_tokens) / 1e6)

    # Failed after a paid answer: the error carries what was paid.
    srv.add_fault(Fault(kind="invalid", stage="summarize_chunk"))
    srv.add_fault(Fault(kind="500", stage="summarize_chunk", times=-1))
    with pytest.raises(LLMError) as caught:
        run(chat(make_llm(srv, path), request))
    assert caught.value.status == 500
    paid = caught.value.inference
    assert (paid.input_tokens, paid.output_tokens) == (one.input_tokens, rejected)


def test_blank_summary_is_an_error(srv: LLMServer) -> None:
    with pytest.raises(LLMError, match="the summary is empty"):
        run(chat(make_llm(srv), summarize_chunk_request("   ")))


# ------------------------------------------------------------------ prompt mode


def test_prompt_mode_end_to_end(srv: LLMServer, caplog: pytest.LogCaptureFixture) -> None:
    srv.structured_outputs = False

    llm = make_llm(srv)

    async def go() -> list[Any]:
        try:
            first = await llm.chat(REQUESTS["extract_graph"]())
            rest = await asyncio.gather(*(llm.chat(REQUESTS[s]()) for s in list(REQUESTS)[1:]))
            return [first, *rest]
        finally:
            await llm.aclose()

    with caplog.at_level(logging.WARNING, logger="gligabao.llm"):
        answers = run(go())
    assert llm.mode == "prompt"
    assert [a.inference.stage for a in answers] == list(REQUESTS)
    for answer, stage in zip(answers, REQUESTS, strict=True):
        validate(answer.value, REQUESTS[stage]().schema)
    refused, *prompted = srv.requests
    assert refused.status == 400 and "response_format" in refused.body
    assert all(r.status == 200 and "response_format" not in r.body for r in prompted)
    assert {r.stage for r in prompted} == set(REQUESTS)  # recognised by their tags
    system = prompted[0].body["messages"][0]
    assert system["role"] == "system" and '"additionalProperties":false' in system["content"]
    switched = [r for r in caplog.records if "structured output" in r.getMessage()]
    assert len(switched) == 1
    # The hash leaves the mode out: a rerun starts in structured mode, and must still find
    # the answers got in prompt mode.
    for answer, build in zip(answers, REQUESTS.values(), strict=True):
        assert answer.inference.request_hash == llm.request_hash(build())
        assert answer.inference.request_hash == make_llm(srv).request_hash(build())


def test_an_older_server_gets_max_tokens_even_for_requests_already_in_flight(
    srv: LLMServer,
) -> None:
    """Eight requests go out at once and all are refused for max_completion_tokens; the
    first refusal switches the instance, and the other seven must be sent again, not
    failed (each run starts from the new name again)."""
    srv.old_max_tokens = True
    srv.hold(Hold(count=8))  # every request is in flight before the first refusal is read
    llm = make_llm(srv)

    async def many() -> list[Any]:
        try:
            return await asyncio.gather(
                *(llm.chat(summarize_chunk_request(f"{CHUNK} {i}")) for i in range(8))
            )
        finally:
            await llm.aclose()

    answers = run(many())
    assert len(answers) == 8
    refused = [r for r in srv.requests if r.status == 400]
    answered = [r for r in srv.requests if r.status == 200]
    assert len(answered) == 8 and all("max_tokens" in r.body for r in answered)
    assert len(refused) == 8 and all("max_completion_tokens" in r.body for r in refused)


def test_an_embeddings_failure_names_the_embeddings_server(srv: LLMServer) -> None:
    with LLMServer() as gone:
        dead = gone.base_url
    llm = make_llm(srv, embeddings__base_url=dead, llm__max_retries=0)

    async def embed() -> Any:
        try:
            return await llm.embed(["otter"])
        finally:
            await llm.aclose()

    with pytest.raises(LLMError, match=f"could not reach {dead}"):
        run(embed())


def test_parse_lenient() -> None:
    assert parse_lenient('<think>{"no": 1}</think>\n```json\n{"a": [1, {"b": 2}]}\n```') == {
        "a": [1, {"b": 2}]
    }
    assert parse_lenient('Sure! Here it is: {"a": "}"} Hope that helps.') == {"a": "}"}
    assert parse_lenient('```\n{"a": 1}\n```') == {"a": 1}
    with pytest.raises(ValueError):
        parse_lenient("no json here [1, 2]")
    with pytest.raises(ValueError):
        parse_lenient('{"a": [')


def test_load_answer_for_reuse() -> None:
    request = summarize_chunk_request(CHUNK)
    assert load_answer(request, '{"summary": "x y"}') == {"summary": "x y"}
    with pytest.raises(ValueError):
        load_answer(request, '{"context": "x"}')


def test_validate() -> None:
    schema = extract_graph_request("x", "2024-01-01").schema
    good = {
        "entities": [{"name": "A", "type": "Person", "summary": "s"}],
        "edges": [
            {
                "source": "A",
                "target": "B",
                "relation": "R",
                "fact": "f",
                "quote": "q",
                "valid_at": None,
                "invalid_at": "2024-01-01T00:00:00Z",
            }
        ],
    }
    validate(good, schema)
    bad_edge = {**good["edges"][0], "valid_at": 3}
    with pytest.raises(SchemaMismatch, match=r"\$\.edges\[0\]\.valid_at: expected string or null"):
        validate({**good, "edges": [bad_edge]}, schema)
    with pytest.raises(SchemaMismatch, match=r"unexpected 'extra'"):
        validate({**good, "extra": 1}, schema)
    resolve = resolve_request(ITEMS).schema
    with pytest.raises(SchemaMismatch, match="expected integer or null, got boolean"):
        validate({"entities": [{"id": "e0", "duplicate_of": True}], "edges": []}, resolve)


# ------------------------------------------------------------------ limiter, hashes, embeddings


def test_concurrency_bound() -> None:
    # A server of its own: a stalled "timeout" request of another test would count here.
    with LLMServer(latency=0.2) as srv:
        _check_concurrency_bound(srv)


def _check_concurrency_bound(srv: LLMServer) -> None:
    llm = make_llm(srv, concurrency=4)
    srv.hold(Hold(count=4))  # the first ones wait until four are out: the bound is used

    async def go() -> list[Any]:
        try:
            requests = [summarize_chunk_request(f"Chunk number {i}.") for i in range(10)]
            embeds = [llm.embed([f"text {i}"]) for i in range(2)]
            return await asyncio.gather(*(llm.chat(r) for r in requests), *embeds)
        finally:
            await llm.aclose()

    started = time.monotonic()
    results = run(go())
    assert len(results) == 12
    assert srv.max_in_flight == 4  # the bound held, and it was used
    assert len(srv.requests) == 12
    assert time.monotonic() - started >= 0.55  # 12 calls of 0.2 s, 4 at a time


def test_a_freed_slot_is_refilled_before_the_answer_is_handed_back(srv: LLMServer) -> None:
    """The request waiting for a slot is sent before the answer that freed it reaches its
    caller (who reads and records it): the server's slot is not left empty meanwhile."""
    llm = make_llm(srv, concurrency=1)
    second = Flight()

    async def go() -> bool:
        try:
            waiting = asyncio.ensure_future(llm.chat(summarize_chunk_request("Two."), None, second))
            await llm.chat(summarize_chunk_request("One."))
            sent = second.sending  # its request is out already
            await waiting
            return sent
        finally:
            await llm.aclose()

    assert run(go())
    assert srv.max_in_flight == 1


def test_request_hash(srv: LLMServer, hashes_elsewhere: dict[str, str]) -> None:
    """The hash covers what decides an answer (stage, model, reasoning, messages, schema,
    output budget; model, dimensions, texts), and nothing else: not the key, the URL or
    the mode, and not the process that computes it."""
    one = make_llm(srv)
    other_place = LLM(
        load_config(
            None,
            flags={"llm.base_url": "http://elsewhere.example/v1"},
            env={"OPENAI_API_KEY": "sk-another-key-999999"},
        )
    )
    request = summarize_chunk_request(CHUNK)
    digest = one.request_hash(request)
    assert len(digest) == 64
    assert digest == hashes_elsewhere["summarize_chunk"]  # another process, another seed
    assert digest == one.request_hash(summarize_chunk_request(CHUNK))
    assert digest == other_place.request_hash(request)  # not the key, not the URL
    schema = request.schema
    changed = {
        "prompt text": summarize_chunk_request(CHUNK + " More."),
        "a message's role": replace(
            request, messages=({**request.messages[0], "role": "developer"}, *request.messages[1:])
        ),
        "stage": replace(request, stage="contextualize_chunk"),
        "schema": replace(request, schema={**schema, "required": []}),
        "schema name": replace(request, schema_name="summary"),
        "output budget": replace(request, max_output_tokens=request.max_output_tokens + 1),
    }
    for what, other in changed.items():
        assert other != request and one.request_hash(other) != digest, what
    assert digest != make_llm(srv, models__summarize_chunk="gpt-4o").request_hash(request)
    assert digest != make_llm(srv, reasoning__summarize_chunk="low").request_hash(request)
    texts = ["Alice met Bob.", "Paris"]
    assert one.request_hash(texts) == hashes_elsewhere["embed"]
    assert one.request_hash(texts) == other_place.request_hash(texts)
    assert one.request_hash(texts) == one.request_hash(tuple(texts))
    assert one.request_hash(texts) != one.request_hash(["Alice met Bob.", "Oslo"])
    assert one.request_hash(texts) != one.request_hash(texts[::-1])
    assert one.request_hash(texts) != make_llm(srv, embeddings__dimensions=8).request_hash(texts)
    other_model = make_llm(srv, embeddings__model="text-embedding-3-large")
    assert one.request_hash(texts) != other_model.request_hash(texts)


def test_embed(srv: LLMServer) -> None:
    llm = make_llm(srv, embeddings__dimensions=64)
    result = run(llm.embed(["Alice met Bob.", "Paris", "Acme Corp"]))
    assert len(result.vectors) == 3 and all(len(v) == 64 for v in result.vectors)
    assert result.inference.stage == "embed"
    assert result.inference.model == "text-embedding-3-small"
    body = srv.requests[-1].body
    assert body["dimensions"] == 64 and body["input"] == ["Alice met Bob.", "Paris", "Acme Corp"]


@pytest.mark.parametrize(
    ("kind", "cause"),
    [
        ("truncated", "the answer held 1 vector for 3 texts"),
        ("empty", "the answer could not be read"),
    ],
)
def test_embed_bad_answers(srv: LLMServer, kind: str, cause: str) -> None:
    srv.add_fault(Fault(kind=kind, stage="embed", times=-1))
    with pytest.raises(LLMError, match=f"^embed \\(text-embedding-3-small\\): {cause}"):
        run(make_llm(srv).embed(["one", "two", "three"]))


def test_embed_refuses_empty_texts(srv: LLMServer) -> None:
    with pytest.raises(LLMError, match="text 2 of 2 is empty"):
        run(make_llm(srv).embed(["one", " "]))
    assert srv.requests == []


def test_embeddings_on_their_own_server(srv: LLMServer) -> None:
    with LLMServer() as other:
        llm = make_llm(srv, embeddings__base_url=other.base_url)
        run(llm.embed(["one"]))
        (record,) = other.requests
        assert SECRET not in record.headers["authorization"]  # the chat key stays home
        assert srv.requests == []


def test_same_llm_across_event_loops(srv: LLMServer) -> None:
    llm = make_llm(srv)
    run(llm.chat(summarize_chunk_request(CHUNK)))
    run(llm.chat(summarize_chunk_request(CHUNK)))
    assert srv.calls("summarize_chunk") == 2


def test_offline_and_keyless(srv: LLMServer) -> None:
    offline = LLM(load_config(None, env={}), env={})
    assert not offline.available and not offline.embeddings_available
    with pytest.raises(ConfigError, match="no LLM endpoint"):
        run(offline.chat(summarize_chunk_request(CHUNK)))
    local = LLM(load_config(None, env={"OPENAI_BASE_URL": srv.base_url}), env={})
    assert local.available
    run(chat(local, summarize_chunk_request(CHUNK)))
    assert srv.requests[-1].headers["authorization"] == "Bearer no-key"


# ------------------------------------------------------------------ secrets


class _EchoHandler(BaseHTTPRequestHandler):
    """Answers every request with an error quoting its Authorization header, as a careless
    proxy might."""

    status = 500

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization", "")
        message = f"Incorrect API key provided: {auth.removeprefix('Bearer ')} ({auth})"
        body = json.dumps({"error": {"message": message, "type": "x", "code": None}}).encode()
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def echo() -> Iterator[ThreadingHTTPServer]:
    with serving(_EchoHandler) as httpd:
        yield httpd


@pytest.mark.parametrize("status", [401, 500])
def test_secret_never_in_errors_or_logs(
    echo: ThreadingHTTPServer,
    status: int,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_EchoHandler, "status", status)  # restored after the test
    base_url = f"http://127.0.0.1:{echo.server_address[1]}/v1"
    config = load_config(
        None,
        flags={"llm.max_retries": 1},
        env={"OPENAI_API_KEY": SECRET, "OPENAI_BASE_URL": base_url},
    )
    llm = LLM(config, env={"OPENAI_API_KEY": SECRET}, backoff_base=0.01)
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMError) as caught:
        run(chat(llm, summarize_chunk_request(CHUNK)))
    err = caught.value
    assert f"HTTP {status}" in str(err) and "Incorrect API key provided: ****" in str(err)
    for text in (str(err), repr(err), err.server_message, err.cause):
        assert SECRET not in text
    assert err.__cause__ is None and err.__context__ is None  # no SDK error with its headers
    assert all(SECRET not in r.getMessage() for r in caplog.records)


def test_scrub() -> None:
    assert scrub(f"key {SECRET}!", [SECRET]) == "key ****!"
    assert scrub("Authorization: Bearer abc.def") == "Authorization: Bearer ****"
    assert scrub("leaked sk-proj-AbCdEfGh12345678 here") == "leaked sk-**** here"
    assert scrub("nothing secret", [None, ""]) == "nothing secret"
