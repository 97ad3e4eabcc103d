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
import re
import sys
import time
from array import array
from collections.abc import Mapping

from gligabao.base.record import Frozen, Record
from gligabao.base.redact import safe_url
from gligabao.config import Config
from gligabao.errors import ConfigError, GbError

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "DEFAULT_BASE_URL",
    "EMBED_STAGE",
    "PLACEHOLDER_KEY",
    "Endpoints",
    "Failure",
    "Flight",
    "LLMError",
    "Stopped",
    "TooLarge",
    "Unusable",
    "backoff",
    "key_hint",
    "no_surrogates",
    "one_line",
    "require_endpoint",
    "retry_after",
    "server_message",
    "status_failure",
    "too_large",
    "vector_problem",
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
        cut_off: bool = False,
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
        self.cut_off = cut_off  # the answer reached its output limit (finish_reason length)
        self.inference = inference  # tokens spent on a rejected answer, when known


class Stopped(LLMError):
    """The caller stopped the call (see Flight) before this attempt was sent."""


# ------------------------------------------------------------------ secrets


def plain_http(url: str) -> bool:
    """Whether requests to `url` go over gb's own plain HTTP rather than the general
    client's (the SDK's httpx, urllib): a plain-HTTP endpoint (a local llama.cpp, Ollama,
    vLLM) with no *_proxy variable set, which only the general client honours."""
    return url.lower().startswith("http://") and not any(
        name.lower().endswith("_proxy") for name in os.environ
    )


_SURROGATE = re.compile("[\ud800-\udfff]")


def no_surrogates(text: str) -> str:
    """`text` with each lone surrogate (a JSON "\\ud800" without its pair, which no UTF-8
    encoder takes) replaced by U+FFFD: stored and printed as any other character."""
    return _SURROGATE.sub("\ufffd", text)


def one_line(text: str, limit: int = 300) -> str:
    text = no_surrogates(" ".join(str(text).split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ------------------------------------------------------------------ endpoints


class Endpoints(Frozen):
    """The chat and embeddings endpoints and keys a configuration resolves to.

    The embeddings key is the chat key only when both go to the same server, or when
    `embeddings.api_key_env` names it: the chat key is never sent to another server
    unasked.
    """

    chat_url: str | None
    chat_key: str | None
    embed_url: str | None
    embed_key: str | None

    def __init__(
        self,
        chat_url: str | None,
        chat_key: str | None,
        embed_url: str | None,
        embed_key: str | None,
    ) -> None:
        self._fill(chat_url, chat_key, embed_url, embed_key)

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
        """The keys, and a key written into a URL (its password, else its user name): what
        scrub masks in messages."""
        keys = [self.chat_key, self.embed_key]
        for url in (self.chat_url, self.embed_url):
            userinfo = (url or "").partition("://")[2].partition("/")[0].rpartition("@")[0]
            keys.append(userinfo.rpartition(":")[2])
        return tuple(dict.fromkeys(s for s in keys if s))

    def url(self, stage: str) -> str:
        """Where `stage`'s requests go, fit for a message."""
        url = self.embed_url if stage == EMBED_STAGE else self.chat_url
        return safe_url(url or DEFAULT_BASE_URL)


def key_hint(config: Config, stage: str) -> str:
    """What to check when `stage`'s key is refused (HTTP 401)."""
    if stage == EMBED_STAGE and config["embeddings.api_key_env"]:
        return config["embeddings.api_key_env"]
    return f"{config['llm.api_key_env']} or llm.api_key"


# ------------------------------------------------------------------ calls


class Flight(Record):
    """One call as its caller sees it: `sending` while a request of it is out (paid for
    once the server answers); `stopped` once the caller no longer wants it, after which
    no further attempt is sent (no retry, no unusable answer asked again)."""

    sending: bool
    stopped: bool
    crew: Crew | None
    contained: bool  # its failure is its caller's to handle: the crew goes on
    # Only its being cut off at the output limit is its caller's (asked again in parts).
    contains_cut_off: bool
    _unshown = frozenset({"crew"})
    # One call, compared and hashed as itself.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(
        self,
        sending: bool = False,
        stopped: bool = False,
        crew: Crew | None = None,
        contained: bool = False,
        contains_cut_off: bool = False,
    ) -> None:
        self._fill(sending, stopped, crew, contained, contains_cut_off)

    def fail(self, error: LLMError) -> None:
        """This call failed for good: its crew's calls not yet sending are stopped."""
        if self.crew is None or self.contained or (self.contains_cut_off and error.cut_off):
            return
        self.crew.failure = self.crew.failure or error
        for other in self.crew.flights:
            if other is not self and not other.sending:
                other.stopped = True


class Crew(Record):
    """The calls that stand or fall together (one document's): when one fails for good,
    those not yet sending are stopped before the limiter lets the next one in, and the
    first failure is what the others report."""

    flights: set[Flight]
    failure: LLMError | None
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __init__(self, flights: set[Flight] | None = None, failure: LLMError | None = None) -> None:
        self._fill(set() if flights is None else flights, failure)


# ------------------------------------------------------------------ failures


class Failure(Record):
    """Why one attempt failed, and whether (and when) to try again."""

    head: str  # "HTTP 500", "timed out (limit 60 s)"
    detail: str  # the server's words, scrubbed
    status: int | None
    retryable: bool
    retry_after: float | None
    code: str | None
    unreachable: bool

    def __init__(
        self,
        head: str,
        detail: str = "",
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        code: str | None = None,
        unreachable: bool = False,
    ) -> None:
        self._fill(head, detail, status, retryable, retry_after, code, unreachable)

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
    an exhausted quota is not: waiting won't pay the bill; nor an input too large, which
    the same request would be again), after Retry-After if given."""
    detail = one_line(message)
    if status == 401:
        detail += f" (check {key_hint})"
    if status == 429 and code == "insufficient_quota":
        return Failure(f"HTTP {status}", detail, status, code=code)
    if too_large(status, message) is not None:
        return Failure(f"HTTP {status}", detail, status, code=code)
    retryable = status in _RETRY_STATUSES or status >= 500
    wait = retry_after(headers) if retryable else None
    if wait is not None and wait > RETRY_AFTER_MAX:
        head = f"HTTP {status} (the server asks to wait {wait:.0f} s)"
        return Failure(head, detail, status, code=code)
    return Failure(f"HTTP {status}", detail, status, retryable, wait, code)


class Unusable(Exception):
    """An answer that came back whole but cannot be used (a vector that is not finite, a
    body nested too deeply to read): a failed attempt, retried like a 5xx."""


class TooLarge(Frozen):
    """A server's refusal of an input as too large: the most tokens it takes, and the
    tokens it counted in the input it refused, where its message says."""

    limit: int | None
    count: int | None

    def __init__(self, limit: int | None, count: int | None) -> None:
        self._fill(limit, count)


# Patterns compiled on first use (re's own cache): a server's refusal is rare, and the
# three cost ~2 ms of every `gb search`'s start.
_TOO_LARGE = (
    r"too (?:large|long|many tokens)|maximum (?:context|input|sequence) length|"
    r"exceeds? (?:the )?(?:maximum |max )?(?:context|input|token|batch|sequence)|"
    r"must have less than \d+ tokens|exceeds the context length"
)
_LIMIT = (
    r"(?:batch size|context length|input length|sequence length|context size)"
    r"[^0-9]{0,24}?(\d+)|less than (\d+) tokens|limit (?:is |of )?(\d+) tokens"
)
_COUNT = (
    r"input \((\d+) tokens\)|requested (\d+) tokens|given: (\d+)|(\d+) tokens in "
    r"(?:the|your) (?:input|prompt)|input (?:length|of) (\d+)"
)


def too_large(status: int | None, message: str) -> TooLarge | None:
    """Whether an error answer says an input is larger than the server takes (llama.cpp's
    500 "input (705 tokens) is too large to process. increase the physical batch size
    (current batch size: 512)", OpenAI's 400 "maximum context length is 8192 tokens,
    however you requested 9000 tokens", and the like), with the numbers it gives."""
    if status not in (400, 413, 422, 500) or not re.search(_TOO_LARGE, message, re.I):
        return None

    def number(pattern: str) -> int | None:
        found = re.search(pattern, message, re.I)
        return int(next(g for g in found.groups() if g)) if found else None

    return TooLarge(number(_LIMIT), number(_COUNT))


# float32, what vec0 stores and compares: a vector's squared norm must stay a normal
# float32, or its cosine distance to anything is NaN (stored as NULL) or infinite.
_FLOAT32_MAX = 3.4028234663852886e38
_FLOAT32_TINY = 1.1754943508222875e-38


# A little-endian float32's last byte holds its sign and the top 7 of its 8 exponent
# bits (h = E >> 1). Every h at most 80 (E <= 161) bounds each |x| below 2^35, so the
# squared norm stays far below float32's largest for any number of values below 2^58,
# and none is NaN or infinite (E = 255); one h of 33 or more (E >= 66) makes some
# |x| >= 2^-61, so the squared norm is above 2^-122, well clear of float32's smallest
# normal (2^-126) and of zero. A model's vector (values ~0.01-1) is always so, and is
# told apart by two byte translations instead of a pass over its values as floats.
_ABOVE_80 = bytes(int(b & 0x7F > 80) for b in range(256))
_AT_LEAST_33 = bytes(int(b & 0x7F >= 33) for b in range(256))


def _moderate(floats: array) -> bool:
    """Whether the exponents of these float32 values alone show them usable (see above);
    False says nothing either way."""
    if sys.byteorder != "little":
        return False
    high = floats.tobytes()[3::4]
    return b"\x01" not in high.translate(_ABOVE_80) and b"\x01" in high.translate(_AT_LEAST_33)


def vector_problem(values: Any, dimensions: int) -> str | None:
    """Why an embedding from a server cannot be stored or searched, or None when it can:
    not numbers, another dimension, a value not finite (NaN; 1e308 is infinite as
    float32), or a norm of zero, or one too large or small for float32."""
    if isinstance(values, array) and values.typecode == "f":
        floats = values  # float32 already (llm/float32.py): not copied
    else:
        try:
            floats = array("f", values)
        except (TypeError, ValueError, OverflowError):
            return "it holds values that are not numbers"
    if len(floats) != dimensions:
        return f"it has {len(floats)} dimensions, not {dimensions}"
    if _moderate(floats):
        return None
    # One C-level pass, not a Python step a value (2,800 vectors of 1,536 a document):
    # hypot is infinite or NaN exactly when a value is, and never overflows otherwise.
    # The same floats unpacked from a list: a quarter faster than from the array.
    norm = math.hypot(*floats.tolist())
    if not math.isfinite(norm):
        return "it holds values that are not finite (NaN or infinite)"
    squared = norm * norm
    if any(abs(squared - edge) <= edge * 1e-9 for edge in (_FLOAT32_TINY, _FLOAT32_MAX)):
        squared = math.fsum(x * x for x in floats)  # at an edge: the exact sum decides
    if squared == 0.0:
        return "it is all zeros"
    if not _FLOAT32_TINY <= squared <= _FLOAT32_MAX:
        return f"its norm ({math.sqrt(squared):.3g}) is out of float32's range"
    return None


def backoff(key: str, retry: int, base: float, cap: float) -> float:
    """Seconds before retry number `retry` (0-based). The jitter is drawn from the
    request and the retry number: retries of different requests spread out, and the
    same run waits the same way twice."""
    import random  # ~1 ms of every search's start, for a retry

    jitter = random.Random(f"{key}:{retry}").random()
    return min(cap, base * 2**retry) * (0.5 + jitter / 2)


def require_endpoint(ok: bool, stage: str, model: str, config: Config) -> None:
    if not ok:
        raise ConfigError(
            f"{stage} ({model}): no LLM endpoint; set {config['llm.api_key_env']} "
            "or llm.base_url (OPENAI_BASE_URL)"
        )
