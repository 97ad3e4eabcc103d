"""Cutting texts into chunks: token counting, the cut itself, and its settings.

`cut(text, settings)` is what `gb remember` and `gb chunk-preview` both use:
it decides whether a text is chunked at all (only when larger than a chunk) and, if so, how.

Every name loads on first use, from the module that holds it (cutting.py, tokens.py,
text.py): gligabao.config reads only MODES, and a `gb search` would otherwise pay ~5 ms
for the settings' classes, the token counter and text.py's patterns.
"""

from __future__ import annotations

from gligabao.base.lazy import exports

# Not typing's: `gb search` loads no typing (~3 ms of its start).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from gligabao.chunk.cutting import ChunkSettings, Cut, cut, mode_for
    from gligabao.chunk.text import Chunk, Splitter, overlap_budget, split_text
    from gligabao.chunk.tokens import ESTIMATOR, Estimator, Tokenizer, get_tokenizer

# "chat" cuts a chat export in windows of messages (gligabao.read.documents, chunk/conversation.py).
MODES = ("auto", "text", "markdown", "code", "chat")

_HOME = {
    **dict.fromkeys(("ChunkSettings", "Cut", "cut", "mode_for"), "gligabao.chunk.cutting"),
    **dict.fromkeys(("Chunk", "Splitter", "overlap_budget", "split_text"), "gligabao.chunk.text"),
    **dict.fromkeys(
        ("ESTIMATOR", "Estimator", "Tokenizer", "get_tokenizer"), "gligabao.chunk.tokens"
    ),
}


__all__ = [
    "ESTIMATOR",
    "MODES",
    "Chunk",
    "ChunkSettings",
    "Cut",
    "Estimator",
    "Splitter",
    "Tokenizer",
    "cut",
    "get_tokenizer",
    "mode_for",
    "overlap_budget",
    "split_text",
]

__getattr__, __dir__ = exports(__name__, _HOME, listed=__all__)
