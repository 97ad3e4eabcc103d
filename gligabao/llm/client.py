"""The one door to the LLM: structured chat, embeddings, retries, a limiter, inference records.

`LLM` wraps the ``openai`` async client (OpenAI or any OpenAI-compatible server). It does
its own retries (the SDK's are off) so that a 429's Retry-After pauses every request of
the run, not only the one that got it, and so that a server without JSON-schema output
switches this instance to prompt mode instead of failing. Nothing here touches
the database: each call returns an `Inference` the pipeline records, with `request_hash`
so it can look up an answer it already paid for before calling again.

Made for slow local servers too (llama.cpp, Ollama, LM Studio: a few slots, a queue that
sends nothing): chat answers are streamed (`llm.stream`, streaming.py), so `llm.timeout`
bounds the wait for the first token and the gaps between tokens, not a long answer; the
number of requests out adapts to what the server serves at once (limiter.py), and a
request that timed out in the server's queue while it served others waits its turn
rather than using up a retry; an embeddings input the server refuses as too large is
sent again as pieces that fit (split.py), never unchanged.

    LLMError(GbError)   a call failed: "<stage> (<model>): <cause>", never with a secret
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypeVar

from gligabao.base.redact import safe_url, scrub
from gligabao.base.words import counted
from gligabao.chunk.tokens import ESTIMATOR
from gligabao.config import Config
from gligabao.llm import float32, wire
from gligabao.llm.endpoint import (
    DEFAULT_BASE_URL,
    EMBED_STAGE,
    PLACEHOLDER_KEY,
    Endpoints,
    Failure,
    Flight,
    LLMError,
    Stopped,
    Unusable,
    backoff,
    key_hint,
    no_surrogates,
    one_line,
    plain_http,
    require_endpoint,
    server_message,
    status_failure,
    too_large,
    vector_problem,
)
from gligabao.llm.float32 import Float32
from gligabao.llm.limiter import NORMAL, URGENT, Limiter, Slot
from gligabao.llm.prompts import ChatRequest
from gligabao.llm.salvage import loop_cut, salvaged
from gligabao.llm.schema import (
    SchemaMismatch,
    TooDeep,
    checked,
    only_reasoning,
    parse_answer,
    repaired,
)
from gligabao.llm.split import InputLimit, Plan, combine
from gligabao.llm.streaming import REPEATED, Assembled, NoEvents, OnContent

if TYPE_CHECKING:
    # The SDK is imported where a request is first made: its ~650 models take longer to
    # import than a batch of unchanged files takes to check.
    import openai

__all__ = [
    "EMBED_STAGE",
    "LLM",
    "Answer",
    "Embeddings",
    "Inference",
    "LLMError",
    "scrub",
]

log = logging.getLogger("gligabao.llm")

# Reasoning tokens count against max_completion_tokens: without headroom a 512-token
# summary at reasoning "high" would be cut off before it starts.
REASONING_HEADROOM = {"none": 0, "low": 2048, "medium": 8192, "high": 16384}
ANSWER_RETRIES = 1  # a malformed, empty or off-schema answer is asked for once more (and paid)
_REFUSALS = (
    "not supported",
    "unsupported",
    "does not support",
    "unrecognized",
    "unknown parameter",
    "extra inputs are not permitted",
)
# A request that timed out in the server's queue while the server was answering others
# of this run is sent again in its turn without using up a retry, this many times at most.
BUSY_WAITS = 8
_STREAM_WORD = re.compile(r"\bstream(?:ing|ed)?\b")
# Said after the text when an answer was only reasoning: the one retry asks for the JSON.
JSON_ALONE = "\n\nAnswer with the JSON object alone: no reasoning and no <think> block before it."
_T = TypeVar("_T")


@dataclass(frozen=True)
class Inference:
    """The record of one LLM or embeddings call (a gb_inferences row, less its ids)."""

    stage: str
    model: str  # as the API answered it (e.g. "gpt-4o-mini-2024-07-18")
    requested_model: str
    reasoning: str  # none | low | medium | high
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    cost: float | None  # USD; None when no price is known for the model
    duration_ms: int  # the attempt that gave the answer (not queueing, not retries)
    request_hash: str
    answer: str | None  # the validated answer as JSON text; None for embeddings
    attempts: int = 1

    def plus(self, later: Inference) -> Inference:
        """``later`` with this one's tokens and cost added: a chat whose first answer was
        unusable pays for both, and is one record of what it paid."""
        cost = None if self.cost is None or later.cost is None else self.cost + later.cost
        return replace(
            later,
            input_tokens=self.input_tokens + later.input_tokens,
            output_tokens=self.output_tokens + later.output_tokens,
            cached_tokens=self.cached_tokens + later.cached_tokens,
            cost=cost,
        )


@dataclass(frozen=True)
class Answer:
    value: dict[str, Any]
    inference: Inference


@dataclass(frozen=True)
class Embeddings:
    vectors: list[Float32]  # array("f") each: the float32 values as stored
    inference: Inference
    # Each text's vectors as the server made them: one, or one a piece of a text larger
    # than the server reads (split.py), whose mean is that text's entry in `vectors`.
    pieces: list[list[Float32]] = field(default_factory=list)


# ------------------------------------------------------------------ requests


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def output_limit(request: ChatRequest, reasoning: str) -> int:
    """The output tokens a chat request is sent with (its max_completion_tokens), and so
    the most one answer to it can bill: the answer's own budget and the reasoning's."""
    return request.max_output_tokens + REASONING_HEADROOM[reasoning]


def _prompt_mode(request: ChatRequest) -> list[dict[str, str]]:
    """Prompt mode: the schema goes into the system prompt when the server cannot enforce it."""
    rule = (
        "\n\nAnswer with one JSON object only, no prose and no code fences, matching this "
        f"JSON schema (every property is required):\n{_dump(request.schema)}"
    )
    messages = [dict(m) for m in request.messages]
    if messages and messages[0].get("role") == "system":
        messages[0]["content"] = messages[0]["content"] + rule
    else:
        messages.insert(0, {"role": "system", "content": rule.strip()})
    return messages


# ------------------------------------------------------------------ the client


@dataclass
class _LoopState:
    """What must belong to one event loop: the HTTP clients and the limiter."""

    loop: asyncio.AbstractEventLoop
    limiter: Limiter
    chat: openai.AsyncOpenAI | None = None
    embed: openai.AsyncOpenAI | None = None
    warming: asyncio.Task[None] | None = None  # see _warm_stream_end


class LLM:
    """Chat and embeddings calls for one run, sharing one limiter and one rate-limit pause.

    `env` is where the key variables are read (os.environ by default). `backoff_base` and
    `backoff_cap` (seconds) shape the retry delays; tests make them small.
    """

    def __init__(
        self,
        config: Config,
        *,
        env: Mapping[str, str] | None = None,
        backoff_base: float = 0.5,
        backoff_cap: float = 20.0,
    ) -> None:
        self.config = config
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.max_retries: int = config["llm.max_retries"]
        self.answer_retries = min(ANSWER_RETRIES, self.max_retries)
        self.timeout: float = config["llm.timeout"]
        self.concurrency: int = config["concurrency"]

        self.endpoints = Endpoints.from_config(config, env)

        self._lenient = False  # prompt mode, once the server refused a JSON schema
        self._max_tokens_param = "max_completion_tokens"
        self._stream: bool = config["llm.stream"]  # off once the server refused to stream
        self._stream_usage = True  # stream_options.include_usage, until a server refuses it
        self._input_limit = InputLimit(config["embeddings.max_tokens"])
        self._not_before = 0.0  # monotonic time before which no request may start
        self._state: _LoopState | None = None

    # ---- what is configured

    @property
    def available(self) -> bool:
        """False when there is neither a key nor a base URL: `gb` then works offline."""
        return self.endpoints.chat_available

    @property
    def embeddings_available(self) -> bool:
        return self.endpoints.embeddings_available

    def calls_out(self) -> int:
        """Requests sent and not yet answered (for a progress display)."""
        return 0 if self._state is None else self._state.limiter.out

    @property
    def mode(self) -> str:
        """Either structured (response_format json_schema) or prompt (schema in the prompt)."""
        return "prompt" if self._lenient else "structured"

    def scrub(self, text: str) -> str:
        return scrub(text, self.endpoints.secrets)

    def request_hash(self, request: ChatRequest | Sequence[str]) -> str:
        """What decides an answer, hashed: stage, model, reasoning, messages, schema, budget
        for a chat (not the mode: a rerun starts structured and must find answers got
        in prompt mode); model, dimensions and texts for embeddings. Never the key or
        the URL, so the hash is the same on every machine."""
        if not isinstance(request, ChatRequest):
            texts = list(request)
            fields: dict[str, Any] = {
                "stage": EMBED_STAGE,
                "model": self.config["embeddings.model"],
                "dimensions": self.config["embeddings.dimensions"],
                "input": texts,
            }
        else:
            fields = {
                "stage": request.stage,
                "model": self.config.model_for(request.stage),
                "reasoning": self.config.reasoning_for(request.stage),
                "messages": list(request.messages),
                "schema_name": request.schema_name,
                "schema": request.schema,
                "max_output_tokens": request.max_output_tokens,
            }
        return hashlib.sha256(_dump(fields).encode("utf-8")).hexdigest()

    # ---- lifecycle

    def _loop_state(self) -> _LoopState:
        # The HTTP pool and the limiter belong to the loop they were made in; a second
        # asyncio.run() (one per input file, say) gets fresh ones, starting from the limit
        # the server was found to take.
        loop = asyncio.get_running_loop()
        if self._state is None or self._state.loop is not loop:
            known = None if self._state is None else self._state.limiter.limit
            self._state = _LoopState(loop, Limiter(self.concurrency, known))
        return self._state

    def _client(self, embeddings: bool) -> openai.AsyncOpenAI:
        state = self._loop_state()
        ends = self.endpoints
        same = (ends.embed_url, ends.embed_key) == (ends.chat_url, ends.chat_key)
        if embeddings and not same:
            if state.embed is None:
                state.embed = self._make_client(ends.embed_url, ends.embed_key)
            return state.embed
        if state.chat is None:
            state.chat = self._make_client(ends.chat_url, ends.chat_key)
            if self._stream:
                state.warming = state.loop.create_task(_warm_stream_end())
        return state.chat

    def _make_client(self, base_url: str | None, key: str | None) -> openai.AsyncOpenAI:
        from gligabao.base import heap

        with heap.loading():
            import openai

        url = base_url or DEFAULT_BASE_URL
        return openai.AsyncOpenAI(
            base_url=url,  # never the SDK's own env lookup
            api_key=key or PLACEHOLDER_KEY,
            max_retries=0,  # ours retry, with a pause shared by every request
            timeout=self.timeout,
            http_client=_plain_http_client(url),
        )

    async def aclose(self) -> None:
        state, self._state = self._state, None
        if state is not None:
            warming = state.warming
            if warming is not None and not warming.done():
                warming.cancel()
                if warming.get_loop() is asyncio.get_running_loop():
                    # Ended here, not left pending when its loop closes (rerank's own loop).
                    await asyncio.gather(warming, return_exceptions=True)
            for client in (state.chat, state.embed):
                if client is not None:
                    await client.close()

    async def __aenter__(self) -> LLM:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ---- chat

    def chat_limits(self, request: ChatRequest) -> tuple[int, int]:
        """The most one `chat` of ``request`` can pay for: (answers, output tokens each).
        An unusable answer is asked for again, and both answers are billed."""
        reasoning = self.config.reasoning_for(request.stage)
        return 1 + self.answer_retries, output_limit(request, reasoning)

    async def chat(
        self,
        request: ChatRequest,
        key: str | None = None,
        flight: Flight | None = None,
        on_content: OnContent | None = None,
    ) -> Answer:
        """Send one stage's request and return its validated answer with its inference.

        ``key`` is the request's hash when the caller has it already; ``flight`` lets the
        caller see when a request is out, and stop further attempts; ``on_content`` hears
        a streamed answer's text as it comes (None before an attempt after the first).
        The inference counts the tokens and cost of every answer paid for, an unusable one
        asked again included; a failure after a paid answer carries them as
        ``LLMError.inference``."""
        try:
            return await self._chat(request, key, flight, on_content)
        except LLMError as exc:
            _failed(flight, exc)
            raise

    async def _chat(
        self,
        request: ChatRequest,
        key: str | None,
        flight: Flight | None,
        on_content: OnContent | None = None,
    ) -> Answer:
        stage = request.stage
        model = self.config.model_for(stage)
        reasoning = self.config.reasoning_for(stage)
        require_endpoint(self.available, stage, model, self.config)
        key = key or self.request_hash(request)
        attempts = 0
        bad_answers = 0
        paid: Inference | None = None  # what the unusable answers so far cost
        attempt = _attempts(on_content)
        json_alone = False  # the last answer was only reasoning: ask for the JSON alone
        while True:
            lenient = self._lenient
            kwargs = self._chat_kwargs(request, model, reasoning, lenient, json_alone)
            try:
                response, tries, duration_ms = await self._call(
                    stage,
                    model,
                    key,
                    lambda slot, kw=kwargs: self._send_chat(kw, slot, attempt()),
                    flight,
                )
            except LLMError as err:
                if self._adapt(err, lenient, kwargs):
                    continue  # the same request again, in the mode the server takes
                if err.inference is None:
                    err.inference = paid
                raise
            attempts += tries
            inference = self._chat_inference(
                stage, model, reasoning, response, duration_ms, key, attempts
            )
            if paid is not None:
                inference = paid.plus(inference)
            value, problem, retry = self._read_answer(request, response, lenient)
            if problem is None:
                return Answer(value, replace(inference, answer=_dump(value)))
            if retry and bad_answers < self.answer_retries:
                bad_answers += 1
                paid = inference
                json_alone = json_alone or _only_reasoning(response)
                log.info("%s (%s): %s; asking again", stage, model, problem)
                continue
            choices = getattr(response, "choices", None) or []
            cut_off = bool(choices) and choices[0].finish_reason in ("length", REPEATED)
            raise LLMError(stage, model, problem, inference=inference, cut_off=cut_off)

    def _chat_kwargs(
        self,
        request: ChatRequest,
        model: str,
        reasoning: str,
        lenient: bool,
        json_alone: bool = False,
    ) -> dict[str, Any]:
        messages = _prompt_mode(request) if lenient else [dict(m) for m in request.messages]
        if json_alone and messages[-1].get("role") == "user":
            # In the last message, not a new one: its tags stay where a server finds them.
            messages[-1]["content"] = messages[-1]["content"] + JSON_ALONE
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": messages,
            self._max_tokens_param: output_limit(request, reasoning),
        }
        if reasoning != "none":  # 'none' sends nothing: most models take no such parameter
            kwargs["reasoning_effort"] = reasoning
        if not lenient:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema_name,
                    "strict": True,
                    "schema": request.schema,
                },
            }
        if self._stream:  # transport only: not in the request's hash
            kwargs["stream"] = True
            if self._stream_usage:
                kwargs["stream_options"] = {"include_usage": True}
        return kwargs

    async def _send_chat(
        self, kwargs: dict[str, Any], slot: Slot, on_content: OnContent | None = None
    ) -> Any:
        """One chat request; a streamed answer is read to its end and put back together,
        its text told to `on_content` as it comes."""
        client = self._client(False)
        if not kwargs.get("stream"):
            return await wire.post(client, "/chat/completions", kwargs)
        assembled = Assembled(on_content=on_content)
        async with await wire.stream(client, "/chat/completions", kwargs) as stream:
            if "json" in stream.response.headers.get("content-type", ""):
                # A server that ignores `stream` answers whole: read it as such.
                return wire.fields(json.loads(await stream.response.aread()))
            async for chunk in stream:
                slot.receiving()
                assembled.add(wire.fields(chunk))
                if assembled.looping():
                    break  # leaving the stream closes it: the server stops generating
        if assembled.usage is None and assembled.pieces and assembled.stopped:
            # A stream left early never gets its usage: count what was sent and received.
            assembled.usage = _estimated_usage(kwargs["messages"], assembled.pieces)
        return assembled.done()

    def _adapt(self, err: LLMError, lenient: bool, sent: Mapping[str, Any]) -> bool:
        """Whether a refusal of a request's shape was answered by changing it.
        Judged by what the refused request `sent`: requests in flight when the first
        refusal comes back are refused too, and must be sent again, not failed."""
        if err.status not in (400, 422):
            return False
        said = err.server_message.lower()
        if self._adapt_stream(said, sent):
            return True
        if "max_completion_tokens" in said and "max_completion_tokens" in sent:
            if self._max_tokens_param != "max_tokens":
                self._max_tokens_param = "max_tokens"  # an older server: the older name
                log.warning("the LLM server refuses max_completion_tokens; sending max_tokens")
            return True
        if lenient or "reasoning_effort" in said or "max_tokens" in said:
            return False
        # Both: it is about the schema, and it is a refusal (not, say, a bad schema of ours).
        about = ("response_format", "json_schema", "structured output")
        code = (err.server_code or "").lower()
        refusal = any(r in said for r in _REFUSALS) or code.startswith("unsupported")
        if any(a in said for a in about) and refusal:
            if not self._lenient:
                self._lenient = True
                log.warning(
                    "%s does not take JSON-schema structured output; the schema now goes in "
                    "the prompt and answers are parsed leniently",
                    safe_url(self.endpoints.chat_url or DEFAULT_BASE_URL),
                )
            return True
        return False

    def _adapt_stream(self, said: str, sent: Mapping[str, Any]) -> bool:
        """A server that refuses stream_options, or streaming, gets requests without."""
        where = safe_url(self.endpoints.chat_url or DEFAULT_BASE_URL)
        if "stream_options" in said and "stream_options" in sent:
            if self._stream_usage:
                self._stream_usage = False
                log.warning(
                    "%s refuses stream_options; streamed answers now come without their "
                    "token counts",
                    where,
                )
            return True
        if _STREAM_WORD.search(said) and sent.get("stream"):
            if self._stream:
                self._stream = False
                log.warning(
                    "%s does not stream answers; each now comes whole, and llm.timeout "
                    "bounds how long one may take",
                    where,
                )
            return True
        return False

    def _read_answer(
        self, request: ChatRequest, response: Any, lenient: bool
    ) -> tuple[dict[str, Any], str | None, bool]:
        """(value, problem, worth asking again). A cut-off answer is, once, when the
        request says so (ChatRequest.retry_cut_off)."""
        choices = getattr(response, "choices", None) or []
        if not choices:
            return {}, "the answer held no choices", True
        choice = choices[0]
        if choice.finish_reason in ("length", REPEATED):
            kept = _before_the_loop(request, choice.message.content or "")
            if kept is not None:
                return kept, None, False
            if choice.finish_reason == REPEATED:
                return {}, "the answer repeated itself (stopped)", request.retry_cut_off
            return {}, "the answer was cut off (finish_reason length)", request.retry_cut_off
        if choice.finish_reason == "content_filter":
            return {}, "the answer was withheld by the content filter", False
        message = choice.message
        refusal = getattr(message, "refusal", None)
        if refusal:
            return {}, f"the model refused: {one_line(self.scrub(refusal), 200)}", False
        content = message.content or ""
        if not content.strip():
            return {}, "the answer was empty", True
        try:
            value = parse_answer(content, lenient)
        except TooDeep:
            return {}, "the answer is JSON nested too deeply to read", True
        except ValueError:
            if only_reasoning(content):
                return {}, "the answer was only reasoning, no JSON after its <think> block", True
            excerpt = one_line(self.scrub(content), 80)
            return {}, f"the answer is not valid JSON ({excerpt})", True
        try:
            # Lone surrogates ("\ud800") become U+FFFD: no UTF-8 encoder takes them.
            return repaired(checked(request, value)), None, False
        except SchemaMismatch as exc:
            return {}, f"the answer does not match the schema: {self.scrub(str(exc))}", True
        except ValueError as exc:
            return {}, f"the answer is unusable: {exc}", True

    def _chat_inference(
        self,
        stage: str,
        model: str,
        reasoning: str,
        response: Any,
        duration_ms: int,
        key: str,
        attempts: int,
    ) -> Inference:
        usage = getattr(response, "usage", None)
        input_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        output_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        details = getattr(usage, "prompt_tokens_details", None)
        cached = int(getattr(details, "cached_tokens", 0) or 0)
        answered = no_surrogates(getattr(response, "model", None) or model)
        return Inference(
            stage=stage,
            model=answered,
            requested_model=model,
            reasoning=reasoning,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_tokens=cached,
            cost=self._cost(answered, model, input_tokens, output_tokens, cached),
            duration_ms=duration_ms,
            request_hash=key,
            answer=None,
            attempts=attempts,
        )

    def _cost(
        self, answered: str, requested: str, input_tokens: int, output_tokens: int, cached: int
    ) -> float | None:
        price = self.config.price_of(answered) or self.config.price_of(requested)
        return None if price is None else price.cost(input_tokens, output_tokens, cached)

    # ---- embeddings

    async def embed(self, texts: Sequence[str], flight: Flight | None = None) -> Embeddings:
        """One embeddings request for `texts`, in order, each of `embeddings.dimensions`;
        ``flight`` as for `chat`."""
        try:
            return await self._embed(texts, flight)
        except LLMError as exc:
            _failed(flight, exc)
            raise

    async def _embed(self, texts: Sequence[str], flight: Flight | None) -> Embeddings:
        model: str = self.config["embeddings.model"]
        dimensions: int = self.config["embeddings.dimensions"]
        require_endpoint(self.embeddings_available, EMBED_STAGE, model, self.config)
        texts = list(texts)
        if not texts:
            raise LLMError(EMBED_STAGE, model, "nothing to embed (no texts)")
        for i, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise LLMError(EMBED_STAGE, model, f"text {i + 1} of {len(texts)} is empty")
        key = self.request_hash(texts)  # of the texts, however they are sent: stable
        while True:
            plan = self._input_limit.plan(texts)
            try:
                (response, vectors), attempts, duration_ms = await self._call(
                    EMBED_STAGE,
                    model,
                    key,
                    lambda slot, p=plan: self._send_embed(p, model, dimensions),
                    flight,
                )
                break
            except LLMError as err:
                if not self._fits_next_time(err, plan):
                    raise
        by_text: list[list[Float32]] = [[] for _ in texts]
        for owner, vector in zip(plan.owners, vectors, strict=True):
            by_text[owner].append(vector)
        usage = getattr(response, "usage", None)
        input_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        answered = no_surrogates(getattr(response, "model", None) or model)
        inference = Inference(
            stage=EMBED_STAGE,
            model=answered,
            requested_model=model,
            reasoning="none",
            input_tokens=input_tokens,
            output_tokens=0,
            cached_tokens=0,
            cost=self._cost(answered, model, input_tokens, 0, 0),
            duration_ms=duration_ms,
            request_hash=key,
            answer=None,
            attempts=attempts,
        )
        return Embeddings([combine(pieces) for pieces in by_text], inference, by_text)

    def _fits_next_time(self, err: LLMError, plan: Plan) -> bool:
        """Whether a refusal of ``plan`` as too large taught this instance how to cut the
        texts so that the server takes them (then they are sent again, cut so)."""
        refusal = too_large(err.status, err.server_message)
        if refusal is None or not self._input_limit.learn(refusal, plan):
            return False
        log.info(
            "%s (%s): the server takes at most %d tokens an input; larger texts are "
            "embedded in pieces",
            EMBED_STAGE,
            err.model,
            self._input_limit.tokens,
        )
        return True

    async def _send_embed(
        self, plan: Plan, model: str, dimensions: int
    ) -> tuple[Any, list[Float32]]:
        """One embeddings request, and its vectors once each is known to be usable: a
        vector that is not (NaN, zeros, 1e308) fails the attempt, like a 5xx. Asked for
        as base64, they stay float32 (llm/float32.py), never a Python float a value."""
        response = await wire.post(
            self._client(True),
            "/embeddings",
            {
                "model": model,
                "input": plan.inputs,
                "dimensions": dimensions,
                "encoding_format": "base64",
            },
        )
        if not response.data:  # as the SDK says it when it decodes the vectors itself
            raise ValueError("No embedding data received")
        n = len(plan.inputs)
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != n or [d.index for d in data] != list(range(n)):
            raise Unusable(
                f"the answer held {counted(len(data), 'vector')} for {counted(n, 'text')}"
            )
        answered = [float32.decoded(d.embedding) for d in data]
        sizes = {len(e) if isinstance(e, Float32 | list) else 0 for e in answered}
        if len(sizes) == 1 and sizes != {dimensions}:
            raise LLMError(  # the model makes another size: no retry will change that
                EMBED_STAGE,
                model,
                f"the vectors have {sizes.pop()} dimensions, not {dimensions}; set "
                "embeddings.dimensions to what the model makes",
            )
        for i, vector in enumerate(answered):
            problem = vector_problem(vector, dimensions)
            if problem is not None:
                raise Unusable(f"vector {i + 1} of {n} is unusable: {problem}")
        return response, answered

    # ---- sending, with retries

    async def _wait_for_pause(self) -> None:
        while (wait := self._not_before - time.monotonic()) > 0:
            await asyncio.sleep(wait)

    async def _call(
        self,
        stage: str,
        model: str,
        key: str,
        send: Callable[[Slot], Awaitable[_T]],
        flight: Flight | None = None,
    ) -> tuple[_T, int, int]:
        """`send(slot)` under the limiter, retried on 429, 5xx, timeouts, connection errors
        and unusable bodies. Returns the response, the number of attempts and the
        milliseconds the last one took."""
        retries = 0
        waits = 0  # times it timed out in the server's queue while others were answered
        limiter = self._loop_state().limiter
        flight = flight or Flight()
        while True:
            await self._wait_for_pause()
            async with limiter.slot(_PRIORITY.get(stage, NORMAL)) as slot:
                await self._wait_for_pause()  # a pause may have begun while this one queued
                if flight.stopped:
                    raise Stopped(stage, model, "stopped: the run no longer needs the answer")
                began = time.monotonic()
                flight.sending = True
                answered: tuple[_T, int, int] | None = None
                try:
                    response = await send(slot)
                    limiter.answered()
                    answered = response, retries + 1, round((time.monotonic() - began) * 1000)
                except LLMError:
                    raise
                except Exception as exc:
                    import openai  # imported already: the request was made with it

                    failure = self._classify(exc, stage, slot.received)
                    queued = isinstance(exc, openai.APITimeoutError) and not slot.received
                    # Lowered before this slot is released, so the next waiter sees it.
                    if queued or failure.status in (429, 503):
                        self._congested(limiter, stage, model)
                    busy = queued and limiter.receiving > 0
                finally:
                    # An answer in hand is still being delivered (and recorded) below.
                    flight.sending = answered is not None
            if answered is not None:
                try:
                    # One step of the loop, the slot released: the request its permit went
                    # to is sent now, before this answer is read and recorded, so the
                    # server's slot is not left empty meanwhile.
                    await asyncio.sleep(0)
                finally:
                    flight.sending = False
                return answered
            # Raised here, outside the except block, so no SDK exception (which holds the
            # request and its headers) rides along as __context__.
            if busy and waits < BUSY_WAITS:
                # The server was answering others of this run all along: not a failure of
                # it; sent again when the limiter lets it, no retry used, no backoff.
                waits += 1
                log.info(
                    "%s (%s): %s in the server's queue; sent again in its turn",
                    stage,
                    model,
                    failure.head,
                )
                continue
            if not failure.retryable or retries >= self.max_retries:
                raise failure.error(stage, model, retries)
            retries += 1
            if failure.retry_after is not None and failure.retry_after > 0:
                # Every request of this instance waits, not only this one: the limit is the
                # account's, and hammering it only lengthens the pause.
                self._not_before = max(self._not_before, time.monotonic() + failure.retry_after)
                delay, why = failure.retry_after, "as the server asks"
                sleep = 0.0  # the pause itself is waited for at the top of the loop
            else:
                delay = backoff(key, retries - 1, self.backoff_base, self.backoff_cap)
                why = "backing off"
                sleep = delay
            log.info(
                "%s (%s): %s; retry %d of %d in %.2f s (%s)",
                stage,
                model,
                failure.head,
                retries,
                self.max_retries,
                delay,
                why,
            )
            await asyncio.sleep(sleep)

    def _congested(self, limiter: Limiter, stage: str, model: str) -> None:
        if limiter.congested():
            log.info(
                "%s (%s): %s takes no more requests at once than the %d it is answering; "
                "at most %d now go out (concurrency %d)",
                stage,
                model,
                self.endpoints.url(stage),
                limiter.receiving,
                limiter.capacity,
                self.concurrency,
            )

    def _classify(self, exc: Exception, stage: str, received: bool = False) -> Failure:
        """Why an attempt failed; ``received``: after the answer had begun to arrive."""
        import openai

        if isinstance(exc, openai.APITimeoutError):
            detail = "the answer stopped coming" if received else ""
            return Failure(f"timed out (limit {self.timeout:g} s)", detail, retryable=True)
        if isinstance(exc, openai.APIConnectionError):
            reason = exc.__cause__ or exc
            detail = one_line(self.scrub(str(reason) or type(reason).__name__))
            if received:  # the server was reached: it broke off
                return Failure("the connection broke during the answer", detail, retryable=True)
            return Failure(
                f"could not reach {self.endpoints.url(stage)}",
                detail,
                retryable=True,
                unreachable=True,
            )
        if isinstance(exc, openai.APIStatusError):
            message, code = server_message(exc.body, exc.message or "")
            hint = key_hint(self.config, stage)
            return status_failure(
                exc.status_code, self.scrub(message), code, exc.response.headers, hint
            )
        if isinstance(exc, openai.APIError):  # an error event in the middle of a stream
            message, code = server_message(exc.body, exc.message or "")
            detail = one_line(self.scrub(message))
            return Failure("the server broke off the answer", detail, code=code, retryable=True)
        if isinstance(exc, json.JSONDecodeError | NoEvents):
            # The SDK's answer to a 200 whose body is not JSON: a proxy or gateway page.
            hint = f"is {self.endpoints.url(stage)} the API's base URL, ending in /v1?"
            return Failure("the server answered with a body that is not JSON", hint, None, True)
        if isinstance(exc, RecursionError):
            return Failure(
                "the server answered with JSON nested too deeply to read", "", None, True
            )
        if isinstance(exc, Unusable):
            return Failure(one_line(self.scrub(str(exc))), retryable=True)
        if isinstance(exc, ValueError | openai.APIResponseValidationError):
            # e.g. "No embedding data received": an answer, but not a usable one
            return Failure("the answer could not be read", one_line(self.scrub(str(exc))))
        raise exc


def _plain_http_client(url: str) -> Any:
    """For a plain-HTTP endpoint (a local llama.cpp, Ollama, vLLM) reached with no proxy,
    the SDK's client over wire.plain_transport: no TLS context for the SDK to load its CA
    bundle into (~0.1 s before the first request) though no TLS connection is ever made,
    and a fifth of the CPU a request; else None, the SDK's own."""
    if not plain_http(url):
        return None
    import importlib

    import openai

    # The httpx the SDK is built on (httpx2 for openai 3): its transports and errors.
    base = openai.DefaultAsyncHttpxClient.__mro__[1]
    httpx = importlib.import_module(base.__module__.partition(".")[0])
    return openai.DefaultAsyncHttpxClient(transport=wire.plain_transport(httpx))


# When the code that ends a streamed answer is loaded: once the first requests are out
# (a few ms), while their answers are awaited.
_WARM_AFTER_S = 0.05


async def _warm_stream_end() -> None:
    """The SDK ends each streamed answer under anyio.move_on_after, whose event-loop
    backend anyio imports on first use (~20 ms): at the first answer, while every slot
    waits on it. Loaded here instead, in the time the first requests are out."""
    await asyncio.sleep(_WARM_AFTER_S)
    try:
        import anyio

        anyio.current_time()  # from a task: loads anyio's asyncio backend
    except Exception:  # an SDK built otherwise: the first answer loads what it needs
        return


# A run stores its chunks in order, each once its resolve answer is in: those calls go
# before the others waiting, which nothing waits on yet (see limiter.py).
_PRIORITY = {"resolve": URGENT}


def _attempts(on_content: OnContent | None) -> Callable[[], OnContent | None]:
    """`on_content` for each attempt of a request, told None before every one after the
    first: a retried answer is streamed again from its start."""
    sent = [0]

    def attempt() -> OnContent | None:
        if on_content is not None and sent[0]:
            on_content(None)
        sent[0] += 1
        return on_content

    return attempt


def _before_the_loop(request: ChatRequest, content: str) -> dict[str, Any] | None:
    """An answer that looped, as far as it said sound things before the loop: its lists'
    whole items, checked as any answer is. None when it did not loop, when its request
    takes no part of an answer for the whole, or when nothing of it holds."""
    at = loop_cut(content) if request.prefix_answers else None
    if at is None:
        return None
    value = salvaged(content[:at], request.answer_schema or request.schema)
    if value is None:
        return None
    try:
        return repaired(checked(request, value))
    except ValueError:
        return None


def _estimated_usage(messages: Sequence[Mapping[str, Any]], pieces: int) -> Any:
    """The usage of an answer left before its end: the prompt's estimated tokens, and a
    token for each piece received (servers stream about one a piece)."""
    prompt = sum(ESTIMATOR.count(str(m.get("content") or "")) for m in messages)
    return SimpleNamespace(prompt_tokens=prompt, completion_tokens=pieces)


def _only_reasoning(response: Any) -> bool:
    """Whether a chat response's answer is reasoning alone, no JSON after it."""
    choices = getattr(response, "choices", None) or []
    if not choices or choices[0].finish_reason == "length":
        return False
    return only_reasoning(getattr(choices[0].message, "content", None) or "")


def _failed(flight: Flight | None, exc: LLMError) -> None:
    """A call failed for good: the others of its crew not sending yet are stopped. This
    runs in the same step of the event loop as the limiter's release, before the call it
    lets in can send (Flight.fail)."""
    if flight is not None and not isinstance(exc, Stopped):
        flight.fail(exc)
