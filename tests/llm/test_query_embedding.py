"""A search query's embedding (gligabao.llm.query): one request over the standard library,
which must reach the same endpoint, send the same model, dimensions and key, and fail or
retry as the SDK-based client does, against the test server."""

from __future__ import annotations

import asyncio
import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest

from gligabao.config import load_config
from gligabao.errors import ConfigError
from gligabao.llm import LLM, LLMError
from gligabao.llm.query import embed_query
from tests.support.helpers import serving
from tests.support.llm_server import Fault, LLMServer, embed_text

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
    assert request.body["encoding_format"] == "base64"  # as remember asks: float32 bytes
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


class _HandWritten(BaseHTTPRequestHandler):
    """An embeddings endpoint whose answer's framing a test chooses: ``framing`` is
    "chunked" (in pieces, no length), "close" (no length: the body ends with the
    connection) or "cut" (a length the body never reaches). ``paths`` lists the request
    targets seen: a proxy is sent the absolute URL."""

    framing = "chunked"
    paths: ClassVar[list[str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        type(self).paths.append(self.path)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        vector = [0.0] * body["dimensions"]
        vector[1] = 1.0
        answer = json.dumps({"data": [{"embedding": vector}], "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if self.framing == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for at in range(0, len(answer), 100):
                piece = answer[at : at + 100]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        elif self.framing == "bad length":
            self.send_header("Content-Length", "many")
            self.end_headers()
            self.wfile.write(answer)
        elif self.framing == "cut":
            self.send_header("Content-Length", str(len(answer) + 50))
            self.end_headers()
            self.wfile.write(answer)
        else:
            self.end_headers()
            self.wfile.write(answer)
        self.close_connection = True


@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_an_answer_in_chunks_or_ended_by_the_connection_is_read_whole(framing: str) -> None:
    _HandWritten.protocol_version = "HTTP/1.1" if framing == "chunked" else "HTTP/1.0"
    _HandWritten.framing = framing
    with serving(_HandWritten) as httpd:
        url = f"http://127.0.0.1:{httpd.server_port}/v1"
        config = load_config(None, {"embeddings.dimensions": 64}, env={"OPENAI_BASE_URL": url})
        vector = embed_query(config, "otter", env={})
    assert len(vector) == 64 and vector[1] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("framing", "named"),
    [("cut", "closed the connection mid-answer"), ("bad length", "malformed Content-Length")],
)
def test_an_answer_cut_short_or_misframed_is_retried_then_named(framing: str, named: str) -> None:
    _HandWritten.protocol_version = "HTTP/1.1"
    _HandWritten.framing = framing
    _HandWritten.paths = []
    with serving(_HandWritten) as httpd:
        url = f"http://127.0.0.1:{httpd.server_port}/v1"
        config = load_config(None, {"llm.max_retries": 1}, env={"OPENAI_BASE_URL": url})
        with pytest.raises(LLMError, match=named):
            _embed(config, "otter")
    assert _HandWritten.paths == ["/v1/embeddings"] * 2  # the first try and one retry


def test_a_proxy_in_the_environment_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    _HandWritten.protocol_version = "HTTP/1.1"
    _HandWritten.framing = "chunked"
    _HandWritten.paths = []
    with serving(_HandWritten) as proxy:
        for name in ("HTTP_PROXY", "http_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.server_port}")
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.setenv(name, "")
        url = "http://embeddings.invalid/v1"
        config = load_config(None, {"embeddings.dimensions": 64}, env={"OPENAI_BASE_URL": url})
        assert len(embed_query(config, "otter", env={})) == 64
    assert _HandWritten.paths == ["http://embeddings.invalid/v1/embeddings"]
