"""Secrets kept out of every message, log line and trace: keys, bearer tokens, and the
credentials a URL may carry (its user and password, a query parameter named like one)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

__all__ = ["mask", "safe_url", "scrub"]

# Query parameters whose values are credentials (api_key, access_token, sig, ...).
_SECRET_PARAM = re.compile(r"(?i)key|token|secret|passw|auth|sig|credential")
_BEARER = re.compile(r"(?i)(bearer\s+)\S+")
_OPENAI_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")


def mask(secret: str) -> str:
    """A secret as `gb config` shows it: its last four characters when it is long enough
    that they give nothing away."""
    return "****" + secret[-4:] if len(secret) > 12 else "****"


def scrub(text: str, secrets: Sequence[str | None] = ()) -> str:
    """`text` with every secret, bearer token and OpenAI-style key masked, so none reaches
    the database, a trace, a log or an error message."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "****")
    # Each pattern only where its words are: every call's request is scrubbed for its
    # record, and a regex scan of a few KiB costs ~50 us where `in` costs ~1.
    if "bearer" in text.lower():
        text = _BEARER.sub(r"\1****", text)
    if "sk-" in text:
        text = _OPENAI_KEY.sub("sk-****", text)
    return text


def safe_url(url: str) -> str:
    """A base URL fit for a message, a log line or `gb config`: a user or password in it
    shown as ****, as is each query parameter named like a credential; host, port (as
    written: IPv6 too), path and other parameters kept, so the user knows which it is."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an IPv6 host with no closing bracket
        return "(an unreadable URL)"
    host = parts.netloc.rpartition("@")[2]
    netloc = f"****@{host}" if "@" in parts.netloc else host
    query = "&".join(
        f"{name}=****" if value and _SECRET_PARAM.search(name) else f"{name}{eq}{value}"
        for name, eq, value in (p.partition("=") for p in parts.query.split("&") if p)
    )
    return scrub(urlunsplit((parts.scheme, netloc, parts.path, query, "")))
