"""One search query's embedding, without the openai SDK.

`gb search` needs a single embeddings request and answers in well under 100 ms; the
``openai`` SDK alone takes ~0.45 s to import. So this one request is made by hand, to
the same endpoint, with the same key, model, dimensions, timeout, retry policy and error
wording as `client.LLM.embed`, which the pipeline uses for everything it stores. A
plain-HTTP endpoint reached with no proxy (a local server) gets one POST over a socket
(as llm/wire.py does for the SDK): urllib's import, http.client and email with it, took
~20 ms of the ~40 that the vector half of a search waits. HTTPS and proxies go through
urllib, which honours the same HTTP(S)_PROXY variables as the SDK's httpx. A search
asks once, within `search.query_timeout` (its `timeout` and `max_retries`): someone is
waiting, and a search without its vector goes on by BM25.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

from gligabao.base.redact import scrub
from gligabao.config import Config
from gligabao.llm import float32
from gligabao.llm.endpoint import (
    DEFAULT_BASE_URL,
    EMBED_STAGE,
    PLACEHOLDER_KEY,
    Endpoints,
    Failure,
    LLMError,
    backoff,
    key_hint,
    one_line,
    plain_http,
    require_endpoint,
    server_message,
    status_failure,
    vector_problem,
)
from gligabao.llm.float32 import Float32
from gligabao.version import __version__

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["embed_query"]


def embed_query(
    config: Config,
    text: str,
    *,
    env: Mapping[str, str] | None = None,
    backoff_base: float = 0.5,
    backoff_cap: float = 20.0,
    timeout: float | None = None,
    max_retries: int | None = None,
) -> Float32:
    """The embedding of `text` by `embeddings.model` at `embeddings.dimensions`.

    Retried like every LLM call (429 and 5xx after Retry-After or a backoff, timeouts,
    connection errors, a body that is not JSON or nested too deeply, a vector that
    cannot be searched: NaN, zeros, 1e308) up to `max_retries` times (by default
    `llm.max_retries`), each attempt bounded by `timeout` (by default `llm.timeout`);
    raises LLMError, free of secrets, when it cannot get one.
    """
    env = os.environ if env is None else env
    endpoints = Endpoints.from_config(config, env)
    model: str = config["embeddings.model"]
    dimensions: int = config["embeddings.dimensions"]
    require_endpoint(endpoints.embeddings_available, EMBED_STAGE, model, config)
    if not text.strip():
        raise LLMError(EMBED_STAGE, model, "nothing to embed (the query is empty)")
    request = _request(endpoints, env, model, dimensions, text)
    if timeout is None:
        timeout = config["llm.timeout"]
    if max_retries is None:
        max_retries = config["llm.max_retries"]
    retries = 0
    while True:
        failure, answer = _attempt(request, timeout, endpoints, config)
        if failure is None:
            vector = _vector(answer, model, dimensions)
            problem = vector_problem(vector, dimensions)
            if problem is None:
                return vector
            failure = Failure(f"the vector is unusable: {problem}", retryable=True)
        if not failure.retryable or retries >= max_retries:
            raise failure.error(EMBED_STAGE, model, retries)
        if failure.retry_after is not None and failure.retry_after > 0:
            delay = failure.retry_after
        else:
            delay = backoff(f"query:{text}", retries, backoff_base, backoff_cap)
        retries += 1
        time.sleep(delay)


class _Request:
    """One embeddings POST. A plain class: a dataclass costs ~0.8 ms of start-up."""

    __slots__ = ("body", "headers", "url")

    def __init__(self, url: str, body: bytes, headers: dict[str, str]) -> None:
        self.url, self.body, self.headers = url, body, headers


def _request(
    endpoints: Endpoints, env: Mapping[str, str], model: str, dimensions: int, text: str
) -> _Request:
    url = (endpoints.embed_url or DEFAULT_BASE_URL).rstrip("/") + "/embeddings"
    headers = {
        "Authorization": f"Bearer {endpoints.embed_key or PLACEHOLDER_KEY}",
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": f"gligabao/{__version__}",
    }
    # The SDK sends these from the environment too; an org-scoped key needs them.
    for header, variable in (
        ("OpenAI-Organization", "OPENAI_ORG_ID"),
        ("OpenAI-Project", "OPENAI_PROJECT_ID"),
    ):
        if env.get(variable):
            headers[header] = env[variable]
    # base64, as remember's requests ask: a quarter of the bytes of 1,536 numbers in JSON,
    # and nothing to parse but the float32 bytes (a server that ignores it sends numbers).
    body = json.dumps(
        {"model": model, "input": [text], "dimensions": dimensions, "encoding_format": "base64"}
    )
    return _Request(url, body.encode("utf-8"), headers)


def _attempt(
    request: _Request, timeout: float, endpoints: Endpoints, config: Config
) -> tuple[Failure | None, Any]:
    """(None, the parsed answer), or (why it failed, None)."""
    where = endpoints.url(EMBED_STAGE)
    try:
        status, reason, headers, raw = _post(request, timeout)
    except TimeoutError:
        return Failure(f"timed out (limit {timeout:g} s)", retryable=True), None
    except OSError as exc:  # urllib's URLError is one
        reason = getattr(exc, "reason", None) or exc
        if isinstance(reason, TimeoutError):
            return Failure(f"timed out (limit {timeout:g} s)", retryable=True), None
        detail = one_line(scrub(str(reason) or type(reason).__name__, endpoints.secrets))
        return Failure(f"could not reach {where}", detail, retryable=True), None
    if not 200 <= status < 300:
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            body = body["error"]
        message, code = server_message(body, reason)
        message = scrub(message, endpoints.secrets)
        hint = key_hint(config, EMBED_STAGE)
        return status_failure(status, message, code, headers, hint), None
    try:
        return None, json.loads(raw)
    except RecursionError:
        return Failure(
            "the server answered with JSON nested too deeply to read", "", None, True
        ), None
    except ValueError:
        hint = f"is {where} the API's base URL, ending in /v1?"
        return Failure("the server answered with a body that is not JSON", hint, None, True), None


def _post(request: _Request, timeout: float) -> tuple[int, str, Any, bytes]:
    """(status, reason, headers with .get(lower-case name), body) of one POST; raises
    OSError (TimeoutError) when there is no answer."""
    if plain_http(request.url):
        return _post_plain(request, timeout)
    import urllib.error
    import urllib.request

    sent = urllib.request.Request(request.url, request.body, request.headers, method="POST")
    opener = urllib.request.build_opener()  # the proxy variables as they are now
    try:
        with opener.open(sent, timeout=timeout) as response:
            return response.status, response.reason, response.headers, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.reason or "", exc.headers, exc.read()


# The most an answer's status line and headers may take (urllib's http.client allows
# 100 lines of 64 KiB; an embeddings answer's head is a few hundred bytes).
_HEAD_MAX = 1 << 16


class _NotHTTP(OSError):
    """An answer that is not HTTP/1.x: a failure to reach the API, as a reset is."""


def _post_plain(request: _Request, timeout: float) -> tuple[int, str, Any, bytes]:
    """One HTTP/1.1 POST over a socket, the connection closed after it; `timeout` bounds
    the connection and each wait for the answer's bytes, as urllib's does."""
    import socket

    parts = urlsplit(request.url)
    target = parts.path or "/"
    if parts.query:
        target += "?" + parts.query
    head = [f"POST {target} HTTP/1.1", f"Host: {parts.netloc.rpartition('@')[2]}"]
    head += [f"{name}: {value}" for name, value in request.headers.items()]
    head += [f"Content-Length: {len(request.body)}", "Connection: close"]
    message = "\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + request.body
    host: str | bytes = parts.hostname or ""
    if host.isascii():
        host = host.encode("ascii")  # a str would load the idna codec: ~5 ms
    with socket.create_connection((host, parts.port or 80), timeout) as sock:
        sock.sendall(message)  # one write: head and body in one segment
        received = b""
        while b"\r\n\r\n" not in received:
            if len(received) > _HEAD_MAX:
                raise _NotHTTP("the answer's head is too long")
            data = sock.recv(1 << 16)
            if not data:
                raise _NotHTTP("the server closed the connection without an answer")
            received += data
        raw_head, _, body = received.partition(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise _NotHTTP("the answer is not HTTP")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = None
        if not chunked and "content-length" in headers:
            try:
                length = int(headers["content-length"])
            except ValueError:
                raise _NotHTTP("malformed Content-Length") from None
        while True:
            if length is not None and len(body) >= length:
                body = body[:length]
                break
            if chunked and (whole := _unchunked(body)) is not None:
                body = whole
                break
            data = sock.recv(1 << 16)
            if not data:  # the body ends where the connection does
                if length is not None or chunked:
                    raise _NotHTTP("the server closed the connection mid-answer")
                break
            body += data
    return int(code), reason, headers, body


def _unchunked(data: bytes) -> bytes | None:
    """A chunked body decoded, or None while its last chunk has not come."""
    out, at = [], 0
    while True:
        line_end = data.find(b"\r\n", at)
        if line_end < 0:
            return None
        try:
            size = int(data[at:line_end].split(b";", 1)[0], 16)
        except ValueError:
            raise _NotHTTP("malformed chunk size") from None
        if size == 0:
            return b"".join(out) if data.find(b"\r\n\r\n", line_end) >= 0 else None
        start = line_end + 2
        if len(data) < start + size + 2:
            return None
        out.append(data[start : start + size])
        at = start + size + 2


def _vector(answer: Any, model: str, dimensions: int) -> Float32:
    try:
        data = answer["data"]
        vector = float32.decoded(data[0]["embedding"])
        if not isinstance(vector, Float32):
            vector = list(vector)  # for vector_problem to say what is wrong with it
    except (KeyError, IndexError, TypeError, ValueError):
        raise LLMError(
            EMBED_STAGE, model, "the answer could not be read: it holds no embedding"
        ) from None
    if len(data) != 1:
        raise LLMError(EMBED_STAGE, model, f"the answer held {len(data)} vectors for 1 text")
    if len(vector) != dimensions:
        raise LLMError(
            EMBED_STAGE,
            model,
            f"the vector has {len(vector)} dimensions, not {dimensions}; set "
            "embeddings.dimensions to what the model makes",
        )
    return vector  # its values are checked by vector_problem
