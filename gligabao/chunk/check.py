"""What to check in a cut (``gb chunk-preview --check``): whether each chunk stands on its own.

A chatbot may get one chunk without its neighbours, and its follow-up search reads only
the first `READ_CHARS` characters of each. Three things are flagged, each with a
suggestion:

- ``reference``: the chunk points at text it may not hold ("see above", "repeat the
  steps above", "as mentioned earlier", "the previous step", "described below"): the
  phrases of `REFERENCE_PATTERNS`, English regular expressions, matched without regard to
  case; extend the tuple (or pass ``references``) to add phrases or languages. One that
  points forward ("below", "the following") is flagged only near the chunk's end, with
  less than `FORWARD_ROOM` characters after it: further up, what it points at follows;
- ``repeated_start``: a paragraph at the start of a chunk (in its first `READ_CHARS`
  characters) that the start of an earlier chunk holds too: a warning or preamble
  repeated at the top of every part. Flagged when the preamble has `PREAMBLE_CHARS`
  characters or more and, with the overlap with the previous chunk, at least
  `REPEATED_START_CHARS` of those first characters are repeated text, which the finding
  counts (overlap alone is the cut's own doing, and not flagged);
- ``split_procedure`` and ``split_table``: a chunk starts inside a numbered procedure (an
  ordered list of two items or more) or a table that began in the chunk before.

Only a text cut into several chunks is checked: one that fits in a chunk is read whole.
The procedures and tables are those markdown-it finds in the whole text, whatever the
mode it was cut in.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gligabao.chunk.text import Chunk
from gligabao.chunk.tokens import ESTIMATOR, Tokenizer

__all__ = [
    "FORWARD_ROOM",
    "PREAMBLE_CHARS",
    "READ_CHARS",
    "REFERENCE_PATTERNS",
    "REPEATED_START_CHARS",
    "ChunkCheck",
    "Finding",
    "check_chunks",
]

READ_CHARS = 800  # what a chatbot's follow-up search reads of each chunk
REPEATED_START_CHARS = 200  # a quarter of what is read: less repeated is not flagged
PREAMBLE_CHARS = 100  # nor a shorter preamble (a repeated import line, a short note)
FORWARD_ROOM = 200  # a "below" with this many characters after it in its chunk is fine
_MIN_PARAGRAPH = 30  # shorter paragraphs ("Note:", a rule) repeat without harm

# Phrases that lean on text before or after them. Each is a regular expression matched
# case-insensitively at word bounds; a list others may extend, or replace per call.
REFERENCE_PATTERNS: tuple[str, ...] = (
    r"(?:see|shown|listed|described|explained|given|mentioned|outlined|noted|defined|"
    r"covered|discussed) (?:above|below|earlier|previously|before)",
    r"as (?:mentioned|described|explained|shown|noted|discussed|stated|seen|outlined|"
    r"covered|defined) (?:above|below|earlier|previously|before)",
    r"(?:repeat|redo|follow|complete|perform|do) (?:all )?(?:the |these |those )?"
    r"(?:steps?|instructions|procedure) (?:above|below|again)",
    r"the (?:steps?|instructions|procedure|example|table|list|code|command|commands|"
    r"figure|image|diagram|section|paragraph|warning|note|settings?|options?) "
    r"(?:above|below)",
    r"the (?:above|preceding|foregoing|aforementioned) \w+",
    r"the (?:previous|preceding|last|prior) (?:steps?|section|chapter|paragraph|example|"
    r"page|procedure|instructions|table|command|part)",
    r"(?:in|from) (?:the )?(?:previous|preceding|earlier) (?:steps?|sections?|chapters?|"
    r"examples?|parts?)",
    r"the following (?:section|chapter|steps?|table|example)s?",
    r"earlier in this (?:article|document|guide|section|chapter|page)",
    r"as before",
)
# What a finding suggests, by kind.
SUGGESTIONS = {
    "reference": "say what it refers to (name the step or setting, or repeat the short "
    "part it needs), so the chunk stands on its own",
    "repeated_start": "move the warning or preamble out of each part (say it once, in a "
    "section of its own, or after the steps), so each chunk's first {window} characters "
    "hold its own content",
    "split_procedure": "keep the procedure in one section that fits in a chunk: shorten it, "
    "or break the section into h3 sub-sections at natural points",
    "split_procedure_large": "the procedure is larger than a chunk: break it into h3 "
    "sub-sections at natural points, each a procedure of its own",
    "split_table": "break the table into smaller tables, each under an h3 heading of its "
    "own, or move it to a section of its own",
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a chunk may lack: its ``kind`` (see the module docstring), what was
    found (``said``), the ``suggestion``, the ``excerpt`` it concerns, and figures."""

    kind: str
    said: str
    suggestion: str
    excerpt: str = ""
    figures: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "said": self.said,
            "suggestion": self.suggestion,
            "excerpt": self.excerpt,
            **self.figures,
        }


@dataclass(frozen=True, slots=True)
class ChunkCheck:
    """A chunk's findings; none for a chunk that stands on its own."""

    chunk: Chunk
    findings: tuple[Finding, ...]

    def as_json(self) -> dict[str, Any]:
        c = self.chunk
        return {
            "index": c.index,
            "start_offset": c.start_offset,
            "end_offset": c.end_offset,
            "section": c.section,
            "findings": [f.as_json() for f in self.findings],
        }


def check_chunks(
    text: str,
    chunks: Sequence[Chunk],
    *,
    chunk_size: int | None = None,
    tokenizer: Tokenizer | None = None,
    references: Sequence[str] = REFERENCE_PATTERNS,
    window: int = READ_CHARS,
) -> list[ChunkCheck]:
    """Each chunk of ``text``'s cut, with what it may lack on its own (see the module
    docstring); ``chunk_size`` and ``tokenizer`` (the cut's) tell a procedure that cannot
    fit in a chunk from one that could. No chunks (a text that fits in one) give no checks."""
    if len(chunks) < 2:
        return []
    found: list[list[Finding]] = [[] for _ in chunks]
    _references(chunks, found, references)
    _repeated_starts(chunks, found, window)
    _splits(text, chunks, found, chunk_size, tokenizer)
    return [ChunkCheck(c, tuple(f)) for c, f in zip(chunks, found, strict=True)]


# --------------------------------------------------------------------------- references


def _reference_pattern(references: Sequence[str]) -> re.Pattern[str]:
    alternatives = "|".join(f"(?:{p})" for p in references)
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


_DEFAULT_REFERENCES = _reference_pattern(REFERENCE_PATTERNS)
_FORWARD = re.compile(r"\b(?:below|following)\b", re.IGNORECASE)


def _references(
    chunks: Sequence[Chunk], found: list[list[Finding]], references: Sequence[str]
) -> None:
    if not references:
        return
    same = tuple(references) == REFERENCE_PATTERNS
    pattern = _DEFAULT_REFERENCES if same else _reference_pattern(references)
    for c, into in zip(chunks, found, strict=True):
        for m in pattern.finditer(c.text):
            phrase = " ".join(m.group().split())
            if _FORWARD.search(phrase) and len(c.text) - m.end() >= FORWARD_ROOM:
                continue  # what it points at most likely follows in the chunk
            into.append(
                Finding(
                    "reference",
                    f'"{phrase}" points at text this chunk may not hold',
                    SUGGESTIONS["reference"],
                    _around(c.text, m.start(), m.end()),
                    {"phrase": phrase, "at": m.start()},
                )
            )


def _around(text: str, start: int, end: int, width: int = 60) -> str:
    """The line of ``text`` around ``[start, end)``, at most ``width`` characters each side."""
    lo = max(text.rfind("\n", 0, start) + 1, start - width)
    hi = text.find("\n", end)
    hi = min(len(text) if hi < 0 else hi, end + width)
    excerpt = " ".join(text[lo:hi].split())
    return (
        ("…" if lo > 0 and text[lo - 1] != "\n" else "")
        + excerpt
        + ("…" if hi < len(text) and text[hi] != "\n" else "")
    )


# --------------------------------------------------------------------------- repeated starts

_HEADING = re.compile(r"#{1,6}(?:\s|$)")  # an ATX heading's paragraph, words joined
_PARAGRAPH = re.compile(r"\S(?:.|\n(?![ \t]*\n))*", re.MULTILINE)


def _paragraphs(text: str, limit: int) -> list[tuple[int, int, str]]:
    """The paragraphs of ``text`` that start before ``limit``: (start, end, words)."""
    out = []
    for m in _PARAGRAPH.finditer(text):
        if m.start() >= limit:
            break
        out.append((m.start(), m.end(), " ".join(m.group().split())))
    return out


def _repeated_starts(chunks: Sequence[Chunk], found: list[list[Finding]], window: int) -> None:
    """The paragraphs a chunk's new text starts with (after its overlap with the chunk
    before, headings aside) that the first ``window`` characters of an earlier chunk hold
    too: a preamble the author repeats at the top of each part."""
    seen: dict[str, int] = {}  # a paragraph near the start of a chunk: its first chunk
    prev_end = 0
    for i, c in enumerate(chunks):
        overlap = max(0, min(prev_end - c.start, len(c.text))) if i else 0
        paragraphs = _paragraphs(c.text, window)
        repeated = 0
        first_seen: int | None = None
        example = ""
        for start, end, words in paragraphs:
            if end <= overlap or _HEADING.match(words):
                continue
            if len(words) < _MIN_PARAGRAPH or words not in seen:
                break  # the leading run of repeated paragraphs ends here
            repeated += max(0, min(end, window) - max(start, overlap))
            if first_seen is None:
                first_seen, example = seen[words], words
        for _, _, words in paragraphs:
            seen.setdefault(words, i)
        prev_end = c.end
        in_window = min(overlap, window)
        total = min(repeated + in_window, window)
        if first_seen is None or repeated < PREAMBLE_CHARS or total < REPEATED_START_CHARS:
            continue
        said = f"{total} of its first {window} characters repeat earlier text: {repeated} of a " + (
            f"preamble chunk {first_seen + 1} starts with too"
        )
        if in_window:
            said += f", {in_window} of overlap with chunk {i}"
        found[i].append(
            Finding(
                "repeated_start",
                said,
                SUGGESTIONS["repeated_start"].format(window=window),
                _short(example),
                {
                    "window": window,
                    "repeated_chars": total,
                    "preamble_chars": repeated,
                    "overlap_chars": in_window,
                    "first_chunk": first_seen,
                },
            )
        )


def _short(words: str, limit: int = 120) -> str:
    return words if len(words) <= limit else words[: limit - 1].rstrip() + "…"


# --------------------------------------------------------------------------- splits


def _splits(
    text: str,
    chunks: Sequence[Chunk],
    found: list[list[Finding]],
    chunk_size: int | None,
    tokenizer: Tokenizer | None,
) -> None:
    """A chunk that starts inside a numbered procedure or a table begun in a chunk before
    it: reported on each such chunk."""
    starts = [c.start for c in chunks]
    for kind, start, end, parts in _blocks(text):
        if any(c.start <= start and end <= c.end for c in chunks):
            continue  # one chunk holds it whole
        n = len(parts)
        large = (
            kind == "procedure"
            and chunk_size is not None
            and (tokenizer or ESTIMATOR).count(text[start:end]) > chunk_size
        )
        for k in range(bisect_right(starts, start), bisect_left(starts, end)):
            c = chunks[k]
            part = max(bisect_right(parts, c.start), 1)  # the part it starts in, from 1
            begins = bisect_right(starts, start) - 1  # the chunk the block starts in
            if kind == "procedure":
                said = (
                    f"starts at step {part} of a numbered procedure of {n} steps that "
                    f"begins in chunk {begins + 1}"
                )
                key = "split_procedure_large" if large else "split_procedure"
            else:
                said = f"starts at row {part} of {n} of a table that begins in chunk {begins + 1}"
                key = "split_table"
            excerpt = _short(" ".join(text[parts[part - 1] : parts[part - 1] + 200].split()))
            found[k].append(
                Finding(
                    f"split_{kind}",
                    said,
                    SUGGESTIONS[key],
                    excerpt,
                    {"part": part, "parts": n, "begins_in": begins},
                )
            )


_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # CommonMark's line endings


def _blocks(text: str) -> list[tuple[str, int, int, list[int]]]:
    """The numbered procedures (outermost ordered lists of two items or more) and tables
    of ``text``: (kind, start, end, where each item or body row starts), in characters."""
    from markdown_it import MarkdownIt  # only a check parses the whole text again

    parser = MarkdownIt("commonmark").enable("table").disable(["inline", "text_join"])
    tokens = parser.parse(text)
    lines = [0, *(m.end() for m in _LINE_BREAK.finditer(text)), len(text)]
    blocks: list[tuple[str, int, int, list[int]]] = []
    depth = 0
    for i, t in enumerate(tokens):
        if t.type == "ordered_list_close":
            depth -= 1
        elif t.type == "ordered_list_open":
            depth += 1
            if depth == 1 and t.map:
                items = [
                    lines[u.map[0]]
                    for u in tokens[i + 1 :]
                    if u.type == "list_item_open"
                    and u.level == t.level + 1
                    and u.map
                    and u.map[0] < t.map[1]
                ]
                if len(items) >= 2:
                    blocks.append(
                        ("procedure", lines[t.map[0]], _end(text, lines, t.map[1]), items)
                    )
        elif t.type == "table_open" and t.map:
            rows = [
                lines[u.map[0]]
                for u in tokens[i + 1 :]
                if u.type == "tr_open" and u.map and u.map[0] < t.map[1]
            ]
            blocks.append(("table", lines[t.map[0]], _end(text, lines, t.map[1]), rows[1:] or rows))
    return blocks


def _end(text: str, lines: list[int], line: int) -> int:
    """Where line ``line`` starts, trailing whitespace before it dropped."""
    end = lines[min(line, len(lines) - 1)]
    while end > 0 and text[end - 1].isspace():
        end -= 1
    return end
