"""Requests through the openai client, without its per-request models.

`client.chat.completions.create(**kwargs)` first walks the whole body through the
SDK's type annotations (`transform`: typing introspection for every message), and then
builds a pydantic-style model of the answer and of every streamed chunk
(`construct_type`, the same again). At 0 ms latency those two made about half of gb's
CPU a request. `post` sends the same body, as gb built it (plain JSON already), through
the same client's `post()` (its connection pool, headers, timeouts and errors: the
SDK's documented way to call any endpoint), and reads the answer as JSON into `Fields`.
"""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import openai

__all__ = ["Fields", "fields", "plain_transport", "post"]

# What create() sends: the bearer key only, never an admin key the SDK may find in the
# environment (its default for post() sends both).
_OPTIONS: Any = {"security": {"bearer_auth": True}}


class Fields(SimpleNamespace):
    """A JSON object's members as attributes; one the answer lacks reads None, as a
    field left out of one of the SDK's models does."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


# JSON's scalars, kept as they are without a call each: most of a streamed chunk's values.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def fields(value: Any) -> Any:
    """JSON (dicts, lists, scalars) with every object made `Fields`."""
    if isinstance(value, dict):
        return Fields(**{str(k): v if type(v) in _SCALARS else fields(v) for k, v in value.items()})
    if isinstance(value, list):
        return [v if type(v) in _SCALARS else fields(v) for v in value]
    return value


async def post(client: openai.AsyncOpenAI, path: str, body: dict[str, Any]) -> Any:
    """POST ``body`` to ``path`` (``/chat/completions``, ``/embeddings``); the answer as
    `Fields`. An answer that is not declared JSON is read as JSON all the same, as the
    SDK's models are; one that is not JSON at all comes back as its text."""
    answer = await client.post(path, body=body, cast_to=object, options=_OPTIONS)
    if isinstance(answer, str):
        try:
            answer = json.loads(answer)
        except ValueError:
            return answer
    return fields(answer)


async def stream(
    client: openai.AsyncOpenAI, path: str, body: dict[str, Any]
) -> openai.AsyncStream[Any]:
    """POST ``body`` with ``stream: true``; a stream whose events are JSON as sent (dicts),
    for `fields` to read, errors in the stream raised as the SDK raises them."""
    import openai  # imported already: the client is the SDK's

    return await client.post(
        path,
        body=body,
        cast_to=object,
        options=_OPTIONS,
        stream=True,
        stream_cls=openai.AsyncStream[object],
    )


# ------------------------------------------------------------------ plain HTTP


def plain_transport(httpx: Any) -> Any:
    """An HTTP/1.1 transport for the SDK's httpx client, over asyncio streams: for a
    plain-HTTP endpoint reached with no proxy (a local llama.cpp, Ollama, vLLM).

    httpcore's pool, its anyio streams and h11 took ~0.5 ms of CPU a request at 0 ms
    latency (a fifth of a batch's CPU); this sends each request in one write
    and parses the answer's head and body itself. The SDK above it is unchanged: its
    request building, status errors and streams; failures are raised as httpx's own
    (ConnectError, ReadTimeout, RemoteProtocolError...), which it turns into
    APIConnectionError and APITimeoutError as ever. ``httpx`` is the module the SDK's
    client is built on (httpx2 for openai 3, httpx before).
    """
    return _transport_class(httpx)()


_TRANSPORTS: dict[str, type] = {}
_timeout = getattr(asyncio, "timeout", None)  # Python 3.11+


def _transport_class(httpx: Any) -> type:
    known = _TRANSPORTS.get(httpx.__name__)
    if known is not None:
        return known

    class _Body(httpx.AsyncByteStream):
        """A response body read off its connection; the connection goes back to the
        pool once the body is read whole, and is closed otherwise."""

        def __init__(self, conn: _Conn, length: int | None, chunked: bool, timeout: Any):
            self.conn, self.length, self.chunked, self.timeout = conn, length, chunked, timeout
            self.done = False

        async def __aiter__(self) -> Any:
            conn = self.conn
            if self.chunked:
                while True:
                    line = await conn.line(self.timeout)
                    try:
                        size = int(line.split(b";", 1)[0].strip(), 16)
                    except ValueError:
                        raise httpx.RemoteProtocolError("malformed chunk size") from None
                    if size == 0:
                        trailer = None
                        while trailer != b"\r\n":  # trailers, up to the empty line
                            trailer = await conn.line(self.timeout)
                        break
                    data = await conn.read(
                        conn.reader.readexactly(size + 2),
                        self.timeout,
                        len(conn.reader._buffer) >= size + 2,
                    )
                    yield data[:-2]
            elif self.length is not None:
                left = self.length
                while left:
                    data = await conn.read(
                        conn.reader.read(min(left, 1 << 20)),
                        self.timeout,
                        bool(conn.reader._buffer),
                    )
                    if not data:
                        raise httpx.RemoteProtocolError(
                            "peer closed connection without sending complete message body"
                        )
                    left -= len(data)
                    yield data
            else:  # the body ends where the connection does
                while data := await conn.read(conn.reader.read(1 << 16), self.timeout):
                    yield data
                conn.keep = False
            self.done = True

        async def aclose(self) -> None:
            self.conn.release(reusable=self.done)

    class _Conn:
        def __init__(self, pool: Any, key: tuple[str, int], reader: Any, writer: Any):
            self.pool, self.key, self.reader, self.writer = pool, key, reader, writer
            self.keep = True

        async def read(self, awaitable: Any, timeout: float | None, ready: bool = False) -> Any:
            """`awaitable`, a read of `reader`, bounded by `timeout`. One `ready` (what it
            reads is buffered already) cannot wait, so it gets no timer: most of a
            streamed answer's reads, each ~3 µs less."""
            try:
                if timeout is None or ready:
                    return await awaitable
                if _timeout is not None:  # a timer, not wait_for's task a read (3.11+)
                    async with _timeout(timeout):
                        return await awaitable
                return await asyncio.wait_for(awaitable, timeout)
            except asyncio.TimeoutError:
                self.keep = False
                raise httpx.ReadTimeout("timed out") from None
            except asyncio.IncompleteReadError:
                self.keep = False
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body"
                ) from None
            except asyncio.LimitOverrunError:
                self.keep = False
                raise httpx.RemoteProtocolError("a line of the answer is too long") from None
            except OSError as exc:
                self.keep = False
                raise httpx.ReadError(str(exc) or type(exc).__name__) from None

        async def line(self, timeout: float | None) -> bytes:
            """The next line, to its CRLF."""
            reader = self.reader
            return await self.read(reader.readuntil(b"\r\n"), timeout, b"\r\n" in reader._buffer)

        def usable(self) -> bool:
            # An idle connection the server closed, or sent on unasked, is not reused (as
            # httpcore's readability check); StreamReader has no public "bytes buffered".
            reader = self.reader
            return not (self.writer.is_closing() or reader.at_eof() or reader._buffer)

        def release(self, *, reusable: bool) -> None:
            if reusable and self.keep and self.usable() and not self.pool.closed:
                self.pool.idle.setdefault(self.key, []).append(self)
            else:
                self.writer.close()

    class _Transport(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self.idle: dict[tuple[str, int], list[_Conn]] = {}
            self.closed = False

        async def _connect(self, key: tuple[str, int], timeout: float | None) -> _Conn:
            idle = self.idle.get(key)
            while idle:  # the latest first: the least likely to have been closed
                conn = idle.pop()
                if conn.usable():
                    return conn
                conn.writer.close()
            try:
                opening = asyncio.open_connection(*key, limit=1 << 20)
                if timeout is None:
                    reader, writer = await opening
                else:
                    reader, writer = await asyncio.wait_for(opening, timeout)
            except asyncio.TimeoutError:
                raise httpx.ConnectTimeout("timed out") from None
            except OSError as exc:
                raise httpx.ConnectError(str(exc) or type(exc).__name__) from None
            return _Conn(self, key, reader, writer)

        async def handle_async_request(self, request: Any) -> Any:
            url = request.url
            if url.scheme != "http":
                raise httpx.UnsupportedProtocol(f"plain HTTP only, not {url.scheme}")
            timeouts = request.extensions.get("timeout") or {}
            read_timeout = timeouts.get("read")
            body = await request.aread()
            head = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), url.raw_path)]
            # The body is sent whole, so its length is known: never chunked.
            head += [
                b"%s: %s" % (name, value)
                for name, value in request.headers.raw
                if name.lower() not in (b"content-length", b"transfer-encoding")
            ]
            if body or request.method not in ("GET", "HEAD"):
                head.append(b"Content-Length: %d" % len(body))
            key = (url.host, url.port or 80)
            conn = await self._connect(key, timeouts.get("connect"))
            try:
                # One write: head and body in one segment, not two.
                conn.writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
                try:
                    await asyncio.wait_for(conn.writer.drain(), timeouts.get("write"))
                except asyncio.TimeoutError:
                    raise httpx.WriteTimeout("timed out") from None
                except OSError as exc:
                    raise httpx.WriteError(str(exc) or type(exc).__name__) from None
                raw = await conn.read(conn.reader.readuntil(b"\r\n\r\n"), read_timeout)
                lines = raw[:-4].split(b"\r\n")
                version, _, rest = lines[0].partition(b" ")
                code, _, reason = rest.partition(b" ")
                if not version.startswith(b"HTTP/") or not code.isdigit():
                    raise httpx.RemoteProtocolError("the answer is not HTTP")
                headers = []
                for line in lines[1:]:
                    name, colon, value = line.partition(b":")
                    if not colon:
                        raise httpx.RemoteProtocolError("malformed header line")
                    headers.append((name.strip(), value.strip()))
                fields = {k.lower(): v for k, v in headers}
                connection = fields.get(b"connection", b"").lower()
                if version == b"HTTP/1.1":
                    conn.keep = connection != b"close"
                else:
                    conn.keep = connection == b"keep-alive"
                chunked = b"chunked" in fields.get(b"transfer-encoding", b"").lower()
                length = None
                if not chunked and b"content-length" in fields:
                    try:
                        length = int(fields[b"content-length"])
                    except ValueError:
                        raise httpx.RemoteProtocolError("malformed Content-Length") from None
                if request.method == "HEAD" or int(code) in (204, 304):
                    length, chunked = 0, False
            except BaseException:
                conn.writer.close()
                raise
            return httpx.Response(
                int(code),
                headers=headers,
                stream=_Body(conn, length, chunked, read_timeout),
                extensions={"http_version": version, "reason_phrase": reason},
            )

        async def aclose(self) -> None:
            self.closed = True
            for conns in self.idle.values():
                for conn in conns:
                    conn.writer.close()
            self.idle.clear()

    _TRANSPORTS[httpx.__name__] = _Transport
    return _Transport
