"""A streamed chat answer put back together, shaped as a whole one.

With ``stream: true`` a server sends its answer as it generates it, one server-sent
event a few tokens, so the client's read timeout (`llm.timeout`) bounds the wait for the
first token and the gaps between them, never how long a slow but progressing answer
takes. `Assembled` gathers the chunks (content, refusal, finish_reason, model, and the
usage of the last chunk when ``stream_options.include_usage`` was honoured) into an
object with the attributes of the SDK's ``ChatCompletion`` that the client reads, so
what is checked and recorded is the same either way.

`FieldText` reads one string field of a JSON answer (gb ask's `answer`) out of its text
as it arrives, so that a person sees the words while the rest is still coming.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gligabao.llm.salvage import loop_cut

__all__ = ["REPEATED", "Assembled", "FieldText", "NoEvents", "OnContent"]

# The finish reason of an answer gb stopped reading because it repeats itself.
REPEATED = "repeated"
# How much new text comes between two looks for a loop: each look reads the whole answer.
_LOOK_EVERY = 256

# Told each piece of a streamed answer's content as it comes; None when an answer begins
# again (an unusable one asked for once more): what came before it is void.
OnContent = Callable[[str | None], None]


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
    _length: int = 0
    _next_look: int = _LOOK_EVERY
    # Content pieces received: a server sends about one token a piece.
    pieces: int = 0
    on_content: OnContent | None = None

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
                self.pieces += 1
                self._length += len(delta.content)
                if self.on_content is not None:
                    self.on_content(delta.content)
            if getattr(delta, "refusal", None):
                self._refusal.append(delta.refusal)
            if getattr(choice, "finish_reason", None):
                self._finish = choice.finish_reason

    def looping(self) -> bool:
        """Whether the answer so far has begun to repeat itself (looked at every
        `_LOOK_EVERY` characters); once it has, its finish reason is REPEATED."""
        if self._length < self._next_look:
            return False
        self._next_look = self._length + _LOOK_EVERY
        if loop_cut("".join(self._content)) is None:
            return False
        self._finish = REPEATED
        return True

    @property
    def stopped(self) -> bool:
        """Whether gb stopped reading it because it repeats itself."""
        return self._finish == REPEATED

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


class FieldText:
    """The text of the string field `name` of a JSON object, decoded as the object's text
    comes in pieces (`add`): each decoded piece is told to `on_text`. An escape cut
    between two pieces waits for the rest; anything before the field (a code fence, a
    model's reasoning) is skipped; the field's end ends it."""

    def __init__(self, name: str, on_text: Callable[[str], None]) -> None:
        self._key = json.dumps(name)
        self._on_text = on_text
        self._seen = ""  # the text so far, while the field's value has not begun
        self._pending = ""  # the start of an escape cut off at the end of a piece
        self._inside = False
        self._done = False

    def restart(self) -> None:
        """An answer begins again: read the field anew from its first piece."""
        self._seen, self._pending, self._inside, self._done = "", "", False, False

    def add(self, piece: str | None) -> None:
        if piece is None:
            self.restart()
            return
        if self._done:
            return
        if not self._inside:
            self._seen += piece
            key = self._seen.find(self._key)
            if key < 0:
                return
            rest = self._seen[key + len(self._key) :].lstrip()
            if not rest.startswith(":"):
                return
            rest = rest[1:].lstrip()
            if not rest:
                return
            if not rest.startswith('"'):
                self._done = True  # not a string: nothing to show
                return
            self._inside, piece = True, rest[1:]
        self._read(self._pending + piece)

    def _read(self, text: str) -> None:
        out: list[str] = []
        i = 0
        while i < len(text):
            char = text[i]
            if char == '"':
                self._done = True
                break
            if char != "\\":
                out.append(char)
                i += 1
                continue
            size = 2
            if text[i + 1 : i + 2] == "u":
                # a surrogate pair: both halves, or no character
                size = 12 if text[i + 2 : i + 4].lower() in ("d8", "d9", "da", "db") else 6
            escape = text[i : i + size]
            if len(escape) < size:
                self._pending = text[i:]
                break
            try:
                out.append(json.loads(f'"{escape}"'))
            except ValueError:
                out.append(escape)  # not JSON: as it came
            i += size
        else:
            self._pending = ""
        if self._done:
            self._pending = ""
        if out:
            self._on_text("".join(out))
