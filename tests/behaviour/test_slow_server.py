"""`gb` against slow local model servers: the test server's slow-server
mode imitates llama.cpp, Ollama or LM Studio on a small machine (2 slots, a queue that
sends nothing, a token rate, streaming; embeddings inputs limited to 512 tokens), and
`gb remember` with default settings must finish against it: no failed call, nothing
generated twice, every embeddings input the server refused sent again cut to fit, never
unchanged.

The server runs in this process; gb runs as a real process (`gb_process`), as a user
runs it, so its timing is a real client's.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import socket
import time
from dataclasses import replace
from typing import Any

import pytest

from gligabao.config import load_config
from gligabao.llm import LLM, LLMError, extract_graph_request, summarize_chunk_request
from tests.support.helpers import (
    assert_database_sound,
    assert_documents_complete,
    assert_indexes_complete,
    count,
    gb,
    story,
    write,
)
from tests.support.llm_server import Fault, LLMServer, generation_key

KEY = "sk-slow-server-test-000000"
CHUNKS = "SELECT count(*) FROM gb_artifacts WHERE parent_id IS NOT NULL AND kind <> 'chunk_summary'"


def _llm(server: LLMServer, **flags: Any) -> LLM:
    env = {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": KEY}
    config = load_config(None, flags={"embeddings.dimensions": 64, **flags}, env=env)
    return LLM(config, env=env, backoff_base=0.01, backoff_cap=0.05)


def _run(llm: LLM, *calls: Any) -> list[Any]:
    async def go() -> list[Any]:
        try:
            return await asyncio.gather(*(call(llm) for call in calls))
        finally:
            await llm.aclose()

    return asyncio.run(go())


def _defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """gb's own defaults for what the `online` environment sets for speed."""
    for name in ("GB_LLM_MAX_RETRIES", "GB_CHUNK_SIZE"):
        monkeypatch.delenv(name, raising=False)


def _no_failed_call(server: LLMServer) -> None:
    """Every request the server answered was answered 200; the others were dropped from
    its queue when their client went away, never generated (and nothing twice)."""
    answered = [r for r in server.requests if not r.dropped]
    assert all(r.status == 200 for r in answered), [(r.stage, r.status) for r in answered]
    assert server.generated_twice() == []
    assert all(g.finished for g in server.generations)


# ------------------------------------------------------------------ the server's mode


def test_the_queue_sends_nothing_and_drops_a_client_that_left() -> None:
    with LLMServer(slots=1, token_rate=5) as server:  # an answer of 8 tokens: 1.6 s
        body = json.dumps(
            {
                "model": "gpt-4o-mini",
                "messages": [{"role": "user", "content": "<chunk>\nAlice met Bob.\n</chunk>"}],
            }
        )
        first = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        first.request("POST", "/v1/chat/completions", body)
        server.wait_until(lambda: server.generating == 1)
        queued = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        queued.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
            + f"\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode()
        )
        server.wait_until(lambda: len(server._queue) == 1)
        queued.settimeout(0.3)
        with pytest.raises(TimeoutError):
            queued.recv(1)  # no status line, no headers while it waits
        queued.close()
        server.wait_until(lambda: any(r.dropped for r in server.requests))
        assert first.getresponse().status == 200
        first.close()
        assert len(server.generations) == 1  # the dropped one was never generated


def test_a_stream_is_paced_and_stops_when_its_client_leaves() -> None:
    with LLMServer(slots=2, token_rate=40) as server:
        request = extract_graph_request(story(1, paragraphs=1), "2024-05-01T00:00:00Z")
        llm = _llm(server)

        async def read_a_little() -> None:
            client = llm._client(False)
            stream = await client.chat.completions.create(
                model="gpt-4o-mini", messages=list(request.messages), stream=True
            )
            async for _ in stream:
                break
            await stream.close()

        _run(llm, lambda _: read_a_little())
        server.wait_until(lambda: server.generations and server.generations[0].ended)
        (generation,) = server.generations
        assert not generation.finished and generation.tokens < 20


# ------------------------------------------------------------------ streaming


def test_a_streamed_answer_is_the_whole_answer_with_its_usage() -> None:
    request = extract_graph_request(story(2, paragraphs=1), "2024-05-01T00:00:00Z")
    with LLMServer(token_rate=2000) as server:
        (streamed,) = _run(_llm(server), lambda llm: llm.chat(request))
        (record,) = server.requests
        assert record.body["stream"] is True
        assert record.body["stream_options"] == {"include_usage": True}
    with LLMServer() as server:  # a server of its own: no prompt cached from the first
        (whole,) = _run(_llm(server, **{"llm.stream": False}), lambda llm: llm.chat(request))
        assert "stream" not in server.requests[0].body
    assert streamed.value == whole.value
    # Streaming is transport: the same record, hash included (earlier runs' answers are
    # reused), with the usage of the last event.
    assert streamed.inference == replace(
        whole.inference, duration_ms=streamed.inference.duration_ms
    )
    assert streamed.inference.output_tokens > 0


def test_llm_timeout_bounds_the_gaps_not_a_slow_answer() -> None:
    """An answer of ~3 s with llm.timeout 1: streamed, it comes in one attempt."""
    with LLMServer(slots=1, token_rate=200) as server:
        request = extract_graph_request(story(3, paragraphs=2), "2024-05-01T00:00:00Z")
        started = time.monotonic()
        (answer,) = _run(_llm(server, **{"llm.timeout": 1.0}), lambda llm: llm.chat(request))
        assert time.monotonic() - started > 2.0  # it was slow...
        assert answer.inference.attempts == 1  # ...and never cut by the timeout
        assert len(server.generations) == 1


def test_a_stream_broken_off_is_retried_and_is_no_unreachable_server() -> None:
    """The server was reached: a connection that breaks mid-answer is retried, and its
    failure does not read as "could not reach" (which stores the input offline)."""
    with LLMServer() as server:
        server.add_fault(Fault("cut_stream", stage="extract_graph", times=-1))
        request = extract_graph_request(story(5, paragraphs=1), "2024-05-01T00:00:00Z")
        with pytest.raises(LLMError) as caught:
            _run(_llm(server, **{"llm.max_retries": 1}), lambda llm: llm.chat(request))
        assert len(server.requests) == 2
    assert "the connection broke during the answer after 1 retry" in str(caught.value)
    assert not caught.value.unreachable


def test_a_server_that_ignores_stream_is_read_whole() -> None:
    with LLMServer() as server:
        server.ignores_stream = True
        request = extract_graph_request(story(4, paragraphs=1), "2024-05-01T00:00:00Z")
        (answer,) = _run(_llm(server), lambda llm: llm.chat(request))
        (record,) = server.requests
    assert record.body["stream"] is True and record.status == 200
    assert answer.value["entities"] and answer.inference.output_tokens > 0


@pytest.mark.parametrize("refused", ["stream", "stream_options"])
def test_a_server_that_refuses_streaming_is_adapted_to_once(
    refused: str, caplog: pytest.LogCaptureFixture
) -> None:
    with LLMServer() as server:
        if refused == "stream":
            server.streaming = False
        else:
            server.takes_stream_options = False
        requests = [summarize_chunk_request(f"Chunk number {i}.") for i in range(4)]
        with caplog.at_level(logging.WARNING, logger="gligabao.llm"):
            answers = _run(_llm(server), *(lambda llm, r=r: llm.chat(r) for r in requests))
        assert len(answers) == 4
        warned = [r.getMessage() for r in caplog.records if r.name == "gligabao.llm"]
        assert len(warned) == 1 and refused in warned[0], warned
        answered = [r for r in server.requests if r.status == 200]
        assert len(answered) == 4
        assert all(refused not in r.body for r in answered)
        if refused == "stream_options":
            # Streamed all the same; without usage the tokens are unknown: 0, as before.
            assert all(r.body["stream"] for r in answered)
            assert {a.inference.output_tokens for a in answers} == {0}
        else:
            assert {a.inference.output_tokens for a in answers} != {0}


# ------------------------------------------------------------------ adaptive concurrency


def test_a_request_timed_out_in_the_queue_is_sent_again_in_its_turn() -> None:
    """Two slots, eight requests out, answers of ~1.5 s, llm.timeout 1: those waiting in
    the server's queue time out (and are dropped there, never generated); the limit falls
    to the two being answered, and they are sent again as slots free, using up no retry."""
    with LLMServer(slots=2, token_rate=200) as server:
        requests = [
            extract_graph_request(story(10 + i, paragraphs=2), "2024-05-01T00:00:00Z")
            for i in range(8)
        ]
        llm = _llm(server, **{"llm.timeout": 1.0, "llm.max_retries": 0})
        answers = _run(llm, *(lambda llm, r=r: llm.chat(r) for r in requests))
    assert len(answers) == 8
    assert any(r.dropped for r in server.requests)  # some did time out in the queue
    _no_failed_call(server)
    assert len(server.generations) == 8


def test_the_limit_falls_to_what_is_answered_and_grows_back_by_one_a_window() -> None:
    from gligabao.llm.limiter import Limiter

    async def go() -> list[Any]:
        limiter = Limiter(8)
        seen: list[Any] = []
        async with limiter.slot() as a, limiter.slot() as b, limiter.slot():
            a.receiving()
            b.receiving()
            assert limiter.congested() and limiter.capacity == 2  # two were being answered
            assert not limiter.congested()  # already there
            late = asyncio.ensure_future(_hold(limiter, seen))
            await asyncio.sleep(0.01)
            assert seen == []  # three out, two allowed: it waits
        await late  # the three gone, it went
        seen.append(limiter.limit)
        for _ in range(2):
            limiter.answered()
        seen.append(limiter.limit)  # 2 + 1/2 + 1/2
        for _ in range(100):
            limiter.answered()
        seen.append(limiter.limit)  # never above concurrency
        return seen

    assert asyncio.run(go()) == ["in", 2.0, 3.0, 8.0]


async def _hold(limiter: Any, seen: list[Any]) -> None:
    async with limiter.slot():
        seen.append("in")


# ------------------------------------------------------------------ gb remember


def test_remember_finishes_against_a_server_whose_queue_outlasts_the_timeout(
    gb_process, online, monkeypatch
) -> None:
    """Today's failure, scaled down: 2 slots, concurrency 8, answers longer than
    llm.timeout (2 s here, for a short test) and a queue longer still."""
    _defaults(monkeypatch)
    monkeypatch.setenv("GB_CHUNK_SIZE", "128")  # 8 chunks: 16 calls at once
    monkeypatch.setenv("GB_LLM_TIMEOUT", "2")
    online.slots, online.token_rate = 2, 250
    write("notes.txt", story(20, paragraphs=8))

    result = gb_process("remember", "notes.txt", timeout=120)

    assert result.returncode == 0, result.stderr.decode()
    assert any(r.dropped for r in online.requests)  # requests did time out in the queue
    _no_failed_call(online)
    assert online.max_generating == 2
    assert_documents_complete()
    assert_database_sound()


@pytest.mark.timeout(480)
def test_done_when_twenty_chunks_at_ten_seconds_an_answer(
    gb_process, online, monkeypatch, gb_cli
) -> None:
    """The slow-server measure: 2 slots, a token rate that makes each extraction take ~10 s,
    streaming, a 20-chunk document, default settings: no failed call, nothing generated
    twice, and within 1.2 times the server's own bound (its tokens over slots x rate).
    About 2.5 minutes."""
    _defaults(monkeypatch)
    rate = 170.0  # an extraction of a 1,024-token chunk is ~1,700 tokens
    online.slots, online.token_rate = 2, rate
    write("long.txt", story(11, paragraphs=160))

    started = time.monotonic()
    result = gb_process("remember", "long.txt", timeout=420)
    wall = time.monotonic() - started

    assert result.returncode == 0, result.stderr.decode()
    assert count(CHUNKS) == 20
    _no_failed_call(online)
    bound = online.generated_tokens() / (online.slots * rate)
    print(f"wall {wall:.1f} s, server bound {bound:.1f} s, ratio {wall / bound:.3f}")
    assert wall <= 1.2 * bound, (wall, bound)
    assert_indexes_complete(gb_cli)


# ------------------------------------------------------------------ embeddings too large


def test_embeddings_too_large_are_cut_to_fit_never_sent_again_unchanged(
    gb_process, online, monkeypatch, gb_cli
) -> None:
    """llama.cpp's default: inputs of at most 512 tokens (its batch). Chunks of 1,024
    tokens are refused once each at most, while the limit is not known; then each chunk
    is embedded in pieces, and the document completes with all its vectors."""
    _defaults(monkeypatch)
    online.embed_max_tokens = 512
    write("long.txt", story(12, paragraphs=40))

    result = gb_process("remember", "long.txt", timeout=120)

    assert result.returncode == 0, result.stderr.decode()
    embeds = online.requests_for("embed")
    refused = [r for r in embeds if r.status == 500]  # "input (... tokens) is too large"
    assert refused
    bodies = [generation_key(r.body) for r in embeds]
    assert len(bodies) == len(set(bodies))  # no request sent twice unchanged
    # Only requests already out when the first refusal reached gb are refused: one wave,
    # at most the requests in flight at once. (The server's clock stamps the refusal a
    # moment before gb reads it: a request sent in that moment is still one of the wave.)
    learnt = min(r.ended for r in refused)
    assert all(r.status == 200 for r in embeds if r.started > learnt + 1.0)
    chunks = count(CHUNKS)
    assert len(refused) <= min(chunks, 8)
    assert_indexes_complete(gb_cli)
    hits = gb(gb_cli, "search", "Lisbon", "--method", "vector", "--json").stdout.splitlines()
    assert hits


def test_a_known_limit_splits_before_sending(online) -> None:
    online.embed_max_tokens = 512
    text = story(13, paragraphs=30)  # ~1,600 tokens
    llm = _llm(online, **{"embeddings.max_tokens": 512})
    (result,) = _run(llm, lambda llm: llm.embed([text, "Lisbon"]))
    (record,) = online.requests
    assert record.status == 200 and len(record.body["input"]) > 3
    assert len(result.vectors) == 2 and all(len(v) == 64 for v in result.vectors)
    # The hash is the texts', however they were sent: a rerun computes the same.
    assert result.inference.request_hash == _llm(online).request_hash([text, "Lisbon"])


def test_an_openai_maximum_context_refusal_is_read_and_learnt() -> None:
    from gligabao.llm.endpoint import TooLarge, too_large
    from gligabao.llm.split import InputLimit

    message = (
        "This model's maximum context length is 8192 tokens, however you requested 9000 "
        "tokens (9000 in your prompt; 0 for the completion). Please reduce your prompt."
    )
    assert too_large(400, message) == TooLarge(8192, 9000)
    assert too_large(
        500,
        "input (705 tokens) is too large to process. increase the physical "
        "batch size (current batch size: 512)",
    ) == TooLarge(512, 705)
    assert too_large(500, "The server had an error while processing your request") is None
    assert too_large(429, "Rate limit reached for tokens per min") is None
    limit = InputLimit()
    text = "word " * 12000
    plan = limit.plan([text])
    assert plan.inputs == [text]  # the limit unknown: sent whole
    assert limit.learn(too_large(400, message), plan)
    pieces = limit.plan([text])
    assert len(pieces.inputs) > 1 and set(pieces.owners) == {0}
    # A refusal of a plan made before the lesson teaches nothing new: plan again.
    before = (limit.tokens, limit.scale)
    assert limit.learn(TooLarge(8192, 9000), plan) and (limit.tokens, limit.scale) == before


def test_pieces_are_combined_into_one_unit_vector() -> None:
    from gligabao.llm.split import combine

    combined = combine([[3.0, 0.0], [0.0, 0.5]])
    assert combined == pytest.approx([2**-0.5, 2**-0.5])
    assert combine([[2.0, 0.0]]) == [2.0, 0.0]  # a text sent whole: as the server made it


def test_an_input_that_cannot_be_made_to_fit_fails_clearly(online) -> None:
    online.embed_max_tokens = 1  # nothing fits
    llm = _llm(online, **{"llm.max_retries": 0})
    with pytest.raises(LLMError) as caught:
        _run(llm, lambda llm: llm.embed(["a fairly long sentence about Lisbon and Oslo."]))
    assert "is too large to process" in str(caught.value) and "\n" not in str(caught.value)
    bodies = [generation_key(r.body) for r in online.requests]
    assert len(bodies) == len(set(bodies))
