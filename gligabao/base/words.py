"""Counts said in words: a noun agrees with the number before it (``1 chunk``, ``2
chunks``), wherever gb prints a count for a person to read."""

from __future__ import annotations

__all__ = ["counted", "plural"]


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
