"""The SDK's client over wire.plain_transport, for a plain-HTTP endpoint: one
connection reused while the server keeps it, a new one where it ends it, whether it says
so (Connection: close) or just closes it while idle.

Every other test of the LLM layer runs over this transport too (the test server is plain
HTTP on 127.0.0.1); these look at the connections themselves, with a server of their own.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import struct
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gligabao.config import load_config
from gligabao.llm import LLM, wire
from tests.support.helpers import serving


class _Embeddings(BaseHTTPRequestHandler):
    """Answers /embeddings with one unit vector a text; counts connections and requests.
    ``close_after``: send "Connection: close" on every n-th answer; ``drop_idle``: close
    the connection after each answer without saying so (a keep-alive timeout)."""

    protocol_version = "HTTP/1.1"
    close_after = 0
    drop_idle = False
    connections = 0
    requests = 0

    def setup(self) -> None:
        super().setup()
        type(self).connections += 1

    def do_POST(self) -> None:
        cls = type(self)
        cls.requests += 1
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        dims = body["dimensions"]
        vector = base64.b64encode(struct.pack(f"<{dims}f", 1.0, *[0.0] * (dims - 1))).decode()
        data = [
            {"object": "embedding", "index": i, "embedding": vector}
            for i in range(len(body["input"]))
        ]
        answer = json.dumps(
            {"object": "list", "data": data, "model": body["model"], "usage": {}}
        ).encode()
        closing = bool(cls.close_after) and cls.requests % cls.close_after == 0
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        if closing:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(answer)
        self.wfile.flush()
        if closing or cls.drop_idle:
            self.close_connection = True
            if cls.drop_idle:
                self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    for name in ("close_after", "drop_idle", "connections", "requests"):
        monkeypatch.setattr(_Embeddings, name, getattr(_Embeddings, name))  # restored after
    with serving(_Embeddings) as httpd:
        yield httpd


def _embed_times(httpd: ThreadingHTTPServer, n: int, pause: float = 0.0) -> list[Any]:
    base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": base_url}
    llm = LLM(load_config(None, env=env), env=env, backoff_base=0.01)

    async def run() -> list[Any]:
        got = []
        try:
            for _ in range(n):
                got.append(await llm.embed(["Alice met Bob.", "Paris"]))
                await asyncio.sleep(pause)
            # The SDK's httpx client (its private `_client`) sends through wire's transport.
            transport = llm._client(True)._client._transport
            assert type(transport) in wire._TRANSPORTS.values()
            return got
        finally:
            await llm.aclose()

    return asyncio.run(run())


def test_one_connection_while_the_server_keeps_it(server: ThreadingHTTPServer) -> None:
    got = _embed_times(server, 6)
    assert [len(e.vectors) for e in got] == [2] * 6
    assert all(e.inference.attempts == 1 for e in got)
    assert (_Embeddings.requests, _Embeddings.connections) == (6, 1)


def test_a_new_connection_after_connection_close(server: ThreadingHTTPServer) -> None:
    _Embeddings.close_after = 3
    got = _embed_times(server, 6)
    assert all(e.inference.attempts == 1 for e in got)
    assert (_Embeddings.requests, _Embeddings.connections) == (6, 2)


def test_an_idle_connection_the_server_closed_is_not_reused(
    server: ThreadingHTTPServer,
) -> None:
    _Embeddings.drop_idle = True
    # A pause after each answer, as between the requests of a slow run: the server's
    # close has arrived by the next request, which goes out on a new connection and is
    # answered at its first attempt (no failed attempt, no retry).
    got = _embed_times(server, 4, pause=0.05)
    assert all(e.inference.attempts == 1 for e in got)
    assert (_Embeddings.requests, _Embeddings.connections) == (4, 4)
