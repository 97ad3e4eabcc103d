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

import json
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import openai

__all__ = ["Fields", "fields", "post"]

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


def fields(value: Any) -> Any:
    """JSON (dicts, lists, scalars) with every object made `Fields`."""
    if isinstance(value, dict):
        return Fields(**{str(k): fields(v) for k, v in value.items()})
    if isinstance(value, list):
        return [fields(v) for v in value]
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
