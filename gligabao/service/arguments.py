"""The checks of values a user gives (counts, ids, times, queries, amounts): one line each
when wrong, with the exit code of a usage error, the same from `gb` and from `Memory`."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from gligabao.errors import UsageError

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
    from gligabao.base.times import canonical_time  # datetime: ~1 ms of every start

    moment = canonical_time(value)
    if moment is None:  # a value given in the call: a usage error (exit 2), as -k 0 is
        raise UsageError(
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


def fits(value: int) -> bool:
    """Whether an id can name a row: SQLite's ids are 64-bit integers."""
    return -MAX_ID - 1 <= value <= MAX_ID


class Checks:
    """The checks above at the service's entry, each message naming the argument as the
    face calling says it: `names` maps an argument to its flag (`{"k": "-k"}`); a
    program's call is told the argument's own name."""

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = names

    def name(self, argument: str) -> str:
        return self.names.get(argument, argument)

    def choice(self, argument: str, value: str, choices: Sequence[str]) -> str:
        if value not in choices:
            raise UsageError(
                f"{self.name(argument)} must be one of {', '.join(choices)}, not {value!r}"
            )
        return value

    def whole(self, argument: str, value: int, *, what: str | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"{what or self.name(argument)} must be a whole number, not {value!r}")
        return value

    def count(self, argument: str, value: int, *, low: int = 1) -> int:
        return count(self.name(argument), self.whole(argument, value), low=low)

    def stored_id(self, argument: str, value: int, what: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise UsageError(f"a {what} id is a whole number, not {value!r}")
        return stored_id(value, what)

    def text(
        self, argument: str, value: str | None, *, optional: bool = False, what: str = "{}"
    ) -> str:
        """A text to look for; `what` is how the message calls it, `{}` the argument."""
        said = what.format(self.name(argument))
        if value is not None and not isinstance(value, str):
            raise UsageError(f"the {said} must be a text, not {value!r}")
        return query_text(value, optional=optional, what=said)  # type: ignore[return-value]

    def time(self, argument: str, value: str | None) -> str | None:
        return iso_time(self.name(argument), value)

    def amount(self, argument: str, value: float | None) -> float | None:
        return amount(self.name(argument), value)
