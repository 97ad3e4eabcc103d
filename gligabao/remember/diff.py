"""Matching a changed file's new chunks to its stored version's.

A new chunk whose text (with its context: section path, class line, table header) is a
stored chunk's is that chunk again, and reuses all it was given. Where the edit moved a
chunk's overlap (the tail of the chunk before it changed) but not its own text, the two
are matched by the text after the overlap: what the chunk alone says.

Only stored chunks whose every stage is done can be reused; the caller says which.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gligabao.chunk import Chunk


@dataclass(frozen=True, slots=True)
class Keys:
    """What a chunk is matched by: its whole text, and its text after the overlap."""

    whole: str
    body: str


def _digest(context: str | None, data: bytes) -> str:
    return hashlib.sha256((context or "").encode("utf-8") + b"\0" + data).hexdigest()


def keys(text: str, start_offset: int, context: str | None, previous_end: int | None) -> Keys:
    """The keys of a chunk starting at byte `start_offset`, the chunk before it ending at
    byte `previous_end` (None for the first): its overlap is the bytes before that end."""
    data = text.encode("utf-8")
    overlap = max(0, (previous_end or 0) - start_offset) if previous_end is not None else 0
    return Keys(_digest(context, data), _digest(context, data[overlap:]))


def chunk_keys(chunks: Sequence[Chunk]) -> list[Keys]:
    """The keys of a cut's chunks, in order."""
    out, previous_end = [], None
    for chunk in chunks:
        out.append(keys(chunk.text, chunk.start_offset, chunk.context or None, previous_end))
        previous_end = chunk.end_offset
    return out


def stored_keys(rows: Sequence[Mapping[str, Any]]) -> list[Keys]:
    """The keys of stored chunk rows (text, start_offset, end_offset, context), in index
    order: the same as `chunk_keys` gives the cut they were stored from."""
    out, previous_end = [], None
    for row in rows:
        out.append(keys(row["text"], row["start_offset"], row["context"], previous_end))
        previous_end = row["end_offset"]
    return out


def match(
    new: Sequence[Chunk], stored: Sequence[Mapping[str, Any]], reusable: Iterable[int]
) -> dict[int, Mapping[str, Any]]:
    """New chunk index -> the stored chunk row it is, for the new chunks that match one of
    the `reusable` stored rows (by id): by whole text first, else by text after overlap."""
    allowed = set(reusable)
    by_whole: dict[str, Mapping[str, Any]] = {}
    by_body: dict[str, Mapping[str, Any]] = {}
    for row, key in zip(stored, stored_keys(stored), strict=True):
        if row["id"] in allowed:
            by_whole.setdefault(key.whole, row)
            by_body.setdefault(key.body, row)
    found: dict[int, Mapping[str, Any]] = {}
    for chunk, key in zip(new, chunk_keys(new), strict=True):
        row = by_whole.get(key.whole) or by_body.get(key.body)
        if row is not None:
            found[chunk.index] = row
    return found


def surviving(old: Sequence[Chunk], new: Sequence[Chunk]) -> tuple[int, int]:
    """How many of `new`'s chunks match one of `old`'s: (by whole text, in all)."""
    old_keys = chunk_keys(old)
    whole = {k.whole for k in old_keys}
    body = {k.body for k in old_keys}
    new_keys = chunk_keys(new)
    exact = sum(k.whole in whole for k in new_keys)
    return exact, sum(k.whole in whole or k.body in body for k in new_keys)
