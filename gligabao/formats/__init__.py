"""Documents that are not plain text: a PDF, a saved web page, a chat export.

A reader turns one file into one or more `FormattedDocument`s: the **indexed text**
(what is cut, embedded and keyword-indexed: words only, no markup of the format) and
a **location map**, `Span`s of UTF-8 byte offsets of that text, each pointing home:
a PDF page, or a chat message with its role, time and ids. A chunk's locations are
those its byte span overlaps (`locations`), so offsets carried through chunking cite
the source, never a search for the chunk's text afterwards.

`kind_of` recognises a file (by extension and content), `read_documents` reads it,
`cut_document` cuts what it read: chat in windows of messages
(`gligabao.chunk.chat`), the rest in the chunk mode the reader chose (PDF text,
HTML markdown). Nothing here touches the database.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from gligabao.chunk import Chunk, ChunkSettings, Cut, cut
from gligabao.chunk.chat import ChatWindows, chat_chunks
from gligabao.errors import InputError
from gligabao.inputs import MAX_BYTES, Source, open_file, shown_name

# A PDF or a chat export is read whole; what it yields is held to MAX_BYTES a document.
MAX_FILE_BYTES = 64 << 20
KINDS = ("pdf", "html", "chat")

__all__ = [
    "KINDS",
    "MAX_FILE_BYTES",
    "Fork",
    "FormattedDocument",
    "Location",
    "Message",
    "Page",
    "Span",
    "check_size",
    "chunk_locations",
    "cite",
    "cite_described",
    "clean_text",
    "cut_document",
    "cut_source",
    "describe",
    "kind_of",
    "locations",
    "read_documents",
    "read_file",
    "said_when",
]


@dataclass(frozen=True, slots=True)
class Page:
    """A page of a PDF, numbered from 1 as a reader cites it."""

    number: int


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation, on one root-to-leaf path of its tree.

    ``turn`` counts the messages of the path from 1 (root first), so a chunk cites a
    turn range; ``timestamp`` is ISO-8601 UTC (`gligabao.times`) or None."""

    conversation_id: str
    path_id: str
    message_id: str
    turn: int
    role: str
    timestamp: str | None


Location = Page | Message


@dataclass(frozen=True, slots=True)
class Span:
    """``text.encode()[start:end]`` is at ``location`` (UTF-8 byte offsets)."""

    start: int
    end: int
    location: Location


@dataclass(frozen=True, slots=True)
class Fork:
    """Where a branch of a conversation leaves another path: its document holds only
    the messages after ``after_message_id`` (turn ``after_turn`` of ``path_id``), the
    shared prefix being stored once, in that path's document."""

    path_id: str
    after_message_id: str
    after_turn: int


@dataclass(frozen=True, slots=True)
class FormattedDocument:
    """One document read from a file: its name, kind, indexed text and location map.

    ``mode`` is how the text is cut: ``chat`` (windows of messages), ``markdown``
    (HTML converted) or ``text`` (PDF pages). ``spans`` are in order, not overlapping.
    For chat, ``conversation_id`` and ``path_id`` name the conversation and the path
    this document holds, and ``fork`` where a branch leaves the path it shares with.
    """

    name: str
    kind: str
    text: str
    spans: tuple[Span, ...]
    mode: str
    conversation_id: str | None = None
    path_id: str | None = None
    fork: Fork | None = None
    _ends: tuple[int, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ends", tuple(span.end for span in self.spans))

    def locations(self, start: int, end: int) -> list[Location]:
        """The locations that the byte span ``[start, end)`` overlaps, in order."""
        return locations(self.spans, start, end, self._ends)


def locations(
    spans: Sequence[Span], start: int, end: int, ends: Sequence[int] | None = None
) -> list[Location]:
    """The locations of ``spans`` (in order, not overlapping) that ``[start, end)``
    overlaps: a span ending at ``start`` or starting at ``end`` is not one of them."""
    ends = ends if ends is not None else [span.end for span in spans]
    found: list[Location] = []
    for span in spans[bisect_right(ends, start) :]:
        if span.start >= end:
            break
        if span.end > start:
            found.append(span.location)
    return found


def describe(found: Sequence[Location]) -> dict[str, object]:
    """A chunk's locations as `--json` shows them: ``{"pages": [first, last]}`` or
    ``{"messages": {conversation_id, path_id, first, last, roles, message_ids,
    timestamps}}`` (``first``/``last`` are turns); ``{}`` for none."""
    pages = [loc.number for loc in found if isinstance(loc, Page)]
    if pages:
        return {"pages": [min(pages), max(pages)]}
    messages = [loc for loc in found if isinstance(loc, Message)]
    if not messages:
        return {}
    first, last = messages[0], messages[-1]
    return {
        "messages": {
            "conversation_id": first.conversation_id,
            "path_id": first.path_id,
            "first": first.turn,
            "last": last.turn,
            "roles": sorted({m.role for m in messages}),
            "message_ids": [m.message_id for m in messages],
            "timestamps": [first.timestamp, last.timestamp],
        }
    }


def cite(source: str, found: Sequence[Location], title: str | None = None) -> str:
    """Where a chunk is, for people: ``report.pdf p.12-13``, ``chat.json #Trip msgs
    14-19`` (``title``: the conversation's, its document's name)."""
    return cite_described(source, describe(found), title)


def cite_described(source: str, where: Mapping[str, Any], title: str | None = None) -> str:
    """`cite` of locations as `describe` wrote them (as they are stored)."""
    if "pages" in where:
        first, last = where["pages"]  # type: ignore[misc]
        return f"{source} p.{first}" if first == last else f"{source} p.{first}-{last}"
    name = f"{source} #{title}" if title else source
    if "messages" in where:
        turns = where["messages"]
        first, last = turns["first"], turns["last"]  # type: ignore[index]
        return f"{name} msg {first}" if first == last else f"{name} msgs {first}-{last}"
    return name


# C0 controls but tab, newline and form feed, DEL, and lone surrogates (from JSON's
# "\ud800"): no document text holds them (SQLite and terminals refuse them).
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with CRLF and CR made LF, controls dropped, lone surrogates U+FFFD."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    return _SURROGATE.sub("\ufffd", text)


def check_size(name: str, text: str) -> None:
    """A document's indexed text is held to the limit of a plain text file."""
    size = len(text.encode("utf-8"))
    if size > MAX_BYTES:
        raise InputError(
            name, f"gives a text of {size:,} bytes, larger than 1 MiB; split the file first"
        )


# ----------------------------------------------------------------- recognising files

_PDF_SUFFIXES = frozenset({".pdf"})
_HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
_CHAT_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson"})
_HTML_START = re.compile(
    rb"\A(?:\xef\xbb\xbf)?\s*(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html)\b", re.I | re.S
)


def kind_of(path: str | None, data: bytes) -> str | None:
    """``pdf``, ``html`` or ``chat`` for a file a reader here takes, else None (plain
    text, as before). A ``.pdf`` is a PDF even when damaged, so that it is refused as
    one; a PDF or an HTML page is also known by its first bytes, a chat export only
    by a JSON extension and the shape of its first record."""
    suffix = os.path.splitext(path or "")[1].lower()
    if suffix in _PDF_SUFFIXES or data[:1024].lstrip().startswith(b"%PDF-"):
        return "pdf"
    if suffix in _HTML_SUFFIXES or _HTML_START.match(data[:4096]):
        return "html"
    if suffix in _CHAT_SUFFIXES:
        from gligabao.formats.chat import export_format

        return "chat" if export_format(data) else None
    return None


def read_documents(
    name: str, data: bytes, *, kind: str | None = None, all_branches: bool = False
) -> list[FormattedDocument]:
    """The documents of the file ``name`` (its bytes ``data``), read as ``kind``
    (default: `kind_of`); InputError, one line, for one that cannot be read."""
    kind = kind or kind_of(name, data)
    if kind == "pdf":
        from gligabao.formats.pdf import read_pdf

        return [read_pdf(name, data)]
    if kind == "html":
        from gligabao.formats.html import read_html

        return [read_html(name, data)]
    if kind == "chat":
        from gligabao.formats.chat import read_chat

        return read_chat(name, data, all_branches=all_branches)
    raise InputError(shown_name(name), "is not a PDF, an HTML page or a chat export")


def read_file(name: str, *, all_branches: bool = False) -> list[FormattedDocument]:
    """`read_documents` of the file at ``name``, read whole (at most MAX_FILE_BYTES)."""
    with open_file(name) as handle:
        try:
            data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise InputError(shown_name(name), f"cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(shown_name(name), f"is larger than {MAX_FILE_BYTES >> 20} MiB; split it")
    return read_documents(shown_name(name), data, all_branches=all_branches)


# ----------------------------------------------------------------------- cutting


def cut_document(
    doc: FormattedDocument,
    settings: ChunkSettings,
    windows: ChatWindows | None = None,
) -> tuple[Cut, list[list[Location]]]:
    """The chunks of ``doc`` and each chunk's locations. Chat is cut in ``windows``
    (default: multi-turn, 256 tokens, 32 overlap) and always chunked, a message being
    the smallest unit cited; the others in their mode with ``settings`` (SPEC C3: a
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
        replace(chunk, locations=describe(where))
        for chunk, where in zip(result.chunks, found, strict=True)
    ]
    return replace(result, chunks=chunks)


def said_when(chunk: Chunk | None) -> str | None:
    """The time of a chat chunk's first message (its extraction's reference time), if known."""
    messages = (chunk.locations or {}).get("messages") if chunk is not None else None
    return messages["timestamps"][0] if isinstance(messages, dict) else None


def chunk_locations(doc: FormattedDocument, chunk: Chunk) -> list[Location]:
    return doc.locations(chunk.start_offset, chunk.end_offset)
