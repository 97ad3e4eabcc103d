"""The words a keyword query is made of, whichever database looks them up (fts.py)."""

from __future__ import annotations

import re

__all__ = ["words_of"]

# \w in Python's Unicode mode covers letters and digits of every script, like the
# unicode61 tokenizer; everything else only separates words.
_WORD = re.compile(r"\w+")


def words_of(text: str, max_terms: int = 64) -> list[str]:
    """The distinct words of `text` in order, at most `max_terms`."""
    words: list[str] = []
    for word in _WORD.findall(text):
        if word not in words:
            words.append(word)
        if len(words) == max_terms:
            break
    return words
