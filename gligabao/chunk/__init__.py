"""Cutting texts into chunks: token counting, the cut itself, and its settings.

`cut(text, settings)` is what `gb remember` and `gb chunk-preview` both use:
it decides whether a text is chunked at all (SPEC C3) and, if so, how.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gligabao.chunk.text import Chunk, overlap_budget, split_text
from gligabao.chunk.tokens import ESTIMATOR, Estimator, Tokenizer, get_tokenizer

MODES = ("auto", "text", "markdown", "code")
IMPLEMENTED_MODES = ("auto", "text")  # markdown and code: SPEC C6, not yet

__all__ = [
    "ESTIMATOR",
    "MODES",
    "Chunk",
    "ChunkSettings",
    "Cut",
    "Estimator",
    "Tokenizer",
    "cut",
    "get_tokenizer",
    "overlap_budget",
    "split_text",
]


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    chunk_size: int = 1024
    overlap_percent: int = 20
    mode: str = "text"
    tokenizer: Tokenizer = field(default=ESTIMATOR)

    def fingerprint(self) -> dict[str, object]:
        """What a stored cut depends on, to tell later whether it would come out the same."""
        return {
            "chunk_size": self.chunk_size,
            "overlap_percent": self.overlap_percent,
            "mode": self.mode,
            "tokenizer": self.tokenizer.name,
        }


@dataclass(frozen=True, slots=True)
class Cut:
    """A text's token count and, when it is larger than a chunk, its chunks."""

    tokens: int
    chunks: list[Chunk]
    mode: str

    @property
    def chunked(self) -> bool:
        return bool(self.chunks)


def cut(text: str, settings: ChunkSettings) -> Cut:
    """Chunk ``text`` if it is larger than ``settings.chunk_size`` tokens (SPEC C3)."""
    mode = "text" if settings.mode == "auto" else settings.mode
    tokens = settings.tokenizer.count(text)
    if tokens <= settings.chunk_size:
        return Cut(tokens, [], mode)
    chunks = split_text(
        text,
        chunk_size=settings.chunk_size,
        overlap_percent=settings.overlap_percent,
        tokenizer=settings.tokenizer,
    )
    return Cut(tokens, chunks, mode)
