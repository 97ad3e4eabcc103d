"""Embedding inputs larger than the server takes: split into pieces that fit, combined.

Local embedding servers take an input only up to their batch or context size (llama.cpp
512 tokens by default, many small embedding models 256-512), and say so with an error
(`endpoint.too_large`). Sending the same input again would be refused again, so the
limit is learnt from the first refusal, once per `LLM`, or known beforehand from
`embeddings.max_tokens`, and every text larger than it is sent as pieces that fit: cut
by the chunker's own rules (paragraphs, then sentences, then words), sized by the
token estimator scaled to the server's own count when its message gives one. The
pieces' vectors are normalised, averaged and normalised again: one vector per text, as
if the server had taken it whole. Texts that fit are sent as they are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from gligabao.chunk import ESTIMATOR, split_text
from gligabao.llm.endpoint import TooLarge
from gligabao.llm.float32 import Float32

__all__ = ["HALVING_FLOOR", "InputLimit", "Plan", "combine", "halves"]

# A piece is planned at this share of the limit: the estimate is not the server's count.
_MARGIN = 0.85
_SMALLEST = 8  # tokens: no piece is planned smaller, whatever the server says
# A limit the server does not state is taken as this share of the input it refused.
_UNSTATED = 0.5


@dataclass(frozen=True)
class Plan:
    """What is sent for some texts: ``inputs``, and for each the text it is part of."""

    inputs: list[str]
    owners: list[int]
    version: int  # the InputLimit it was planned under


class InputLimit:
    """The most tokens one embeddings input may hold (0: unknown, nothing is split) and
    how the server counts tokens against the estimator (``scale`` of its tokens per
    estimated one, never below 1)."""

    def __init__(self, tokens: int = 0) -> None:
        self.tokens = tokens
        self.scale = 1.0
        self.version = 0  # counts what was learnt: a refusal of an older plan teaches nothing

    def budget(self) -> int:
        """Estimated tokens a piece may hold."""
        return max(_SMALLEST, math.floor(self.tokens * _MARGIN / self.scale))

    def plan(self, texts: Sequence[str]) -> Plan:
        inputs: list[str] = []
        owners: list[int] = []
        for i, text in enumerate(texts):
            pieces = self._pieces(text)
            inputs += pieces
            owners += [i] * len(pieces)
        return Plan(inputs, owners, self.version)

    def _pieces(self, text: str) -> list[str]:
        if not self.tokens or ESTIMATOR.count(text) <= self.budget():
            return [text]
        chunks = split_text(text, chunk_size=self.budget(), overlap_percent=0)
        pieces = [c.text for c in chunks if c.text.strip()]
        return pieces or [text]

    def learn(self, refusal: TooLarge, plan: Plan) -> bool:
        """Take in the server's refusal of ``plan``; False when it teaches nothing that
        would change the plan (the request would only be refused again)."""
        if plan.version != self.version:
            return True  # planned before the latest lesson: plan again, as it now says
        longest = max(plan.inputs, key=ESTIMATOR.count)
        estimate = max(1, ESTIMATOR.count(longest))
        before = (self.tokens, self.scale)
        if refusal.count:
            # The server's count of the input it refused: most likely the longest one.
            self.scale = max(self.scale, refusal.count / estimate)
        if refusal.limit:
            limit = refusal.limit
        else:
            counted = refusal.count or math.ceil(estimate * self.scale)
            limit = math.floor(counted * _UNSTATED)
        self.tokens = max(1, min(limit, self.tokens or limit))
        if (self.tokens, self.scale) == before or self.budget() >= estimate:
            # It refused what was planned for what it says, or the plan would send the
            # refused input again: the estimate runs low on this text. Count higher.
            needed = self.tokens * _MARGIN / max(1, estimate - 1)
            self.scale = max(self.scale * 1.5, needed)
        if self.budget() >= estimate:
            return False  # nothing smaller than what was refused can be planned
        self.version += 1
        return True


# Tokens: a text this short whose answer is still cut off is not halved again. The model
# loops, whatever it is given; smaller parts would only lose what ties the text together.
HALVING_FLOOR = 64


def halves(text: str) -> tuple[str, str] | None:
    """``text`` as two parts to be asked about one at a time, when an answer for all of it
    runs past its output limit: cut by the chunker's own rules (paragraphs, then
    sentences, then words) at the boundary nearest its middle. None when it is at the
    floor (`HALVING_FLOOR`) or has no boundary to cut at."""
    tokens = ESTIMATOR.count(text)
    if tokens <= HALVING_FLOOR:
        return None
    pieces = split_text(text, chunk_size=max(_SMALLEST, (tokens + 1) // 2), overlap_percent=0)
    cuts = [p.start for p in pieces[1:] if text[: p.start].strip() and text[p.start :].strip()]
    if not cuts:
        return None
    cut = min(cuts, key=lambda at: abs(2 * at - len(text)))
    return text[:cut], text[cut:]


def combine(vectors: Sequence[Float32]) -> Float32:
    """One vector for a text sent as pieces: the mean of their normalised vectors,
    normalised, as float32. A text sent whole keeps its vector as the server made it."""
    if len(vectors) == 1:
        return vectors[0]
    total = [0.0] * len(vectors[0])
    for vector in vectors:
        norm = math.sqrt(math.fsum(x * x for x in vector)) or 1.0
        for i, x in enumerate(vector):
            total[i] += x / norm
    norm = math.sqrt(math.fsum(x * x for x in total)) or 1.0
    return Float32("f", (x / norm for x in total))
