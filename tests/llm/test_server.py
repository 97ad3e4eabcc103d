"""Tests of the deterministic OpenAI-compatible test server, driven by the real openai client."""

from __future__ import annotations

import base64
import json
import math
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.llm_server import (
    Fault,
    Hold,
    LLMServer,
    answer_model,
    embed_text,
    extract_graph,
    resolve,
)

ROOT = Path(__file__).resolve().parents[2]

TEXT = (
    "Alice works at Acme since 2021-03-01. The Globex Corp hired Bob Smith!\n"
    "Carol met Dave in Paris on 2022-05-06. nothing capitalised here."
)


def schema(name: str) -> dict:
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "strict": True, "schema": {"type": "object"}},
    }


@pytest.fixture(scope="module")
def server():
    with LLMServer() as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.reset()
    yield server
    server.reset()


@pytest.fixture
def client(srv):
    with openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0) as c:
        yield c


def chat(client, content, stage=None, model="gpt-4o-mini", system="You extract things.", **kw):
    messages = [{"role": "system", "content": system}, {"role": "user", "content": content}]
    if stage is not None:
        kw["response_format"] = schema(stage)
    return client.chat.completions.create(model=model, messages=messages, **kw)


def payload(resp) -> dict:
    return json.loads(resp.choices[0].message.content)


def cosine(a, b) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


# --------------------------------------------------------------------------- chat stages


def test_extract_graph_with_json_schema(srv, client):
    resp = chat(client, f"Extract.\n<text>{TEXT}</text>", "extract_graph")
    assert resp.object == "chat.completion"
    assert resp.model == "gpt-4o-mini-2024-07-18"
    assert resp.choices[0].finish_reason == "stop"
    assert resp.choices[0].message.role == "assistant"
    out = payload(resp)
    names = [e["name"] for e in out["entities"]]
    assert names == ["Alice", "Acme", "Globex Corp", "Bob Smith", "Carol", "Dave", "Paris"]
    assert all(e["type"] == "Entity" and e["summary"] for e in out["entities"])
    edges = {(e["source"], e["relation"], e["target"]): e for e in out["edges"]}
    works = edges[("Alice", "WORKS_AT", "Acme")]
    assert works["fact"] == "Alice works at Acme since 2021-03-01."
    assert works["valid_at"] == "2021-03-01T00:00:00Z"
    assert works["invalid_at"] is None
    assert edges[("Globex Corp", "HIRED", "Bob Smith")]["valid_at"] is None
    assert ("Carol", "MET", "Dave") in edges
    assert len(out["edges"]) == 3
    usage = resp.usage
    assert usage.completion_tokens == math.ceil(len(resp.choices[0].message.content) / 4)
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens_details.cached_tokens == 0
    assert srv.calls("extract_graph") == 1


def test_summarize_chunk(client):
    chunk = "First   sentence here.\nSecond one follows! Third is dropped. Fourth too."
    out = payload(chat(client, f"<chunk>{chunk}</chunk>", "summarize_chunk"))
    assert out == {"summary": "First sentence here. Second one follows!"}
    long = "word " * 200 + "end."
    assert len(payload(chat(client, f"<chunk>{long}</chunk>", "summarize_chunk"))["summary"]) == 400


def test_contextualize_chunk(srv, client):
    document = " ".join(f"w{i}" for i in range(40))
    resp = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            {"role": "user", "content": f"<document>{document}</document>"},
            {"role": "user", "content": "<chunk>w20 w21</chunk> Situate this chunk."},
        ],
        response_format=schema("contextualize_chunk"),
    )
    expected = "This chunk is part of a document that begins: " + document[: len("w0 w1 w2")]
    assert payload(resp)["context"].startswith(expected)
    assert payload(resp)["context"].endswith("w10 w11.")
    # the stage is inferred from the tags too
    resp = chat(client, f"<document>{document}</document>\n<chunk>w20</chunk>")
    assert "context" in payload(resp)
    assert srv.calls("contextualize_chunk") == 2


def test_resolve(client):
    items = {
        "entities": [
            {"id": "e0", "name": "acme", "type": "Entity", "candidates": [
                {"id": 11, "name": "Globex", "type": "Entity", "summary": "x"},
                {"id": 12, "name": "Acme Corp", "type": "Entity", "summary": "y"},
            ]},
            {"id": "e1", "name": "Acme", "type": "Place", "candidates": [
                {"id": 12, "name": "Acme", "type": "Entity", "summary": "y"},
            ]},
            {"id": "e2", "name": "Zed", "type": "Entity", "candidates": []},
        ],
        "edges": [
            {"id": "r0", "source": "Alice", "target": "Globex", "relation": "WORKS_AT",
             "fact": "Alice works at Globex.", "valid_at": "2023-01-01T00:00:00Z", "candidates": [
                 {"id": 5, "source": "Alice", "target": "Acme", "relation": "works_at",
                  "fact": "Alice works at Acme.", "valid_at": None},
                 {"id": 6, "source": "Bob", "target": "Acme", "relation": "WORKS_AT",
                  "fact": "Bob works at Acme.", "valid_at": None},
             ]},
            {"id": "r1", "source": "Alice", "target": "Acme", "relation": "LIKES", "fact": "f",
             "valid_at": None, "candidates": [
                 {"id": 7, "source": "alice", "target": "ACME", "relation": "Likes", "fact": "f",
                  "valid_at": None},
             ]},
        ],
    }  # fmt: skip
    out = payload(chat(client, f"<items>\n{json.dumps(items)}\n</items>", "resolve"))
    assert out["entities"] == [
        {"id": "e0", "duplicate_of": 12},
        {"id": "e1", "duplicate_of": None},  # different type
        {"id": "e2", "duplicate_of": None},
    ]
    r0, r1 = out["edges"]
    assert r0["id"] == "r0" and r0["duplicate_of"] is None and r0["contradicts"] == [5]
    assert r0["reason"] == "Acme replaced by Globex"
    assert r1["duplicate_of"] == 7 and r1["contradicts"] == []
    assert resolve({"entities": [], "edges": []}) == {"entities": [], "edges": []}


def test_stage_inference_and_unknown_stage(srv, client):
    assert "entities" in payload(chat(client, "<text>Alice met Bob.</text>"))
    assert "summary" in payload(chat(client, "<chunk>Hello.</chunk>"))
    assert "entities" in payload(chat(client, '<items>{"entities": [], "edges": []}</items>'))
    assert [r.stage for r in srv.requests] == ["extract_graph", "summarize_chunk", "resolve"]
    with pytest.raises(openai.BadRequestError):
        chat(client, "no tags at all")
    with pytest.raises(openai.BadRequestError) as err:
        chat(client, "<text>x</text>", "write_poem")
    assert err.value.body["code"] == "unknown_stage"
    with pytest.raises(openai.BadRequestError):
        chat(client, "<items>not json</items>", "resolve")
    assert srv.calls("resolve") == 1


def test_models_404_and_answer_model(client, srv):
    ids = [m.id for m in client.models.list()]
    assert "gpt-4o-mini" in ids and "text-embedding-3-small" in ids
    with pytest.raises(openai.NotFoundError) as err:
        client.post("/nope", cast_to=object, body={})
    assert err.value.status_code == 404
    assert set(err.value.body) >= {"message", "type", "code"}
    assert answer_model("gpt-4o-mini") == "gpt-4o-mini-2024-07-18"
    assert answer_model("gpt-4o-2024-08-06") == "gpt-4o-2024-08-06"
    assert answer_model("claude-3-haiku-20240307") == "claude-3-haiku-20240307"


def test_cached_tokens_imitate_prompt_caching(client):
    document = "".join(f"line {i} of a long shared document prefix.\n" for i in range(60))
    assert len(document) > 2000
    first = chat(client, "<chunk>a.</chunk>", system=document + "A")
    second = chat(client, "<chunk>b.</chunk>", system=document + "B")
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    common = len(document)
    assert second.usage.prompt_tokens_details.cached_tokens == (common - common % 128) // 4
    short = chat(client, "<chunk>c.</chunk>", system=document[:1000] + "C")
    assert short.usage.prompt_tokens_details.cached_tokens == 0


def test_headers_recorded_and_reset(srv, client):
    chat(client, "<chunk>Hi.</chunk>", "summarize_chunk")
    record = srv.requests[0]
    assert record.path == "/v1/chat/completions"
    assert record.headers["Authorization"] == "Bearer sk-test"
    assert record.headers.get("authorization") == "Bearer sk-test"
    assert record.body["model"] == "gpt-4o-mini"
    assert record.stage == "summarize_chunk" and record.status == 200 and record.fault is None
    assert record.ended >= record.started
    assert srv.calls("summarize_chunk") == 1 and srv.calls() == 1
    srv.latency = 1.0
    srv.add_fault(Fault("500"))
    srv.reset()
    assert srv.requests == [] and srv.faults == [] and srv.latency == 0
    assert srv.max_in_flight == 0 and srv.calls("summarize_chunk") == 0


def test_max_tokens_truncates(client):
    resp = chat(client, f"<text>{TEXT}</text>", "extract_graph", max_completion_tokens=10)
    assert resp.choices[0].finish_reason == "length"
    assert len(resp.choices[0].message.content) == 40


# --------------------------------------------------------------------------- embeddings


def test_embeddings_float_and_base64(srv, client):
    texts = ["Alice works at Acme", "alice works at acme corp", "quantum chromodynamics lattice"]
    resp = client.embeddings.create(
        model="text-embedding-3-small", input=texts, dimensions=256, encoding_format="float"
    )
    assert resp.object == "list" and resp.model == "text-embedding-3-small"
    assert [d.index for d in resp.data] == [0, 1, 2]
    vecs = [d.embedding for d in resp.data]
    assert all(len(v) == 256 for v in vecs)
    assert all(abs(math.sqrt(sum(x * x for x in v)) - 1) < 1e-6 for v in vecs)
    assert cosine(vecs[0], vecs[1]) > 0.5 > cosine(vecs[0], vecs[2])
    assert resp.usage.prompt_tokens == math.ceil(sum(map(len, texts)) / 4)

    # the client asks for base64 by default and decodes it to floats
    default = client.embeddings.create(model="text-embedding-3-small", input=texts, dimensions=256)
    assert srv.requests[-1].body["encoding_format"] == "base64"
    for got, want in zip(default.data, vecs, strict=True):
        assert len(got.embedding) == 256
        assert all(abs(a - b) < 1e-6 for a, b in zip(got.embedding, want, strict=True))

    # explicit base64: the client leaves the string alone
    raw = (
        client.embeddings.create(
            model="text-embedding-3-small", input="Alice works at Acme", encoding_format="base64"
        )
        .data[0]
        .embedding
    )
    assert isinstance(raw, str)
    floats = struct.unpack(f"<{1536}f", base64.b64decode(raw))
    assert abs(cosine(floats, embed_text("Alice works at Acme"))) > 0.999999

    assert srv.calls("embed") == 3


def test_embeddings_bad_requests(client):
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="m", input=[], encoding_format="float")
    with pytest.raises(openai.BadRequestError):
        client.embeddings.create(model="m", input="x", dimensions=0, encoding_format="float")


@settings(max_examples=50, deadline=None, derandomize=True)  # the same examples everywhere
@given(st.text(max_size=200), st.integers(min_value=1, max_value=64))
def test_embed_text_is_deterministic_unit(text, dims):
    vec = embed_text(text, dims)
    assert vec == embed_text(text, dims)
    assert len(vec) == dims
    assert abs(math.sqrt(sum(x * x for x in vec)) - 1) < 1e-9


# --------------------------------------------------------------------------- faults


def test_fault_429_with_retry_after_and_match(srv, client):
    srv.add_fault(
        Fault(kind="429", stage="summarize_chunk", match="Chunk seven", times=1, retry_after=0.1)
    )
    chat(client, "<chunk>Chunk six.</chunk>", "summarize_chunk")  # no match: answered
    chat(client, "<text>Chunk seven.</text>", "extract_graph")  # other stage: answered
    with pytest.raises(openai.RateLimitError) as err:
        chat(client, "<chunk>Chunk seven.</chunk>", "summarize_chunk")
    assert err.value.status_code == 429
    assert float(err.value.response.headers["retry-after"]) == 0.1
    assert err.value.body["code"] == "rate_limit_exceeded"
    chat(client, "<chunk>Chunk seven.</chunk>", "summarize_chunk")  # times=1: spent
    assert srv.calls("summarize_chunk") == 2
    assert srv.calls("summarize_chunk", include_faults=True) == 3
    assert [r.fault for r in srv.requests] == [None, None, "429", None]


def test_fault_429_is_retried_by_the_client(srv):
    srv.add_fault(Fault(kind="429", retry_after=0.05, times=2))
    with openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=2) as retrying:
        resp = chat(retrying, "<chunk>Hi.</chunk>", "summarize_chunk")
    assert payload(resp) == {"summary": "Hi."}
    assert [r.status for r in srv.requests] == [429, 429, 200]
    assert srv.requests[-1].headers["x-stainless-retry-count"] == "2"


@pytest.mark.parametrize("kind", ["500", "503"])
def test_fault_server_errors(srv, client, kind):
    srv.add_fault(Fault(kind=kind, times=-1))
    for _ in range(2):
        with pytest.raises(openai.InternalServerError) as err:
            chat(client, "<chunk>Hi.</chunk>", "summarize_chunk")
        assert err.value.status_code == int(kind)
    assert srv.faults[0].hits == 2 and srv.faults[0].times == -1


def test_fault_timeout(srv):
    srv.timeout_sleep = 60  # as long as the test does not end it
    srv.add_fault(Fault(kind="timeout", stage="extract_graph"))
    impatient = openai.OpenAI(base_url=srv.base_url, api_key="sk-test", max_retries=0, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        chat(impatient, "<text>Alice met Bob.</text>", "extract_graph")
    assert time.monotonic() - started >= 0.45  # the client waited for its limit...
    (stalled,) = srv.requests
    assert stalled.fault == "timeout" and stalled.ended is None  # ...while the server stalled
    # the handler outlives its client without crashing; the server still answers
    srv.end_stalls()
    srv.wait_until(lambda: stalled.ended is not None)
    assert stalled.status == 200  # it answered, to nobody
    assert payload(chat(impatient, "<text>Alice met Bob.</text>", "extract_graph"))["entities"]
    assert [r.status for r in srv.requests] == [200, 200]


def test_fault_answers_that_are_not_usable(srv, client):
    srv.add_fault(Fault(kind="malformed", stage="extract_graph"))
    srv.add_fault(Fault(kind="truncated", stage="summarize_chunk"))
    srv.add_fault(Fault(kind="empty", stage="resolve"))
    srv.add_fault(Fault(kind="invalid", stage="contextualize_chunk"))

    malformed = chat(client, f"<text>{TEXT}</text>", "extract_graph")
    with pytest.raises(json.JSONDecodeError):
        payload(malformed)

    truncated = chat(client, "<chunk>One. Two. Three.</chunk>", "summarize_chunk")
    assert truncated.choices[0].finish_reason == "length"
    assert truncated.choices[0].message.content.startswith('{"summ')
    with pytest.raises(json.JSONDecodeError):
        payload(truncated)

    empty = chat(client, '<items>{"entities": [], "edges": []}</items>', "resolve")
    assert empty.choices[0].message.content == ""
    assert empty.choices[0].finish_reason == "stop"

    invalid = chat(client, "<document>D</document><chunk>C</chunk>", "contextualize_chunk")
    assert payload(invalid) == {"unexpected": True}

    assert [r.fault for r in srv.requests] == ["malformed", "truncated", "empty", "invalid"]
    assert all(r.status == 200 for r in srv.requests)
    assert srv.calls() == 0 and srv.calls(include_faults=True) == 4


def test_fault_badjson_body(srv, client):
    srv.add_fault(Fault(kind="badjson_body"))
    # the openai client does not wrap this: a bare json.JSONDecodeError (a ValueError) escapes
    with pytest.raises(ValueError):
        chat(client, "<chunk>Hi.</chunk>", "summarize_chunk")
    assert srv.requests[0].fault == "badjson_body"


def test_embedding_faults(srv, client):
    srv.add_fault(Fault(kind="429", stage="embed", match="poison"))
    srv.add_fault(Fault(kind="503", endpoint="embeddings"))
    chat(client, "<chunk>poison.</chunk>", "summarize_chunk")  # chat is untouched
    with pytest.raises(openai.RateLimitError):
        client.embeddings.create(model="m", input=["fine", "poison pill"])
    with pytest.raises(openai.InternalServerError):
        client.embeddings.create(model="m", input="fine")
    assert len(client.embeddings.create(model="m", input="fine").data) == 1
    srv.add_fault(Fault(kind="empty", stage="embed"))
    with pytest.raises(ValueError, match="No embedding data"):
        client.embeddings.create(model="m", input="fine")  # the client's own check
    assert srv.calls("embed") == 1


def test_fault_validation():
    with pytest.raises(ValueError):
        Fault(kind="418")


# ----------------------------------------------------------------------- latency, prompt mode, CLI


def test_latency_overlaps_concurrent_requests(srv, client):
    srv.latency = 0.7
    # All eight wait in the server until all eight are there: served at once, or the
    # hold times out and max_in_flight says so.
    held = srv.hold(Hold(count=8, timeout=10))
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            if i % 2:
                client.embeddings.create(model="m", input=f"text {i}")
            else:
                chat(client, f"<chunk>Chunk {i}.</chunk>", "summarize_chunk")
        except BaseException as exc:
            errors.append(exc)

    started = time.monotonic()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    assert not errors
    assert held.opened and srv.max_in_flight == 8
    assert all(r.duration >= 0.7 for r in srv.requests)
    # Their latencies overlap: one after another, they would take 8 x 0.7 = 5.6 s.
    assert 0.7 <= elapsed < 5.0
    assert srv.calls("summarize_chunk") == 4 and srv.calls("embed") == 4
    assert srv.in_flight == 0


def test_hold_keeps_requests_until_enough_are_there(srv, client):
    held = srv.hold(Hold(count=3, select=lambda stage, text: stage == "summarize_chunk"))
    threads = [
        threading.Thread(target=chat, args=(client, f"<chunk>Chunk {i}.</chunk>")) for i in range(2)
    ]
    for t in threads:
        t.start()
    srv.wait_until(lambda: held.waiting == 2)
    # Not selected: answered while the two wait.
    assert "entities" in payload(chat(client, "<text>Alice met Bob.</text>"))
    assert [r.ended for r in srv.requests if r.stage != "extract_graph"] == [None, None]
    assert held.opened is None
    chat(client, "<chunk>Chunk 2.</chunk>")  # the third: all three go on
    for t in threads:
        t.join()
    assert held.opened is True and held.most == 3 and held.waiting == 0
    assert srv.calls("summarize_chunk") == 3
    chat(client, "<chunk>Chunk 3.</chunk>")  # open for good


def test_hold_until_and_timeout(srv, client):
    go = threading.Event()
    held = srv.hold(Hold(until=go.is_set))
    thread = threading.Thread(target=chat, args=(client, "<chunk>Hi.</chunk>"))
    thread.start()
    srv.wait_until(lambda: held.waiting == 1)
    assert held.opened is None and srv.requests[0].ended is None
    go.set()
    thread.join()
    assert held.opened is True and srv.requests[0].status == 200
    # Never enough of them: it opens after its timeout, and says so.
    late = srv.hold(Hold(count=2, timeout=0.3))
    started = time.monotonic()
    chat(client, "<chunk>Hi.</chunk>")
    assert time.monotonic() - started >= 0.3
    assert late.opened is False and late.most == 1
    # reset() opens a hold still closed.
    stuck = srv.hold(Hold(count=2))
    thread = threading.Thread(target=chat, args=(client, "<chunk>Hi.</chunk>"))
    thread.start()
    srv.wait_until(lambda: stuck.waiting == 1)
    srv.reset()
    thread.join()
    assert stuck.opened is False and srv.holds == []


def test_no_structured_outputs_mode(srv, client):
    srv.structured_outputs = False
    with pytest.raises(openai.BadRequestError) as err:
        chat(client, "<chunk>Hi there. Bye.</chunk>", "summarize_chunk")
    assert "response_format json_schema is not supported" in err.value.body["message"]
    content = chat(client, "<chunk>Hi there. Bye.</chunk>").choices[0].message.content
    assert content.startswith("<think>reasoning here</think>\n```json\n")
    assert content.endswith("\n```")
    inner = content.split("```json\n", 1)[1].rsplit("\n```", 1)[0]
    assert json.loads(inner) == {"summary": "Hi there. Bye."}
    # json_object mode is fine
    resp = chat(client, "<chunk>Hi.</chunk>", response_format={"type": "json_object"})
    assert resp.choices[0].message.content.startswith("<think>")
    assert [r.status for r in srv.requests] == [400, 200, 200]


def test_extract_graph_heuristics():
    out = extract_graph(
        "When Alice left. Then they met. In 2020-01-02 Bob saw Bob and Eve at home."
    )
    assert [e["name"] for e in out["entities"]] == ["Alice", "Bob", "Eve"]
    assert out["edges"] == [
        {
            "source": "Bob",
            "target": "Eve",
            "relation": "SAW_AND",
            "fact": "In 2020-01-02 Bob saw Bob and Eve at home.",
            "quote": "In 2020-01-02 Bob saw Bob and Eve at",  # its first eight words
            "valid_at": "2020-01-02T00:00:00Z",
            "invalid_at": None,
        }
    ]
    many = ". ".join(f"Person{chr(65 + i % 26)}x knows Other" for i in range(30))
    assert extract_graph(many)["edges"] == []  # "Personax" is not a capitalised word run
    names = " ".join(f"Name{'abcdefghijklmnopqrstuvwxyz'[i % 26] * (i + 1)}" for i in range(30))
    assert len(extract_graph(names.replace(" ", ". "))["entities"]) == 20
    edges = extract_graph(". ".join(f"Alpha met Beta{'x' * i}" for i in range(30)))["edges"]
    assert len(edges) == 20 and edges[0]["relation"] == "MET"
    # Quotes: the sentence; in other case and spacing with "reportedly"; a paraphrase
    # with "allegedly" (for gb's exact, tolerant and not-found evidence).
    (said,) = extract_graph("Ann Lee reportedly met Tom Hart in Oslo.")["edges"]
    assert said["quote"] == "ANN  LEE  REPORTEDLY  MET  TOM  HART  IN  OSLO."
    (told,) = extract_graph("Ann Lee allegedly met Tom Hart.")["edges"]
    assert told["quote"] == "It is said that ann lee allegedly met tom hart."


def test_command_line_server():
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.llm_server", "--port", "0", "--latency", "0.01"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        with urllib.request.urlopen(base_url + "/models", timeout=5) as resp:
            assert json.load(resp)["object"] == "list"
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(base_url + "/missing", timeout=5)
        with err.value:
            assert err.value.code == 404
            assert json.load(err.value)["error"]["code"] == "unknown_url"
    finally:
        proc.terminate()
        proc.wait(timeout=5)
        proc.stdout.close()
