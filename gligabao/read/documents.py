"""Documents that are not plain text: a PDF, a saved web page, a chat export.

A reader turns one file into one or more `FormattedDocument`s: the **indexed text**
(what is cut, embedded and keyword-indexed: words only, no markup of the format) and
a **location map**, `Span`s of UTF-8 byte offsets of that text, each pointing home:
a PDF page, a chat message with its role, time and ids, or the lines of the file a
line of a web page's markdown came from. A chunk's locations are
those its byte span overlaps (`locations`), so offsets carried through chunking cite
the source, never a search for the chunk's text afterwards.

`kind_of` recognises a file (by extension and content) and `read_documents` reads it;
`gligabao.remember.cut` cuts what it read. Nothing here cuts or touches the database.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gligabao.errors import InputError
from gligabao.read.files import MAX_BYTES

__all__ = [
    "Fork",
    "FormattedDocument",
    "Lines",
    "Location",
    "Message",
    "Page",
    "Span",
    "check_size",
    "cite",
    "cite_described",
    "clean_text",
    "describe",
    "line_map",
    "locations",
]


@dataclass(frozen=True, slots=True)
class Page:
    """A page of a PDF, numbered from 1 as a reader cites it."""

    number: int


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a conversation, on one root-to-leaf path of its tree.

    ``turn`` counts the messages of the path from 1 (root first), so a chunk cites a
    turn range; ``timestamp`` is ISO-8601 UTC (`gligabao.base.times`) or None."""

    conversation_id: str
    path_id: str
    message_id: str
    turn: int
    role: str
    timestamp: str | None


@dataclass(frozen=True, slots=True)
class Lines:
    """Lines ``first`` to ``last`` (from 1) of the file a document was read from, where
    its text is not the file's (a web page's markdown)."""

    first: int
    last: int


Location = Page | Message | Lines


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
    (HTML converted: its spans are `Lines` of the file) or ``text`` (PDF pages).
    ``spans`` are in order, not overlapping.
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
    """A chunk's locations as `--json` shows them: ``{"pages": [first, last]}``,
    ``{"lines": [first, last]}`` (of the file: its first words' line, its last) or
    ``{"messages": {conversation_id, path_id, first, last, roles, message_ids,
    timestamps}}`` (``first``/``last`` are turns); ``{}`` for none."""
    pages = [loc.number for loc in found if isinstance(loc, Page)]
    if pages:
        return {"pages": [min(pages), max(pages)]}
    lines = [loc for loc in found if isinstance(loc, Lines)]
    if lines:
        return {"lines": [lines[0].first, max(loc.last for loc in lines)]}
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


def line_map(spans: Sequence[Span], start: int, end: int) -> list[list[int]]:
    """The `Lines` spans of ``spans`` that ``[start, end)`` overlaps, as stored with a
    chunk (``locations["line_map"]``): ``[start, end, first, last]`` each, so that a
    quote within it is cited by the lines of the file (`gligabao.base.lines.mapped_lines`)."""
    ends = [span.end for span in spans]
    return [
        [span.start, span.end, span.location.first, span.location.last]
        for span in spans[bisect_right(ends, start) :]
        if span.start < end and isinstance(span.location, Lines)
    ]


def cite(source: str, found: Sequence[Location], title: str | None = None) -> str:
    """Where a chunk is, for people: ``report.pdf p.12-13``, ``page.html:40-52``,
    ``chat.json #Trip msgs 14-19`` (``title``: the conversation's, its document's name)."""
    return cite_described(source, describe(found), title)


def cite_described(source: str, where: Mapping[str, Any], title: str | None = None) -> str:
    """`cite` of locations as `describe` wrote them (as they are stored)."""
    if "pages" in where:
        first, last = where["pages"]  # type: ignore[misc]
        return f"{source} p.{first}" if first == last else f"{source} p.{first}-{last}"
    if "lines" in where:
        first, last = where["lines"]  # type: ignore[misc]
        return f"{source}:{first}" if first == last else f"{source}:{first}-{last}"
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
