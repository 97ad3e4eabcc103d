"""`gb remember --dry-run`: what a run would cut, and the LLM calls and input tokens it
would take, priced where prices are known, before anything is stored or asked.

Each input is read and cut as gb chunk-preview cuts it (service/preview.py), and each of
its pieces (a chunk, or a text too short to be chunked) counted as gb remember would
send it: one extraction each; for a chunk one summary, and a situating context with
--contextual; one embeddings request each (an embed-only run: one a batch of chunks). A
request's input tokens are its prompt's (system message, schema) and its text's. What
only the answers decide is left out and said so: the resolve calls, which the graph
needs only for what it cannot match alone, the summaries, entities and facts
embedded with each chunk, and the entity summaries rewritten once later facts close
earlier ones. Every input is counted as new: the database is not opened.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gligabao.errors import InputError
from gligabao.llm.endpoint import EMBED_STAGE

if TYPE_CHECKING:
    from gligabao.chunk import Tokenizer
    from gligabao.config import Config
    from gligabao.service.preview import Preview

__all__ = ["DryRun", "Sized", "dry_run"]

CHAT_STAGES = ("extract_graph", "summarize_chunk", "contextualize_chunk")


@dataclass(frozen=True)
class Sized:
    """One document as a run would take it: its cut, and each stage's calls and tokens."""

    source: str
    tokens: int
    chunks: int  # 0: not chunked, one piece
    calls: dict[str, int]
    input_tokens: dict[str, int]

    def as_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": "dry-run",
            "chunked": bool(self.chunks),
            "chunks": self.chunks,
            "tokens": self.tokens,
            "calls": self.calls,
            "input_tokens": self.input_tokens,
        }


@dataclass
class DryRun:
    """What a run would take in all: the documents sized, the inputs refused, and each
    stage's model and price."""

    config: Config
    stages: tuple[str, ...]  # those the run would call, in order
    documents: list[Sized] = field(default_factory=list)
    refused: list[InputError] = field(default_factory=list)

    def model(self, stage: str) -> str:
        return (
            self.config["embeddings.model"]
            if stage == EMBED_STAGE
            else self.config.model_for(stage)
        )

    def calls(self) -> dict[str, int]:
        return {s: sum(d.calls.get(s, 0) for d in self.documents) for s in self.stages}

    def input_tokens(self) -> dict[str, int]:
        return {s: sum(d.input_tokens.get(s, 0) for d in self.documents) for s in self.stages}

    def unpriced(self) -> list[str]:
        """The models a run would call that have no price: its cost is then unknown."""
        return sorted(
            {self.model(s) for s in self.stages if self.config.price_of(self.model(s)) is None}
        )

    def stage_cost(self, stage: str) -> float | None:
        """The price of a stage's input tokens, None where its model has none."""
        price = self.config.price_of(self.model(stage))
        return None if price is None else price.cost(self.input_tokens()[stage], 0)

    def cost(self) -> float | None:
        """The price of the input tokens, None where a model has none."""
        costs = [self.stage_cost(s) for s in self.stages]
        return None if None in costs else sum(c for c in costs if c is not None)

    def as_json(self) -> dict[str, Any]:
        """The line that ends `--json`: the totals."""
        return {
            "source": None,
            "status": "total",
            "documents": len(self.documents),
            "refused": len(self.refused),
            "chunks": sum(d.chunks for d in self.documents),
            "tokens": sum(d.tokens for d in self.documents),
            "calls": self.calls(),
            "input_tokens": self.input_tokens(),
            "models": {s: self.model(s) for s in self.stages},
            "cost": self.cost(),
            "unpriced": self.unpriced(),
        }


def dry_run(
    config: Config,
    previews: Callable[[], Any],
    *,
    stages: tuple[str, ...],
    stdin_name: str | None = None,
) -> DryRun:
    """Size every preview `previews()` yields (a Preview, or an InputError of an input
    that cannot be read) for a run of `stages` (as parse_stages gives them)."""
    from gligabao.remember.document import EMBED_BATCH, EMBED_ONLY

    embed_only = stages == EMBED_ONLY
    called: tuple[str, ...] = (EMBED_STAGE,)
    if not embed_only:
        chat = CHAT_STAGES if config["contextual"] else CHAT_STAGES[:2]
        called = (*chat, EMBED_STAGE)
    plan = DryRun(config, called)
    tokenizer = config.chunk_settings().tokenizer
    overhead = _overheads(tokenizer)
    for preview in previews():
        if isinstance(preview, InputError):
            plan.refused.append(preview)
            continue
        shown = preview.shown
        if stdin_name is not None and shown.split(" #")[0] == "-":
            shown = stdin_name + shown[1:]
        plan.documents.append(_sized(preview, shown, called, overhead, tokenizer, EMBED_BATCH))
    return plan


def _sized(
    preview: Preview,
    shown: str,
    called: Sequence[str],
    overhead: dict[str, int],
    tokenizer: Tokenizer,
    batch: int,
) -> Sized:
    cut = preview.cut
    # Each piece's text tokens, and what is embedded of it (its context first).
    pieces = [c.tokens for c in cut.chunks] or [cut.tokens]
    embedded = [
        c.tokens + (tokenizer.count(c.context) if c.context else 0) for c in cut.chunks
    ] or [cut.tokens]
    calls: dict[str, int] = {}
    tokens: dict[str, int] = {}
    if "extract_graph" in called:
        calls["extract_graph"] = len(pieces)
        tokens["extract_graph"] = sum(overhead["extract_graph"] + t for t in pieces)
    if cut.chunks and "summarize_chunk" in called:
        calls["summarize_chunk"] = len(pieces)
        tokens["summarize_chunk"] = sum(overhead["summarize_chunk"] + t for t in pieces)
    if cut.chunks and "contextualize_chunk" in called:
        # The whole document with each chunk.
        calls["contextualize_chunk"] = len(pieces)
        tokens["contextualize_chunk"] = sum(
            overhead["contextualize_chunk"] + cut.tokens + t for t in pieces
        )
    embed_only = "extract_graph" not in called
    calls[EMBED_STAGE] = math.ceil(len(pieces) / batch) if embed_only else len(pieces)
    tokens[EMBED_STAGE] = sum(embedded)
    return Sized(shown, cut.tokens, len(cut.chunks), calls, tokens)


def _overheads(tokenizer: Tokenizer) -> dict[str, int]:
    """Each chat stage's prompt around its text, in tokens: the messages and the schema,
    as calls.py counts a prompt."""
    from gligabao.llm.prompts import (
        contextualize_chunk_request,
        extract_graph_request,
        summarize_chunk_request,
    )

    requests = (
        extract_graph_request("", "2000-01-01T00:00:00+00:00"),  # a moment's length
        summarize_chunk_request(""),
        contextualize_chunk_request("", ""),
    )
    return {
        r.stage: tokenizer.count(
            "\n".join([*(m["content"] for m in r.messages), json.dumps(r.schema)])
        )
        for r in requests
    }
