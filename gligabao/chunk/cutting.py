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
    # What the cut could not do as its mode says (code that did not parse, cut as text).
    notices: list[str] = field(default_factory=list)

    @property
    def chunked(self) -> bool:
        return bool(self.chunks)


MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})
# Source files and their language: Python is cut by its AST, the others by their
# tree-sitter grammar (chunk/syntax.py); a language with none is cut as text, lines
# first, and the cut says so.
CODE_LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".swift": "swift",
    ".sh": "bash",
    ".bash": "bash",
    ".scala": "scala",
    ".sql": "sql",
}
CODE_SUFFIXES = frozenset(CODE_LANGUAGES)


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


def code_language(path: str | None) -> str:
    """The language code mode cuts a file in: by its extension, Python for stdin."""
    if path is None:
        return "python"
    suffix = os.path.splitext(path)[1].lower()
    return CODE_LANGUAGES.get(suffix) or suffix.lstrip(".") or "unnamed"


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

        notices: list[str] = []
        chunks = code_chunks(splitter, language=code_language(path), notices=notices)
        return Cut(tokens, chunks, mode, notices)
    return Cut(tokens, text_chunks(splitter), mode)
