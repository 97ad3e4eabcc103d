"""Where LLM calls go and how their failures read, without the ``openai`` SDK.

The SDK takes ~0.45 s to import, more than four times what a `gb search` may take in
all, so what a query's one embeddings request needs (the endpoints and keys the
configuration resolves to, secret scrubbing, the retry policy, the error's wording)
lives here, shared by the SDK-based `client.LLM` and the standard-library `query`.

    LLMError(GbError)   a call failed: "<stage> (<model>): <cause>", never with a secret
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from gligabao.config import Config
from gligabao.errors import ConfigError, GbError

__all__ = [
    "DEFAULT_BASE_URL",
    "EMBED_STAGE",
    "PLACEHOLDER_KEY",
    "Endpoints",
    "Failure",
    "Flight",
    "LLMError",
    "Stopped",
    "backoff",
    "key_hint",
    "one_line",
    "require_endpoint",
    "retry_after",
    "safe_url",
    "scrub",
    "server_message",
    "status_failure",
]

EMBED_STAGE = "embed"
PLACEHOLDER_KEY = "no-key"  # local servers want some Authorization header, not a real key
DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_AFTER_MAX = 120.0  # a longer Retry-After fails the call rather than hang a cron job
_RETRY_STATUSES = frozenset({408, 409, 429})


class LLMError(GbError):
    """An LLM or embeddings call failed. The message is one line, free of secrets."""

    def __init__(
        self,
        stage: str,
        model: str,
        cause: str,
        *,
        status: int | None = None,
        server_message: str = "",
        server_code: str | None = None,
        retryable: bool = False,
        unreachable: bool = False,
        inference: Any = None,
    ) -> None:
        super().__init__(f"{stage} ({model}): {cause}")
        self.stage = stage
        self.model = model
        self.cause = cause
        self.status = status  # the HTTP status, when the server answered with an error
        self.server_message = server_message  # scrubbed
        self.server_code = server_code  # the error's "code", e.g. "rate_limit_exceeded"
        self.retryable = retryable
        self.unreachable = unreachable  # no connection to the server at all (refused, DNS)
        self.inference = inference  # tokens spent on a rejected answer, when known


class Stopped(LLMError):
    """The caller stopped the call (see Flight) before this attempt was sent."""


# ------------------------------------------------------------------ secrets


def scrub(text: str, secrets: Sequence[str | None] = ()) -> str:
    """`text` with every secret, bearer token and OpenAI-style key masked (R9)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "****")
    text = re.sub(r"(?i)(bearer\s+)\S+", r"\1****", text)
    return re.sub(r"\bsk-[A-Za-z0-9_\-]{8,}", "sk-****", text)


def safe_url(url: str | None) -> str:
    """A base URL fit for a log line: no user:password, no query string."""
    if not url:
        return DEFAULT_BASE_URL
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------ endpoints


@dataclass(frozen=True)
class Endpoints:
    """The chat and embeddings endpoints and keys a configuration resolves to.

    The embeddings key is the chat key only when both go to the same server, or when
    `embeddings.api_key_env` names it: the chat key is never sent to another server
    unasked.
    """

    chat_url: str | None
    chat_key: str | None
    embed_url: str | None
    embed_key: str | None

    @classmethod
    def from_config(cls, config: Config, env: Mapping[str, str] | None = None) -> Endpoints:
        env = os.environ if env is None else env
        key = config["llm.api_key"] or env.get(config["llm.api_key_env"]) or None
        base_url = config["llm.base_url"] or None
        emb_url = config["embeddings.base_url"] or None
        emb_key_env = config["embeddings.api_key_env"]
        if emb_key_env:
            emb_key = env.get(emb_key_env) or None
        elif emb_url is None or emb_url == base_url:
            emb_key = key
        else:
            emb_key = None
        return cls(base_url, key, emb_url or base_url, emb_key)

    @property
    def chat_available(self) -> bool:
        """False when there is neither a key nor a base URL: `gb` then works offline."""
        return bool(self.chat_key or self.chat_url)

    @property
    def embeddings_available(self) -> bool:
        return bool(self.embed_key or self.embed_url)

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(s for s in (self.chat_key, self.embed_key) if s)

    def url(self, stage: str) -> str:
        """Where `stage`'s requests go, fit for a message."""
        return safe_url(self.embed_url if stage == EMBED_STAGE else self.chat_url)


def key_hint(config: Config, stage: str) -> str:
    """What to check when `stage`'s key is refused (HTTP 401)."""
    if stage == EMBED_STAGE and config["embeddings.api_key_env"]:
        return config["embeddings.api_key_env"]
    return f"{config['llm.api_key_env']} or llm.api_key"


# ------------------------------------------------------------------ calls


@dataclass(eq=False)  # one call, compared and hashed as itself
class Flight:
    """One call as its caller sees it: `sending` while a request of it is out (paid for
    once the server answers); `stopped` once the caller no longer wants it, after which
    no further attempt is sent (no retry, no unusable answer asked again)."""

    sending: bool = False
    stopped: bool = False
    crew: Crew | None = field(default=None, repr=False)

    def fail(self, error: LLMError) -> None:
        """This call failed for good: its crew's calls not yet sending are stopped."""
        if self.crew is None:
            return
        self.crew.failure = self.crew.failure or error
        for other in self.crew.flights:
            if other is not self and not other.sending:
                other.stopped = True


@dataclass(eq=False)
class Crew:
    """The calls that stand or fall together (one document's): when one fails for good,
    those not yet sending are stopped before the limiter lets the next one in, and the
    first failure is what the others report."""

    flights: set[Flight] = field(default_factory=set)
    failure: LLMError | None = None


# ------------------------------------------------------------------ failures


@dataclass
class Failure:
    """Why one attempt failed, and whether (and when) to try again."""

    head: str  # "HTTP 500", "timed out (limit 60 s)"
    detail: str = ""  # the server's words, scrubbed
    status: int | None = None
    retryable: bool = False
    retry_after: float | None = None
    code: str | None = None
    unreachable: bool = False

    def cause(self, retries: int) -> str:
        text = self.head
        if retries:
            text += f" after {retries} {'retry' if retries == 1 else 'retries'}"
        return f"{text}: {self.detail}" if self.detail else text

    def error(self, stage: str, model: str, retries: int) -> LLMError:
        return LLMError(
            stage,
            model,
            self.cause(retries),
            status=self.status,
            server_message=self.detail,
            server_code=self.code,
            retryable=self.retryable,
            unreachable=self.unreachable,
        )


def retry_after(headers: Any) -> float | None:
    """Seconds to wait from Retry-After (seconds or an HTTP date) or retry-after-ms."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(float(raw_ms) / 1000, 0.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        import email.utils  # socket and friends: only for a Retry-After given as a date

        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(seconds, 0.0) if math.isfinite(seconds) else None


def server_message(body: Any, fallback: str = "") -> tuple[str, str | None]:
    """(message, code) from an error answer's body (the "error" object or the whole
    body), whatever shape it has."""
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or body.get("detail") or ""
        code = body.get("code")
        return str(message if isinstance(message, str) else json.dumps(message)), (
            str(code) if code is not None else None
        )
    if isinstance(body, str | bytes) and body:
        return (body.decode("utf-8", "replace") if isinstance(body, bytes) else body), None
    return fallback, None


def status_failure(
    status: int, message: str, code: str | None, headers: Any, key_hint: str
) -> Failure:
    """An HTTP error answer as a Failure: 408, 409, 429 and 5xx are retried (a 429 for
    an exhausted quota is not: waiting won't pay the bill), after Retry-After if given."""
    detail = one_line(message)
    if status == 401:
        detail += f" (check {key_hint})"
    if status == 429 and code == "insufficient_quota":
        return Failure(f"HTTP {status}", detail, status, code=code)
    retryable = status in _RETRY_STATUSES or status >= 500
    wait = retry_after(headers) if retryable else None
    if wait is not None and wait > RETRY_AFTER_MAX:
        head = f"HTTP {status} (the server asks to wait {wait:.0f} s)"
        return Failure(head, detail, status, code=code)
    return Failure(f"HTTP {status}", detail, status, retryable, wait, code)


def backoff(key: str, retry: int, base: float, cap: float) -> float:
    """Seconds before retry number `retry` (0-based). The jitter is drawn from the
    request and the retry number: retries of different requests spread out, and the
    same run waits the same way twice."""
    jitter = random.Random(f"{key}:{retry}").random()
    return min(cap, base * 2**retry) * (0.5 + jitter / 2)


def require_endpoint(ok: bool, stage: str, model: str, config: Config) -> None:
    if not ok:
        raise ConfigError(
            f"{stage} ({model}): no LLM endpoint; set {config['llm.api_key_env']} "
            "or llm.base_url (OPENAI_BASE_URL)"
        )
