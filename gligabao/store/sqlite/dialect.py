"""The pieces of SQL that SQLite writes its own way, for the store's shared queries
(store/dialect.py picks this module or PostgreSQL's by the connection)."""

from __future__ import annotations

__all__ = [
    "byte_length",
    "byte_prefix",
    "id_list",
    "ids_given",
    "instant",
    "instant_of",
    "json_texts",
    "now",
    "text_list",
]


def id_list(param: str) -> str:
    """The integers of a JSON array parameter, as a subquery (`x IN id_list("?")`)."""
    return f"(SELECT value FROM json_each({param}))"


text_list = id_list  # SQLite's json_each gives each value its JSON type


def instant(column: str) -> str:
    """A column's time as a number that orders as the instant, or NULL when the column
    holds no ISO date: gb stores times in one form, but a file may hold what an older gb
    stored as the LLM gave it, and julianday('2019') is a day of 4707 BC."""
    return (
        f"(CASE WHEN {column} GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' "
        f"THEN julianday({column}) END)"
    )


def instant_of(expr: str) -> str:
    """A time gb wrote itself (a parameter, a created_at) as an instant."""
    return f"julianday({expr})"


def now() -> str:
    return "julianday('now')"


def byte_prefix(expr: str, length: str) -> str:
    """The first `length` bytes of a text in UTF-8."""
    return f"substr(CAST({expr} AS BLOB), 1, {length})"


def byte_length(expr: str) -> str:
    return f"length(CAST({expr} AS BLOB))"


def json_texts(column: str, *path: str) -> str:
    """The strings of the JSON array at `path` in a JSON text column, as a subquery."""
    return f"(SELECT value FROM json_each({column}, '$.{'.'.join(path)}'))"


def ids_given(table: str) -> str | None:
    """What to run after rows were written with the ids they had elsewhere: nothing, as
    SQLite hands out the next id after the largest there."""
    return None
