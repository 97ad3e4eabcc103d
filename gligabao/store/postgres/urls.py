"""What a PostgreSQL URL is, without the rest of postgres/: opening.py tells a URL from
a file's path with it at every start, and an SQLite store needs nothing more of here."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit, urlunsplit

__all__ = ["DEFAULT_SCHEMA", "is_url", "safe_db_url"]

DEFAULT_SCHEMA = "gligabao"
_SCHEMES = ("postgresql://", "postgres://")


def is_url(target: str) -> bool:
    """Whether `target` names a PostgreSQL database rather than an SQLite file."""
    return target.startswith(_SCHEMES)


def safe_db_url(url: str) -> str:
    """The URL fit for a message: its password (in the URL or a `password` parameter)
    as ****, the rest kept so the user knows which server and database it is."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(an unreadable URL)"
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.partition(':')[0]}:****@{host}"
    query = "&".join(
        f"{name}=****" if name.lower() == "password" else f"{name}={value}"
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
