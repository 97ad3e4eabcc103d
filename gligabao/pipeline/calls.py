"""The network side of a run: every LLM and embeddings call, recorded and never paid twice.

Each answer is written to gb_inferences the moment it arrives, with the hash of its
request (R11), in a short transaction of its own: a run that fails later keeps what it
paid for, and the next run of the same input finds the answer instead of asking again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import apsw

from gligabao.llm import LLM, ChatRequest, Inference, load_answer
from gligabao.store import inferences


@dataclass(frozen=True, slots=True)
class Asked:
    """A validated answer and the inference row that holds it."""

    value: dict[str, Any]
    inference_id: int
    model: str
    reasoning: str
    reused: bool


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
    by_stage: dict[str, int] = field(default_factory=dict)

    def add(self, inference: Inference) -> None:
        self.calls += 1
        self.by_stage[inference.stage] = self.by_stage.get(inference.stage, 0) + 1
        self.input_tokens += inference.input_tokens
        self.output_tokens += inference.output_tokens
        self.cached_tokens += inference.cached_tokens
        if inference.cost is None:
            self.priced = False
        else:
            self.cost += inference.cost


class Calls:
    """The LLM of one run, bound to the database that records its answers."""

    def __init__(self, conn: apsw.Connection, llm: LLM, dataset_id: int) -> None:
        self.conn = conn
        self.llm = llm
        self.dataset_id = dataset_id
        self.spend = Spend()

    async def ask(self, request: ChatRequest) -> Asked:
        """The answer to ``request``: a stored one if this exact request was answered."""
        key = self.llm.request_hash(request)
        cached = inferences.find_answer(self.conn, key)
        if cached is not None:
            self.spend.reused += 1
            reasoning = self.llm.config.reasoning_for(request.stage)
            value = load_answer(request, cached.answer)
            return Asked(value, cached.inference_id, cached.model_name, reasoning, True)
        answer = await self.llm.chat(request)
        inference_id = self._record(answer.inference)
        return Asked(
            answer.value, inference_id, answer.inference.model, answer.inference.reasoning, False
        )

    async def embed(self, texts: list[str]) -> list[list[float]]:
        """One embeddings request for all of ``texts`` (R5), recorded as an inference."""
        if not texts:
            return []
        result = await self.llm.embed(texts)
        self._record(result.inference)
        return result.vectors

    def _record(self, inference: Inference) -> int:
        self.spend.add(inference)
        return inferences.record_inference(
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
        )
