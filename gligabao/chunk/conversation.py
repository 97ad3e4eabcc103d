"""Chat transcripts cut in windows of whole messages.

``multi`` (the default) packs whole messages into windows of ``size`` tokens, each
window but the first opening with the last whole messages of the one before, at most
``overlap`` tokens of them; ``single`` makes each message a chunk, no overlap. A
message larger than a window is cut as text (paragraphs, sentences, words),
its pieces overlapping within it only. So every chunk starts and ends on message
bounds unless it is a piece of a message larger than a window, and no chunk repeats
more than ``overlap`` tokens of the one before.

Messages are UTF-8 byte spans of one text, in order, only whitespace between them
(the indexed text of a conversation: its messages' words, no roles, no times).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from gligabao.chunk.text import Chunk, Splitter
from gligabao.chunk.tokens import ESTIMATOR, Tokenizer

WINDOWS = ("multi", "single")


@dataclass(frozen=True, slots=True)
class ChatWindows:
    """How a conversation is cut: ``multi`` windows of ``size`` tokens with ``overlap``
    tokens of whole messages, or ``single`` messages."""

    window: str = "multi"
    size: int = 256
    overlap: int = 32
    tokenizer: Tokenizer = field(default=ESTIMATOR)

    def __post_init__(self) -> None:
        if self.window not in WINDOWS:
            raise ValueError(f"chat window {self.window!r}: use multi or single")
        if self.size < 1 or not 0 <= self.overlap < self.size:
            raise ValueError("chat window size must be positive and overlap below it")

    def fingerprint(self) -> dict[str, object]:
        """What a stored cut depends on, as `ChunkSettings.fingerprint`."""
        return {
            "chat_window": self.window,
            "chat_size": self.size,
            "chat_overlap": self.overlap,
            "tokenizer": self.tokenizer.name,
        }


def chat_chunks(
    text: str, messages: Sequence[tuple[int, int]], windows: ChatWindows | None = None
) -> list[Chunk]:
    """The chunks of a conversation whose messages are the byte spans ``messages``."""
    windows = windows or ChatWindows()
    # A message cut as text overlaps within itself by at most `overlap` tokens: the
    # largest whole percentage of a window that stays within it.
    percent = 0 if windows.window == "single" else windows.overlap * 100 // windows.size
    splitter = Splitter(
        text, chunk_size=windows.size, overlap_percent=percent, tokenizer=windows.tokenizer
    )
    if windows.window == "single":
        spans = _singles(splitter, messages)
    else:
        spans = _windows(splitter, messages, windows.size, windows.overlap)
    return splitter.chunks(spans)


def _singles(splitter: Splitter, messages: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for start, end in messages:
        if splitter.count(start, end) > splitter.chunk_size:
            spans += splitter.region(start, end, overlap=False)
        else:
            spans.append((start, end))
    return spans


def _windows(
    splitter: Splitter, messages: Sequence[tuple[int, int]], size: int, overlap: int
) -> list[tuple[int, int]]:
    """Byte spans of the multi-turn windows, message bounds on message bounds."""
    spans: list[tuple[int, int]] = []
    count = splitter.count
    first = 0  # the first message of the window being filled
    carry = 0  # how many messages before `first` open it as overlap
    n = len(messages)
    while first < n:
        start, end = messages[first]
        if count(start, end) > size:  # a message larger than a window: cut as text
            spans += splitter.region(start, end)
            first, carry = first + 1, 0
            continue
        # The overlap must leave room for the new message.
        while carry and count(messages[first - carry][0], end) > size:
            carry -= 1
        last = first
        while last + 1 < n and count(messages[first - carry][0], messages[last + 1][1]) <= size:
            last += 1
        spans.append((messages[first - carry][0], messages[last][1]))
        # The next window repeats messages of this one only, and not all of them.
        most = last - (first - carry)
        first = last + 1
        carry = _overlap_messages(count, messages, first, overlap, most)
    return spans


def _overlap_messages(
    count: Callable[[int, int], int],
    messages: Sequence[tuple[int, int]],
    after: int,
    overlap: int,
    most: int,
) -> int:
    """How many whole messages before ``after`` (at most ``most``) fit in ``overlap``."""
    carry = 0
    end = messages[after - 1][1]
    while carry < most and count(messages[after - carry - 1][0], end) <= overlap:
        carry += 1
    return carry
