"""A text's cut: the settings it is cut with, and whether and how it is chunked."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gligabao.chunk.tokens import ESTIMATOR, Tokenizer

if TYPE_CHECKING:
    from gligabao.chunk.text import Chunk


@dataclass(frozen=True, slots=True)
class ChunkSettings:
    chunk_size: int = 1024
    overlap_percent: int = 20
    mode: str = "text"
    tokenizer: Tokenizer = field(default=ESTIMATOR)
    chat_window: str = "multi"  # a chat in multi-message windows, or one message a chunk
    # Markdown: sibling sections smaller than this are packed into one chunk (0: never).
    min_section_tokens: int = 0

    def fingerprint(self) -> dict[str, object]:
        """What a stored cut depends on, to tell later whether it would come out the same.
        The chat window and the small sections' threshold only when not the default, so
        documents stored before they existed keep their fingerprint."""
        single = {"chat_window": self.chat_window} if self.chat_window != "multi" else {}
        small = {"min_section_tokens": self.min_section_tokens} if self.min_section_tokens else {}
        return {
            "chunk_size": self.chunk_size,
            "overlap_percent": self.overlap_percent,
            "mode": self.mode,
            "tokenizer": self.tokenizer.name,
            **single,
            **small,
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


MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
# Source files: Python is cut by its AST; the others fall back to text, lines first.
CODE_SUFFIXES = frozenset(
    {
        ".py",
        ".pyi",
        ".js",
        ".mjs",
        ".ts",
        ".tsx",
        ".jsx",
        ".go",
        ".rs",
        ".java",
        ".kt",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".cs",
        ".rb",
        ".php",
        ".swift",
        ".scala",
        ".sh",
        ".sql",
    }
)


def mode_for(path: str | None, mode: str) -> str:
    """The mode a text is cut in: ``auto`` goes by the file's extension, text for stdin."""
    if mode != "auto":
        return mode
    suffix = os.path.splitext(path or "")[1].lower()
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if suffix in CODE_SUFFIXES:
        return "code"
    return "text"


def cut(text: str, settings: ChunkSettings, path: str | None = None) -> Cut:
    """Chunk ``text`` if it is larger than ``settings.chunk_size`` tokens, in
    the mode the settings (and, for ``auto``, the file name ``path``) call for."""
    from gligabao.chunk.text import Splitter, text_chunks

    mode = mode_for(path, settings.mode)
    # One splitter both counts the text and cuts it: each token is counted once.
    splitter = Splitter(
        text,
        chunk_size=settings.chunk_size,
        overlap_percent=settings.overlap_percent,
        tokenizer=settings.tokenizer,
    )
    if mode == "text" and splitter.counter.exact:
        # Cut first: a text's tokens are then its chunks' less what each repeats, and a
        # text that fits comes out as one chunk, so the whole is never counted apart.
        chunks = text_chunks(splitter)
        tokens = sum(chunk.tokens - chunk.overlap_tokens for chunk in chunks)
        return Cut(tokens, chunks if tokens > settings.chunk_size else [], mode)
    tokens = splitter.tokens()
    if tokens <= settings.chunk_size:
        return Cut(tokens, [], mode)
    if mode == "markdown":
        from gligabao.chunk.markdown import markdown_chunks

        chunks = markdown_chunks(splitter, min_section_tokens=settings.min_section_tokens)
        return Cut(tokens, chunks, mode)
    if mode == "code":
        from gligabao.chunk.code import code_chunks

        python = path is None or os.path.splitext(path)[1].lower() in (".py", ".pyi")
        return Cut(tokens, code_chunks(splitter, python=python), mode)
    return Cut(tokens, text_chunks(splitter), mode)
