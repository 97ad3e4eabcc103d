"""The few lines of a hit that best match its query: what `gb search` shows by default.

A chunk is 25 to 70 lines; a user scanning hits wants the lines that made it a hit, with
their numbers to open the file there. The window of `size` lines holding the most of
the query's words (each word counted once, then every occurrence) wins; a hit found by
meaning alone, with none of the words, shows its first lines. A line longer than a
terminal can show is cut around its first match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"\w+")
_LONGEST_LINE = 240  # characters of one line shown; a paragraph-long line is cut to this
SIZE = 3  # lines a snippet shows


@dataclass(frozen=True)
class Snippet:
    line_start: int  # 1-based, in the document
    line_end: int
    text: str


def query_words(query: str) -> list[str]:
    """The query's words, lowercased, each once, in order."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))


def _stem(word: str) -> str:
    # BM25 matched "terminate" for "termination" (porter stems): match a word's start.
    return word if len(word) <= 4 else word[: max(4, len(word) - 3)]


def _stems(words: list[str]) -> list[str]:
    return sorted({_stem(w) for w in words}, key=len, reverse=True)


def word_pattern(words: list[str]) -> re.Pattern[str] | None:
    """Matches any of `words` at a word start, as their stems (see _stem)."""
    stems = _stems(words)
    if not stems:
        return None
    return re.compile(r"(?i)\b(?:" + "|".join(re.escape(s) for s in stems) + r")\w*")


def snippet(text: str, query: str, first_line: int | None, size: int = SIZE) -> Snippet:
    """The `size` lines of `text` that best match `query`; `first_line` is the document
    line `text` starts on (None: numbered from 1)."""
    lines = text.split("\n")
    stems = _stems(query_words(query))
    pattern = word_pattern(query_words(query))
    found = [_found(line, pattern, stems) for line in lines]
    best, best_score = _first_with_text(lines), (0, 0)
    for start in range(len(lines)):
        if not lines[start].strip():  # a snippet begins with words
            continue
        window = found[start : start + size]
        score = (len(set().union(*window)), sum(len(f) for f in window))
        if score > best_score:
            best, best_score = start, score
    end = min(len(lines), best + size)
    while end > best + 1 and not lines[end - 1].strip():  # no blank line at its end
        end -= 1
    shown = [_cut(line, pattern) for line in lines[best:end]]
    base = first_line if first_line is not None else 1
    return Snippet(base + best, base + end - 1, "\n".join(shown))


def _found(line: str, pattern: re.Pattern[str] | None, stems: list[str]) -> list[str]:
    """The stem of each query word matched in `line`, once per occurrence."""
    if pattern is None:
        return []
    matched = (m.group(0).lower() for m in pattern.finditer(line))
    return [next(s for s in stems if word.startswith(s)) for word in matched]


def _first_with_text(lines: list[str]) -> int:
    return next((i for i, line in enumerate(lines) if line.strip()), 0)


def _cut(line: str, pattern: re.Pattern[str] | None) -> str:
    if len(line) <= _LONGEST_LINE:
        return line
    match = pattern.search(line) if pattern is not None else None
    start = 0 if match is None else max(0, match.start() - _LONGEST_LINE // 3)
    end = start + _LONGEST_LINE
    return ("…" if start else "") + line[start:end].strip() + ("…" if end < len(line) else "")
