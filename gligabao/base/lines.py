"""Line numbers of byte spans: how a place in a document is shown as `path:LINE`."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

__all__ = ["LineIndex", "line_range", "lines_between", "mapped_lines", "newline_offsets"]


def line_range(data: bytes, start: int, end: int) -> tuple[int, int]:
    """1-based lines of the bytes data[start:end]: the line of `start` and that of the
    last byte before `end` (a span ending with its newline ends on that line)."""
    start = max(0, min(start, len(data)))
    last = max(start, min(end, len(data)) - 1)
    first_line = data.count(b"\n", 0, start) + 1
    return first_line, first_line + data.count(b"\n", start, last)


def newline_offsets(data: bytes) -> list[int]:
    """The offsets of every newline of `data`: to number the lines of many spans of one
    document (lines_between) without counting from its start each time."""
    return [m.start() for m in re.finditer(b"\n", data)]


def lines_between(newlines: list[int], start: int, end: int) -> tuple[int, int]:
    """line_range(data, start, end), from `newline_offsets(data)`."""
    first = bisect.bisect_left(newlines, start) + 1
    return first, bisect.bisect_left(newlines, max(start, end - 1)) + 1


class LineIndex:
    """The lines of many spans of one text, its newlines found once."""

    def __init__(self, text: str) -> None:
        self._newlines = newline_offsets(text.encode("utf-8", "surrogatepass"))

    def span(self, start: int, end: int) -> tuple[int, int]:
        """line_range of the UTF-8 bytes [start, end) of the text."""
        return lines_between(self._newlines, start, end)


def mapped_lines(
    line_map: Sequence[Sequence[int]] | None, start: int, end: int
) -> tuple[int, int] | None:
    """The lines of the file that the bytes [start, end) of a document's text stand for,
    by a ``line_map`` stored in an artifact's locations (``[start, end, first, last]``
    spans: a web page's markdown, whose lines are not the file's); None without one."""
    found = [
        (first, last)
        for s, e, first, last in line_map or ()
        if s < max(end, start + 1) and e > start
    ]
    if not found:
        return None
    return found[0][0], max(last for _, last in found)
