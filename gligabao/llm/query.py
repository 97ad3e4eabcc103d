"""One search query's embedding, over the standard library's HTTP.

`gb search` needs a single embeddings request and answers in well under 100 ms; the
``openai`` SDK alone takes ~0.45 s to import. So this one request is made with
urllib (which honours the same HTTP(S)_PROXY variables as the SDK's httpx), to the
same endpoint, with the same key, model, dimensions, timeout, retry policy and error
wording as `client.LLM.embed`, which the pipeline uses for everything it stores.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from gligabao import __version__
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
    require_endpoint,
    scrub,
    server_message,
    status_failure,
    vector_problem,
)
from gligabao.llm.float32 import Float32

__all__ = ["embed_query"]


def embed_query(
    config: Config,
    text: str,
    *,
    env: Mapping[str, str] | None = None,
    backoff_base: float = 0.5,
    backoff_cap: float = 20.0,
) -> Float32:
    """The embedding of `text` by `embeddings.model` at `embeddings.dimensions`.

    Retried like every LLM call (429 and 5xx after Retry-After or a backoff, timeouts,
    connection errors, a body that is not JSON or nested too deeply, a vector that
    cannot be searched: NaN, zeros, 1e308) up to `llm.max_retries` times; raises
    LLMError, free of secrets, when it cannot get one.
    """
    env = os.environ if env is None else env
    endpoints = Endpoints.from_config(config, env)
    model: str = config["embeddings.model"]
    dimensions: int = config["embeddings.dimensions"]
    require_endpoint(endpoints.embeddings_available, EMBED_STAGE, model, config)
    if not text.strip():
        raise LLMError(EMBED_STAGE, model, "nothing to embed (the query is empty)")
    request = _request(endpoints, env, model, dimensions, text)
    timeout: float = config["llm.timeout"]
    max_retries: int = config["llm.max_retries"]
    retries = 0
    while True:
        failure, answer = _attempt(request, timeout, endpoints, config)
        if failure is None:
            vector = float32.decoded(_vector(answer, model, dimensions))
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


def _request(
    endpoints: Endpoints, env: Mapping[str, str], model: str, dimensions: int, text: str
) -> urllib.request.Request:
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
    body = json.dumps({"model": model, "input": [text], "dimensions": dimensions})
    return urllib.request.Request(url, body.encode("utf-8"), headers, method="POST")


def _attempt(
    request: urllib.request.Request, timeout: float, endpoints: Endpoints, config: Config
) -> tuple[Failure | None, Any]:
    """(None, the parsed answer), or (why it failed, None)."""
    where = endpoints.url(EMBED_STAGE)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = raw
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            body = body["error"]
        message, code = server_message(body, exc.reason or "")
        message = scrub(message, endpoints.secrets)
        hint = key_hint(config, EMBED_STAGE)
        return status_failure(exc.code, message, code, exc.headers, hint), None
    except TimeoutError:
        return Failure(f"timed out (limit {timeout:g} s)", retryable=True), None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        if isinstance(reason, TimeoutError):
            return Failure(f"timed out (limit {timeout:g} s)", retryable=True), None
        detail = one_line(scrub(str(reason) or type(reason).__name__, endpoints.secrets))
        return Failure(f"could not reach {where}", detail, retryable=True), None
    try:
        return None, json.loads(raw)
    except RecursionError:
        return Failure(
            "the server answered with JSON nested too deeply to read", "", None, True
        ), None
    except ValueError:
        hint = f"is {where} the API's base URL, ending in /v1?"
        return Failure("the server answered with a body that is not JSON", hint, None, True), None


def _vector(answer: Any, model: str, dimensions: int) -> list[float]:
    try:
        data = answer["data"]
        vector = list(data[0]["embedding"])
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
