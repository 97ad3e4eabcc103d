"""A streamed chat answer put back together, shaped as a whole one.

With ``stream: true`` a server sends its answer as it generates it, one server-sent
event a few tokens, so the client's read timeout (`llm.timeout`) bounds the wait for the
first token and the gaps between them, never how long a slow but progressing answer
takes. `Assembled` gathers the chunks (content, refusal, finish_reason, model, and the
usage of the last chunk when ``stream_options.include_usage`` was honoured) into an
object with the attributes of the SDK's ``ChatCompletion`` that the client reads, so
what is checked and recorded is the same either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Assembled", "NoEvents"]


class NoEvents(Exception):
    """A streamed answer held not one chunk: not a server-sent event stream at all."""


@dataclass
class _Message:
    content: str | None
    refusal: str | None


@dataclass
class _Choice:
    message: _Message
    finish_reason: str | None


@dataclass
class Assembled:
    """The chunks of one streamed chat answer, added in order (`add`)."""

    model: str | None = None
    usage: Any = None
    chunks: int = 0
    _content: list[str] = field(default_factory=list)
    _refusal: list[str] = field(default_factory=list)
    _finish: str | None = None
    _choices: bool = False

    def add(self, chunk: Any) -> None:
        self.chunks += 1
        self.model = getattr(chunk, "model", None) or self.model
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) not in (0, None):
                continue  # gb asks for one choice; a server sending more: the first
            self._choices = True
            delta = getattr(choice, "delta", None)
            if getattr(delta, "content", None):
                self._content.append(delta.content)
            if getattr(delta, "refusal", None):
                self._refusal.append(delta.refusal)
            if getattr(choice, "finish_reason", None):
                self._finish = choice.finish_reason

    @property
    def choices(self) -> list[_Choice]:
        if not self._choices:
            return []
        message = _Message("".join(self._content), "".join(self._refusal) or None)
        return [_Choice(message, self._finish)]

    def done(self) -> Assembled:
        """The answer, once the stream ended; NoEvents when nothing came."""
        if not self.chunks:
            raise NoEvents("the stream held no events")
        return self
