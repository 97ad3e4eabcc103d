"""The checks of values a user gives (counts, ids, times, queries, amounts): one line each
when wrong, with the exit code of a usage error, the same from `gb` and from `Memory`."""

from __future__ import annotations

import math

from gligabao.base.times import canonical_time
from gligabao.errors import ConfigError, UsageError

# The most any count option (-k, --limit, --depth) takes: beyond any store, and small
# enough that the pools searches draw from it (a few times -k) still bind as SQLite's
# 64-bit integers.
MAX_COUNT = 1_000_000_000
# SQLite's ids are 64-bit integers: a larger number names no row.
MAX_ID = 2**63 - 1


def iso_time(flag: str, value: str | None) -> str | None:
    """An ISO-8601 time as gb's UTC text (gligabao.base.times); a time without zone is UTC."""
    if value is None:
        return None
    moment = canonical_time(value)
    if moment is None:
        raise ConfigError(
            f"{flag} {value!r} is not an ISO-8601 time (for example 2024-05-01 or "
            "2024-05-01T09:30:00Z)"
        )
    return moment


def count(flag: str, value: int, *, low: int = 1) -> int:
    """`value` of a count option (-k, --limit, --depth), checked: from `low` to
    MAX_COUNT, else a usage error (exit 2) saying so."""
    if not low <= value <= MAX_COUNT:
        raise UsageError(f"{flag} must be a whole number from {low} to {MAX_COUNT:,}, not {value}")
    return value


def stored_id(value: int, what: str) -> int:
    """An id argument as SQLite can look it up: one beyond 64 bits names no row, which is
    what the user is told (exit 1), as for any other id that is not there."""
    from gligabao.store.errors import NotFound

    if not -MAX_ID - 1 <= value <= MAX_ID:
        raise NotFound(f"no {what} with id {value}")
    return value


def query_text(value: str | None, *, optional: bool, what: str = "query") -> str | None:
    """A QUERY argument: None when it may be left out and is; a blank one (empty, or only
    spaces) is a usage error for every method alike, rather than "no hits" by keywords
    and a failed embedding by meaning."""
    if value is None and optional:
        return None
    if value is None or not value.strip():
        leave_out = " (or leave it out to list them all)" if optional else ""
        raise UsageError(f"the {what} {value or ''!r} is empty: say what to look for{leave_out}")
    return value


def amount(flag: str, value: float | None) -> float | None:
    """A money or time option: a finite number >= 0 (not nan, not inf), else exit 2."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise UsageError(f"{flag} must be a finite number, 0 or more, not {value}")
    return value
