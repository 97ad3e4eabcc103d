"""A search query's embedding (gligabao.llm.query): one request over the standard library,
which must reach the same endpoint, send the same model, dimensions and key, and fail or
retry as the SDK-based client does, against the test server."""

from __future__ import annotations

import asyncio
import time

import pytest

from gligabao.config import load_config
from gligabao.errors import ConfigError
from gligabao.llm import LLM, LLMError
from gligabao.llm.query import embed_query
from tests.llm_server import Fault, LLMServer, embed_text

SECRET = "sk-query-secret-0123456789"


@pytest.fixture
def srv() -> LLMServer:
    with LLMServer() as server:
        yield server


def _config(srv: LLMServer, **env: str):
    return load_config(
        None,
        {"embeddings.dimensions": 64},
        env={"OPENAI_BASE_URL": srv.base_url, "OPENAI_API_KEY": SECRET, **env},
    )


def _embed(config, text: str) -> list[float]:
    return embed_query(
        config, text, env={"OPENAI_API_KEY": SECRET}, backoff_base=0.01, backoff_cap=0.02
    )


def test_the_vector_is_the_one_the_pipeline_stores(srv: LLMServer) -> None:
    config = _config(srv)
    vector = _embed(config, "patent licence termination")

    async def by_sdk() -> list[float]:
        llm = LLM(config, env={"OPENAI_API_KEY": SECRET})
        try:
            return (await llm.embed(["patent licence termination"])).vectors[0]
        finally:
            await llm.aclose()

    assert vector == pytest.approx(asyncio.run(by_sdk()), abs=1e-6)
    assert vector == pytest.approx(embed_text("patent licence termination", 64), abs=1e-6)
    (request,) = srv.requests_for("embed")[:1]
    assert request.body["model"] == config["embeddings.model"]
    assert request.body["dimensions"] == 64
    assert request.headers["Authorization"] == f"Bearer {SECRET}"


def test_a_429_is_waited_out_as_the_server_asks(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="429", stage="embed", retry_after=0.3))
    began = time.monotonic()
    vector = _embed(_config(srv), "heron")
    assert time.monotonic() - began >= 0.3
    assert len(vector) == 64
    assert srv.calls("embed", include_faults=True) == 2


def test_server_errors_are_retried_then_reported_without_the_key(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="500", stage="embed", times=2))
    assert len(_embed(_config(srv), "otter")) == 64  # two 500s, then an answer

    srv.add_fault(Fault(kind="503", stage="embed", times=-1))
    with pytest.raises(LLMError) as failed:
        _embed(_config(srv, GB_LLM_MAX_RETRIES="2"), "otter")
    message = str(failed.value)
    assert message.startswith("embed (text-embedding-3-small): HTTP 503 after 2 retries")
    assert SECRET not in message and failed.value.status == 503


def test_an_answer_that_is_not_json_is_retried_then_named(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="badjson_body", stage="embed", times=-1))
    with pytest.raises(LLMError, match=r"not JSON.*ending in /v1") as failed:
        _embed(_config(srv, GB_LLM_MAX_RETRIES="1"), "otter")
    assert srv.calls("embed", include_faults=True) == 2
    assert failed.value.retryable


def test_an_answer_without_a_vector_is_an_error(srv: LLMServer) -> None:
    srv.add_fault(Fault(kind="malformed", stage="embed"))
    with pytest.raises(LLMError, match="holds no embedding"):
        _embed(_config(srv), "otter")


def test_a_stalled_server_times_out_and_is_retried(srv: LLMServer) -> None:
    srv.timeout_sleep = 3.0
    srv.add_fault(Fault(kind="timeout", stage="embed"))
    config = _config(srv, GB_LLM_TIMEOUT="1")
    assert len(_embed(config, "otter")) == 64
    assert srv.calls("embed", include_faults=True) == 2

    srv.add_fault(Fault(kind="timeout", stage="embed", times=-1))
    with pytest.raises(LLMError, match=r"timed out \(limit 1 s\) after 1 retry"):
        _embed(_config(srv, GB_LLM_TIMEOUT="1", GB_LLM_MAX_RETRIES="1"), "otter")


def test_nobody_listening_is_a_clear_error() -> None:
    with LLMServer() as gone:
        url = gone.base_url
    config = load_config(None, {"llm.max_retries": 0}, env={"OPENAI_BASE_URL": url})
    with pytest.raises(LLMError, match=r"could not reach http://127\.0\.0\.1:\d+/v1"):
        embed_query(config, "otter", env={})


def test_no_endpoint_at_all_says_what_to_set() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        embed_query(load_config(None, env={}), "otter", env={})
