"""The network side of a run: every LLM and embeddings call, recorded and never paid twice.

Each answer is written to gb_inferences the moment it arrives, with the hash of its
request, in a short transaction of its own: a run that fails later keeps what it
paid for, and the next run of the same input finds the answer instead of asking again.
A call whose answer was rejected is recorded too (without an answer), with what it cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from gligabao.chunk import ESTIMATOR
from gligabao.config import STAGES, Config
from gligabao.errors import ExitCode, GbError
from gligabao.llm import EMBED_STAGE, ChatRequest, Flight, LLMError, load_answer
from gligabao.llm.endpoint import Crew, Stopped
from gligabao.llm.float32 import Float32
from gligabao.llm.streaming import OnContent
from gligabao.store import Connection, inferences

if TYPE_CHECKING:  # the client imports the openai SDK; it is passed in, not made here
    from gligabao.llm.client import LLM, Inference

_T = TypeVar("_T")

# The most of one message (or embedded text) an inference record keeps, head and tail: a
# --contextual call sends the whole document with every chunk, and keeping each whole
# would store a long document once per chunk.
KEPT_CHARS = 32_000

# Added to the estimated prompt so that an estimate stays above what the API bills:
# the estimator counts English a little high, other tokenizers may count some text higher.
_PROMPT_MARGIN = 1.25


@dataclass(frozen=True, slots=True)
class Asked:
    """A validated answer and the inference row that holds it."""

    value: dict[str, Any]
    inference_id: int
    model: str
    reasoning: str


@dataclass
class Spend:
    """What a run cost: calls made, answers reused, tokens and money."""

    calls: int = 0
    reused: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost: float = 0.0
    priced: bool = True
    unpriced: int = 0  # calls without a price: their cost is not in `cost`
    by_stage: dict[str, int] = field(default_factory=dict)

    def add(self, inference: Inference) -> None:
        self.calls += 1
        self.by_stage[inference.stage] = self.by_stage.get(inference.stage, 0) + 1
        self.input_tokens += inference.input_tokens
        self.output_tokens += inference.output_tokens
        self.cached_tokens += inference.cached_tokens
        if inference.cost is None:
            self.priced = False
            self.unpriced += 1
        else:
            self.cost += inference.cost


class BudgetReached(GbError):
    """A call would have taken the running cost past --max-cost; it was not made."""

    exit_code = ExitCode.PARTIAL


class Budget:
    """--max-cost: a call is made only if, at the most it can cost, the total stays within.

    Each call reserves its worst case (its prompt estimated generously, and its whole
    output limit, reasoning headroom included, for each answer it may pay for) before it
    starts and settles at what it cost, so calls running at once can never pass the limit
    together. A call that does not fit waits while others hold reservations (they usually
    settle for less), and the budget is reached only when it does not fit with nothing
    held.
    """

    def __init__(self, config: Config, limit: float) -> None:
        self.config = config
        self.limit = limit
        self.spent = 0.0
        self._reserved = 0.0
        self._holds = 0
        self._settled = asyncio.Condition()
        self.reached = False

    def stages(self) -> tuple[str, ...]:
        """The stages a `gb remember` run calls with this configuration."""
        contextual = self.config["contextual"]
        # rerank is search's, answer ask's: remember calls neither
        skipped = {"rerank", "answer"} | (set() if contextual else {"contextualize_chunk"})
        chat = tuple(s for s in STAGES if s not in skipped)
        return (*chat, EMBED_STAGE)

    def missing_prices(self) -> list[str]:
        """Models the budget could not price: it needs [prices] for each one a run calls."""
        models = {
            self.config["embeddings.model"] if s == EMBED_STAGE else self.config.model_for(s)
            for s in self.stages()
        }
        return sorted(m for m in models if self.config.price_of(m) is None)

    async def reserve(
        self, model: str, prompt: str, max_output_tokens: int, answers: int = 1
    ) -> float:
        """Hold a call's worst cost, ``answers`` times ``prompt`` in and ``max_output_tokens``
        out; wait while other calls' holds may free enough room."""
        price = self.config.price_of(model)
        tokens = int(ESTIMATOR.count(prompt) * _PROMPT_MARGIN) + 16
        worst = answers * price.cost(tokens, max_output_tokens) if price else 0.0
        async with self._settled:
            while self.spent + self._reserved + worst > self.limit:
                if self.reached or not self._holds:
                    self.reached = True
                    raise BudgetReached(
                        f"stopped at --max-cost ${self.limit:g}: ${self.spent:.4f} spent, and "
                        f"the next {model} call could cost up to ${worst:.4f}"
                    )
                await self._settled.wait()  # calls in flight usually cost less than held
            self._reserved += worst
            self._holds += 1
        return worst

    async def settle(self, reserved: float, cost: float | None) -> None:
        async with self._settled:
            self._reserved -= reserved
            self._holds -= 1  # counted, not read off the float sum, which may not reach 0
            self.spent += reserved if cost is None else cost
            self._settled.notify_all()


class Calls:
    """The LLM of one run, bound to the database that records its answers."""

    def __init__(
        self,
        conn: Connection,
        llm: LLM,
        dataset_id: int,
        budget: Budget | None = None,
        spend: Spend | None = None,
    ) -> None:
        self.conn = conn
        self.llm = llm
        self.dataset_id = dataset_id
        self.budget = budget
        self.spend = spend if spend is not None else Spend()
        self._carried_on: set[asyncio.Task[Any]] = set()
        self._crew = Crew()  # the calls of this run not ended yet
        self.served: list[int] = []  # the inferences this run used, made or reused

    async def _to_the_end(
        self,
        call: Callable[[Flight], Awaitable[_T]],
        *,
        contained: bool = False,
        contains_cut_off: bool = False,
    ) -> _T:
        """`call`, carried on to its end if it is cancelled while its request is out: that
        answer is paid for, so it is recorded, and a rerun reuses it. A call not sent
        yet is simply dropped, and one carried on sends no further attempt. When one call
        fails for good, none of the others that has not sent yet is sent: the document has
        failed (unless the call is `contained`: its caller handles its failure; or
        `contains_cut_off` and its answer was cut off, which its caller handles)."""
        flight = Flight(crew=self._crew, contained=contained, contains_cut_off=contains_cut_off)
        self._crew.flights.add(flight)
        task = asyncio.ensure_future(call(flight))
        task.add_done_callback(lambda _: self._crew.flights.discard(flight))
        try:
            return await asyncio.shield(task)
        except Stopped:
            if self._crew.failure is not None:  # say why it was stopped: what failed
                raise self._crew.failure from None
            raise
        except asyncio.CancelledError:
            flight.stopped = True
            if flight.sending:
                self._carried_on.add(task)
                task.add_done_callback(self._settle_carried_on)
            else:
                task.cancel()
            raise

    def _settle_carried_on(self, task: asyncio.Task[Any]) -> None:
        # Its failure is recorded with it; read here, or asyncio logs "Task exception was
        # never retrieved" when the task is collected (shield no longer watches it).
        self._carried_on.discard(task)
        if not task.cancelled():
            task.exception()

    async def finish(self) -> None:
        """Wait for the calls carried on after a cancel (see `_to_the_end`); their own
        failures are recorded with them, not raised here."""
        if self._carried_on:
            await asyncio.gather(*self._carried_on, return_exceptions=True)

    def asked_before(self, request: ChatRequest) -> bool | None:
        """Whether ``request`` was answered (True), asked and failed (False), or never
        asked (None), by this run or an earlier one."""
        return inferences.asked_before(self.conn, self.llm.request_hash(request))

    async def ask(
        self,
        request: ChatRequest,
        *,
        contained: bool = False,
        contains_cut_off: bool = False,
        on_content: OnContent | None = None,
    ) -> Asked:
        """The answer to ``request``: a stored one if this exact request was answered.
        A `contained` call's failure does not stop the run's other calls (see _to_the_end),
        nor does a `contains_cut_off` call's answer cut off at its output limit;
        `on_content` hears a streamed answer's text as it comes (never a stored one's)."""
        key = self.llm.request_hash(request)
        cached = inferences.find_answer(self.conn, key)
        if cached is not None:
            try:
                value = load_answer(request, cached.answer)
            except ValueError:
                pass  # it no longer fits the request's schema: asked for again below
            else:
                self.spend.reused += 1
                self.served.append(cached.inference_id)
                reasoning = self.llm.config.reasoning_for(request.stage)
                return Asked(value, cached.inference_id, cached.model_name, reasoning)
        return await self._to_the_end(
            lambda flight: self._ask(request, key, flight, on_content),
            contained=contained,
            contains_cut_off=contains_cut_off,
        )

    async def _ask(
        self, request: ChatRequest, key: str, flight: Flight, on_content: OnContent | None
    ) -> Asked:
        # The schema is billed as prompt too: sent with the request, or written into it.
        prompt = "\n".join([*(m["content"] for m in request.messages), json.dumps(request.schema)])
        model = self.llm.config.model_for(request.stage)
        answers, max_output = self.llm.chat_limits(request)
        sent = self._kept({"messages": [dict(m) for m in request.messages]})
        try:
            async with self._budgeted(model, prompt, max_output, answers) as paid:
                answer = await self.llm.chat(request, key, flight, on_content)
                paid.append(answer.inference.cost)
        except LLMError as exc:  # a rejected answer was paid for all the same
            if exc.inference is not None:
                self._record(exc.inference, sent)
            raise
        inference_id = self._record(answer.inference, sent)
        return Asked(answer.value, inference_id, answer.inference.model, answer.inference.reasoning)

    async def embed(self, texts: list[str]) -> list[list[Float32]]:
        """One embeddings request for all of ``texts``, recorded as an inference; each
        text's vectors as float32 arrays, as they are stored: one, or one a piece when the
        text is larger than the server reads (`embeddings.max_tokens`)."""
        if not texts:
            return []
        return await self._to_the_end(lambda flight: self._embed(texts, flight))

    async def _embed(self, texts: list[str], flight: Flight) -> list[list[Float32]]:
        async with self._budgeted(self.llm.config["embeddings.model"], "\n".join(texts), 0) as paid:
            result = await self.llm.embed(texts, flight)
            paid.append(result.inference.cost)
        self._record(result.inference, self._kept({"input": list(texts)}))
        return result.pieces

    @contextlib.asynccontextmanager
    async def _budgeted(self, model: str, prompt: str, max_output: int, answers: int = 1):
        """Reserve a call's worst cost in the budget, settle at what it cost."""
        paid: list[float | None] = []
        if self.budget is None:
            yield paid
            return
        reserved = await self.budget.reserve(model, prompt, max_output, answers)
        try:
            yield paid
        except LLMError as exc:
            if exc.inference is not None:  # rejected answers, billed all the same
                paid.append(exc.inference.cost)
            elif exc.status is not None or isinstance(exc, Stopped):
                paid.append(0.0)  # the server answered with an error, or it was not sent
            # else (a timeout, a dropped connection) it may have been billed: all of it
            raise
        finally:
            await self.budget.settle(reserved, paid[-1] if paid else None)

    def _kept(self, request: dict[str, Any]) -> str:
        """What a call sent, as its record keeps it: JSON, each text at most KEPT_CHARS
        (head and tail, the cut said), the configured keys and key-like strings masked."""

        def kept(text: str) -> str:
            if len(text) <= KEPT_CHARS:
                return text
            half = KEPT_CHARS // 2
            left_out = len(text) - 2 * half
            return f"{text[:half]}\n[... {left_out:,} characters not kept ...]\n{text[-half:]}"

        if "messages" in request:
            request["messages"] = [
                {**m, "content": kept(str(m.get("content", "")))} for m in request["messages"]
            ]
        else:
            request["input"] = [kept(t) for t in request["input"]]
        return self.llm.scrub(json.dumps(request, ensure_ascii=False))

    def _record(self, inference: Inference, request: str | None = None) -> int:
        self.spend.add(inference)
        recorded = inferences.record_inference(
            self.conn,
            stage=inference.stage,
            model=inference.model,
            reasoning=inference.reasoning,
            input_tokens=inference.input_tokens,
            output_tokens=inference.output_tokens,
            cached_tokens=inference.cached_tokens,
            cost=inference.cost,
            duration_ms=inference.duration_ms,
            request_hash=inference.request_hash,
            answer=inference.answer,
            dataset_id=self.dataset_id,
            request=request,
        )
        self.served.append(recorded)
        return recorded
