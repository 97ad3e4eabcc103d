"""Turning arbitrary user text into a safe FTS5 query.

FTS5 has its own query language (AND, OR, NOT, NEAR, quotes, `col:`, `*`, `^`...), so a
name like `C++ "Foo" AND` passed as-is raises a syntax error or means something else.
Each word is taken out and quoted as a string, and the words are joined with OR: every
word is a possible match, and bm25 ranks the rows that match more of them first.
"""

from __future__ import annotations

import re

__all__ = ["fts_query"]

# \w in Python's Unicode mode covers letters and digits of every script, like the
# unicode61 tokenizer; everything else only separates words.
_WORD = re.compile(r"\w+")


def fts_query(text: str, *, column: str | None = None, max_terms: int = 64) -> str | None:
    """An FTS5 MATCH expression for `text`, or None when it holds no word at all.

    `column` restricts the match to one column (a fixed identifier, never user text).
    """
    words: list[str] = []
    for word in _WORD.findall(text):
        if word not in words:
            words.append(word)
        if len(words) == max_terms:
            break
    if not words:
        return None
    # A string in double quotes is a phrase of literal tokens; quotes inside are doubled.
    expr = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
    return f"{column} : ({expr})" if column else expr
