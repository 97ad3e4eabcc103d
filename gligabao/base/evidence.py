"""Evidence, to the line: where a chunk states a fact (a chunk has to point home: offsets
are carried, never recovered by searching the whole document).

The extraction gives each fact the first words of the sentence of its chunk that states
it (a model copying whole sentences pays for each word twice). `locate_quote` finds them
in the chunk's exact text, as given first, then tolerantly (any run of whitespace for a
space, any case), reaches on to the end of their sentence, and turns that span into UTF-8
byte offsets in the document by the chunk's own start offset. A quote not found leaves
the chunk's span standing for it, not exact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["QuoteSpan", "locate_quote"]

_MAX_QUOTE = 2000  # characters kept of a quote: an answer is not a place to store a chunk
# A sentence ends at . ! or ? (a closing quote or bracket after it) before a space, or at
# a blank line. One that runs on longer than _MAX_REACH (a list, code) ends at the words.
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s|$)|\n[ \t]*\n")
_MAX_REACH = 600


@dataclass(frozen=True, slots=True)
class QuoteSpan:
    """Where a chunk states a fact: the passage found (the extraction's words where none
    was), its UTF-8 byte span in the document (None: unknown, the chunk's span stands for
    it), and whether the words were found in the chunk's text as given (exact) or only
    tolerantly, or not at all."""

    quote: str | None
    start_offset: int | None
    end_offset: int | None
    exact: bool


def locate_quote(quote: str | None, chunk_text: str, chunk_start: int = 0) -> QuoteSpan:
    """The evidence of `quote` in `chunk_text`, whose first byte is byte `chunk_start` of
    its document."""
    quote = (quote or "").strip()[:_MAX_QUOTE]
    if not quote:
        return QuoteSpan(None, None, None, False)
    at = chunk_text.find(quote)
    if at >= 0:
        return _span(quote, chunk_text, chunk_start, at, at + len(quote), exact=True)
    words = quote.split()
    pattern = r"\s+".join(re.escape(word) for word in words)
    found = re.search(pattern, chunk_text, flags=re.IGNORECASE)
    if found is None:
        return QuoteSpan(quote, None, None, False)
    return _span(quote, chunk_text, chunk_start, found.start(), found.end(), exact=False)


def _span(quote: str, text: str, base: int, start: int, end: int, *, exact: bool) -> QuoteSpan:
    end = _sentence_end(text, start, end)
    start_byte = base + len(text[:start].encode("utf-8"))
    end_byte = start_byte + len(text[start:end].encode("utf-8"))
    # The passage found is the quote kept: the model gave only its first words.
    return QuoteSpan(text[start:end][:_MAX_QUOTE], start_byte, end_byte, exact)


def _sentence_end(text: str, start: int, end: int) -> int:
    """The end of the sentence that the words at `start`..`end` begin: `end` itself when
    they end one, or when no end comes within reach."""
    for found in _SENTENCE_END.finditer(text, start, min(len(text), end + _MAX_REACH)):
        if found.group().startswith("\n"):
            if found.start() >= end:
                return found.start()
        elif found.end() >= end:
            return found.end()
    return end
