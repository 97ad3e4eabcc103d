"""Counts said in words: a noun agrees with the number before it (``1 chunk``, ``2
chunks``), wherever gb prints a count for a person to read."""

from __future__ import annotations

import itertools
import re

__all__ = ["counted", "plural", "real_text"]

_LETTERS = re.compile(r"[^\W\d_]+")
# Words of letters a text needs to be prose a model should find something in: a table of
# figures, a code listing or a licence header short of this may rightly give nothing.
REAL_TEXT_WORDS = 50


def plural(n: float, noun: str, many: str | None = None) -> str:
    """``noun`` as it reads after the count ``n``: as it is for exactly one, else its
    plural (``many``, or made by the English rules for the nouns gb counts). Only the
    noun: the caller writes the number as it writes numbers there (``3,727``, ``3727``)."""
    if n == 1:
        return noun
    if many is not None:
        return many
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u", ""):  # entity
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def counted(n: int, noun: str, many: str | None = None) -> str:
    """``n`` and its noun, the number plain: ``1 chunk``, ``0 chunks``, ``12 chunks``."""
    return f"{n} {plural(n, noun, many)}"


def real_text(text: str) -> bool:
    """Whether `text` is more than `REAL_TEXT_WORDS` words of letters: a text whose
    extraction giving no entity and no fact says more about the model than the text."""
    words = _LETTERS.finditer(text)
    return next(itertools.islice(words, REAL_TEXT_WORDS, None), None) is not None
