"""Times as gb stores and compares them: ISO-8601 UTC text, `2024-05-01T09:30:00.000Z`,
which sorts as it reads and which SQLite's julianday() reads.

A fact's `valid_at` and `invalid_at` come from an LLM, which may answer "2019",
"2019-03", "2024-05-01 09:30+02:00", or "last March". `canonical_time` turns every form
of an ISO date or date-time into the one form, a year or a month into its first day, and
anything else into None (unknown): a raw "yesterday" stored would compare as a date.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

__all__ = ["canonical_time"]

_YEAR_MONTH = re.compile(r"(\d{4})(?:-(\d{2}))?")


def canonical_time(value: object) -> str | None:
    """`value` as gb's UTC time text, or None when it is no ISO-8601 date or time (a
    time without a zone is taken as UTC)."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    short = _YEAR_MONTH.fullmatch(text)
    if short:  # a year, or a year and month: their first day
        text = f"{short.group(1)}-{short.group(2) or '01'}-01"
    try:
        moment = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        utc = moment.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T00:00+01:00 is before year 1 in UTC
        return None
    # The year by hand: strftime("%Y") drops the leading zeros of a year before 1000 on
    # glibc, and "1-01-01" would neither sort nor read as a date.
    return f"{utc.year:04d}-" + utc.strftime("%m-%dT%H:%M:%S.%f")[:-3] + "Z"
