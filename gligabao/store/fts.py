"""Turning arbitrary user text into a safe FTS5 query.

FTS5 has its own query language (AND, OR, NOT, NEAR, quotes, `col:`, `*`, `^`...), so a
name like `C++ "Foo" AND` passed as-is raises a syntax error or means something else.
Each word is taken out and quoted as a string, and the words are joined with OR: every
word is a possible match, and bm25 ranks the rows that match more of them first.
"""

from __future__ import annotations

import re

import apsw

from gligabao.store.db import scalar

__all__ = ["fts_query", "telling_words", "words_of"]

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


def _phrase(word: str) -> str:
    # A string in double quotes is a phrase of literal tokens; quotes inside are doubled.
    return '"' + word.replace('"', '""') + '"'


def fts_query(
    text: str | list[str], *, column: str | None = None, max_terms: int = 64
) -> str | None:
    """An FTS5 MATCH expression for `text` (or for words already taken out of it, as
    `words_of` gives them), or None when it holds no word at all.

    `column` restricts the match to one column (a fixed identifier, never user text).
    """
    words = words_of(text, max_terms) if isinstance(text, str) else text
    if not words:
        return None
    expr = " OR ".join(_phrase(w) for w in words)
    return f"{column} : ({expr})" if column else expr


def telling_words(conn: apsw.Connection, table: str, words: list[str]) -> list[str]:
    """`words` less those found in at least half of the rows of the FTS5 table `table`,
    unless that is every one of them.

    bm25 weighs such a word at nothing: FTS5 gives it an idf of 1e-6, for
    log((rows - n + 0.5) / (n + 0.5)) is not positive, so it changes no row's score by
    more than ~2e-6. Yet FTS5 scores every row that holds it, and scoring is what a
    keyword search spends its time on: at 100,000 chunks the bench's queries matched
    ~60,000 rows, and a question's "how", "the" or "of" match nearly every one. Without
    them the rows that match the other words rank as with them (but for ties closer than
    ~2e-6), ahead of the rows that hold only such words: a caller wanting more rows than
    the other words find searches for all of them (artifacts.search_artifacts_fts).
    Counting is cheap: FTS5 counts a word's rows from its index alone, up to half.
    """
    if len(words) < 2:
        return words
    # One row of the table's docsize shadow table a row (FTS5's `columnsize`, on by
    # default): the row count bm25 itself reads, without reading the rows.
    rows = scalar(conn, f'SELECT count(*) FROM "{table}_docsize"')
    half = (rows + 1) // 2  # n >= rows / 2, in integers
    common = {
        word
        for word in words
        if scalar(
            conn,
            f'SELECT count(*) FROM (SELECT 1 FROM "{table}" WHERE "{table}" MATCH ? LIMIT {half})',
            (_phrase(word),),
        )
        >= half
    }
    return [w for w in words if w not in common] or words
