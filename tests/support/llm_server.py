"""A small deterministic OpenAI-compatible HTTP server for tests and benchmarks.

Standard library only. It answers the endpoints `gb` uses (chat completions, embeddings,
models) with answers shaped exactly as the OpenAI API's, so the real ``openai`` client parses
them, and it can inject faults (rate limits, server errors, timeouts, broken answers), add
latency, and imitate a local server without JSON-schema structured output.

Usage from tests::

    with LLMServer() as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        server.latency = 0.25
        server.add_fault(Fault(kind="429", stage="summarize_chunk", match="Chunk seven"))
        ...
        server.calls("summarize_chunk")

Tests that need requests to overlap, or to be out at a given moment, say so with a
`Hold` instead of hoping a latency is long enough (``server.hold(Hold(count=4))``: every
request waits in the server until four are there at once), and wait for what the server
saw with ``server.wait_until(...)`` instead of sleeping.

From a shell (benchmarks, manual use)::

    python -m tests.support.llm_server --port 8765 [--latency 0.3] [--no-structured-outputs]
    python -m tests.support.llm_server --slots 2 --token-rate 25 --embed-max-tokens 512

Slow-server mode imitates a local model server (llama.cpp, Ollama, LM Studio): ``slots``
requests are generated at once, the others wait in a first-in first-out queue that sends
them nothing (no status line, no headers), and leave it unanswered when their client
goes away; an answer takes its tokens at ``token_rate`` per second and slot (and its
prompt at ``prompt_rate``); ``stream: true`` gets server-sent events as they are
generated, a last one with the usage when ``stream_options.include_usage`` asks. Every
generation started is in ``generations``, keyed by its request without its transport
fields, so a test can tell that nothing was generated twice. ``embed_max_tokens`` refuses
a longer embeddings input as llama.cpp does (HTTP 500 "input (705 tokens) is too large
to process. increase the physical batch size (current batch size: 512)").

Chat answers are decided by the request's stage: ``response_format.json_schema.name`` when
the request asks for a JSON schema, otherwise inferred from tags in the last user message
(``<items>`` resolve, ``<document>`` + ``<chunk>`` contextualize_chunk, ``<chunk>``
summarize_chunk, ``<text>`` extract_graph, ``<passages>`` rerank, ``<sources>`` answer,
``<passage>`` pseudo_query, ``<entities>`` summarize_entity).
Every answer is a deterministic function of the request (only ids, ``created`` and
``cached_tokens`` depend on what came before).

The answer stage answers from the sources it is given (``[n] heading`` then the source's
text, in ``<sources>``): it cites source 1, quoting its first sentence, or says it has no
source when none is given. A test scripts another answer with ``server.answer_with``, a
function of the question and the sources (`answer_sources`) that returns the answer's
JSON object: a citation of a source not given, a quote its source does not hold.
"""

from __future__ import annotations

import argparse
import base64
import collections
import contextlib
import hashlib
import json
import math
import re
import select
import socket
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "DATE_SUFFIX",
    "FAULT_KINDS",
    "STAGES",
    "Fault",
    "Generation",
    "Headers",
    "Hold",
    "LLMServer",
    "RecordedRequest",
    "answer",
    "answer_model",
    "answer_sources",
    "embed_text",
    "generation_key",
    "pseudo_query",
]

#: Chat stages the server knows; "embed" is the stage of every embeddings request.
STAGES = (
    "extract_graph",
    "summarize_chunk",
    "contextualize_chunk",
    "resolve",
    "rerank",
    "answer",
    "pseudo_query",
    "summarize_entity",
)
EMBED_STAGE = "embed"
FAULT_KINDS = (
    "429",
    "500",
    "503",
    "timeout",
    "malformed",
    "truncated",
    "empty",
    "invalid",
    "badjson_body",
    "deep_json",  # chat: the answer's JSON nested thousands deep
    "deep_body",  # the whole response body nested thousands deep
    "surrogates",  # chat: a lone surrogate ("\\udc80") in the answer's first string
    "cut_stream",  # chat: a streamed answer's connection closed halfway through
    "think_only",  # chat: only a <think> block, no JSON after it (a small reasoning model)
    "no_quotes",  # extract_graph: the edges without their "quote"
    "empty_graph",  # extract_graph: no entity and no fact, whatever the text
    "loop",  # chat: the answer's last list item again and again, up to the output limit
    "nan_vector",  # embeddings: the last vector (a chunk's: its summary's) all NaN
    "null_vector",  # ...all null (how llama.cpp writes NaN)
    "zero_vector",  # ...all zeros
    "huge_vector",  # ...all 1e308 (infinite as float32)
)
VECTOR_FAULTS = {
    "nan_vector": math.nan,
    "null_vector": None,
    "zero_vector": 0.0,
    "huge_vector": 1e308,
}
DEEP = 3000  # levels of a deep_json / deep_body answer: past Python's parser, within 4096 tokens
DATE_SUFFIX = "-2024-07-18"
DEFAULT_DIMENSIONS = 1536
MAX_DIMENSIONS = 8192
MODELS = ("gpt-4o-mini", "gpt-4o", "text-embedding-3-small", "text-embedding-3-large")

_DATED = re.compile(r"(?:-\d{4}-\d{2}-\d{2}|-\d{8}|-\d{4})$")
_WORD = re.compile(r"\w+")
_ENTITY = re.compile(r"\b[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)*\b")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_RAW_DATE = re.compile(r'\b(when|until)="([^"]*)"')
_LOWER_WORD = re.compile(r"\b[a-z]+\b")
_STOP = frozenset(
    """The A An This That These Those It Its In On At By For From To Of With And But Or So If
    When While Then There Here After Before Since Until As He She They We I You His Her Their
    Our My Your Yes No Not All Some Each Every Also However Meanwhile Later Today Yesterday
    Tomorrow""".split()  # noqa: SIM905
)


def answer_model(requested: str) -> str:
    """The model name the server answers with: the requested one with a dated suffix."""
    return requested if _DATED.search(requested) else requested + DATE_SUFFIX


def _ceil4(n: int) -> int:
    return math.ceil(n / 4)


# --------------------------------------------------------------------------- embeddings


def embed_text(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """Deterministic unit vector: a hashed bag of lowercase words (two signed coordinates
    per word, blake2b), L2-normalised. Texts sharing words get similar vectors; a text
    without words gets a fixed unit vector (all coordinates equal)."""
    vec = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=16).digest()
        for k in (0, 8):
            chunk = int.from_bytes(digest[k : k + 8], "little")
            index = (chunk >> 1) % dimensions
            vec[index] += 1.0 if chunk & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vec))
    if norm == 0.0:
        return [1.0 / math.sqrt(dimensions)] * dimensions
    return [x / norm for x in vec]


def _b64_floats(vec: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode("ascii")


# --------------------------------------------------------------------------- stage answers


def _tag(text: str, name: str) -> str | None:
    m = re.search(rf"<{name}(?:\s[^>]*)?>(.*)</{name}>", text, re.DOTALL)
    if m:
        return m.group(1)
    m = re.search(rf"<{name}(?:\s[^>]*)?>(.*)", text, re.DOTALL)  # unclosed tag: to the end
    return m.group(1) if m else None


def _has_tag(text: str, name: str) -> bool:
    return re.search(rf"<{name}(?:\s[^>]*)?>", text) is not None


def _entity_runs(text: str) -> list[tuple[str, int, int]]:
    """Capitalised-word runs with leading stop words stripped: (name, start, end)."""
    runs = []
    for m in _ENTITY.finditer(text):
        words = list(re.finditer(r"[A-Z][a-z]+", m.group(0)))
        while words and words[0].group(0) in _STOP:
            words.pop(0)
        if not words:
            continue
        start = m.start() + words[0].start()
        end = m.start() + words[-1].end()
        name = " ".join(w.group(0) for w in words)
        runs.append((name, start, end))
    return runs


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_SPLIT.split(text) if s and s.strip()]


def extract_graph(text: str) -> dict[str, Any]:
    entities: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name, _, _ in _entity_runs(text):
        if name not in seen:
            seen.add(name)
            entities.append({"name": name, "type": "Entity", "summary": "Mentioned in the text."})
        if len(entities) == 20:
            break
    edges: list[dict[str, Any]] = []
    for sentence in _sentences(text):
        found: list[tuple[str, int, int]] = []
        for run in _entity_runs(sentence):
            if all(run[0] != f[0] for f in found):
                found.append(run)
            if len(found) == 2:
                break
        if len(found) < 2:
            continue
        (a, _, a_end), (b, b_start, _) = found
        between = sentence[a_end:b_start] if b_start >= a_end else ""
        words = _LOWER_WORD.findall(between)[:3]
        relation = "_".join(words).upper() if words else "RELATED_TO"
        date = _DATE.search(sentence)
        # when="..." / until="..." in a sentence: given back as is, as a careless model
        # writes dates ("yesterday", "2024-13-45").
        raw = dict(_RAW_DATE.findall(sentence))
        edges.append(
            {
                "source": a,
                "target": b,
                "relation": relation,
                "fact": sentence,
                "quote": _quote(sentence),
                "valid_at": raw.get("when", f"{date.group(1)}T00:00:00Z" if date else None),
                "invalid_at": raw.get("until"),
            }
        )
        if len(edges) == 20:
            break
    return {"entities": entities, "edges": edges}


def _quote(sentence: str) -> str:
    """The sentence's first eight words, as the prompt asks; with "reportedly" in it, in
    other case and spacing (found only tolerantly); with "allegedly", a paraphrase (not
    found)."""
    if "allegedly" in sentence:
        return "It is said that " + sentence.lower()
    words = sentence.split(" ")[:8]
    if "reportedly" in sentence:
        return "  ".join(" ".join(words).upper().split())
    return " ".join(words)


def summarize_chunk(chunk: str) -> dict[str, Any]:
    sentences = [" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+", chunk.strip())]
    summary = " ".join(s for s in sentences[:2] if s)
    return {"summary": summary[:400]}


def summarize_entity(entities: list[dict[str, Any]]) -> dict[str, Any]:
    """Each entity's first three facts (the latest, as gb gives them), joined: a test can
    tell which facts a summary was written from, and a summary stays as short as a
    model's one or two sentences."""
    summaries = []
    for entity in entities:
        given = (entity.get("facts") or [])[:3]
        facts = "; ".join(str(f.get("fact", "")).rstrip(".") for f in given)
        summaries.append({"id": entity.get("id"), "summary": f"{entity.get('name')}: {facts}."})
    return {"summaries": summaries}


def contextualize_chunk(document: str) -> dict[str, Any]:
    begins = " ".join(document.split()[:12])
    return {"context": f"This chunk is part of a document that begins: {begins}."}


_PASSAGE = re.compile(r"^\[(\d+)\] ", re.MULTILINE)


def rerank(query: str, passages: str) -> dict[str, Any]:
    """The numbers of the ``[N] text`` passages, those sharing more distinct words with the
    query first, ties in their given order: a test can predict the order it changes to."""
    words = set(_WORD.findall(query.lower()))
    marks = list(_PASSAGE.finditer(passages))
    overlap = {}
    for mark, after in zip(marks, [*marks[1:], None], strict=True):
        text = passages[mark.end() : after.start() if after else len(passages)]
        overlap[int(mark.group(1))] = len(words & set(_WORD.findall(text.lower())))
    return {"order": sorted(overlap, key=lambda n: (-overlap[n], n))}


def pseudo_query(passage: str) -> dict[str, Any]:
    """A query for the passage: the five longest distinct words of its longest sentence,
    longest first (ties in their order), lowercased. Those words are the passage's own, so
    BM25 finds it; a test can predict the query from the passage."""
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(passage.split()))
    longest = max(sentences, key=len, default="")
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(longest)))
    chosen = sorted(words, key=lambda w: -len(w))[:5]
    return {"query": " ".join(chosen)}


_SOURCE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def answer_sources(sources: str) -> dict[int, tuple[str, str]]:
    """The numbered sources of an answer request's ``<sources>`` block: number ->
    (heading, text), the heading being the line after ``[n] ``."""
    marks = list(_SOURCE.finditer(sources))
    found = {}
    for mark, after in zip(marks, [*marks[1:], None], strict=True):
        body = sources[mark.end() : after.start() if after else len(sources)]
        found[int(mark.group(1))] = (mark.group(2), body.strip("\n"))
    return found


def answer(question: str, sources: dict[int, tuple[str, str]]) -> dict[str, Any]:
    """Source 1's first sentence, cited with that sentence as its quote; with no source,
    an answer that says so and cites nothing."""
    if 1 not in sources:
        return {"answer": "The sources say nothing about it.", "citations": []}
    first = _sentences(sources[1][1])[0]
    return {"answer": f"{first} [1]", "citations": [{"source": 1, "quote": first}]}


def _same(a: Any, b: Any) -> bool:
    return str(a or "").strip().casefold() == str(b or "").strip().casefold()


def _within(when: Any, cand: dict[str, Any]) -> bool:
    """Whether a fact restates a candidate: with a start date of its own, only the same
    start does (another is a stint of its own, as gb's prompt says); without, it does."""
    return not when or when == cand.get("valid_at")


def offered(items: dict[str, Any]) -> dict[str, Any]:
    """A resolve prompt's items with each candidate written out in each item it is offered
    to (gb lists each once, under "candidate_entities" and "candidate_facts", and gives
    items their ids): what `resolve` and a test's `resolve_with` read."""
    listed = {
        "entities": {c.get("id"): c for c in items.get("candidate_entities") or []},
        "edges": {c.get("id"): c for c in items.get("candidate_facts") or []},
    }

    def written_out(kind: str, candidate: Any) -> dict[str, Any]:
        if isinstance(candidate, dict):
            return candidate
        return listed[kind].get(candidate, {"id": candidate})

    return {
        kind: [
            {**item, "candidates": [written_out(kind, c) for c in item.get("candidates") or []]}
            for item in items.get(kind) or []
        ]
        for kind in ("entities", "edges")
    }


def resolve(items: dict[str, Any]) -> dict[str, Any]:
    """The deterministic resolve answer for items as `offered` gives them."""
    entities = []
    for ent in items.get("entities") or []:
        name = str(ent.get("name") or "").strip().casefold()
        dup = None
        for cand in ent.get("candidates") or []:
            cname = str(cand.get("name") or "").strip().casefold()
            same_type = (
                not ent.get("type") or not cand.get("type") or _same(ent["type"], cand["type"])
            )
            if name and cname and same_type and (name == cname or name in cname or cname in name):
                dup = cand.get("id")
                break
        entities.append({"id": ent.get("id"), "duplicate_of": dup})
    edges = []
    for edge in items.get("edges") or []:
        dup = None
        contradicts = []
        replaced = []
        for cand in edge.get("candidates") or []:
            same_source = _same(edge.get("source"), cand.get("source"))
            same_relation = _same(edge.get("relation"), cand.get("relation"))
            same_target = _same(edge.get("target"), cand.get("target"))
            if same_source and same_relation and same_target:
                if dup is None and _within(edge.get("valid_at"), cand):
                    dup = cand.get("id")
            elif same_source and same_relation:
                contradicts.append(cand.get("id"))
                replaced.append(f"{cand.get('target')} replaced by {edge.get('target')}")
        if replaced:
            reason = "; ".join(replaced)
        elif dup is not None:
            reason = f"Restates fact {dup}"
        else:
            reason = "New fact"
        edges.append(
            {
                "id": edge.get("id"),
                "duplicate_of": dup,
                "contradicts": contradicts,
                "reason": reason,
            }
        )
    return {"entities": entities, "edges": edges}


# --------------------------------------------------------------------------- records, faults


@dataclass
class Fault:
    """A fault to inject. Applies to requests whose stage equals ``stage`` (None: any; the
    stage of an embeddings request is "embed") and whose text contains ``match`` (None: any),
    for the next ``times`` matching requests (-1: forever). ``endpoint`` is "chat",
    "embeddings" or "any"; a fault with stage "embed" applies to embeddings whatever it says.
    ``hits`` counts how often it fired."""

    kind: str
    stage: str | None = None
    match: str | None = None
    times: int = 1
    retry_after: float | None = None
    endpoint: str = "chat"
    hits: int = 0

    def __post_init__(self) -> None:
        self.kind = str(self.kind)
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {FAULT_KINDS}")
        if self.endpoint not in ("chat", "embeddings", "any"):
            raise ValueError(f"unknown endpoint {self.endpoint!r}")

    def applies(self, endpoint: str, stage: str | None, text: str) -> bool:
        if self.times == 0:
            return False
        wanted = "embeddings" if self.stage == EMBED_STAGE else self.endpoint
        if wanted != "any" and wanted != endpoint:
            return False
        if self.stage is not None and self.stage != stage:
            return False
        return self.match is None or self.match in text


@dataclass
class Hold:
    """Requests kept waiting in the server as they arrive (before latency, faults and
    answers), so that a test can have them out at once, or out at a moment it picks,
    without hoping a latency is long enough. It holds the requests ``select`` picks (by
    their stage, None when it cannot be told, and their text, as a Fault's ``match`` sees
    it; None: every request) until ``count`` of them wait at once and ``until()`` (when
    given) is true; then it opens for good, and every request it held, or would hold,
    goes on. ``timeout`` seconds after the first one came it opens all the same, with
    ``opened`` False: the test's own checks then fail, instead of hanging. ``most`` is the
    most requests that waited in it at once; ``opened`` is None while it is closed."""

    count: int = 1
    select: Callable[[str | None, str], bool] | None = None
    until: Callable[[], bool] | None = None
    timeout: float = 30.0
    most: int = 0
    opened: bool | None = None
    waiting: int = 0
    deadline: float | None = None

    def applies(self, stage: str | None, text: str) -> bool:
        return self.opened is None and (self.select is None or self.select(stage, text))

    def ready(self) -> bool:
        return self.waiting >= self.count and (self.until is None or self.until())


def generation_key(body: Any) -> str:
    """A request as what decides its generation: its body without the transport fields
    (``stream``, ``stream_options``), hashed."""
    if isinstance(body, dict):
        body = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


@dataclass
class Generation:
    """One answer generated (or begun) for a request that had its turn in a slot. ``tokens``
    is the output generated, all of it when ``finished``; not finished: its client went
    away first and the generation was stopped."""

    key: str  # generation_key of the request
    stage: str | None
    body: Any
    started: float
    ended: float | None = None
    prompt_tokens: int = 0
    tokens: int = 0
    finished: bool = False


@dataclass
class RecordedRequest:
    """One request as it arrived. ``ended`` is None while it is being served; ``status`` is
    the HTTP status sent (None until then, 0 when nothing was sent because the server stopped);
    ``fault`` the injected fault kind, if any; ``headers`` a dict with lowercase keys whose
    lookups ignore case; ``body`` the parsed JSON body (None when it was not JSON)."""

    path: str
    headers: Headers
    body: Any
    stage: str | None
    started: float
    ended: float | None = None
    status: int | None = None
    fault: str | None = None
    method: str = "POST"
    queued: float = 0.0  # seconds it waited for a slot (slow-server mode)
    dropped: bool = False  # its client went away while it waited: never generated

    @property
    def duration(self) -> float | None:
        return None if self.ended is None else self.ended - self.started


class Headers(dict):
    """Request headers with lowercase keys; lookups ignore case (``h["Authorization"]``)."""

    def __init__(self, items: Any = ()):
        super().__init__((str(k).lower(), v) for k, v in dict(items).items())

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key.lower() if isinstance(key, str) else key)

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


class _Reply(Exception):
    """Raised inside request processing to send an error answer."""

    def __init__(self, status: int, message: str, type_: str, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.code = code


def _error_body(message: str, type_: str, code: str | None, param: str | None = None) -> bytes:
    body = {"error": {"message": message, "type": type_, "param": param, "code": code}}
    return json.dumps(body).encode("utf-8")


def _deep_body() -> bytes:
    """A response body nested past what a JSON parser follows."""
    return b'{"object": "list", "data": ' + b"[" * DEEP + b"]" * DEEP + b"}"


def _with_surrogate(answer: Any) -> Any:
    """``answer`` with a lone surrogate appended to its first string."""
    pending = [answer]
    while pending:
        node = pending.pop(0)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(value, str):
                node[key] = value + "\udc80"
                return answer
            if isinstance(value, dict | list):
                pending.append(value)
    return answer


def _looping(answer: dict[str, Any], limit: Any) -> str:
    """`answer` as a small model in a loop writes it: its last non-empty list's last item
    (without a list: its last string's words) written again and again, never closed,
    past the output limit (cut there after)."""
    lists = [key for key, value in answer.items() if isinstance(value, list) and value]
    strings = [key for key, value in answer.items() if isinstance(value, str) and value]
    if not lists and not strings:
        return json.dumps(answer)
    key = (lists or strings)[-1]
    others = json.dumps({k: v for k, v in answer.items() if k != key})[:-1]
    start = f"{others}{', ' if len(others) > 1 else ''}{json.dumps(key)}: "
    if lists:  # the list's items, then its last again
        text = start + "[" + ", ".join(json.dumps(item) for item in answer[key])
        again = ", " + json.dumps(answer[key][-1])
    else:  # the string's words, then again, inside the one string
        text = start + json.dumps(answer[key])[:-1]
        again = " " + json.dumps(answer[key])[1:-1]
    size = 4 * (limit if isinstance(limit, int) and limit > 0 else 4096) + len(again)
    return text + again * (1 + (size - len(text)) // len(again))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return "" if content is None else str(content)


# --------------------------------------------------------------------------- streaming


def _loads(payload: bytes) -> Any:
    """An answer of ours read back; None when it is not JSON (a fault's body)."""
    try:
        return json.loads(payload)
    except (ValueError, RecursionError):
        return None


def _gone(conn: socket.socket) -> bool:
    """Whether the client closed its end of the connection (EOF waiting to be read)."""
    try:
        readable, _, _ = select.select([conn], [], [], 0)
        return bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _tokens_in(seconds: float, per_token: float, most: int) -> int:
    if not per_token:
        return most
    return max(0, min(most, int(seconds / per_token)))


def _chunk(handler: _Handler, data: bytes) -> None:
    """One piece of a chunked HTTP body (b"": the last)."""
    handler.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
    handler.wfile.flush()


class _Events:
    """A whole chat completion cut into the server-sent events a streaming server sends:
    one token is 4 characters of content, as the usage counts them."""

    def __init__(self, response: dict[str, Any], body: Any) -> None:
        self.response = response
        choice = (response.get("choices") or [{}])[0]
        self.text = str((choice.get("message") or {}).get("content") or "")
        self.finish = choice.get("finish_reason")
        self.tokens = _ceil4(len(self.text))
        options = body.get("stream_options") if isinstance(body, dict) else None
        self.usage = isinstance(options, dict) and bool(options.get("include_usage"))

    def _event(self, choices: list[dict[str, Any]], usage: Any = None) -> bytes:
        chunk = {
            "id": self.response.get("id"),
            "object": "chat.completion.chunk",
            "created": self.response.get("created"),
            "model": self.response.get("model"),
            "system_fingerprint": self.response.get("system_fingerprint"),
            "choices": choices,
        }
        if self.usage:
            chunk["usage"] = usage
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    def _delta(self, delta: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
        return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]

    def first(self) -> bytes:
        return self._event(self._delta({"role": "assistant", "content": "", "refusal": None}))

    def content(self, step: int) -> Iterator[tuple[int, bytes]]:
        """(tokens generated once it is, event) for each ``step`` tokens of content."""
        for start in range(0, self.tokens, step):
            piece = self.text[start * 4 : (start + step) * 4]
            yield min(start + step, self.tokens), self._event(self._delta({"content": piece}))

    def last(self) -> bytes:
        events = self._event(self._delta({}, self.finish))
        if self.usage:
            events += self._event([], self.response.get("usage"))
        return events + b"data: [DONE]\n\n"


# --------------------------------------------------------------------------- the server


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False
    # The default backlog of 5 makes a sixth connection opened at once wait a second.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], owner: LLMServer):
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return  # a client that went away is not an error of the server
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "llm-test-server/1.0"
    sys_version = ""
    timeout = 120  # idle keep-alive connections end after this long
    # Headers and body go out as two writes: without this, loopback waits ~40 ms (Nagle
    # and delayed ACKs) on every small answer, time no real server would add.
    disable_nagle_algorithm = True
    server: _HTTPServer
    answer_begun = False  # the status line of the current answer went out

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionError, TimeoutError, OSError):
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # never print headers
        pass

    def do_GET(self) -> None:
        self.server.owner._serve(self, "GET")

    def do_POST(self) -> None:
        self.server.owner._serve(self, "POST")

    def do_PUT(self) -> None:
        self.server.owner._serve(self, "PUT")

    def do_DELETE(self) -> None:
        self.server.owner._serve(self, "DELETE")


class LLMServer:
    """Deterministic OpenAI-compatible server on 127.0.0.1 (port 0: a free one), served by a
    daemon thread. Use as a context manager, or call start() / stop().

    Settable attributes: ``latency`` (seconds added to every request), ``structured_outputs``
    (False imitates a server without JSON-schema support), ``old_max_tokens`` (True
    imitates an older server that refuses ``max_completion_tokens`` and takes only
    ``max_tokens``), ``timeout_sleep`` (how long a "timeout" fault stalls, unless
    ``end_stalls()`` ends it sooner), ``verbose`` (one line per request on stderr, never
    headers). ``hold()`` keeps requests waiting (see `Hold`); ``wait_until()`` waits for
    what the server sees.

    Slow-server mode (see the module docstring): ``slots`` (0: every request at once, no
    queue), ``token_rate`` and ``prompt_rate`` (tokens per second and slot; 0: at once),
    ``embed_max_tokens`` (0: no limit); ``streaming`` False refuses ``stream`` and
    ``takes_stream_options`` False refuses ``stream_options``, as some servers do (400);
    ``ignores_stream`` answers a streamed request whole, as JSON, as others do.
    ``generations`` lists every generation begun; ``generated_twice()`` the requests
    generated more than once; ``max_generating`` the most generated at once.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        latency: float = 0.0,
        structured_outputs: bool = True,
        verbose: bool = False,
        slots: int = 0,
        token_rate: float = 0.0,
        prompt_rate: float = 0.0,
        embed_max_tokens: int = 0,
    ):
        self.host = host
        self._port = port
        self.latency = latency
        self.structured_outputs = structured_outputs
        self.old_max_tokens = False
        self.timeout_sleep = 5.0
        self.verbose = verbose
        self.slots = slots
        self.token_rate = token_rate
        self.prompt_rate = prompt_rate
        self.embed_max_tokens = embed_max_tokens
        # Vectors of this size whatever `dimensions` asks, as a local model makes its own
        # (None: the size asked).
        self.embed_size: int | None = None
        self.streaming = True
        self.ignores_stream = False
        self.takes_stream_options = True
        self.faults: list[Fault] = []
        # Stage -> characters: an answer for a longer input (the stage's tagged text: an
        # extraction's <text>) is cut off at half, finish_reason "length", as a small model
        # that rambles past its output limit on long chunks only.
        self.cut_off_over: dict[str, int] = {}
        # The answer stage's answer, if not `answer`: f(question, answer_sources(...)).
        self.answer_with: Callable[[str, dict[int, tuple[str, str]]], dict[str, Any]] | None = None
        # The extract_graph and resolve answers, if not `extract_graph` and `resolve`: a test's
        # own graph (names and types the capitalised runs cannot give), or its own decisions.
        self.extract_with: Callable[[str], dict[str, Any]] | None = None
        self.resolve_with: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        self.holds: list[Hold] = []
        self.requests: list[RecordedRequest] = []
        self.generations: list[Generation] = []
        self.max_in_flight = 0
        self.in_flight = 0
        self.generating = 0
        self.max_generating = 0
        self._queue: collections.deque[RecordedRequest] = collections.deque()
        # Reentrant, so that a Hold's `until` may call the server's own methods. Notified
        # whenever a request arrives or ends and a hold or a stall changes.
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._stalls = 0  # end_stalls() calls so far: a stall ends when this changes
        self._first_contents: list[str] = []
        self._seq = 0
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle

    def start(self) -> LLMServer:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        self._httpd = _HTTPServer((self.host, self._port), self)
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.name = f"llm-server-{self._port}"
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wakes handlers sleeping for latency or a timeout fault
        with self._changed:
            self._changed.notify_all()  # ...and those held or stalled
        httpd.shutdown()
        with httpd.connections_lock:
            conns = list(httpd.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    close = stop

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def serve_forever(self) -> None:
        """Start and block until KeyboardInterrupt (for ``python -m tests.support.llm_server``)."""
        self.start()
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self._port}/v1"

    # ---- test helpers

    def add_fault(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self.faults.clear()

    def hold(self, hold: Hold) -> Hold:
        """Keep the requests ``hold`` selects waiting, as it says (see `Hold`)."""
        with self._changed:
            self.holds.append(hold)
        return hold

    def end_stalls(self) -> None:
        """End every "timeout" fault's stall now: those requests are answered at once."""
        with self._changed:
            self._stalls += 1
            self._changed.notify_all()

    def wait_until(self, condition: Callable[[], bool], timeout: float = 30.0) -> None:
        """Block until ``condition()`` is true: checked whenever a request arrives or ends
        (and every 50 ms, for conditions on anything else); AssertionError after
        ``timeout`` seconds. Never from the thread of an event loop whose requests the
        condition waits for: that loop would stand still."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not condition():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"the test server waited {timeout:g} s in vain")
                self._changed.wait(min(left, 0.05))

    def calls(self, stage: str | None = None, *, include_faults: bool = False) -> int:
        """Requests answered for ``stage`` (None: any): by default those answered normally
        (status 200, no fault injected); with include_faults=True every recorded request."""
        with self._lock:
            records = list(self.requests)
        return sum(
            1
            for r in records
            if (stage is None or r.stage == stage)
            and (include_faults or (r.status == 200 and r.fault is None))
        )

    def requests_for(self, stage: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.stage == stage]

    def generated_twice(self) -> list[Generation]:
        """The generations of a request generated before (by its `generation_key`)."""
        seen: set[str] = set()
        twice = []
        with self._lock:
            for generation in self.generations:
                if generation.key in seen:
                    twice.append(generation)
                seen.add(generation.key)
        return twice

    def generated_tokens(self) -> int:
        """Output tokens generated in all, the stopped generations' included."""
        with self._lock:
            return sum(g.tokens for g in self.generations)

    def reset(self) -> None:
        """Clear faults, holds (opening them), records, counters and the prompt-cache
        history, and end the stalls of "timeout" faults; latency back to 0,
        structured_outputs back to True, old_max_tokens to False, timeout_sleep to 5.0,
        slow-server mode off (no slots, no rates, no embeddings limit, streaming taken),
        vectors of the size asked, the answer stage's own answer back."""
        with self._changed:
            for hold in self.holds:
                if hold.opened is None:
                    hold.opened = False
            self.holds.clear()
            self._stalls += 1
            self._changed.notify_all()
            self.faults.clear()
            self.answer_with = None
            self.cut_off_over = {}
            self.requests.clear()
            self.generations.clear()
            self._first_contents.clear()
            self.max_in_flight = self.in_flight
            self.max_generating = self.generating
            self.latency = 0.0
            self.structured_outputs = True
            self.old_max_tokens = False
            self.timeout_sleep = 5.0
            self.slots = 0
            self.token_rate = self.prompt_rate = 0.0
            self.embed_max_tokens = 0
            self.embed_size = None
            self.streaming = self.takes_stream_options = True
            self.ignores_stream = False

    # ---- serving

    def _serve(self, handler: _Handler, method: str) -> None:
        started = time.monotonic()
        path = handler.path.split("?", 1)[0]
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length > 0 else b""
        record = RecordedRequest(
            path=path,
            headers=Headers(handler.headers.items()),
            body=None,
            stage=None,
            started=started,
            method=method,
        )
        with self._changed:
            self.requests.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._changed.notify_all()

        def finish(status: int) -> None:
            # Book-keeping happens before the answer goes out (its last part, when it is
            # streamed), so a client that has its answer sees its request counted. Once.
            if record.status is not None:
                return
            with self._changed:
                self.in_flight -= 1
                record.ended = time.monotonic()
                record.status = status
                self._changed.notify_all()
            if self.verbose:
                print(
                    f"{method} {path} stage={record.stage} status={status} "
                    f"fault={record.fault} queued={record.queued:.3f}s "
                    f"{record.ended - started:.3f}s",
                    file=sys.stderr,
                    flush=True,
                )

        status, headers, payload = 500, {}, b""
        handler.answer_begun = False
        try:
            try:
                self._hold(path, raw)
                status, headers, payload = self._process(method, path, raw, record)
                if status == 200 and method == "POST" and record.stage is not None:
                    self._deliver(handler, record, headers, payload, finish)
                    return
            except Exception as exc:  # a bug here: say so to the client and on stderr
                traceback.print_exc()
                status, headers = 500, {}
                payload = _error_body(f"llm_server bug: {exc!r}", "server_error", "test_server_bug")
                if handler.answer_begun:  # part of an answer went out already
                    handler.close_connection = True
                    return
            finish(status)
            if status == 0:  # a timeout fault outlived the server: send nothing
                handler.close_connection = True
                return
            self._send(handler, status, headers, payload)
        finally:
            finish(0)  # nothing was sent, if nothing said otherwise

    @staticmethod
    def _send(
        handler: _Handler,
        status: int,
        headers: dict[str, str],
        payload: bytes,
        kind: str = "application/json",
    ) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", kind)
            handler.send_header("Content-Length", str(len(payload)))
            for key, value in headers.items():
                handler.send_header(key, value)
            handler.end_headers()
            handler.wfile.write(payload)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            handler.close_connection = True  # the client went away (e.g. it timed out)

    # ---- slow-server mode: slots, a queue, paced and streamed answers

    def _deliver(
        self,
        handler: _Handler,
        record: RecordedRequest,
        headers: dict[str, str],
        payload: bytes,
        finish: Callable[[int], None],
    ) -> None:
        """A chat or embeddings answer as a model server gives it: after its turn in a
        slot, at the token rates, streamed when asked; nothing when its client left."""
        if not self._take_slot(handler, record):
            finish(0)
            handler.close_connection = True
            return
        try:
            response = _loads(payload)
            usage = response.get("usage") if isinstance(response, dict) else None
            prompt = int((usage or {}).get("prompt_tokens") or 0)
            output = int((usage or {}).get("completion_tokens") or 0)
            generation = Generation(
                generation_key(record.body),
                record.stage,
                record.body,
                time.monotonic(),
                None,
                prompt,
            )
            with self._changed:
                self.generations.append(generation)
            stream = isinstance(record.body, dict) and bool(record.body.get("stream"))
            stream = stream and not self.ignores_stream
            if stream and isinstance(response, dict) and "choices" in response:
                done = self._stream(handler, record, headers, response, generation, finish)
            else:
                kind = "application/json"
                if stream:  # a fault's body that is no answer, as the one event it sends
                    payload, kind = b"data: " + payload + b"\n\n", "text/event-stream"
                done = self._paced_whole(
                    handler, headers, payload, generation, output, finish, kind
                )
            generation.finished = done
        finally:
            self._free_slot()

    def _take_slot(self, handler: _Handler, record: RecordedRequest) -> bool:
        """Wait, sending nothing, for this request's turn and a free slot (first in, first
        out); False when its client went away meanwhile: it is dropped, never generated."""
        arrived = time.monotonic()
        with self._changed:
            self._queue.append(record)
            try:
                while True:
                    if self._stopping.is_set():
                        return False
                    if self._queue[0] is record and (
                        not self.slots or self.generating < self.slots
                    ):
                        self._queue.popleft()
                        self.generating += 1
                        self.max_generating = max(self.max_generating, self.generating)
                        return True
                    if _gone(handler.connection):
                        record.dropped = True
                        return False
                    self._changed.wait(0.02)
            finally:
                record.queued = time.monotonic() - arrived
                if record in self._queue:
                    self._queue.remove(record)
                self._changed.notify_all()

    def _free_slot(self) -> None:
        with self._changed:
            self.generating -= 1
            self._changed.notify_all()

    def _pace(self, handler: _Handler, until: float) -> bool:
        """Wait until the monotonic time ``until``; False when the client went away (or
        the server is stopping) first."""
        while (left := until - time.monotonic()) > 0:
            if self._stopping.wait(min(left, 0.02)) or _gone(handler.connection):
                return False
        return not self._stopping.is_set()

    def _times(self, prompt: int, output: int) -> tuple[float, float]:
        """Seconds for a prompt of ``prompt`` tokens, and per output token."""
        per_prompt = prompt / self.prompt_rate if self.prompt_rate else 0.0
        per_token = 1.0 / self.token_rate if self.token_rate else 0.0
        return per_prompt, per_token

    def _paced_whole(
        self,
        handler: _Handler,
        headers: dict[str, str],
        payload: bytes,
        generation: Generation,
        output: int,
        finish: Callable[[int], None],
        kind: str = "application/json",
    ) -> bool:
        """Generate it all, then send it whole (a request without ``stream``)."""
        prompt_time, per_token = self._times(generation.prompt_tokens, output)
        begun = time.monotonic()
        done = self._pace(handler, begun + prompt_time + output * per_token)
        elapsed = time.monotonic() - begun - prompt_time
        generation.tokens = output if done else _tokens_in(elapsed, per_token, output)
        generation.ended = time.monotonic()
        if not done:
            finish(0)
            handler.close_connection = True
            return False
        finish(200)
        self._send(handler, 200, headers, payload, kind)
        return True

    def _stream(
        self,
        handler: _Handler,
        record: RecordedRequest,
        headers: dict[str, str],
        response: dict[str, Any],
        generation: Generation,
        finish: Callable[[int], None],
    ) -> bool:
        """The answer as server-sent events, as the tokens are generated: a first event
        once the prompt is read, a few tokens an event, the finish reason, the usage when
        asked for, then [DONE]. Stops when the client goes away."""
        events = _Events(response, record.body)
        prompt_time, per_token = self._times(generation.prompt_tokens, events.tokens)
        begun = time.monotonic()
        if not self._pace(handler, begun + prompt_time):
            generation.ended = time.monotonic()
            finish(0)
            handler.close_connection = True
            return False
        try:
            handler.send_response(200)
            handler.answer_begun = True
            handler.send_header("Content-Type", "text/event-stream; charset=utf-8")
            handler.send_header("Cache-Control", "no-cache")
            handler.send_header("Transfer-Encoding", "chunked")
            for key, value in headers.items():
                handler.send_header(key, value)
            handler.end_headers()
            first = time.monotonic()
            _chunk(handler, events.first())
            step = max(1, math.ceil(0.02 / per_token)) if per_token else 64
            for done_tokens, event in events.content(step):
                if record.fault == "cut_stream" and done_tokens > events.tokens // 2:
                    raise ConnectionAbortedError("cut_stream fault")
                if not self._pace(handler, first + done_tokens * per_token):
                    generation.tokens = done_tokens
                    generation.ended = time.monotonic()
                    finish(0)
                    handler.close_connection = True
                    return False
                _chunk(handler, event)
            generation.tokens = events.tokens
            generation.ended = time.monotonic()
            finish(200)
            _chunk(handler, events.last())
            _chunk(handler, b"")  # the end of a chunked body
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            generation.ended = generation.ended or time.monotonic()
            finish(0)
            handler.close_connection = True
            return False
        return True

    def _sleep(self, seconds: float) -> bool:
        """Sleep; False when the server is stopping."""
        if seconds > 0:
            return not self._stopping.wait(seconds)
        return not self._stopping.is_set()

    def _stall(self, seconds: float) -> bool:
        """A "timeout" fault's stall: ``seconds``, or until end_stalls(); False when the
        server is stopping."""
        deadline = time.monotonic() + seconds
        with self._changed:
            stalls = self._stalls
            while self._stalls == stalls and not self._stopping.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
        return not self._stopping.is_set()

    def _hold(self, path: str, raw: bytes) -> None:
        """Wait in every open hold that selects this request (see `Hold`)."""
        with self._changed:
            if not self.holds:
                return
            stage, text = self._describe(path, raw)
            holds = [h for h in self.holds if h.applies(stage, text)]
            for hold in holds:
                hold.waiting += 1
                hold.most = max(hold.most, hold.waiting)
                if hold.deadline is None:
                    hold.deadline = time.monotonic() + hold.timeout
            self._changed.notify_all()
            try:
                for hold in holds:
                    while hold.opened is None:
                        if hold.ready():
                            hold.opened = True
                            self._changed.notify_all()
                            break
                        left = hold.deadline - time.monotonic()
                        if left <= 0 or self._stopping.is_set():
                            hold.opened = False
                            self._changed.notify_all()
                            break
                        # `until` may watch anything (a database, a flag): look again often.
                        self._changed.wait(min(left, 0.05) if hold.until else left)
            finally:
                for hold in holds:
                    hold.waiting -= 1

    def _describe(self, path: str, raw: bytes) -> tuple[str | None, str]:
        """A request's stage (None when it cannot be told) and its text as a fault's
        ``match`` sees it, read from its raw body before it is answered."""
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return None, raw.decode("utf-8", "replace")
        if not isinstance(body, dict):
            return None, json.dumps(body)
        if path.rstrip("/").endswith("/embeddings"):
            inputs = body.get("input")
            inputs = [inputs] if isinstance(inputs, str) else inputs
            if isinstance(inputs, list) and all(isinstance(i, str) for i in inputs):
                return EMBED_STAGE, "\n".join(inputs) + "\n" + json.dumps(body)
            return EMBED_STAGE, json.dumps(body)
        messages = body.get("messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            return None, json.dumps(body)
        try:
            stage: str | None = self._stage(body, messages)
        except _Reply:
            stage = None
        texts = [_content_text(m.get("content")) for m in messages]
        return stage, "\n".join(texts) + "\n" + json.dumps(body)

    def _process(
        self, method: str, path: str, raw: bytes, record: RecordedRequest
    ) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self._seq += 1
            seq = self._seq
        headers = {"x-request-id": f"req_test{seq:08d}", "openai-processing-ms": "1"}
        if not self._sleep(float(self.latency or 0)):
            return 0, headers, b""
        try:
            if method == "GET" and path.rstrip("/") == "/v1/models":
                return 200, headers, json.dumps(self._models()).encode()
            if method == "POST" and path.rstrip("/") in ("/v1/chat/completions", "/v1/embeddings"):
                try:
                    body = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    raise _Reply(
                        400,
                        f"We could not parse the JSON body of your request ({exc})",
                        "invalid_request_error",
                    ) from None
                record.body = body
                if not isinstance(body, dict):
                    raise _Reply(
                        400, "The request body must be a JSON object", "invalid_request_error"
                    )
                if path.rstrip("/").endswith("/embeddings"):
                    return self._embeddings(body, record, headers, seq)
                return self._chat(body, record, headers, seq)
            raise _Reply(
                404,
                f"Unknown request URL: {method} {path}. Please check the URL for typos.",
                "invalid_request_error",
                "unknown_url",
            )
        except _Reply as reply:
            return reply.status, headers, _error_body(reply.message, reply.type, reply.code)

    @staticmethod
    def _models() -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": 1721172741, "owned_by": "system"}
                for m in MODELS
            ],
        }

    def _take_fault(self, endpoint: str, stage: str | None, text: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.applies(endpoint, stage, text):
                    if fault.times > 0:
                        fault.times -= 1
                    fault.hits += 1
                    return fault
        return None

    def _error_fault(
        self, fault: Fault, headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes] | None:
        if fault.kind == "429":
            retry = fault.retry_after if fault.retry_after is not None else 1
            headers["Retry-After"] = f"{retry:g}" if isinstance(retry, float) else str(retry)
            return (
                429,
                headers,
                _error_body(
                    "Rate limit reached for requests (test server). Please try again later.",
                    "requests",
                    "rate_limit_exceeded",
                ),
            )
        if fault.kind == "500":
            return (
                500,
                headers,
                _error_body(
                    "The server had an error while processing your request. Sorry about that!",
                    "server_error",
                    None,
                ),
            )
        if fault.kind == "503":
            return (
                503,
                headers,
                _error_body(
                    "The engine is currently overloaded, please try again later.",
                    "server_error",
                    "service_unavailable",
                ),
            )
        if fault.kind == "badjson_body":
            return 200, headers, b"<html><body>502 Bad Gateway (not JSON)</body></html>"
        return None

    # ---- chat

    def _stage(self, body: dict[str, Any], messages: list[dict[str, Any]]) -> str:
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
            name = str((fmt.get("json_schema") or {}).get("name") or "")
            if name not in STAGES:
                raise _Reply(
                    400,
                    f"Unknown stage (response_format json_schema name {name!r})",
                    "invalid_request_error",
                    "unknown_stage",
                )
            return name
        last_user = self._last_user(messages)
        if _has_tag(last_user, "sources"):
            return "answer"
        if _has_tag(last_user, "passages"):
            return "rerank"
        if _has_tag(last_user, "passage"):
            return "pseudo_query"
        if _has_tag(last_user, "items"):
            return "resolve"
        if _has_tag(last_user, "entities"):
            return "summarize_entity"
        if _has_tag(last_user, "chunk"):
            everything = "\n".join(_content_text(m.get("content")) for m in messages)
            return "contextualize_chunk" if _has_tag(everything, "document") else "summarize_chunk"
        if _has_tag(last_user, "text"):
            return "extract_graph"
        raise _Reply(
            400,
            "Could not tell the stage: no response_format json_schema and no "
            "<items>, <chunk>, <text> or <passages> tag in the last user message",
            "invalid_request_error",
            "unknown_stage",
        )

    @staticmethod
    def _last_user(messages: list[dict[str, Any]]) -> str:
        for message in reversed(messages):
            if message.get("role") == "user":
                return _content_text(message.get("content"))
        return ""

    def _answer(self, stage: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        last_user = self._last_user(messages)
        everything = "\n".join(_content_text(m.get("content")) for m in messages)

        def find(tag: str) -> str:
            for text in (last_user, everything):
                found = _tag(text, tag)
                if found is not None:
                    return found
            return last_user

        if stage == "extract_graph":
            return (self.extract_with or extract_graph)(find("text"))
        if stage == "summarize_chunk":
            return summarize_chunk(find("chunk"))
        if stage == "contextualize_chunk":
            return contextualize_chunk(find("document"))
        if stage == "rerank":
            return rerank(find("query").strip(), find("passages"))
        if stage == "pseudo_query":
            return pseudo_query(find("passage"))
        if stage == "summarize_entity":
            try:
                return summarize_entity(json.loads(find("entities")))
            except json.JSONDecodeError as exc:
                said = f"summarize_entity: <entities> is not JSON ({exc})"
                raise _Reply(400, said, "invalid_request_error") from None
        if stage == "answer":
            question, sources = find("question").strip(), answer_sources(find("sources"))
            return (self.answer_with or answer)(question, sources)
        items_text = find("items").strip()
        try:
            items = json.loads(items_text)
        except json.JSONDecodeError as exc:
            raise _Reply(
                400, f"resolve: the <items> block is not JSON ({exc})", "invalid_request_error"
            ) from None
        if not isinstance(items, dict):
            raise _Reply(400, "resolve: <items> must hold a JSON object", "invalid_request_error")
        return (self.resolve_with or resolve)(offered(items))

    def _cut_off(self, stage: str, messages: list[dict[str, Any]]) -> bool:
        """Whether the answer is to be cut off for its input's length (`cut_off_over`)."""
        most = self.cut_off_over.get(stage)
        if most is None:
            return False
        tag = {"extract_graph": "text", "summarize_chunk": "chunk", "resolve": "items"}
        last_user = self._last_user(messages)
        given = _tag(last_user, tag.get(stage, "")) if stage in tag else None
        return len((given if given is not None else last_user).strip()) > most

    def _cached_tokens(self, first: str) -> int:
        with self._lock:
            best = 0
            for earlier in self._first_contents:
                n = min(len(first), len(earlier))
                if n <= best:
                    continue
                i = 0
                while i < n and first[i] == earlier[i]:
                    i += 1
                best = max(best, i)
            if first not in self._first_contents:
                self._first_contents.append(first)
        if best < 1024:
            return 0
        return (best - best % 128) // 4

    def _chat(
        self, body: dict[str, Any], record: RecordedRequest, headers: dict[str, str], seq: int
    ) -> tuple[int, dict[str, str], bytes]:
        messages = body.get("messages")
        if (
            not isinstance(messages, list)
            or not messages
            or not all(isinstance(m, dict) for m in messages)
        ):
            raise _Reply(
                400,
                "'messages' must be a non-empty array of objects",
                "invalid_request_error",
                "invalid_value",
            )
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise _Reply(400, "you must provide a model parameter", "invalid_request_error")
        if body.get("stream") and not self.streaming:
            raise _Reply(
                400, "streaming is not supported by the test server", "invalid_request_error"
            )
        if "stream_options" in body and not self.takes_stream_options:
            raise _Reply(
                400,
                "Unrecognized request argument supplied: stream_options",
                "invalid_request_error",
            )
        if body.get("stream_options") is not None and not body.get("stream"):
            raise _Reply(
                400,
                "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                "invalid_request_error",
                "invalid_value",
            )
        stage = self._stage(body, messages)
        record.stage = stage
        if self.old_max_tokens and "max_completion_tokens" in body:
            raise _Reply(
                400,
                "Unrecognized request argument supplied: max_completion_tokens",
                "invalid_request_error",
            )
        fmt = body.get("response_format")
        wants_schema = isinstance(fmt, dict) and fmt.get("type") == "json_schema"
        if wants_schema and not self.structured_outputs:
            raise _Reply(
                400,
                "response_format json_schema is not supported",
                "invalid_request_error",
                "unsupported_parameter",
            )

        texts = [_content_text(m.get("content")) for m in messages]
        fault = self._take_fault("chat", stage, "\n".join(texts) + "\n" + json.dumps(body))
        if fault is not None:
            record.fault = fault.kind
            early = self._error_fault(fault, headers)
            if early is not None:
                return early
            if fault.kind == "timeout" and not self._stall(float(self.timeout_sleep)):
                return 0, headers, b""
            if fault.kind == "deep_body":
                return 200, headers, _deep_body()

        answer = self._answer(stage, messages)
        content = json.dumps(answer, ensure_ascii=False)
        finish = "stop"
        if fault is not None and fault.kind == "deep_json":
            first_key = next(iter(answer), "entities")
            content = '{"' + first_key + '": ' + "[" * DEEP + "]" * DEEP + "}"
        elif fault is not None and fault.kind == "surrogates":
            # As a model writes half an emoji: the escape of a lone surrogate, in JSON.
            content = json.dumps(_with_surrogate(answer))
        elif fault is not None and fault.kind == "malformed":
            first_key = next(iter(answer), "entities")
            content = '{"' + first_key + '": ['
        elif fault is not None and fault.kind == "truncated":
            content = content[: max(1, len(content) // 2)]
            finish = "length"
        elif fault is not None and fault.kind == "empty":
            content = ""
        elif fault is not None and fault.kind == "think_only":
            content = "<think>The text names people; I should list them, then the facts.</think>"
        elif fault is not None and fault.kind == "no_quotes":
            for edge in answer.get("edges", ()):
                edge.pop("quote", None)
            content = json.dumps(answer, ensure_ascii=False)
        elif fault is not None and fault.kind == "empty_graph":
            content = json.dumps({"entities": [], "edges": []})
        elif fault is not None and fault.kind == "loop":
            content = _looping(answer, body.get("max_completion_tokens") or body.get("max_tokens"))
        elif self._cut_off(stage, messages):
            content = content[: max(1, len(content) // 2)]
            finish = "length"
        elif fault is not None and fault.kind == "invalid":
            content = json.dumps({"unexpected": True})
        elif not self.structured_outputs:
            content = "<think>reasoning here</think>\n```json\n" + content + "\n```"
        limit = body.get("max_completion_tokens") or body.get("max_tokens")
        if isinstance(limit, int) and limit > 0 and _ceil4(len(content)) > limit:
            content = content[: limit * 4]
            finish = "length"

        prompt_tokens = _ceil4(sum(len(t) for t in texts))
        completion_tokens = _ceil4(len(content))
        cached = min(self._cached_tokens(texts[0]), prompt_tokens)
        response = {
            "id": f"chatcmpl-test{seq:08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": answer_model(model),
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": content,
                        "refusal": None,
                        "annotations": [],
                    },
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
            "service_tier": "default",
            "system_fingerprint": "fp_test",
        }
        return 200, headers, json.dumps(response, ensure_ascii=False).encode("utf-8")

    # ---- embeddings

    def _too_large(self, inputs: list[str]) -> None:
        """llama.cpp's refusal of an input larger than its batch (embed_max_tokens)."""
        for text in inputs:
            tokens = _ceil4(len(text))
            if self.embed_max_tokens and tokens > self.embed_max_tokens:
                raise _Reply(
                    500,
                    f"input ({tokens} tokens) is too large to process. increase the physical "
                    f"batch size (current batch size: {self.embed_max_tokens})",
                    "server_error",
                )

    def _embeddings(
        self, body: dict[str, Any], record: RecordedRequest, headers: dict[str, str], seq: int
    ) -> tuple[int, dict[str, str], bytes]:
        record.stage = EMBED_STAGE
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if (
            not isinstance(inputs, list)
            or not inputs
            or not all(isinstance(i, str) for i in inputs)
        ):
            raise _Reply(
                400,
                "'input' must be a string or a non-empty array of strings",
                "invalid_request_error",
                "invalid_value",
            )
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise _Reply(400, "you must provide a model parameter", "invalid_request_error")
        dims = body.get("dimensions", DEFAULT_DIMENSIONS)
        if dims is None:
            dims = DEFAULT_DIMENSIONS
        if isinstance(dims, bool) or not isinstance(dims, int) or not 1 <= dims <= MAX_DIMENSIONS:
            raise _Reply(
                400, f"Invalid 'dimensions': {dims!r}", "invalid_request_error", "invalid_value"
            )
        fmt = body.get("encoding_format") or "float"
        if fmt not in ("float", "base64"):
            raise _Reply(
                400, f"Invalid 'encoding_format': {fmt!r}", "invalid_request_error", "invalid_value"
            )

        fault = self._take_fault(
            "embeddings", EMBED_STAGE, "\n".join(inputs) + "\n" + json.dumps(body)
        )
        if fault is not None:
            record.fault = fault.kind
            early = self._error_fault(fault, headers)
            if early is not None:
                return early
            if fault.kind == "timeout" and not self._stall(float(self.timeout_sleep)):
                return 0, headers, b""
            if fault.kind in ("malformed", "invalid"):
                return 200, headers, json.dumps({"unexpected": True}).encode()
            if fault.kind == "deep_body":
                return 200, headers, _deep_body()
        self._too_large(inputs)
        dims = self.embed_size or dims

        data = []
        for index, text in enumerate(inputs):
            vec = embed_text(text, dims)
            data.append(
                {
                    "object": "embedding",
                    "index": index,
                    "embedding": _b64_floats(vec) if fmt == "base64" else vec,
                }
            )
        if fault is not None and fault.kind == "empty":
            data = []
        elif fault is not None and fault.kind == "truncated":
            data = data[: len(data) // 2]
        elif fault is not None and fault.kind in VECTOR_FAULTS:
            # In floats whatever the format asked (as servers that ignore it do): NaN as
            # Python writes it, null as llama.cpp writes NaN, 1e308 beyond float32.
            data[-1]["embedding"] = [VECTOR_FAULTS[fault.kind]] * dims
        tokens = _ceil4(sum(len(t) for t in inputs))
        response = {
            "object": "list",
            "data": data,
            "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        return 200, headers, json.dumps(response).encode("utf-8")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.llm_server",
        description="Deterministic OpenAI-compatible test server (chat, embeddings, models).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to each call")
    parser.add_argument(
        "--no-structured-outputs",
        action="store_true",
        help="refuse response_format json_schema and wrap answers in <think> + code fences",
    )
    parser.add_argument("--verbose", action="store_true", help="one line per request on stderr")
    slow = parser.add_argument_group("slow-server mode (as llama.cpp, Ollama, LM Studio)")
    slow.add_argument("--slots", type=int, default=0, help="answers generated at once")
    slow.add_argument("--token-rate", type=float, default=0.0, help="output tokens/s per slot")
    slow.add_argument("--prompt-rate", type=float, default=0.0, help="prompt tokens/s per slot")
    slow.add_argument(
        "--embed-max-tokens", type=int, default=0, help="refuse longer embeddings inputs (500)"
    )
    slow.add_argument("--no-streaming", action="store_true", help="refuse stream: true (400)")
    args = parser.parse_args(argv)
    server = LLMServer(
        args.host,
        args.port,
        latency=args.latency,
        structured_outputs=not args.no_structured_outputs,
        verbose=args.verbose,
        slots=args.slots,
        token_rate=args.token_rate,
        prompt_rate=args.prompt_rate,
        embed_max_tokens=args.embed_max_tokens,
    )
    server.streaming = not args.no_streaming
    server.start()
    print(server.base_url, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
