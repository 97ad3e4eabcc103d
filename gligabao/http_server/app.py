"""The server's plumbing: the bearer token, the access log, the JSON errors, and the
worker threads the service's calls run in.

Each read runs in a worker thread with a Memory (its own connection) of that thread, so
reads run side by side and never wait for a remember, which has its own Memory and
threads. A remember whose client goes away is stopped as Ctrl-C stops gb: nothing is
stored half, the answers it paid for are kept, and the same text sent again goes on
from them.
"""

from __future__ import annotations

import hmac
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import anyio
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gligabao.base.redact import scrub
from gligabao.base.stopping import Stop
from gligabao.config import Config
from gligabao.errors import GbError
from gligabao.http_server.errors import Refusal, status_of
from gligabao.service.memory import Memory

__all__ = ["LIMIT", "Guard", "Server"]

T = TypeVar("T")
LIMIT = 1 << 20  # the largest request body, as the largest text gb reads
READERS = 16  # reads at once, each a thread with its connection
WRITERS = 4  # remembers at once


class Server:
    """What every request shares: the configuration, the token, the worker threads."""

    def __init__(self, config: Config, token: str | None) -> None:
        self.config = config
        self.token = token
        self.secrets = tuple(s for s in (*Memory.of(config).secrets, token) if s)
        self.reads = anyio.CapacityLimiter(READERS)
        self.writes = anyio.CapacityLimiter(WRITERS)
        self._local = threading.local()

    def reader(self) -> Memory:
        """The Memory of this worker thread: its connection is used by it alone."""
        memory = getattr(self._local, "memory", None)
        if memory is None:
            memory = self._local.memory = Memory.of(self.config)
        return memory

    async def read(self, call: Callable[[Memory], T]) -> T:
        """`call` of this thread's Memory, in a worker thread."""
        return await anyio.to_thread.run_sync(lambda: call(self.reader()), limiter=self.reads)

    async def write(self, receive: Receive, work: Callable[[Stop], T]) -> T:
        """`work` (a remember) in a worker thread of its own, given the Stop it obeys:
        asked when the client goes away (`receive` tells), so the run ends at its next
        await, as Ctrl-C ends it."""
        stop = Stop()
        failed: list[Exception] = []
        async with anyio.create_task_group() as watching:
            watching.start_soon(_stop_when_gone, receive, stop)
            try:
                done = await anyio.to_thread.run_sync(lambda: work(stop), limiter=self.writes)
            except Exception as exc:  # raised below: inside, the group would wrap it
                failed.append(exc)
            watching.cancel_scope.cancel()
        if failed:
            raise failed[0]
        return done

    def failure(self, exc: BaseException) -> JSONResponse:
        """The JSON answer of an error, keys and the token masked."""
        if isinstance(exc, Refusal):
            status, code, message = exc.status, exc.code, exc.message
        elif isinstance(exc, GbError):
            (status, code), message = status_of(exc), str(exc)
        else:  # not foreseen: said in one line, the server stays up
            status, code, message = 500, "failed", f"{type(exc).__name__}: {exc}"
        body = {"error": {"code": code, "message": scrub(message, self.secrets)}}
        return JSONResponse(body, status_code=status)


async def _stop_when_gone(receive: Receive, stop: Stop) -> None:
    """Ask `stop` once the client has gone (its request body is read by then, so the
    next message the server has for us is the disconnect)."""
    while (await receive())["type"] != "http.disconnect":
        pass
    stop.request("its client went away")


class Guard:
    """ASGI middleware: the bearer token on every request when one is set, and one
    access-log line a request on stderr (its path without the query string, which may
    hold a text; never a header)."""

    def __init__(self, app: ASGIApp, server: Server) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = [499]  # the client went away before an answer

        async def sent(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            if self._allowed(scope):
                await self.app(scope, receive, sent)
            else:
                said = "a bearer token is required: missing or wrong"
                refused = Refusal(401, "unauthorized", said)
                response = JSONResponse(
                    refused.body(), status_code=401, headers={"www-authenticate": "Bearer"}
                )
                await response(scope, receive, sent)
        finally:
            client = (scope.get("client") or ("-",))[0]
            took = (time.monotonic() - started) * 1000
            sys.stderr.write(
                f"gb serve: {client} {scope['method']} {scope['path']} {status[0]} {took:.0f} ms\n"
            )
            sys.stderr.flush()

    def _allowed(self, scope: Scope) -> bool:
        token = self.server.token
        if token is None:
            return True
        given = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        scheme, _, value = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            value.strip().encode(), token.encode()
        )
