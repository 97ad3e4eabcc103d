"""An input cut as gb remember and gb chunk-preview cut it: a plain text by the chunker, a
read document (PDF, HTML, chat) in its own mode, each chunk carrying the pages or messages
its bytes overlap. Here reading meets the chunker, which never import each other."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gligabao.base.lines import LineIndex
from gligabao.chunk import Chunk, ChunkSettings, Cut, cut
from gligabao.chunk.conversation import ChatWindows, chat_chunks
from gligabao.read.documents import FormattedDocument, Location, describe, line_map
from gligabao.read.sources import Source

__all__ = ["chunk_lines", "chunk_locations", "cut_document", "cut_source", "said_when"]


def cut_document(
    doc: FormattedDocument,
    settings: ChunkSettings,
    windows: ChatWindows | None = None,
) -> tuple[Cut, list[list[Location]]]:
    """The chunks of ``doc`` and each chunk's locations. Chat is cut in ``windows``
    (default: multi-turn, 256 tokens, 32 overlap) and always chunked, a message being
    the smallest unit cited; the others in their mode with ``settings`` (a
    text that fits in a chunk is not chunked, and cites all its locations)."""
    if doc.mode == "chat":
        windows = windows or ChatWindows(settings.chat_window, tokenizer=settings.tokenizer)
        messages = [(span.start, span.end) for span in doc.spans]
        chunks = chat_chunks(doc.text, messages, windows)
        tokens = sum(chunk.tokens - chunk.overlap_tokens for chunk in chunks)
        result = Cut(tokens, chunks, "chat")
    else:
        result = cut(doc.text, replace(settings, mode=doc.mode))
    if not result.chunks:
        return result, [[span.location for span in doc.spans]]
    return result, [chunk_locations(doc, chunk) for chunk in result.chunks]


def cut_source(source: Source, settings: ChunkSettings, windows: ChatWindows | None = None) -> Cut:
    """How gb remember and gb chunk-preview cut an input: a plain text as `cut` does
    (its mode by its name), a read document by `cut_document`, each chunk carrying its
    locations as `describe` writes them (stored with it, shown by --json)."""
    if source.document is None:
        return cut(source.text, settings, None if source.path is None else source.name)
    result, found = cut_document(source.document, settings, windows)
    if not result.chunks:  # not chunked: the document row keeps its locations
        return result
    chunks = [
        replace(chunk, locations=_described(source.document, chunk, where))
        for chunk, where in zip(result.chunks, found, strict=True)
    ]
    return replace(result, chunks=chunks)


def _described(doc: FormattedDocument, chunk: Chunk, where: list[Location]) -> dict[str, Any]:
    described = describe(where)
    if "lines" in described:
        # The lines of the file each line of the chunk stands for: a quote is cited by its own.
        described["line_map"] = line_map(doc.spans, chunk.start_offset, chunk.end_offset)
    return described


def chunk_lines(chunk: Chunk, lines: LineIndex) -> tuple[int, int]:
    """The first and last line a chunk is cited by: those of the file it was read from
    where its text is not the file's (a web page's markdown), else its text's own."""
    found = (chunk.locations or {}).get("lines")
    if found:
        return found[0], found[1]
    return lines.span(chunk.start_offset, chunk.end_offset)


def said_when(chunk: Chunk | None) -> str | None:
    """The time of a chat chunk's first message (its extraction's reference time), if known."""
    messages = (chunk.locations or {}).get("messages") if chunk is not None else None
    return messages["timestamps"][0] if isinstance(messages, dict) else None


def chunk_locations(doc: FormattedDocument, chunk: Chunk) -> list[Location]:
    return doc.locations(chunk.start_offset, chunk.end_offset)
