"""The pieces of SQL that PostgreSQL writes its own way, for the store's shared queries
(store/dialect.py picks this module or SQLite's by the connection)."""

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
    return f"(SELECT value::bigint FROM json_array_elements_text(CAST({param} AS json)) j(value))"


def text_list(param: str) -> str:
    return f"(SELECT value FROM json_array_elements_text(CAST({param} AS json)) j(value))"


def instant(column: str) -> str:
    """A column's time as a timestamp, or NULL when the column holds no ISO date (what
    an older gb stored as the LLM gave it): never an error for a bad one."""
    return (
        f"(CASE WHEN {column} ~ '^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}' "
        f"AND pg_input_is_valid({column}, 'timestamptz') "
        f"THEN CAST({column} AS timestamptz) END)"
    )


def instant_of(expr: str) -> str:
    """A time gb wrote itself (a parameter, a created_at) as an instant."""
    return f"CAST({expr} AS timestamptz)"


def now() -> str:
    return "now()"


def byte_prefix(expr: str, length: str) -> str:
    """The first `length` bytes of a text in UTF-8. Its first `length` characters are
    taken first (they hold those bytes): PostgreSQL reads and decompresses only that
    part of a long text, where converting the whole text read all of it, every hit.
    `length` is named twice: a named parameter, never `?`."""
    return f"substring(convert_to(substr({expr}, 1, {length}), 'UTF8') from 1 for {length})"


def byte_length(expr: str) -> str:
    return f"octet_length({expr})"


def json_texts(column: str, *path: str) -> str:
    """The strings of the JSON array at `path` in a JSON text column, as a subquery."""
    return (
        f"(SELECT value FROM json_array_elements_text(CAST({column} AS json) "
        f"#> '{{{','.join(path)}}}') j(value))"
    )


def ids_given(table: str) -> str | None:
    """What to run after rows were written with the ids they had elsewhere: the table's
    id sequence moved past them, or the next row made here would take one of theirs."""
    return (
        f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), coalesce(max(id), 1), "
        f"max(id) IS NOT NULL) FROM {table}"
    )
